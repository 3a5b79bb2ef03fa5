// ibdkit/replay/replay.h — the IBD pipeline over block files: read, decode, check, connect, flush.
//
// Blocks are read from Bitcoin Core block files (any order; xor.dat honoured), ordered by following
// prev-hashes — or located through a Core data directory's block index (blockfile/locate.h) — read
// from disk once each, copied into a DataStream<Policy> (or, with via_p2p, framed as P2P `block` messages and
// received through MessageReceiver<Policy>, as Core's IBD receives them), decoded, checked with
// CheckBlock (proof of work included), connected with ConnectBlock (UTXO rules without scripts —
// see replay/connect.h for what that means for trust) and flushed to a chainstate in Core's LevelDB
// format whenever the cache exceeds its budget. A run that stops (interrupt, --stop-height) flushes
// cleanly; the next run on the same chainstate resumes after its best block, and a chainstate left
// mid-flush by a crash is recovered by rolling the interrupted blocks forward.
#pragma once

#include <ibdkit/blockfile/blockfile.h>
#include <ibdkit/blockfile/locate.h>
#include <ibdkit/chain/params.h>
#include <ibdkit/coins/stats.h>
#include <ibdkit/error.h>
#include <ibdkit/memory/policy.h>
#include <ibdkit/replay/connector.h>

#include <atomic>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>

namespace ibdkit {

struct ReplayProgress {
    int height{0};
    int tip_height{0};         ///< height of the last block of the best chain in the files
    uint64_t blocks{0};        ///< blocks connected in this run
    uint64_t txs{0};
    uint64_t bytes{0};         ///< block bytes processed in this run
    double elapsed_s{0};
    std::size_t cache_bytes{0};
    std::size_t cache_budget{0};
    uint64_t flushes{0};
};

struct ReplayOptions {
    std::filesystem::path blocks_dir;            ///< a blocks directory or a single blk file
    /// Or a Bitcoin Core data directory, read strictly read-only through its block index
    /// (LocateFromDatadir); exclusive with blocks_dir.
    std::filesystem::path datadir;
    std::optional<ChainType> chain;              ///< nullopt: from the first record's magic (datadir: its layout)
    std::filesystem::path chainstate;            ///< empty: a temporary directory, removed afterwards
    std::size_t dbcache_mib{450};                ///< UTXO cache budget (Core's -dbcache default)
    PolicyId policy{PolicyId::Hardened};
    std::optional<int> stop_height;
    bool via_p2p{false};
    std::function<void(const ReplayProgress&)> on_progress; ///< called about 4 times a second
    const std::atomic<bool>* interrupt{nullptr};            ///< set it to stop cleanly
    /// Test hook: called after each connected block with its height (e.g. to kill at a point).
    std::function<void(int)> after_block;
};

/// Counters (blocks, txs, inputs, outputs, bytes, flushes, recovered_blocks) come from the connector.
struct ReplayResult : ConnectorCounters {
    ChainType chain{ChainType::MAIN};
    int start_height{0};         ///< first height connected by this run
    int height{-1};              ///< chainstate tip height at the end (-1: nothing connected)
    BlockHash tip;
    double seconds{0};           ///< wall time of the connect loop
    double total_seconds{0};     ///< including scanning the files and the final statistics
    uint64_t bytes_cleansed{0};  ///< bytes zeroed by the buffer policy's frees during the run
    uint64_t bytes_read{0};      ///< block bytes read from the blk files by the connect loop
    BlockFileScanStats scan;
    uint64_t orphans{0}, stale{0}, duplicates{0};
    bool interrupted{false};
    std::optional<std::string> reject_reason;  ///< set when a block failed its checks
    int reject_height{-1};
    std::optional<UtxoStats> utxo;             ///< statistics of the final chainstate
};

/// Runs the pipeline. Environment failures and malformed files are errors; a block that fails
/// validation is not (the result carries Core's reject reason and the height, and the chainstate
/// holds the state before that block).
Result<ReplayResult> Replay(const ReplayOptions& opts);

/// The network whose magic starts the first block file, if any.
std::optional<ChainType> DetectChain(const std::filesystem::path& blocks_dir);

} // namespace ibdkit

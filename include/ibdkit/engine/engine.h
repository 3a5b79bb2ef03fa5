// ibdkit/engine/engine.h — the IBD engine: what every run that connects blocks shares, whatever
// feeds it the blocks.
//
// One engine owns the chainstate and the block connector: recovery of a flush interrupted by a
// crash (Core's ReplayBlocks), resuming after the chainstate's best block, the genesis block,
// connecting in chain order, flushing within the dbcache budget, Ctrl-C, progress, statistics,
// and the boundary where exceptions from the database become `Result` errors. Block sources feed
// it blocks in height order: block files (engine/replay.h: a bare blocks directory or a Core data
// directory) and a P2P peer (engine/sync.h).
//
// Threads: the source produces raw block bytes on a thread of its own, workers decode them,
// compute txids/wtxids and run CheckBlock, and one thread connects in chain order; bounded queues
// keep the blocks in flight (and so memory) within a fixed byte budget. `threads == 1` does all of
// it on the calling thread. Every thread count gives identical results: the same chainstate, the
// same UTXO hash, the same rejection height and reason (tested). The connecting thread is the
// one that called the run (Replay, Sync): on_progress and on_connected are called on it, one at a
// time, and the run returns only when every thread it started has stopped. The engine does not
// catch a callback's exceptions: a callback should not throw.
#pragma once

#include <ibdkit/chain/chain_type.h>
#include <ibdkit/run_stats.h>
#include <ibdkit/primitives/hash.h>
#include <ibdkit/settings/run_settings.h>
#include <ibdkit/utxo/utxo_stats.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace ibdkit {

struct TestHooks; ///< private to tests (src/common/test_hooks.h)

struct Block;
struct BlockUndo;

/// What connecting blocks produced; the results of replay and sync carry these fields.
struct ConnectorCounters {
    uint64_t blocks{0}, txs{0}, inputs{0}, outputs{0}, bytes{0}, flushes{0}, recovered_blocks{0};
    /// Wall time of the flushes made when the cache filled (not the final one): the blocks wait.
    double flush_seconds{0};
    /// The cache when it first filled (0 if it never did): its entries and the bytes it counted
    /// for them (CoinsCache::DynamicMemoryUsage) — what a coin costs on this chain.
    uint64_t cache_full_entries{0}, cache_full_bytes{0};
    /// Inputs whose scripts were verified (blocks connected with ConnectContext::check_scripts).
    uint64_t script_checked_inputs{0};
    /// The first height this run asked to connect with its scripts checked (nullopt: none), and
    /// Core's reason for checking them there (consensus/assumevalid.h).
    std::optional<int> script_checks_from_height;
    std::string script_check_reason;
};

/// How far a run has come; reported about 4 times a second.
struct EngineProgress {
    int height{0};
    int tip_height{0};         ///< height of the last block the run will connect (as far as known)
    uint64_t blocks{0};        ///< blocks connected in this run
    uint64_t txs{0};
    uint64_t bytes{0};         ///< block bytes connected in this run
    double elapsed_s{0};
    std::size_t cache_bytes{0};
    std::size_t cache_budget{0};
    uint64_t flushes{0};
    /// A flush is starting (the cache full, or the run's end): its dirty coins, at most
    /// cache_bytes, go to the chainstate, and no block connects until it is done.
    bool flushing{false};
};

/// What every run takes, whatever its block source: the shared settings (dbcache_mib, policy,
/// threads, assumevalid, skip_scripts, minimum_chain_work: settings/run_settings.h) and the
/// engine's own.
struct EngineOptions : RunSettings {
    /// Where the chainstate is kept; empty: a temporary directory, removed afterwards. A kept one
    /// records the run's network in its marker (`ChainstateNetworkRecord`, common/write_guard.h).
    std::filesystem::path chainstate;
    std::optional<int> stop_height;
    /// Bytes of one chainstate write batch in a flush (Core's -dbbatchsize); 0: SplitDbCache's share
    /// of dbcache. Small values split every flush into many batches — H written well before B —
    /// which is how the crash tests open the window between them.
    std::size_t db_batch_bytes{0};
    /// Walk the final chainstate for its statistics (coins, amount, hash_serialized_3) into
    /// EngineResult::utxo. Off, the run ends at the final flush, as Core's -reindex-chainstate does;
    /// height and tip are still reported. The walk reads every coin: minutes on a mainnet-sized set.
    bool statistics{true};
    std::function<void(const EngineProgress&)> on_progress; ///< called about 4 times a second
    const std::atomic<bool>* interrupt{nullptr};            ///< set it (any thread) to stop cleanly (flushes)
    std::shared_ptr<const TestHooks> test_hooks; ///< for tests only (null: none): after_block
    /// When set, each connected block's undo data is written to this directory as rev-file records
    /// in Core's format, with ibdkit's revindex.dat (blockfile/undo_file.h, docs/undo.md); the
    /// records are made durable before every chainstate flush. Never a Core blocks directory.
    std::filesystem::path undo_dir;
    /// When set, a Bitcoin Core data directory: every connected block, with its undo record, is
    /// appended to its network's folder (DATADIR, DATADIR/regtest, ...) as Core lays it out —
    /// blk and rev files obfuscated with a random xor.dat key, the LevelDB block index — made
    /// durable, data before index, before every chainstate flush (docs/sync.md). A new or empty
    /// folder, or one an earlier run wrote; never a Core datadir ibdkit did not make (refused before
    /// anything is written). With no `chainstate` the run keeps it in the network folder's
    /// `chainstate` (DatadirChainstate, blockfile/locate.h), and bitcoind starts on it (-datadir).
    std::filesystem::path datadir_out;
    /// When set, called on the connecting thread after each block is connected (before a flush the
    /// block may trigger), with the block, its height and the coins its inputs spent: one TxUndo per
    /// transaction after the coinbase, its coins in input order (coins/undo.h). What a reader of
    /// blocks with their spent outputs takes from a replay (spent/spent_block.h). A block that was
    /// only rolled forward while recovering an interrupted flush is not reported.
    std::function<void(const Block& block, int height, const BlockUndo& spent)> on_connected;
};

/// What a run produced. Counters (blocks, txs, inputs, outputs, bytes, flushes, recovered_blocks)
/// come from the connector.
struct EngineResult : ConnectorCounters {
    ChainType chain{ChainType::MAIN};
    int start_height{0};         ///< first height connected by this run
    int height{-1};              ///< chainstate tip height at the end (-1: nothing connected)
    BlockHash tip;
    double seconds{0};           ///< wall time of the connect loop
    double total_seconds{0};     ///< including preparation (scan, handshake) and the final statistics
    double final_flush_seconds{0}; ///< of `seconds`, the final flush (every dirty coin to the chainstate)
    uint64_t bytes_cleansed{0};  ///< bytes zeroed by the buffer policy's frees during the run (all threads)
    unsigned threads{1};         ///< threads the run used
    uint64_t coins_read_from_disk{0}; ///< coins the cache read from the chainstate (misses and prefetch)
    uint64_t coins_prefetched{0};     ///< of those, read ahead by the workers
    uint64_t blocks_disconnected{0};  ///< blocks of a stale branch disconnected before connecting (a reorganisation)
    int reorg_fork_height{-1};        ///< height of the fork block of that reorganisation (-1: none)
    uint64_t undo_records{0};         ///< undo records written (with undo_dir)
    uint64_t undo_bytes{0};           ///< their bytes in the rev files, headers and checksums included
    bool interrupted{false};
    std::optional<std::string> reject_reason;  ///< set when a block failed its checks
    int reject_height{-1};
    /// The height of the chainstate the run leaves for a rerun to resume from: every block
    /// connected, also when a block was rejected or the run interrupted (nullopt: a temporary
    /// chainstate, nothing kept, or none on disk).
    std::optional<int> kept_height;
    std::optional<UtxoStats> utxo;             ///< statistics of the final chainstate
    /// The process's peak resident set so far, from the kernel (getrusage ru_maxrss), read when the
    /// run ends: for a CLI run, the run's peak; in a longer-lived process, the highest of its life.
    uint64_t peak_rss_bytes{0};
    /// The connect loop cut into ten slices of equal block bytes, in order (fewer when the run
    /// connected fewer than ten blocks): how throughput changes as the UTXO set grows. The flushes
    /// made when the cache filled count in their slice; the final flush counts in none.
    std::vector<ThroughputSlice> throughput_by_decile;
};

/// Peak resident set size of this process in bytes (getrusage), 0 if unknown. Thread-safe.
uint64_t PeakRssBytes() noexcept;


} // namespace ibdkit

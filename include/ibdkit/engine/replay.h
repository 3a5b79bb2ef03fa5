// ibdkit/engine/replay.h — the IBD engine fed from Bitcoin Core block files.
//
// Blocks are read from Bitcoin Core block files (any order; xor.dat honoured), ordered by following
// prev-hashes — or located through a Core data directory's block index (blockfile/locate.h) — read
// from disk once each, copied into a DataStream<Policy> of opts.policy (or, with via_p2p, framed as P2P `block` messages
// and received through a MessageReceiver of that policy, as Core's IBD receives them), then handed to the engine
// (engine/engine.h): decoded, checked with CheckBlock (proof of work included), connected with
// ConnectBlock (every rule; scripts where Core's assumevalid rule does not skip them:
// consensus/assumevalid.h) and flushed to a chainstate in Core's LevelDB format whenever the cache exceeds its budget. A run
// that stops (interrupt, --stop-height) flushes cleanly; the next run on the same chainstate resumes
// after its best block, and a chainstate left mid-flush by a crash is recovered by rolling the
// interrupted blocks forward.
#pragma once

#include <ibdkit/run_stats.h>
#include <ibdkit/blockfile/source.h>
#include <ibdkit/chain/chain_type.h>
#include <ibdkit/engine/engine.h>
#include <ibdkit/error.h>
#include <ibdkit/primitives/hash.h>

#include <atomic>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>

namespace ibdkit {

using ReplayProgress = EngineProgress;

struct ReplayOptions : EngineOptions {
    BlockFileSource source; ///< the blocks: a datadir or a blocks directory (not both)
    bool via_p2p{false};
};

/// The engine's result plus what the block files held besides the chain.
struct ReplayResult : EngineResult {
    uint64_t bytes_read{0};      ///< block bytes read from the blk files by the block source
    BlockFileScanStats scan;
    uint64_t orphans{0}, stale{0}, duplicates{0};
    /// --datadir while bitcoind ran: the block index was a private snapshot's and the datadir is
    /// consistent up to this block (LiveDatadirMessage); -1 otherwise.
    int live_height{-1};
    BlockHash live_hash;
};

/// Runs the engine over the block files. Environment failures and malformed files are errors; a block that fails
/// validation is not (the result carries Core's reject reason and the height, and the chainstate
/// holds the state before that block). Blocks until the run ends. Errors: both directories given or
/// an undo directory inside one (Errc::InvalidValue), LocateFromBlocksDir's or LocateFromDatadir's,
/// no block that connects to the genesis (Errc::InvalidValue); chainstate, undo and I/O failures
/// during the run, the final statistics' walk included (mostly Errc::Corrupt): the engine catches
/// the database's exceptions and returns them as errors.
Result<ReplayResult> Replay(const ReplayOptions& opts);

/// The network whose magic starts the first block file, if any (DetectChainFromBlockFiles).
std::optional<ChainType> DetectChain(const std::filesystem::path& blocks_dir);

} // namespace ibdkit

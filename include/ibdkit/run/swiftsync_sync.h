// ibdkit/run/swiftsync_sync.h — initial block download with SwiftSync from P2P peers (`ibdkit sync
// --swiftsync HINTS --connect A --connect B …`): the header chain from every peer, blocks 1..n and
// their spent coins (BIP 455) from the peers that serve them, in parallel windows, each block
// checked as coins mode checks a datadir's (Core's rules in Core's order, scripts where Core's
// assumevalid rule runs them), BIP 457's aggregate over the whole range, the hinted-unspent coins
// written as the chainstate at n; then the classic engine (engine/sync.h, run/sync_peers.h) from
// the peers to their tip.
//
// The peers are untrusted: a peer whose block or spent coins are caught wrong is dropped and its
// blocks asked for from the others; spent coins that do not balance refuse the run, and spent
// coins that fail a block's rule with no other peer left fail it (the block is not called
// invalid on their word); either way no chainstate is left that claims a height (docs/swiftsync.md,
// *Over P2P*).
#pragma once

#include <ibdkit/engine/sync.h>
#include <ibdkit/error.h>
#include <ibdkit/swiftsync/replay.h>
#include <ibdkit/utxo/utxo_stats.h>
#include <ibdkit/wire/peer_summary.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace ibdkit::run {

struct SwiftSyncPeersOptions {
    /// The check: hints, chainstate (empty: the data directory's, with `datadir`, else a temporary
    /// one, removed after), threads, dbcache, assumevalid, skip_scripts, policy, on_progress, mode (its
    /// source is not used).
    /// Coins mode: the spent coins from the peers that serve them (BIP 455), every rule. Outpoints
    /// mode: blocks alone from every peer (stock Core peers too), checking much less (no amounts,
    /// maturity, BIP68, sigops or scripts; docs/swiftsync.md), without `datadir` or `keep_recent`.
    swiftsync::SwiftSyncOptions swiftsync;
    std::vector<std::string> connect; ///< HOST[:PORT] of each peer (at least one)
    ChainType chain{ChainType::REGTEST};
    std::chrono::milliseconds timeout{std::chrono::seconds(30)}; ///< a peer silent this long has stalled
    std::size_t window{16};           ///< blocks in flight per peer
    /// BIP 455's cutoff: the outputs of this many blocks before each block (and its own) are kept,
    /// and only older coins are asked of the peers (0: every coin asked for).
    uint32_t keep_recent{0};
    /// After n, the classic sync from every peer given that was not dropped (run::SyncFromPeers;
    /// from one: Sync), with these options (its RunSettings, chainstate, host, port and chain are
    /// the run's); nullopt: stop at n.
    std::optional<SyncOptions> continuation;
    /// A Bitcoin Core data directory to write (`sync --datadir`, engine.h's datadir_out): blocks
    /// 1..n with undo data made from the spent coins they were checked with, named by its block
    /// index once the aggregate accepts them; the continuation appends the rest. Refused
    /// (Errc::Refused) before anything is written where CheckDatadirWritable refuses. Empty: none.
    std::filesystem::path datadir;
    bool statistics{true};            ///< the final chainstate's statistics (hash_serialized_3)
    /// Set (Ctrl-C): while blocks 1..n are fetched and checked the run ends with Errc::Io
    /// "interrupted", its chainstate still marked unfinished (the same run starts over); in the
    /// classic rest it flushes and returns as Sync does (continuation->interrupted, resumed by the
    /// same run). Null: never. Also the continuation's interrupt unless that names its own.
    const std::atomic<bool>* interrupt{nullptr};
};

struct SwiftSyncPeersResult {
    swiftsync::SwiftSyncResult swiftsync; ///< the check of 1..n and the chainstate it wrote
    std::vector<PeerSummary> peers;       ///< the peers that served spent coins
    std::vector<std::string> unreachable; ///< peers left out (no connection, no BIP 455), with why
    std::vector<std::string> notes;       ///< what the run found wrong with peers
    uint64_t spent_bytes{0};              ///< `bspent` bytes received
    uint64_t spent_bytes_saved{0};        ///< what the coins the cutoff left out would have taken
    int header_height{0};                 ///< the peers' header chain
    std::optional<SyncResult> continuation; ///< the classic sync after n
    std::optional<UtxoStats> utxo;        ///< the final chainstate's (accepted, statistics asked for)
    /// The chainstate already held blocks an earlier run accepted, with the peers' headers beside
    /// it (a SwiftSync sync killed in its classic rest, or a classic sync's): this run only
    /// resumed the classic sync; `swiftsync` checked nothing now.
    bool resumed{false};
    uint64_t peak_rss_bytes{0};
};

/// Runs the sync; on a chainstate an earlier sync left (not marked unfinished, the peers' headers
/// beside it), only the classic rest (`resumed`). A refused history is not an error (swiftsync.verdict says why; nothing is
/// written). Errors: bad options (Errc::InvalidValue), no peer reachable or serving spent coins,
/// no peer left for a block (Errc::NotFound; when the last peers' spent coins failed one of its
/// rules, the message names the block, the rule and those peers), a hintsfile above the peers' headers
/// (Errc::InvalidValue), the chainstate's (Errc::Refused by the write guards, …), the
/// continuation's. Blocks until the run ends; callbacks run on the calling thread.
Result<SwiftSyncPeersResult> SyncSwiftSync(SwiftSyncPeersOptions options);

} // namespace ibdkit::run

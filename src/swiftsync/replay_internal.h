// src/swiftsync/replay_internal.h (internal) — the whole-chain run's second half, whatever the
// blocks come from: the check of 1..n (a datadir's files, check_coins.cpp; peers, check_peers.cpp),
// the hinted-unspent coins sorted as they are found, the verdict, and only an accepted history
// written as a new chainstate (replay.cpp).
#pragma once

#include <ibdkit/consensus/header_chain.h>
#include <ibdkit/swiftsync/replay.h>

#include "coins/budget.h"

#include <atomic>
#include <cstddef>
#include <functional>
#include <optional>

namespace ibdkit::swiftsync {

struct ChainRun {
    ChainType chain{ChainType::MAIN};
    const HeaderChain* headers{nullptr}; ///< holds heights 0..n at least
    const Hints* hints{nullptr};         ///< for n
    /// Checks blocks 1..n with `salt`; the run fills the options' threads, policy, progress and
    /// on_unspent, and the coins options' assumevalid and skip_scripts.
    std::function<Result<Partial>(const Salt& salt, const CheckRangeOptions& options, const CoinsModeOptions& coins)> check;
    /// The bytes of blocks 1..h, for the throughput; called with increasing h on the calling thread.
    std::function<uint64_t(uint32_t h)> bytes_through;
    /// The peers still serving, for the progress (SwiftSyncProgress::peers). Empty: none (files).
    std::function<std::size_t()> peers_alive;
    /// Called once the verdict accepts blocks 1..n, before the chainstate is written (what points
    /// at the blocks made durable first); its error ends the run. Empty: nothing to do.
    std::function<std::optional<Error>()> before_write;
    /// Called once the accepted coins are written, before the chainstate stops being marked
    /// unfinished (PeersRun::before_keep); its error ends the run. Empty: nothing to do.
    std::function<std::optional<Error>()> before_keep;
    /// The sort's share of --dbcache (a SwiftSyncShares of the options' budget).
    std::size_t sort_bytes{CacheBudget::MIN_SORT_BYTES};
    /// Ctrl-C: looked at after the check (which looks at it itself), before before_write, and
    /// while the sorted coins are written; the run then fails "interrupted" (Errc::Io) and the new
    /// chainstate is removed (what before_write made durable is the caller's to discard: a sync's
    /// StartedDatadir). Null: never.
    const std::atomic<bool>* interrupt{nullptr};
};

/// Runs `run` under `options` (its chainstate, threads, scripts, policy, progress); the sort keeps
/// within run.sort_bytes.
Result<SwiftSyncResult> CheckAndWrite(const SwiftSyncOptions& options, const ChainRun& run);

} // namespace ibdkit::swiftsync

// ibdkit/run/swiftsync_run.h — `replay --swiftsync` as one driver, for the CLI and Python alike:
// the chain checked with SwiftSync (swiftsync/replay.h), the statistics of the chainstate it wrote,
// and, when the history is refused and the caller asks for it, the classic replay of the same
// blocks (engine/replay.h) to name the first invalid block with Core's reason, or to tell that
// the chain is valid and the hints (or the datadir's rev data) were wrong.
#pragma once

#include <ibdkit/engine/replay.h>
#include <ibdkit/error.h>
#include <ibdkit/swiftsync/replay.h>
#include <ibdkit/utxo/utxo_stats.h>

#include <cstdint>
#include <optional>
#include <string>

namespace ibdkit::run {

struct SwiftSyncRunOptions {
    /// The check itself. An empty `swiftsync.chainstate` with `statistics` set makes the run
    /// write into a temporary chainstate (removed before it returns), so that the statistics exist.
    swiftsync::SwiftSyncOptions swiftsync;
    /// Compute the written chainstate's statistics (gettxoutsetinfo's, hash_serialized_3) when the
    /// history is accepted.
    bool statistics{true};
    /// When set and the history is refused: the classic replay of blocks 1..n with these options
    /// (into a temporary chainstate: `chainstate`, `stop_height` and `statistics` are overridden).
    std::optional<ReplayOptions> fallback;
};

/// What the classic replay said of blocks 1..n after SwiftSync refused them.
struct FallbackVerdict {
    std::optional<std::string> error;      ///< the classic replay itself failed (I/O, a missing block)
    bool valid{false};                     ///< every block 1..n connected
    int height{-1};                        ///< the height it reached
    std::optional<std::string> reject_reason; ///< Core's reason for the first invalid block
    int reject_height{-1};
    std::optional<uint256> hash_serialized; ///< the UTXO set's hash_serialized_3 at n, when valid
};

struct SwiftSyncRunResult {
    swiftsync::SwiftSyncResult swiftsync;
    std::optional<UtxoStats> utxo;          ///< the written chainstate's statistics (accepted and asked for)
    std::optional<FallbackVerdict> fallback; ///< only for a refused history with a fallback asked for
    uint64_t peak_rss_bytes{0};             ///< the process's, from the kernel, when the run ended
};

/// Runs SwiftSyncReplay, then the statistics, then the fallback (each as the options ask). A
/// refused history is not an error: `swiftsync.verdict.ok` is false. Errors: SwiftSyncReplay's
/// (bad options, unreadable hints or blocks, a chainstate the write guards refuse:
/// Errc::Refused), a temporary chainstate that cannot be made (Errc::Io), a written chainstate
/// that cannot be read back (Errc::Corrupt). Blocks until the run ends; the progress callbacks
/// run on the calling thread (the fallback's through `fallback->on_progress`).
Result<SwiftSyncRunResult> RunSwiftSync(SwiftSyncRunOptions options);

/// How a finished run ended, for whoever turns it into an exit status or an exception.
enum class SwiftSyncOutcome {
    Accepted,       ///< the history is accepted (the chainstate, if any, is written)
    Refused,        ///< refused; the fallback, if asked for, rejected a block with Core's reason
    HintsWrong,     ///< refused, but the fallback connected every block: the hints or rev data were wrong
    FallbackFailed, ///< refused, and the fallback could not finish (its error says why)
};
SwiftSyncOutcome OutcomeOf(const SwiftSyncRunResult& r);

} // namespace ibdkit::run

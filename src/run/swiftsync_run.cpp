// `replay --swiftsync` as one driver (include/ibdkit/run/swiftsync_run.h): the check, the
// statistics of what it wrote, the classic replay as the fallback of a refused history.
#include <ibdkit/run/swiftsync_run.h>

#include <ibdkit/coins/coins_db.h>
#include <ibdkit/utxo/stats.h>

#include "run/scratch_dir.h"

#include <filesystem>
#include <utility>

namespace ibdkit::run {
namespace {

namespace fs = std::filesystem;

/// The classic replay of blocks 1..n into a temporary chainstate, as a verdict.
FallbackVerdict Fallback(ReplayOptions classic, uint32_t n)
{
    classic.chainstate.clear();
    classic.stop_height = int(n);
    classic.statistics = true;
    FallbackVerdict f;
    auto r = Replay(classic);
    if (!r) {
        f.error = r.error().message;
        return f;
    }
    f.height = r->height;
    if (r->reject_reason) {
        f.reject_reason = r->reject_reason;
        f.reject_height = r->reject_height;
        return f;
    }
    f.valid = r->height == int(n);
    if (r->utxo) f.hash_serialized = r->utxo->hash_serialized;
    return f;
}

} // namespace

Result<SwiftSyncRunResult> RunSwiftSync(SwiftSyncRunOptions options)
{
    swiftsync::SwiftSyncOptions& o = options.swiftsync;
    // Without a chainstate the statistics need one: a temporary one, removed after.
    std::optional<ScratchDir> temporary;
    if (o.chainstate.empty() && options.statistics) {
        auto made = ScratchDir::Make("swiftsync");
        if (!made) return made.error();
        o.chainstate = temporary.emplace(std::move(*made)).Path();
    }
    auto r = swiftsync::SwiftSyncReplay(o);
    if (!r) return r.error();
    SwiftSyncRunResult out;
    out.swiftsync = std::move(*r);
    if (out.swiftsync.verdict.ok && options.statistics) {
        auto s = StatsOf(o.chainstate);
        if (!s) return s.error();
        out.utxo = *s;
    }
    if (!out.swiftsync.verdict.ok && options.fallback) out.fallback = Fallback(*options.fallback, out.swiftsync.height);
    out.peak_rss_bytes = PeakRssBytes();
    return out;
}

SwiftSyncOutcome OutcomeOf(const SwiftSyncRunResult& r)
{
    if (r.swiftsync.verdict.ok) return SwiftSyncOutcome::Accepted;
    if (!r.fallback) return SwiftSyncOutcome::Refused;
    if (r.fallback->error) return SwiftSyncOutcome::FallbackFailed;
    return r.fallback->valid ? SwiftSyncOutcome::HintsWrong : SwiftSyncOutcome::Refused;
}

} // namespace ibdkit::run

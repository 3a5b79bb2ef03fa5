// `ibdkit swiftsync` as one driver (include/ibdkit/run/swiftsync_ranges.h).
#include <ibdkit/run/swiftsync_ranges.h>

#include <ibdkit/blockfile/locate.h>
#include <ibdkit/swiftsync/hints.h>

#include <algorithm>
#include <optional>
#include <vector>

namespace ibdkit::run {

Result<SwiftSyncRangesResult> CheckSwiftSyncRanges(const SwiftSyncRangesOptions& o)
{
    const bool coins_mode = o.mode == swiftsync::AggregateMode::Coins;
    if (coins_mode && o.source.datadir.empty()) {
        return Error{Errc::InvalidValue, "coins mode reads the spent coins from a Bitcoin Core datadir's rev files: give a "
                                         "datadir, or use outpoints mode for bare block files (it checks much less)"};
    }
    auto hints = swiftsync::Hints::Read(o.hints);
    if (!hints) return hints.error();
    auto loc = LocateBlocks(o.source);
    if (!loc) return loc.error();
    std::optional<DatadirUndo> undo;
    swiftsync::CoinsModeOptions co;
    if (coins_mode) {
        auto u = LocateUndoInDatadir(o.source.datadir, loc->chain);
        if (!u) return u.error();
        undo = std::move(*u);
        co.undo = &*undo;
        co.assumevalid = o.assumevalid;
        co.minimum_chain_work = o.minimum_chain_work;
        co.skip_scripts = o.skip_scripts;
    }
    SwiftSyncRangesResult res;
    res.chain = loc->chain;
    res.mode = o.mode;
    res.height = hints->height();
    const uint32_t n = res.height;
    swiftsync::CheckRangeOptions ro;
    ro.threads = o.threads;
    ro.policy = o.policy;
    ro.collect_unspent = false;
    if (o.on_progress) ro.on_progress = [&o, n](uint32_t h, uint32_t) { o.on_progress(h, n); };
    const swiftsync::Salt salt = swiftsync::Salt::Random();
    std::vector<swiftsync::Partial> parts;
    const uint32_t k = std::max(1u, std::min(o.ranges, std::max(n, 1u)));
    for (uint32_t i = 0; i < k && n > 0; ++i) {
        const uint32_t from = uint32_t(uint64_t(n) * i / k) + 1, to = uint32_t(uint64_t(n) * (i + 1) / k);
        auto p = coins_mode ? swiftsync::CheckRangeCoins(*loc, *hints, salt, from, to, ro, co)
                            : swiftsync::CheckRange(*loc, *hints, salt, from, to, ro);
        if (!p) return p.error();
        parts.push_back(std::move(*p));
    }
    res.ranges = parts.size();
    res.verdict = swiftsync::Combine(parts, n, loc->chain);
    return res;
}

} // namespace ibdkit::run

// bench/sampler.cpp — timed mode: each op calibrated to --min-time per sample, a group's variants
// measured interleaved (A B C A B C …) for --epochs epochs, then medians, error and the per-epoch
// ratios to `plain` and to Core's engine.
#include "runner.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>

namespace ibdkit::bench::detail {
namespace {

using Clock = std::chrono::steady_clock;

double Median(std::vector<double> v)
{
    if (v.empty()) return 0;
    std::sort(v.begin(), v.end());
    const std::size_t n = v.size();
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

double TimeOps(const Op& op, uint64_t iters)
{
    const auto t0 = Clock::now();
    for (uint64_t i = 0; i < iters; ++i) op();
    const auto t1 = Clock::now();
    return std::chrono::duration<double, std::nano>(t1 - t0).count();
}

// Iterations so that one sample lasts about target_ns.
uint64_t Calibrate(const Op& op, double target_ns)
{
    uint64_t iters = 1;
    while (true) {
        const double ns = TimeOps(op, iters);
        if (ns >= target_ns / 4 || iters >= (uint64_t{1} << 40)) {
            const double per = std::max(ns / double(iters), 0.1);
            return std::max<uint64_t>(1, uint64_t(target_ns / per));
        }
        iters *= (ns < target_ns / 100) ? 10 : 2;
    }
}

} // namespace

std::vector<Result> RunSampled(const Selection& sel, const Options& opts, std::vector<std::string>* skipped)
{
    std::vector<Result> all;
    // --- timing: variants interleaved per epoch ---
    PerfCounters perf;
    if (!perf.ok() && !opts.smoke) std::fprintf(stderr, "bench: hardware counters unavailable: %s\n", perf.why().c_str());
    const double target_ns = opts.smoke ? 1e6 : opts.min_time_ms * 1e6;
    const int all_epochs = opts.smoke ? 1 : std::max(1, opts.epochs);
    for (const auto& g : sel.order) {
        struct Live {
            const Case* c;
            Op op;
            uint64_t iters;
            Result r;
            PerfCounters::Counts counts;
            double units{0};
            bool counted{false};
            double warm_ns{0};
        };
        std::vector<Live> live;
        for (const Case* c : sel.groups.at(g)) {
            std::string why;
            Op op = c->setup(&why);
            if (!op) {
                skipped->push_back(c->name() + ": " + (why.empty() ? "skipped" : why));
                continue;
            }
            // Warm-up; an op slower than a quarter of the target is calibrated by it alone.
            const double warm_ns = TimeOps(op, 1);
            const uint64_t iters = opts.smoke                   ? 1
                                   : warm_ns >= target_ns / 4 ? std::max<uint64_t>(1, uint64_t(target_ns / warm_ns))
                                                              : Calibrate(op, target_ns);
            Result r = ResultOf(*c);
                live.push_back({c, std::move(op), iters, std::move(r), {}, 0, false, warm_ns});
        }
        if (live.empty()) continue;
        // Slow groups (seconds per op) get fewer epochs, at least 3, to fit --max-group-time.
        int epochs = all_epochs;
        double epoch_s = 0;
        for (const auto& l : live) epoch_s += double(l.iters) * l.warm_ns / 1e9;
        if (!opts.smoke && opts.max_group_s > 0 && epoch_s * epochs > opts.max_group_s) {
            epochs = std::clamp(int(opts.max_group_s / std::max(epoch_s, 1e-9)), std::min(3, all_epochs), all_epochs);
        }
        std::fprintf(stderr, "bench: %s (%zu variant%s, %d epoch%s%s)\n", g.c_str(), live.size(),
                     live.size() == 1 ? "" : "s", epochs, epochs == 1 ? "" : "s",
                     epochs < all_epochs ? Printf(", each ~%.0f s: capped by --max-group-time", epoch_s).c_str() : "");
        int plain = -1, core = -1;
        for (std::size_t i = 0; i < live.size(); ++i) {
            if (live[i].c->variant == "plain") plain = int(i);
            if (core < 0 && IsCoreVariant(live[i].c->variant)) core = int(i);
        }
        std::vector<std::vector<double>> ratios(live.size()), core_ratios(live.size());
        for (int e = 0; e < epochs; ++e) {
            std::vector<double> sample(live.size());
            for (std::size_t i = 0; i < live.size(); ++i) {
                auto& l = live[i];
                if (perf.ok()) perf.Start();
                const double ns = TimeOps(l.op, l.iters);
                if (perf.ok()) {
                    if (auto c = perf.Stop()) {
                        l.counts.ins += c->ins;
                        l.counts.cyc += c->cyc;
                        l.counts.bra += c->bra;
                        l.counts.miss += c->miss;
                        l.units += double(l.iters) * l.c->units_per_op;
                        l.counted = true;
                    }
                }
                l.r.total_s += ns / 1e9;
                sample[i] = ns / double(l.iters) / l.c->units_per_op;
                l.r.samples.push_back(sample[i]);
            }
            for (std::size_t i = 0; i < live.size(); ++i) {
                if (plain >= 0) ratios[i].push_back(sample[i] / sample[std::size_t(plain)]);
                if (core >= 0) core_ratios[i].push_back(sample[i] / sample[std::size_t(core)]);
            }
        }
        std::vector<Result> rows;
        for (std::size_t i = 0; i < live.size(); ++i) {
            auto& l = live[i];
            auto& r = l.r;
            r.median_ns_per_unit = Median(r.samples);
            std::vector<double> dev;
            for (double s : r.samples) dev.push_back(std::fabs(s - r.median_ns_per_unit) / r.median_ns_per_unit * 100);
            r.err_pct = Median(dev);
            if (plain >= 0) {
                r.ratio_to_plain = Median(ratios[i]);
                r.ratio_lo = *std::min_element(ratios[i].begin(), ratios[i].end());
                r.ratio_hi = *std::max_element(ratios[i].begin(), ratios[i].end());
            }
            if (core >= 0) {
                r.ratio_to_core = Median(core_ratios[i]);
                r.core_lo = *std::min_element(core_ratios[i].begin(), core_ratios[i].end());
                r.core_hi = *std::max_element(core_ratios[i].begin(), core_ratios[i].end());
            }
            if (l.counted && l.units > 0) {
                r.ins_per_unit = double(l.counts.ins) / l.units;
                r.cyc_per_unit = double(l.counts.cyc) / l.units;
                r.bra_per_unit = double(l.counts.bra) / l.units;
                if (l.counts.bra) r.miss_pct = 100.0 * double(l.counts.miss) / double(l.counts.bra);
            }
            rows.push_back(r);
        }
        std::vector<const Result*> ptrs;
        for (const auto& r : rows) ptrs.push_back(&r);
        PrintGroup(ptrs);
        all.insert(all.end(), rows.begin(), rows.end());
    }
    std::vector<std::string> unstable;
    for (const auto& r : all) {
        if (r.err_pct > HIGH_ERR_PCT) unstable.push_back(r.name + Printf(" (%.1f%%)", r.err_pct));
    }
    if (!unstable.empty() && !opts.smoke) {
        std::printf("\nwarning: %zu result%s with err%% > %.0f%%: ", unstable.size(), unstable.size() == 1 ? "" : "s",
                    HIGH_ERR_PCT);
        for (std::size_t i = 0; i < unstable.size(); ++i) std::printf("%s%s", i ? ", " : "", unstable[i].c_str());
        std::printf(".\n  The machine was noisy: the ratios come from interleaved epochs and stay usable, the "
                    "absolute figures less so.\n  Re-run with a larger --min-time or --epochs on a quiet machine.\n");
    }
    return all;
}

} // namespace ibdkit::bench::detail

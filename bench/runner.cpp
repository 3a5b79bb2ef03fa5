#include "bench.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <sstream>

namespace ibdkit::bench {

std::vector<Case>& Registry()
{
    static std::vector<Case> cases;
    return cases;
}

std::optional<std::string> SharedDataFile(const std::string& relative)
{
    std::vector<std::filesystem::path> roots;
    if (const char* env = std::getenv("IBDKIT_SHARED_DATA")) roots.emplace_back(env);
    roots.emplace_back(std::filesystem::path(IBDKIT_SOURCE_DIR) / ".." / "shared" / "data");
    roots.emplace_back("../shared/data");
    for (const auto& r : roots) {
        auto p = r / relative;
        std::error_code ec;
        if (std::filesystem::is_regular_file(p, ec)) return p.lexically_normal().string();
    }
    return std::nullopt;
}

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

std::string Group3(double v, int decimals)
{
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.*f", decimals, v);
    std::string s(buf);
    auto dot = s.find('.');
    std::string ip = s.substr(0, dot == std::string::npos ? s.size() : dot);
    std::string frac = dot == std::string::npos ? "" : s.substr(dot);
    std::string out;
    for (std::size_t i = 0; i < ip.size(); ++i) {
        if (i && (ip.size() - i) % 3 == 0 && ip[i - 1] != '-') out += ',';
        out += ip[i];
    }
    return out + frac;
}

std::string Fmt(double v)
{
    if (v >= 100) return Group3(v, 2);
    if (v >= 1) return Group3(v, 2);
    return Group3(v, 4);
}

void PrintTable(const std::string& unit, const std::vector<Result>& rows)
{
    std::printf("\n| %20s | %20s | %7s | %9s | %9s | %6s | %9s | %6s | %9s | %-17s | %s\n",
                ("ns/" + unit).c_str(), (unit + "/s").c_str(), "err%", ("ins/" + unit).c_str(),
                ("cyc/" + unit).c_str(), "IPC", ("bra/" + unit).c_str(), "miss%", "total",
                "vs plain", "benchmark");
    std::printf("|---------------------:|---------------------:|--------:|----------:|----------:|-------:|----------:|-------:|----------:|:------------------|:----------\n");
    for (const auto& r : rows) {
        std::string ratio = "-";
        if (r.ratio_to_plain) {
            char b[64];
            std::snprintf(b, sizeof b, "%.2fx [%.2f-%.2f]", *r.ratio_to_plain, *r.ratio_lo, *r.ratio_hi);
            ratio = b;
        }
        const double per_s = r.median_ns_per_unit > 0 ? 1e9 / r.median_ns_per_unit : 0;
        std::printf("| %20s | %20s | %6.1f%% | %9s | %9s | %6s | %9s | %6s | %9.2f | %-17s | `%s`%s\n",
                    Fmt(r.median_ns_per_unit).c_str(), Group3(per_s, 2).c_str(), r.err_pct, "-", "-", "-",
                    "-", "-", r.total_s, ratio.c_str(), r.name.c_str(), r.err_pct > 5 ? "  (unstable: err% > 5)" : "");
    }
    std::fflush(stdout);
}

void WriteJson(const std::string& path, const std::vector<Result>& results)
{
    std::ofstream f(path);
    f << "{\n  \"benchmarks\": [\n";
    for (std::size_t i = 0; i < results.size(); ++i) {
        const auto& r = results[i];
        f << "    {\"name\": \"" << r.name << "\", \"group\": \"" << r.group << "\", \"variant\": \"" << r.variant
          << "\", \"unit\": \"" << r.unit << "\", \"median_ns_per_unit\": " << r.median_ns_per_unit
          << ", \"err_pct\": " << r.err_pct << ", \"total_s\": " << r.total_s;
        if (r.ratio_to_plain) {
            f << ", \"ratio_to_plain\": " << *r.ratio_to_plain << ", \"ratio_min\": " << *r.ratio_lo
              << ", \"ratio_max\": " << *r.ratio_hi;
        }
        f << ", \"samples_ns_per_unit\": [";
        for (std::size_t j = 0; j < r.samples.size(); ++j) f << (j ? ", " : "") << r.samples[j];
        f << "]}" << (i + 1 < results.size() ? "," : "") << "\n";
    }
    f << "  ]\n}\n";
}

} // namespace

std::vector<Result> Run(const Options& opts)
{
    const std::regex re(opts.filter);
    // Group the selected cases, keeping registration order.
    std::vector<std::string> order;
    std::map<std::string, std::vector<const Case*>> groups;
    for (const auto& c : Registry()) {
        if (!std::regex_search(c.name(), re)) continue;
        if (!opts.policies.empty() && !c.variant.empty() &&
            std::find(opts.policies.begin(), opts.policies.end(), c.variant) == opts.policies.end()) {
            continue;
        }
        if (opts.smoke && !c.smoke_ok) continue;
        if (!groups.count(c.group)) order.push_back(c.group);
        groups[c.group].push_back(&c);
    }
    if (opts.list) {
        for (const auto& g : order) {
            for (const Case* c : groups[g]) std::printf("%s (unit: %s)\n", c->name().c_str(), c->unit.c_str());
        }
        return {};
    }

    std::vector<Result> all;
    std::vector<std::string> skipped;
    const double target_ns = opts.smoke ? 1e6 : opts.min_time_ms * 1e6;
    const int epochs = opts.smoke ? 1 : std::max(1, opts.epochs);
    for (const auto& g : order) {
        struct Live {
            const Case* c;
            Op op;
            uint64_t iters;
            Result r;
        };
        std::vector<Live> live;
        for (const Case* c : groups[g]) {
            std::string why;
            Op op = c->setup(&why);
            if (!op) {
                skipped.push_back(c->name() + ": " + (why.empty() ? "skipped" : why));
                continue;
            }
            op(); // warm-up
            const uint64_t iters = opts.smoke ? 1 : Calibrate(op, target_ns);
            Result r;
            r.name = c->name();
            r.group = c->group;
            r.variant = c->variant;
            r.unit = c->unit;
            live.push_back({c, std::move(op), iters, std::move(r)});
        }
        if (live.empty()) continue;
        std::fprintf(stderr, "bench: %s (%zu variant%s, %d epoch%s)\n", g.c_str(), live.size(),
                     live.size() == 1 ? "" : "s", epochs, epochs == 1 ? "" : "s");
        int plain = -1;
        for (std::size_t i = 0; i < live.size(); ++i) {
            if (live[i].c->variant == "plain") plain = int(i);
        }
        std::vector<std::vector<double>> ratios(live.size());
        for (int e = 0; e < epochs; ++e) {
            std::vector<double> sample(live.size());
            for (std::size_t i = 0; i < live.size(); ++i) {
                auto& l = live[i];
                const double ns = TimeOps(l.op, l.iters);
                l.r.total_s += ns / 1e9;
                sample[i] = ns / double(l.iters) / l.c->units_per_op;
                l.r.samples.push_back(sample[i]);
            }
            if (plain >= 0) {
                for (std::size_t i = 0; i < live.size(); ++i) ratios[i].push_back(sample[i] / sample[std::size_t(plain)]);
            }
        }
        std::vector<Result> rows;
        for (std::size_t i = 0; i < live.size(); ++i) {
            auto& r = live[i].r;
            r.median_ns_per_unit = Median(r.samples);
            std::vector<double> dev;
            for (double s : r.samples) dev.push_back(std::fabs(s - r.median_ns_per_unit) / r.median_ns_per_unit * 100);
            r.err_pct = Median(dev);
            if (plain >= 0) {
                r.ratio_to_plain = Median(ratios[i]);
                r.ratio_lo = *std::min_element(ratios[i].begin(), ratios[i].end());
                r.ratio_hi = *std::max_element(ratios[i].begin(), ratios[i].end());
            }
            rows.push_back(r);
        }
        PrintTable(live.front().c->unit, rows);
        all.insert(all.end(), rows.begin(), rows.end());
    }
    if (!skipped.empty()) {
        std::printf("\nskipped:\n");
        for (const auto& s : skipped) std::printf("  %s\n", s.c_str());
    }
    if (!opts.json_path.empty()) WriteJson(opts.json_path, all);
    return all;
}

} // namespace ibdkit::bench

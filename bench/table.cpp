// bench/table.cpp — bench_bitcoin-style tables of results: one per group, on the console while
// the run goes, and as markdown in the report.
#include "runner.h"

#include <algorithm>
#include <cstdio>
#include <sstream>

namespace ibdkit::bench {
namespace detail {
namespace {

std::string RatioCell(const std::optional<double>& r, const std::optional<double>& lo, const std::optional<double>& hi)
{
    if (!r) return "-";
    if (*lo == *hi) return Printf("%.2fx", *r);
    return Printf("%.2fx [%.2f-%.2f]", *r, *lo, *hi);
}

std::string OptCell(const std::optional<double>& v, int decimals)
{
    return v ? Group3(*v, decimals) : std::string("-");
}

} // namespace

std::string TableFor(const std::vector<const Result*>& rows)
{
    const std::string& unit = rows.front()->unit;
    const bool ir = std::any_of(rows.begin(), rows.end(), [](const Result* r) { return r->ir_per_unit.has_value(); });
    std::string out;
    if (ir) {
        out += Printf("| %16s | %16s | %10s | %-17s | %s\n", ("Ir/" + unit).c_str(), "Ir/iteration", "iterations",
                      "vs plain", "benchmark");
        out += "|-----------------:|-----------------:|-----------:|:------------------|:----------\n";
        for (const Result* r : rows) {
            out += Printf("| %16s | %16s | %10llu | %-17s | `%s`\n", OptCell(r->ir_per_unit, 2).c_str(),
                          Group3(r->ir_per_unit.value_or(0) * r->units_per_op, 0).c_str(),
                          static_cast<unsigned long long>(r->ir_iters),
                          RatioCell(r->ratio_to_plain, r->ratio_lo, r->ratio_hi).c_str(), r->name.c_str());
        }
        return out;
    }
    out += Printf("| %20s | %20s | %7s | %9s | %9s | %6s | %9s | %6s | %9s | %-17s | %s\n", ("ns/" + unit).c_str(),
                  (unit + "/s").c_str(), "err%", ("ins/" + unit).c_str(), ("cyc/" + unit).c_str(), "IPC",
                  ("bra/" + unit).c_str(), "miss%", "total", "vs plain", "benchmark");
    out += "|---------------------:|---------------------:|--------:|----------:|----------:|-------:|----------:|-------:|----------:|:------------------|:----------\n";
    for (const Result* r : rows) {
        const double per_s = r->median_ns_per_unit > 0 ? 1e9 / r->median_ns_per_unit : 0;
        std::optional<double> ipc;
        if (r->ins_per_unit && r->cyc_per_unit && *r->cyc_per_unit > 0) ipc = *r->ins_per_unit / *r->cyc_per_unit;
        out += Printf("| %20s | %20s | %6.1f%% | %9s | %9s | %6s | %9s | %6s | %9.2f | %-17s | `%s`%s\n",
                      Fmt(r->median_ns_per_unit).c_str(), Group3(per_s, 2).c_str(), r->err_pct,
                      OptCell(r->ins_per_unit, 2).c_str(), OptCell(r->cyc_per_unit, 2).c_str(),
                      ipc ? Printf("%.3f", *ipc).c_str() : "-", OptCell(r->bra_per_unit, 2).c_str(),
                      r->miss_pct ? Printf("%.1f%%", *r->miss_pct).c_str() : "-", r->total_s,
                      RatioCell(r->ratio_to_plain, r->ratio_lo, r->ratio_hi).c_str(), r->name.c_str(),
                      r->err_pct > HIGH_ERR_PCT ? "  (unstable: err% > 5)" : "");
    }
    return out;
}

/// "ibdkit vs Core" lines for a group measured beside Core's engine.
std::string CoreLines(const std::vector<const Result*>& rows)
{
    auto core = std::find_if(rows.begin(), rows.end(), [](const Result* r) { return IsCoreVariant(r->variant); });
    if (core == rows.end()) return {};
    std::string out = Printf("ibdkit / Core (`%s`, libbitcoinkernel.so, same interleaved run; < 1 = faster than Core):\n",
                             (*core)->name.c_str());
    for (const Result* r : rows) {
        if (r == *core || !r->ratio_to_core) continue;
        out += Printf("  %-44s %.3fx [%.3f-%.3f]  = %.2fx %s than Core\n", r->name.c_str(), *r->ratio_to_core,
                      *r->core_lo, *r->core_hi, *r->ratio_to_core <= 1 ? 1 / *r->ratio_to_core : *r->ratio_to_core,
                      *r->ratio_to_core <= 1 ? "faster" : "slower");
    }
    return out;
}

std::vector<std::vector<const Result*>> ByGroup(const std::vector<Result>& results)
{
    std::vector<std::vector<const Result*>> groups;
    for (const auto& r : results) {
        if (groups.empty() || groups.back().front()->group != r.group) groups.emplace_back();
        groups.back().push_back(&r);
    }
    return groups;
}

void PrintGroup(const std::vector<const Result*>& rows)
{
    std::printf("\n%s", TableFor(rows).c_str());
    const std::string core = CoreLines(rows);
    if (!core.empty()) std::printf("%s", core.c_str());
    std::fflush(stdout);
}

} // namespace detail

using namespace detail;

std::string FormatTables(const std::vector<Result>& results, bool markdown)
{
    std::string out;
    for (const auto& rows : ByGroup(results)) {
        out += "\n" + TableFor(rows);
        std::string core = CoreLines(rows);
        if (!core.empty()) {
            if (markdown) {
                // Render the Core lines as a list below the table.
                std::string md;
                std::stringstream ss(core);
                std::string line;
                bool first = true;
                while (std::getline(ss, line)) {
                    md += first ? "\n" + line + "\n\n" : "- " + Trim(line) + "\n";
                    first = false;
                }
                core = md;
            }
            out += core;
        }
    }
    return out;
}

} // namespace ibdkit::bench

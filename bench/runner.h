// bench/runner.h — the parts of `ibdkit bench`'s runner shared between its files (not the
// benchmarks' API: that is bench.h). One file per job:
//   runner.cpp       registry, case selection, Core's library, dispatch, JSON/report at the end
//   sampler.cpp      timed mode: calibration, interleaved epochs, medians and ratios
//   counters.cpp     hardware counters (perf_event)
//   callgrind.cpp    instruction counts: valgrind children and the child's fixed-iteration loop
//   environment.cpp  the machine and build a result describes; Core's libbitcoinkernel.so
//   json.cpp         results as JSON
//   table.cpp        bench_bitcoin-style tables (console and markdown)
//   report.cpp       DIR/report.md and the chart
//   util.cpp         number formatting, strings, shell helpers
#pragma once

#include "bench.h"

#include <array>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace ibdkit::bench::detail {

/// Results whose median absolute percentage error exceeds this are flagged as unstable.
constexpr double HIGH_ERR_PCT = 5.0;

/// Bitcoin Core's engine as a variant ("core", "core-kernel"): the reference of the "vs Core" ratios.
inline bool IsCoreVariant(const std::string& v) { return v == "core" || v.rfind("core-kernel", 0) == 0; }

/// The selected cases by group: group names in registration order, and each group's cases.
struct Selection {
    std::vector<std::string> order;
    std::map<std::string, std::vector<const Case*>> groups;
};

// ---- util.cpp ----
/// v with thousands separators and `decimals` decimals: 1234567.5 -> "1,234,567.50".
std::string Group3(double v, int decimals);
/// A figure with 2 decimals, or 4 below 1.
std::string Fmt(double v);
std::string Printf(const char* fmt, ...) __attribute__((format(printf, 1, 2)));
std::string Trim(std::string s);
/// Runs a shell command and returns its stdout (trimmed), or nullopt if it failed.
std::optional<std::string> Capture(const std::string& cmd);
std::string ShellQuote(const std::string& s);
/// This executable's path (/proc/self/exe), empty if unknown.
std::string SelfExe();
/// A result naming the case (name, group, variant, unit, units per op); the caller fills in the figures.
Result ResultOf(const Case& c);

// ---- counters.cpp ----
/// instructions, cycles, branches, branch-misses of this thread in user space, as one group.
class PerfCounters {
public:
    struct Counts {
        uint64_t ins{0}, cyc{0}, bra{0}, miss{0};
    };

    PerfCounters();
    ~PerfCounters();
    PerfCounters(const PerfCounters&) = delete;
    PerfCounters& operator=(const PerfCounters&) = delete;

    bool ok() const { return m_ok; }
    const std::string& why() const { return m_why; }

    void Start();
    std::optional<Counts> Stop();

private:
    void Close();
    std::array<int, 4> m_fds{-1, -1, -1, -1};
    bool m_ok{false};
    std::string m_why;
};

// ---- table.cpp ----
/// One group's table (timings, or Ir under --callgrind).
std::string TableFor(const std::vector<const Result*>& rows);
/// "ibdkit vs Core" lines for a group measured beside Core's engine; empty if none.
std::string CoreLines(const std::vector<const Result*>& rows);
/// Consecutive results of one group.
std::vector<std::vector<const Result*>> ByGroup(const std::vector<Result>& results);
/// Prints a group's table and Core lines to stdout.
void PrintGroup(const std::vector<const Result*>& rows);

// ---- json.cpp ----
/// Writes results (and the environment, if given) as JSON to `path`.
void WriteJson(const std::string& path, const std::vector<Result>& results, const Environment* env);

// ---- sampler.cpp ----
/// Timed mode: each group's variants interleaved per epoch; prints each group's table as it
/// completes and a warning for unstable results. Cases whose setup declines go to *skipped.
std::vector<Result> RunSampled(const Selection& sel, const Options& opts, std::vector<std::string>* skipped);

// ---- callgrind.cpp ----
/// --callgrind: one valgrind child per case; prints each group's table. nullopt (after saying so)
/// if valgrind is not installed.
std::optional<std::vector<Result>> RunCallgrind(const Selection& sel, const Options& opts, std::vector<std::string>* skipped);
/// The child of --callgrind: each case opts.fixed_iters times inside the counted loop, untimed.
std::vector<Result> RunFixedIterations(const Selection& sel, const Options& opts, std::vector<std::string>* skipped);

} // namespace ibdkit::bench::detail

// bench/bench.h — ibdkit's benchmark runner (`ibdkit bench`): the cases, the registry and the run,
// the harness's interface to the CLI; it includes no private header of the library. A benchmark
// file includes bench/bench_case.h, which adds the helpers that time the library's internals.
//
// A benchmark case is a group name ("DataStreamAlloc"), a variant (usually a buffer policy), a
// unit ("byte", "block", "coin") with the number of units one iteration processes, and a setup
// function that prepares inputs (untimed) and returns the operation to time. Cases register
// themselves with a static `Registrar` in any bench/*.cpp (the bench library is an OBJECT library,
// so no registration is dropped by the linker).
//
// Variants of a group are measured interleaved (A B C A B C …) in one run, so the ratios between
// them survive a noisy machine; each epoch gives one ns/unit sample per variant and one ratio to
// the `plain` variant.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace ibdkit::bench {

using Op = std::function<void()>;

struct Case {
    std::string group;     ///< e.g. "DataStreamAlloc"
    std::string variant;   ///< e.g. "hardened"; empty for a single-variant group
    std::string unit;      ///< "byte", "block", "coin", …
    double units_per_op{1};
    /// Prepares inputs and returns the op to time; returns an empty function to skip (e.g. data
    /// missing), after setting *skip_reason.
    std::function<Op(std::string* skip_reason)> setup;
    bool smoke_ok{true};   ///< run in `--smoke` mode
    std::string name() const { return variant.empty() ? group : group + "/" + variant; }
};

std::vector<Case>& Registry();

struct Registrar {
    explicit Registrar(Case c) { Registry().push_back(std::move(c)); }
};

struct Options {
    std::string filter{".*"};            ///< ECMAScript regex over case names
    std::vector<std::string> policies;   ///< empty = all variants
    double min_time_ms{200};             ///< target time per sample
    int epochs{11};                      ///< interleaved samples per variant
    /// Groups whose epochs would take longer in total get fewer epochs (at least 3); 0 = no cap.
    double max_group_s{60};
    bool smoke{false};                   ///< one tiny sample per case, for `make test`
    std::string json_path;               ///< write JSON results here if non-empty
    bool list{false};
    /// Write DIR/report.md, DIR/results.json and (via scripts/bench_report.py) DIR/policy_cost.png.
    std::string report_dir;
    /// Instruction counts instead of timings: re-exec `exe` under valgrind --tool=callgrind for
    /// each selected case (callgrind_iters iterations, collection only inside the loop).
    bool callgrind{false};
    uint64_t callgrind_iters{10};
    /// Child mode of --callgrind: run each selected case `fixed_iters` times, untimed (0 = off).
    uint64_t fixed_iters{0};
    /// Core's libbitcoinkernel.so; empty = $IBDKIT_KERNEL_LIB, then the pbk package (python3).
    std::string kernel_lib;
    /// The executable whose `bench` subcommand runs a case (for --callgrind); empty = this process.
    std::string exe;
};

struct Result {
    std::string name, group, variant, unit;
    double median_ns_per_unit{0};
    double err_pct{0};                   ///< median absolute percentage error of the samples
    double total_s{0};
    std::optional<double> ratio_to_plain;       ///< median of per-epoch ratios
    std::optional<double> ratio_lo, ratio_hi;   ///< spread (min, max) of per-epoch ratios
    std::vector<double> samples;         ///< ns/unit per epoch
    // Hardware counters (perf_event), per unit; absent where the kernel does not allow them.
    std::optional<double> ins_per_unit, cyc_per_unit, bra_per_unit, miss_pct;
    /// This variant / Bitcoin Core's ("core*" variant of the same group), median of per-epoch
    /// ratios with [min, max]: < 1 means faster than Core.
    std::optional<double> ratio_to_core, core_lo, core_hi;
    /// --callgrind: instructions (Ir) per unit and the number of iterations counted.
    std::optional<double> ir_per_unit;
    uint64_t ir_iters{0};
    double units_per_op{1};
};

/// Runs the selected cases; prints tables to stdout; returns the results. Returns an empty vector
/// and prints the list when opts.list is set.
std::vector<Result> Run(const Options& opts);
/// Same; also returns "name: reason" for every selected case that did not run.
std::vector<Result> Run(const Options& opts, std::vector<std::string>* skipped);

/// Where Core's libbitcoinkernel.so is: `explicit_path` if non-empty, else $IBDKIT_KERNEL_LIB, else
/// <pbk package dir>/_libs/libbitcoinkernel.so as python3 reports it. nullopt (with *why) if none
/// of them exists.
std::optional<std::string> FindKernelLib(const std::string& explicit_path, std::string* why);

/// Whether hardware counters (instructions, cycles, branches, branch-misses) can be read here;
/// if not, *why says why (perf_event_paranoid, errno of perf_event_open).
bool HardwareCountersAvailable(std::string* why);

/// The machine and build a report describes.
struct Environment {
    std::string date_utc, cpu, cores, kernel, compiler, build_type, flags, commit, command, counters, core_lib;
};
Environment DescribeEnvironment(const Options& opts);

/// Markdown tables of results (the layout printed by Run), one per unit and group.
std::string FormatTables(const std::vector<Result>& results, bool markdown);

/// Writes DIR/report.md and DIR/results.json; then runs scripts/bench_report.py for the chart.
/// Returns false with *error on failure to write (a missing chart is reported, not an error).
bool WriteReport(const std::string& dir, const std::vector<Result>& results, const Options& opts,
                 const std::vector<std::string>& skipped, std::string* error);

/// Path of a file under tests/data (or $IBDKIT_TEST_DATA), or nullopt if it is not present.
std::optional<std::string> TestDataFile(const std::string& relative);

} // namespace ibdkit::bench

// bench/bench.h — ibdkit's benchmark runner (`ibdkit bench`).
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
#include <vector>

namespace ibdkit::bench {

/// Keeps a value (and memory reachable from it) alive and observable: the compiler must assume
/// it is read, so the work that produced it cannot be elided.
template <typename T>
inline void DoNotOptimize(const T& value)
{
    asm volatile("" : : "r,m"(value) : "memory");
}
inline void ClobberMemory() { asm volatile("" : : : "memory"); }

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
    bool smoke{false};                   ///< one tiny sample per case, for `make test`
    std::string json_path;               ///< write JSON results here if non-empty
    bool list{false};
};

struct Result {
    std::string name, group, variant, unit;
    double median_ns_per_unit{0};
    double err_pct{0};                   ///< median absolute percentage error of the samples
    double total_s{0};
    std::optional<double> ratio_to_plain;       ///< median of per-epoch ratios
    std::optional<double> ratio_lo, ratio_hi;   ///< spread (min, max) of per-epoch ratios
    std::vector<double> samples;         ///< ns/unit per epoch
};

/// Runs the selected cases; prints tables to stdout; returns the results. Returns an empty vector
/// and prints the list when opts.list is set.
std::vector<Result> Run(const Options& opts);

/// Path of a file under ../shared/data, or nullopt if it is not present.
std::optional<std::string> SharedDataFile(const std::string& relative);

} // namespace ibdkit::bench

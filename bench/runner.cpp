// bench/runner.cpp — `ibdkit bench`: the registry, the selection of cases (--filter, --policy,
// --smoke), Core's library for the "core*" variants, dispatch to the timed sampler
// (sampler.cpp) or to instruction counting (callgrind.cpp), then skipped cases, JSON and report.
// runner.h lists the other files and their jobs.
#include "runner.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <regex>

#ifndef IBDKIT_SOURCE_DIR
#define IBDKIT_SOURCE_DIR "."
#endif

namespace ibdkit::bench {

using namespace detail;

std::vector<Case>& Registry()
{
    static std::vector<Case> cases;
    return cases;
}

std::optional<std::string> TestDataFile(const std::string& relative)
{
    std::vector<std::filesystem::path> roots;
    if (const char* env = std::getenv("IBDKIT_TEST_DATA")) roots.emplace_back(env);
    roots.emplace_back(std::filesystem::path(IBDKIT_SOURCE_DIR) / "tests" / "data");
    roots.emplace_back("tests/data");
    for (const auto& r : roots) {
        auto p = r / relative;
        std::error_code ec;
        if (std::filesystem::is_regular_file(p, ec)) return p.lexically_normal().string();
    }
    return std::nullopt;
}

std::vector<Result> Run(const Options& opts) { return Run(opts, nullptr); }

std::vector<Result> Run(const Options& opts, std::vector<std::string>* skipped_out)
{
    const std::regex re(opts.filter);
    const bool default_filter = opts.filter == ".*" || opts.filter.empty();
    std::vector<std::string> skipped;
    // Group the selected cases, keeping registration order.
    Selection sel;
    auto& order = sel.order;
    auto& groups = sel.groups;
    for (const auto& c : Registry()) {
        if (!std::regex_search(c.name(), re)) continue;
        if (!opts.policies.empty() && !c.variant.empty() && !IsCoreVariant(c.variant) &&
            std::find(opts.policies.begin(), opts.policies.end(), c.variant) == opts.policies.end()) {
            continue;
        }
        if (opts.smoke && !c.smoke_ok) {
            skipped.push_back(c.name() + ": not in --smoke mode (takes seconds per iteration)");
            continue;
        }
        if (opts.callgrind && !c.smoke_ok && default_filter) {
            skipped.push_back(c.name() + ": too slow under valgrind unless selected with --filter");
            continue;
        }
        if (!groups.count(c.group)) order.push_back(c.group);
        groups[c.group].push_back(&c);
    }
    if (opts.list) {
        for (const auto& g : order) {
            for (const Case* c : groups[g]) std::printf("%s (unit: %s)\n", c->name().c_str(), c->unit.c_str());
        }
        return {};
    }

    // Core's engine: point bench_block.cpp's loader at the library before any setup runs.
    bool wants_core = false;
    for (const auto& g : order) {
        for (const Case* c : groups[g]) wants_core |= IsCoreVariant(c->variant);
    }
    std::string core_why;
    if (wants_core) {
        if (auto lib = FindKernelLib(opts.kernel_lib, &core_why)) {
            ::setenv("IBDKIT_KERNEL_LIB", lib->c_str(), 1);
            if (!opts.fixed_iters) std::fprintf(stderr, "bench: Core side by side with %s\n", lib->c_str());
        } else {
            const char* env = std::getenv("IBDKIT_KERNEL_LIB");
            if (!opts.kernel_lib.empty() || (env && *env)) {
                // The user named a library that is not there: do not fall back to another one.
                for (auto& kv : groups) {
                    std::erase_if(kv.second, [&](const Case* c) {
                        if (!IsCoreVariant(c->variant)) return false;
                        skipped.push_back(c->name() + ": " + core_why);
                        return true;
                    });
                }
            } else if (!opts.fixed_iters) {
                std::fprintf(stderr, "bench: %s\n", core_why.c_str());
            }
        }
    }

    std::vector<Result> all;

    // --- child of --callgrind: fixed iterations, untimed ---
    if (opts.fixed_iters) {
        all = RunFixedIterations(sel, opts, &skipped);
        if (skipped_out) *skipped_out = skipped;
        return all;
    }

    if (opts.callgrind) {
        // --- --callgrind: one valgrind child per case ---
        auto counted = RunCallgrind(sel, opts, &skipped);
        if (!counted) {
            if (skipped_out) *skipped_out = skipped;
            return {};
        }
        all = std::move(*counted);
    } else {
        // --- timing: variants interleaved per epoch ---
        all = RunSampled(sel, opts, &skipped);
    }
    if (!skipped.empty()) {
        std::printf("\nskipped:\n");
        for (const auto& s : skipped) std::printf("  %s\n", s.c_str());
    }
    std::fflush(stdout);
    if (!opts.json_path.empty()) {
        const Environment env = DescribeEnvironment(opts);
        WriteJson(opts.json_path, all, &env);
    }
    if (!opts.report_dir.empty()) {
        std::string err;
        if (!WriteReport(opts.report_dir, all, opts, skipped, &err)) std::fprintf(stderr, "bench: report: %s\n", err.c_str());
    }
    if (skipped_out) *skipped_out = skipped;
    return all;
}

} // namespace ibdkit::bench

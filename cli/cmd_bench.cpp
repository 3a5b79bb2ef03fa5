// `ibdkit bench`.
#include "commands.h"

#include "bench.h"

#include <ibdkit/common/write_guard.h>
#include <ibdkit/memory/policy_id.h>

#include <cstdio>
#include <optional>
#include <regex>
#include <sstream>

namespace ibdkit::cli {
namespace {

std::vector<std::string> ParsePolicyList(const std::string& arg)
{
    std::vector<std::string> out;
    if (arg.empty() || arg == "all") return out;
    std::stringstream ss(arg);
    std::string item;
    while (std::getline(ss, item, ',')) {
        auto id = ParsePolicy(item);
        if (!id) throw CLI::ValidationError("--policy", "unknown policy '" + item +
                                                         "' (expected " + PolicyNameList() + " or all)");
        out.emplace_back(PolicyName(*id));
    }
    return out;
}

/// A filter that is no regular expression, or matches no benchmark, is a usage error.
void CheckFilter(const std::string& filter)
{
    std::regex re;
    try {
        re = std::regex(filter);
    } catch (const std::regex_error& e) {
        throw UsageError("--filter '" + filter + "' is not a regular expression: " + e.what());
    }
    for (const auto& c : bench::Registry()) {
        if (std::regex_search(c.name(), re)) return;
    }
    throw UsageError("--filter '" + filter + "' matches no benchmark (ibdkit bench --list names them)");
}

const CommandRegistrar bench_cmd([](CLI::App& app) {
    auto* cmd = app.add_subcommand("bench", "Run benchmarks; every buffer policy side by side, interleaved");
    auto opts = std::make_shared<bench::Options>();
    auto policies = std::make_shared<std::string>("all");
    cmd->add_option("--filter", opts->filter, "Regular expression over benchmark names")->capture_default_str();
    cmd->add_option("--min-time", opts->min_time_ms, "Target milliseconds per sample")->check(NumberIn(0.001, 3.6e6))->capture_default_str();
    cmd->add_option("--epochs", opts->epochs, "Interleaved samples per benchmark")->check(IntegerIn(1, 100000))->capture_default_str();
    cmd->add_option("--max-group-time", opts->max_group_s,
                    "Seconds a benchmark's variants may take together; slow ones get fewer epochs (min 3; 0 = no cap)")
        ->check(NumberIn(0, 86400))
        ->capture_default_str();
    cmd->add_option("--policy", *policies, "Policies to compare: NAME[,NAME...] or all; NAME is one of " + PolicyNameList())->capture_default_str();
    cmd->add_option("--json", opts->json_path, "Also write results as JSON to this file");
    cmd->add_flag("--list", opts->list, "List benchmarks and exit");
    cmd->add_flag("--smoke", opts->smoke, "One short sample per benchmark (a check that all run)");
    cmd->add_option("--report", opts->report_dir,
                    "Write DIR/report.md (environment, tables, ratios) and DIR/policy_cost.png (chart)");
    cmd->add_flag("--callgrind", opts->callgrind,
                  "Count instructions with valgrind --tool=callgrind instead of timing (stable across runs)");
    cmd->add_option("--callgrind-iters", opts->callgrind_iters, "Iterations per benchmark under --callgrind")
        ->check(IntegerIn(1, MAX_COUNT))
        ->capture_default_str();
    cmd->add_option("--kernel-lib", opts->kernel_lib,
                    "Bitcoin Core's libbitcoinkernel.so (default: $IBDKIT_KERNEL_LIB, then the pbk Python package)");
    // Hidden: the child of --callgrind runs each selected case N times, untimed.
    cmd->add_option("--iterations", opts->fixed_iters)->check(IntegerIn(0, MAX_COUNT))->group("");
    cmd->callback([opts, policies] {
        opts->policies = ParsePolicyList(*policies);
        CheckFilter(opts->filter);
        if (!opts->json_path.empty()) CheckOutput(opts->json_path);
        if (auto core = opts->report_dir.empty() ? std::nullopt : CoreDataDirAround(opts->report_dir)) {
            throw UsageError("--report " + opts->report_dir + " is inside the Bitcoin Core data directory " + core->string() +
                             ": ibdkit never writes there; give the report a folder of its own");
        }
        bench::Run(*opts);
    });
});

// `ibdkit run` (the main job) lives in cli/cmd_run.cpp.

} // namespace
} // namespace ibdkit::cli

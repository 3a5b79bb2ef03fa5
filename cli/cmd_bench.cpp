// `ibdkit bench` and `ibdkit run`.
#include "commands.h"

#include "bench.h"

#include <ibdkit/memory/policy.h>

#include <cstdio>
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
                                                         "' (expected plain, zero-after-free, barrier-only, secure, hardened or all)");
        out.emplace_back(PolicyName(*id));
    }
    return out;
}

const CommandRegistrar bench_cmd([](CLI::App& app) {
    auto* cmd = app.add_subcommand("bench", "Run benchmarks; every buffer policy side by side, interleaved");
    auto opts = std::make_shared<bench::Options>();
    auto policies = std::make_shared<std::string>("all");
    cmd->add_option("--filter", opts->filter, "Regular expression over benchmark names")->capture_default_str();
    cmd->add_option("--min-time", opts->min_time_ms, "Target milliseconds per sample")->capture_default_str();
    cmd->add_option("--epochs", opts->epochs, "Interleaved samples per benchmark")->capture_default_str();
    cmd->add_option("--policy", *policies, "Policies to compare: NAME[,NAME...] or all")->capture_default_str();
    cmd->add_option("--json", opts->json_path, "Also write results as JSON to this file");
    cmd->add_flag("--list", opts->list, "List benchmarks and exit");
    cmd->add_flag("--smoke", opts->smoke, "One short sample per benchmark (a check that all run)");
    cmd->callback([opts, policies] {
        opts->policies = ParsePolicyList(*policies);
        bench::Run(*opts);
    });
});

const CommandRegistrar run_cmd([](CLI::App& app) {
    auto* cmd = app.add_subcommand("run", "The main job on the embedded default: the buffer-policy benchmarks, side by side");
    cmd->callback([] {
        std::printf("ibdkit run: what does buffer hygiene cost? The seed PR's buffer benchmarks, every policy\n"
                    "interleaved in one run; 'vs plain' is the median per-epoch ratio [min-max].\n");
        bench::Options o;
        o.filter = "^(DataStreamAlloc|DataStreamSerializeScript)/";
        o.min_time_ms = 40;
        bench::Run(o);
    });
});

} // namespace
} // namespace ibdkit::cli

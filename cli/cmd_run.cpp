// `ibdkit run`: the main job on the embedded default — generate the default chain (cached), then
// replay it once per buffer policy and print the side-by-side table.
#include "commands.h"
#include "replay_cli.h"

#include "gen/chain_gen.h"

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace ibdkit::cli {
namespace {

namespace fs = std::filesystem;

// The chain `run` replays is the default chain (DefaultChainOptions, gen/chain_gen.h), generated
// once and cached; the stamp records the options that made it. The default --dbcache 8 holds a
// fraction of its UTXO set, so every run flushes and reads coins back from the chainstate through
// DataStream<Policy>, as IBD does.
std::string Stamp(const ChainGenOptions& o)
{
    std::ostringstream s;
    s << "ibdkit-gen-chain v2 mainnet blocks=" << o.blocks << " seed=" << o.seed << " start=" << o.start_time
      << " bytes=" << o.target_bytes << "\n";
    return s.str();
}

/// The default chain's folder holds its blocks and the STAMP naming them.
ChainWriteOptions RunChainWrite()
{
    ChainWriteOptions w;
    w.own_files = {"STAMP"};
    return w;
}

bool EnsureChain(const fs::path& dir, const ChainGenOptions& o, bool quiet)
{
    const auto stamp_path = dir / "STAMP";
    std::ifstream in(stamp_path);
    std::string have((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    if (have == Stamp(o) && fs::exists(dir / "blocks" / "blk00000.dat")) {
        std::printf("default chain: cached in %s\n", dir.string().c_str());
        return true;
    }
    std::printf("default chain: generating %d regtest blocks into %s (once; cached for later runs)\n", o.blocks,
                dir.string().c_str());
    std::fflush(stdout);
    std::error_code ec;
    fs::remove(stamp_path, ec);
    fs::create_directories(dir, ec);
    ProgressLine bar(!quiet);
    auto r = WriteGeneratedChain(dir, o, RunChainWrite(), [&](const ChainGenStats& s) {
        char text[160];
        std::snprintf(text, sizeof text, "gen-chain: height %d/%d  %.1f MB  %llu txs", s.height, o.blocks,
                      double(s.block_bytes) / 1e6, (unsigned long long)s.txs);
        bar.Update(double(s.height) / o.blocks, text);
    });
    bar.Done();
    if (!r) {
        PrintError("generating the default chain failed: " + r.error().message);
        return false;
    }
    std::ofstream(stamp_path) << Stamp(o);
    return true;
}

const CommandRegistrar run_cmd([](CLI::App& app) {
    auto* cmd = app.add_subcommand(
        "run", "The main job on the embedded default: generate the default regtest chain (mainnet-shaped, cached),\nreplay it with a cache smaller than its UTXO set\n"
               "through the IBD pipeline once per buffer policy, and print the side-by-side table.\n"
               "Scripts are skipped (as a node below its assumevalid block runs IBD, the regime PR #30987 measured);\n"
               "--verify-scripts includes them (regtest has no assumevalid block, so then every script runs).");
    struct Args {
        std::string dir;
        int blocks{120};
        RunSettingsArgs run;
        int rounds{3};
        bool quiet{false};
        bool verify_scripts{false};
    };
    auto a = std::make_shared<Args>();
    a->run.dbcache = 8;
    a->dir = (fs::path(IBDKIT_SOURCE_DIR) / "build" / "default-chain").string();
    cmd->add_option("--dir", a->dir, "Where the default chain is cached")->capture_default_str();
    cmd->add_option("--blocks", a->blocks, "Blocks in the default chain")->check(IntegerIn(1, 1'000'000))->capture_default_str();
    cmd->add_option("--dbcache", a->run.dbcache,
                    "dbcache budget in MiB (the default holds about an eighth of the chain's UTXO set, so chainstate reads count)")
        ->check(IntegerIn(0, MAX_DBCACHE_MIB))
        ->capture_default_str();
    cmd->add_option("--rounds", a->rounds, "Interleaved rounds (every policy once per round; medians reported)")
        ->check(IntegerIn(1, 1000))
        ->capture_default_str();
    AddThreadsOption(cmd, a->run.threads, "Threads per replay");
    AddQuietOption(cmd, a->quiet);
    cmd->add_flag("--verify-scripts", a->verify_scripts, "Verify every input's scripts in each replay (the default skips them)");
    cmd->callback([a] {
        std::printf("ibdkit run — what does buffer hygiene cost a node?\n"
                    "The IBD pipeline (read, decode, CheckBlock, connect, flush, chainstate reads) over a generated\n"
                    "mainnet-shaped regtest chain whose UTXO set is ~8x the cache,\n"
                    "once per buffer policy per round, each run in its own process; rounds interleave the policies,\n"
                    "and 'vs plain' is the median [min-max] of the per-round ratios of wall times.\n\n");
        if (auto refused = CheckChainOutWritable(a->dir, RunChainWrite(), "--dir")) throw UsageError(refused->message);
        const auto opts = DefaultChainOptions(a->blocks);
        if (!EnsureChain(a->dir, opts, a->quiet)) {
            ExitCode() = EXIT_FAILED;
            return;
        }
        ReplayOptions o;
        o.source.blocks_dir = fs::path(a->dir) / "blocks";
        o.source.chain = ChainType::REGTEST;
        a->run.skip_scripts = !a->verify_scripts;
        o.Settings() = SettingsOf(a->run);
        std::printf("Scripts: %s.\n\n", o.skip_scripts ? "skipped in every replay (--verify-scripts includes them)"
                                                         : "every input verified in every replay");
        ExitCode() = ReplayAllPolicies(o, a->quiet, a->rounds);
        std::printf("\nMore: `ibdkit bench` (micro-benchmarks, interleaved), `ibdkit replay --help`, docs/benchmarks.md.\n");
    });
});

} // namespace
} // namespace ibdkit::cli

// `ibdkit swiftsync`: checks blocks 1..n against a hintsfile in SwiftSync's outpoints or coins mode
// (docs/swiftsync.md) — range by range, as a distributed driver would, then one verdict: the
// options and the printing around run::CheckSwiftSyncRanges (run/swiftsync_ranges.h).
#include "commands.h"
#include "json_output.h"
#include "progress.h"
#include "replay_cli.h"

#include <ibdkit/memory/policy_id.h>
#include <ibdkit/run/result_fields.h>
#include <ibdkit/run/swiftsync_ranges.h>
#include <ibdkit/swiftsync/aggregate.h>

#include <algorithm>
#include <cstdio>
#include <memory>
#include <string>

namespace ibdkit::cli {
namespace {

const CommandRegistrar swiftsync_cmd([](CLI::App& app) {
    auto* cmd = app.add_subcommand("swiftsync",
        "Check blocks 1..n against a SwiftSync hintsfile, range by range as a distributed driver would, and say\n"
        "whether the history holds: the inputs' and the non-hinted outputs' salted sums equal, the unspent value\n"
        "within the subsidies. --mode outpoints (BIP 457's assume-valid extension: Core's CheckBlock only) checks\n"
        "much less than Core's assumevalid; --mode coins checks Core's rules from a datadir's rev files\n"
        "(docs/swiftsync.md, *Trust*). Writes nothing: `replay --swiftsync` writes the chainstate");
    struct Args {
        std::string hints, datadir, blocks_dir, network, mode{swiftsync::AggregateModeName(swiftsync::AggregateMode::OutPoints)};
        unsigned ranges{4};
        RunSettingsArgs run;
        bool json{false}, quiet{false};
    };
    auto a = std::make_shared<Args>();
    a->run.threads = std::min(4u, UsableCores());
    cmd->add_option("--hints", a->hints, "The hintsfile (`ibdkit hints`)")->required();
    cmd->add_option("--datadir", a->datadir, "Bitcoin Core data directory: blocks through its block index, read-only");
    cmd->add_option("--blocks-dir", a->blocks_dir, "Or a blocks directory (blkNNNNN.dat, xor.dat) or one blk file");
    AddNetworkOption(cmd, a->network, "from the blocks");
    cmd->add_option("--ranges", a->ranges, "Split 1..n into this many ranges, checked apart and combined")
        ->check(IntegerIn(1, MAX_HEIGHT))
        ->capture_default_str();
    AddThreadsOption(cmd, a->run.threads, "Threads per range");
    AddOneRunPolicyOption(cmd, a->run.policy);
    cmd->add_option("--mode", a->mode,
                    "outpoints: any blocks, Core's CheckBlock only; coins: BIP 457's Coin elements and every rule of Core's\n"
                    "ConnectBlock, the spent coins from the datadir's rev files (needs --datadir)")
        ->check(SwiftSyncModeIn())
        ->capture_default_str();
    cmd->add_option("--assumevalid", a->run.assumevalid, "Coins mode: as replay's (default: the network's; 0: verify every script)");
    cmd->add_flag("--skip-scripts", a->run.skip_scripts, "Coins mode: trust every script (a benchmark, as replay --skip-scripts)");
    cmd->add_flag("--json", a->json, "Print the verdict as JSON");
    AddQuietOption(cmd, a->quiet);
    cmd->callback([a] {
        RequireOneBlockSource(a->datadir, a->blocks_dir);
        const bool coins_mode = swiftsync::ParseAggregateMode(a->mode) == swiftsync::AggregateMode::Coins;
        if (coins_mode && a->datadir.empty()) {
            throw UsageError("--mode coins reads the spent coins from a Bitcoin Core datadir's rev files: give --datadir, or "
                             "--mode outpoints for bare block files (it checks much less)");
        }
        if (!coins_mode && (!a->run.assumevalid.empty() || a->run.skip_scripts)) {
            throw UsageError("--mode outpoints checks no scripts: --assumevalid and --skip-scripts go with --mode coins");
        }
        run::SwiftSyncRangesOptions o;
        o.Settings() = SettingsOf(a->run);
        o.hints = a->hints;
        o.source = {.datadir = a->datadir, .blocks_dir = a->blocks_dir, .chain = ParseNetworkOption(a->network)};
        o.mode = *swiftsync::ParseAggregateMode(a->mode); // SwiftSyncModeIn checked the name
        o.ranges = a->ranges;
        auto bar = std::make_shared<ProgressLine>(!a->quiet && !a->json);
        o.on_progress = [bar](uint32_t h, uint32_t n) { bar->Update(n ? double(h) / n : 1.0, "block " + std::to_string(h) + " of " + std::to_string(n)); };
        auto r = run::CheckSwiftSyncRanges(o);
        bar->Done();
        if (!r) {
            PrintError(r.error().message);
            ExitCode() = EXIT_FAILED;
            return;
        }
        const swiftsync::Verdict& v = r->verdict;
        const uint32_t n = r->height;
        if (a->json) {
            PrintJsonResult(ToJson(SwiftSyncRangesFields(*r, o.policy)));
        } else {
            const std::string accepted = coins_mode ? "accepted (coins mode: Core's rules, scripts verified on " +
                                                          std::to_string(v.script_checked_inputs) + " inputs)"
                                                    : "accepted (outpoints mode: much less than assumevalid, docs/swiftsync.md)";
            std::printf("verdict            %s\nheight             %u (%zu ranges)\nblocks             %llu, %llu transactions\n"
                        "inputs             %llu\nspendable outputs  %llu, %llu hinted unspent\nunspent value      %lld sat of at most %lld\n",
                        v.ok ? accepted.c_str() : ("REFUSED: " + v.reason).c_str(),
                        n, r->ranges, (unsigned long long)v.counts.blocks, (unsigned long long)v.counts.transactions,
                        (unsigned long long)v.counts.inputs, (unsigned long long)v.counts.outputs, (unsigned long long)v.counts.unspent,
                        (long long)v.supply, (long long)v.supply_bound);
        }
        if (!v.ok) {
            PrintError("SwiftSync refuses the chain: " + v.reason);
            ExitCode() = v.kind == swiftsync::VerdictKind::HintsMismatch ? EXIT_FAILED : EXIT_INVALID_CHAIN;
        }
    });
});

} // namespace
} // namespace ibdkit::cli

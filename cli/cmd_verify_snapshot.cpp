// `ibdkit utxo verify-snapshot FILE --datadir D`: an assumeutxo snapshot proven to be exactly the
// UTXO set of the chain at its base block, with SwiftSync's sums (swiftsync/verify_snapshot.h).
#include "verify_snapshot_cli.h"
#include "json_output.h"

#include "progress.h"
#include "replay_cli.h"

#include <ibdkit/memory/policy_id.h>
#include <ibdkit/primitives/amount.h>
#include <ibdkit/run/result_fields.h>
#include <ibdkit/swiftsync/aggregate.h>
#include <ibdkit/swiftsync/verify_snapshot.h>
#include <ibdkit/utxo/stats.h>

#include <algorithm>
#include <cstdio>
#include <memory>
#include <string>
#include <thread>

namespace ibdkit::cli {

void AddVerifySnapshot(CLI::App* utxo)
{
    auto* cmd = utxo->add_subcommand("verify-snapshot",
        "Prove that an assumeutxo snapshot is exactly the UTXO set of the blocks at its base block: every output\n"
        "created is an input spent or a coin of the snapshot (SwiftSync's salted sums, no UTXO set in memory); in\n"
        "coins mode every block passes Core's rules too (docs/swiftsync.md)");
    struct Args {
        std::string snapshot, datadir, blocks_dir, network, mode{swiftsync::AggregateModeName(swiftsync::AggregateMode::Coins)};
        RunSettingsArgs run;
        bool json{false}, quiet{false};
    };
    auto a = std::make_shared<Args>();
    cmd->add_option("snapshot", a->snapshot, "The snapshot file (dumptxoutset, `ibdkit utxo snapshot`)")->required();
    cmd->add_option("--datadir", a->datadir, "Bitcoin Core data directory: blocks and rev files, read-only");
    cmd->add_option("--blocks-dir", a->blocks_dir, "Or a blocks directory (outpoints mode only)");
    AddNetworkOption(cmd, a->network, "from the blocks");
    cmd->add_option("--mode", a->mode, "coins (every Core rule, needs --datadir) or outpoints (proves only the outpoints: never\n"
                                     "certifies the snapshot, exit 1 when they match)")
        ->check(SwiftSyncModeIn())
        ->capture_default_str();
    AddThreadsOption(cmd, a->run.threads, "Threads checking blocks");
    AddOneRunPolicyOption(cmd, a->run.policy);
    cmd->add_option("--assumevalid", a->run.assumevalid, "As for replay: 0 verifies every script; default: Core's for the network");
    cmd->add_flag("--skip-scripts", a->run.skip_scripts, "Trust every block's scripts (a benchmark, as replay --skip-scripts)");
    cmd->add_flag("--json", a->json, "Print the verdict as JSON");
    AddQuietOption(cmd, a->quiet);
    cmd->callback([a] {
        RequireOneBlockSource(a->datadir, a->blocks_dir);
        swiftsync::VerifySnapshotOptions o;
        o.Settings() = SettingsOf(a->run);
        o.snapshot = a->snapshot;
        o.source = {.datadir = a->datadir, .blocks_dir = a->blocks_dir, .chain = ParseNetworkOption(a->network)};
        o.mode = *swiftsync::ParseAggregateMode(a->mode); // SwiftSyncModeIn checked the name
        if (o.mode == swiftsync::AggregateMode::Coins && o.source.datadir.empty()) {
            throw UsageError("--mode coins reads the spent coins from a Bitcoin Core datadir's rev files: give --datadir, or --mode "
                             "outpoints for bare block files (it checks much less)");
        }
        auto bar = std::make_shared<ProgressLine>(!a->quiet && !a->json);
        o.on_progress = [bar](uint32_t h, uint32_t n) { bar->Update(n ? double(h) / n : 1.0, "block " + std::to_string(h) + " of " + std::to_string(n)); };
        auto r = swiftsync::VerifySnapshot(o);
        bar->Done();
        if (!r) {
            PrintError(r.error().message);
            ExitCode() = EXIT_FAILED;
            return;
        }
        const auto& v = r->verdict;
        const std::string mode(swiftsync::AggregateModeName(r->mode));
        // Equal sums in outpoints mode prove the outpoints and nothing of the coins they name: the
        // snapshot is not certified, and the verdict and the exit code say so.
        const bool outpoints_only = v.ok && !r->Certified();
        if (a->json) {
            PrintJsonResult(ToJson(SnapshotVerdictFields(*r, o.policy)));
        } else {
            std::printf("verdict            %s\nmode               %s\nbase block         %s (height %u)\n"
                        "snapshot           %llu coins, %s\nblocks             %llu, %llu inputs, %llu spendable outputs\n"
                        "scripts            %llu inputs verified\n",
                        r->Certified() ? "the snapshot is the UTXO set at its base block"
                        : outpoints_only ? "NOT CERTIFIED: only its outpoints are the UTXO set's at its base block; its coins' "
                                           "heights, coinbase flags, amounts and scripts are unchecked"
                                         : ("REFUSED: " + v.reason).c_str(),
                        mode.c_str(),
                        r->base.ToHex().c_str(), r->height, (unsigned long long)v.counts.unspent, FormatMoney(Amount(v.supply)).c_str(),
                        (unsigned long long)v.counts.blocks, (unsigned long long)v.counts.inputs, (unsigned long long)v.counts.outputs,
                        (unsigned long long)r->script_checked_inputs);
        }
        if (!v.ok) {
            PrintError("the snapshot is not the UTXO set at its base block: " + v.reason);
            ExitCode() = EXIT_INVALID_CHAIN;
        }
        if (outpoints_only) {
            PrintError(r->Reason());
            ExitCode() = EXIT_FAILED;
        }
    });
}

} // namespace ibdkit::cli

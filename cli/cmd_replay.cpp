// `ibdkit replay`: the IBD pipeline over block files.
#include "commands.h"
#include "json_output.h"
#include "hints_cli.h"
#include "interrupt.h"
#include "progress.h"
#include "replay_cli.h"
#include "utxo_export_cli.h"

#include <memory>
#include <thread>

#include <ibdkit/blockfile/locate.h>
#include <ibdkit/engine/replay.h>
#include <ibdkit/memory/policy_id.h>
#include <ibdkit/run/classic_run.h>
#include <ibdkit/swiftsync/aggregate.h>

#include <nlohmann/json.hpp>

#include <cstdio>

namespace ibdkit::cli {
namespace {

std::atomic<bool> g_interrupt{false};

/// `replay --swiftsync`: the options that make no sense there are refused, the rest handed on.
template <typename Args>
void SwiftSync(const Args& a, const ReplayOptions& o, const HeightExport& height_export, const HintsAfterRun& hints)
{
    const bool all = a.run.AllPolicies();
    if (!a.undo.empty() || a.via_p2p || o.stop_height || height_export.Enabled() || (a.rounds != 1 && !all) || hints.Enabled()) {
        throw UsageError("--swiftsync checks blocks 1..n of its hintsfile into a new chainstate: drop --undo, --via-p2p, "
                         "--stop-height, --height and --write-hints (--rounds goes with --policy all)");
    }
    if (all && (!o.chainstate.empty() || a.fallback)) {
        throw UsageError("--policy all compares the policies, each into a temporary chainstate: drop --chainstate and --fallback");
    }
    swiftsync::SwiftSyncOptions s;
    s.source = o.source;
    s.hints = a.swiftsync;
    s.chainstate = o.chainstate;
    s.mode = *swiftsync::ParseAggregateMode(a.swiftsync_mode); // SwiftSyncModeIn checked the name
    if (s.mode == swiftsync::AggregateMode::Coins && s.source.datadir.empty()) {
        throw UsageError("--swiftsync-mode coins reads the spent coins from a Bitcoin Core datadir's rev files: give --datadir, "
                         "or --swiftsync-mode outpoints for bare block files (it checks much less)");
    }
    s.Settings() = o;
    if (all) {
        ExitCode() = SwiftSyncAllPolicies(s, a.out.quiet, a.rounds);
        return;
    }
    CheckEngineOutputs(o);
    run::SwiftSyncRunOptions run;
    run.swiftsync = std::move(s);
    run.statistics = !a.out.no_stats;
    if (a.fallback) run.fallback = o;
    RunSwiftSyncReplay(std::move(run), a.out);
}

/// The engine's options from the command line's.
template <typename Args>
ReplayOptions OptionsOf(const Args& a)
{
    ReplayOptions o;
    RequireOneBlockSource(a.datadir, a.blocks_dir);
    o.Settings() = SettingsOf(a.run);
    o.source = {.datadir = a.datadir, .blocks_dir = a.blocks_dir, .chain = ParseNetworkOption(a.network)};
    o.chainstate = a.chainstate;
    o.undo_dir = a.undo;
    if (a.stop_height >= 0) o.stop_height = a.stop_height;
    o.via_p2p = a.via_p2p;
    o.statistics = !a.out.no_stats;
    o.db_batch_bytes = a.dbbatchsize;
    return o;
}

const CommandRegistrar replay_cmd([](CLI::App& app) {
    auto* cmd = app.add_subcommand("replay",
        "Replay block files through the IBD pipeline: read, decode, check, connect, flush.\n"
        "Every consensus rule is checked with Core's reject reasons; scripts too, except in blocks that\n"
        "Core's assumevalid rule skips (--assumevalid: below the network's assumevalid block, buried\n"
        "under two weeks of work; --assumevalid 0 verifies every script).");
    struct Args {
        std::string blocks_dir, datadir, network, chainstate, undo, swiftsync, swiftsync_mode{swiftsync::AggregateModeName(swiftsync::AggregateMode::Coins)};
        std::size_t dbbatchsize{0};
        int stop_height{-1};
        int rounds{1};
        bool via_p2p{false}, fallback{false};
        RunSettingsArgs run;
        ConnectOutputArgs out;
    };
    auto a = std::make_shared<Args>();
    auto height_export = std::make_shared<HeightExport>();
    auto hints = std::make_shared<HintsAfterRun>();
    cmd->add_option("--blocks-dir", a->blocks_dir,
        "Bitcoin Core blocks directory (blkNNNNN.dat, xor.dat) or one blk file: every record's header is scanned");
    cmd->add_option("--datadir", a->datadir,
        "Bitcoin Core data directory (e.g. ~/.bitcoin): blocks located through its block index\n"
        "(blocks/index, testnet3/blocks/index, ...), read strictly read-only; while bitcoind runs, from a snapshot of its block index");
    AddNetworkOption(cmd, a->network, "from the files' magic or the datadir layout");
    cmd->add_option("--chainstate", a->chainstate, "Chainstate directory to build/resume (default: a temporary one, removed after)");
    cmd->add_option("--undo", a->undo,
        "Write each connected block's undo data to this directory: revNNNNN.dat records in Bitcoin Core's\n"
        "format plus ibdkit's revindex.dat (docs/undo.md); never inside --datadir or --blocks-dir");
    AddEngineSizeOptions(cmd, a->run, a->stop_height);
    cmd->add_option("--dbbatchsize", a->dbbatchsize,
                    "Bytes of one chainstate write batch in a flush (Core's -dbbatchsize debug option; default:\n"
                    "--dbcache/64 within 4-8 MiB)")
        ->check(IntegerIn(0, 1 << 30));
    cmd->add_option("--policy", a->run.policy, "Buffer policy: " + PolicyNameList() + ", or all")->capture_default_str();
    AddConnectOutputOptions(cmd, a->out, a->run);
    cmd->add_option("--rounds", a->rounds, "With --policy all: interleaved rounds (medians reported)")
        ->check(IntegerIn(1, 1000))
        ->capture_default_str();
    cmd->add_flag("--skip-scripts", a->run.skip_scripts,
                  "Trust every block's scripts (a benchmark of the rest of the pipeline, as a node below its assumevalid\n"
                  "block runs it; not a Bitcoin Core mode: never on blocks you have not validated)");
    cmd->add_flag("--via-p2p", a->via_p2p, "Push every block through P2P v1 framing first, as IBD receives it");
    height_export->AddOptions(cmd);
    hints->AddOption(cmd);
    cmd->add_option("--swiftsync", a->swiftsync,
                    "Check the chain with SwiftSync against this hintsfile (`ibdkit hints`, BIP 456): blocks in any order on\n"
                    "every thread, no UTXO lookups; writes the UTXO set at the hintsfile's height as a new chainstate\n"
                    "(docs/swiftsync.md)");
    cmd->add_option("--swiftsync-mode", a->swiftsync_mode,
                    "coins: every rule Core checks, spent coins from the datadir's rev files (needs --datadir);\n"
                    "outpoints: any blocks, checks much less than Core's assumevalid (no amounts, maturity, BIP68, sigops)")
        ->check(SwiftSyncModeIn())
        ->capture_default_str();
    cmd->add_flag("--fallback", a->fallback,
                  "With --swiftsync: if the history is refused, replay blocks 1..n the classic way to name the first\n"
                  "invalid block with Core's reason, or to tell that the hints (or the rev data) were wrong");
    cmd->callback([a, height_export, hints] {
        ReplayOptions o = OptionsOf(*a);
        const bool all = a->run.AllPolicies();
        if (a->fallback && a->swiftsync.empty()) throw UsageError("--fallback goes with --swiftsync");
        if (!a->swiftsync.empty()) return SwiftSync(*a, o, *height_export, *hints);
        if (all) {
            if (height_export->Enabled() || !a->undo.empty() || hints->Enabled()) {
                throw CLI::ValidationError("--policy all", "compares policies; drop --height, --undo and --write-hints");
            }
            if (!a->chainstate.empty()) throw CLI::ValidationError("--policy all", "replays into temporary chainstates; drop --chainstate");
            ExitCode() = ReplayAllPolicies(o, a->out.quiet, a->rounds);
            return;
        }
        CheckEngineOutputs(o);
        run::RunOutputs outputs;
        outputs.height_export = height_export->Request(o);
        outputs.write_hints = hints->Request();
        auto bar = std::make_shared<ProgressLine>(!a->out.quiet);
        o.on_progress = ProgressPrinter(bar, "");
        outputs.on_export_progress = ExportProgressPrinter(bar);
        outputs.on_hints_progress = HintsProgressPrinter(bar);
        StopOnInterrupt(&g_interrupt, a->chainstate);
        o.interrupt = &g_interrupt;
        auto run = run::RunReplay(o, outputs);
        bar->Done();
        ReportInterrupted(run ? run->replay : EngineResult{}, a->chainstate);
        if (!run) {
            PrintError(run.error().message);
            ExitCode() = EXIT_FAILED;
            return;
        }
        const ReplayResult& r = run->replay;
        if (r.live_height >= 0) PrintNote(LiveDatadirMessage(r.live_height, r.live_hash));
        hints->NoteIfMissing(run->outputs);
        const auto& hintsfile = run->outputs.hints;
        if (a->out.json) {
            auto j = ToJson(r, o.policy);
            if (hintsfile) j["hints"] = HintsJson(*hintsfile, o.policy, hints->Out());
            PrintJsonResult(j);
        } else {
            PrintHuman(r);
            if (hintsfile) PrintHints(*hintsfile, hints->Out());
        }
        ReportReject(r);
        if (r.interrupted) ExitCode() = EXIT_INTERRUPTED;
        height_export->Report(run->outputs);
    });
});

} // namespace
} // namespace ibdkit::cli

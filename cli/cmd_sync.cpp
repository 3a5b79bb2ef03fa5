// `ibdkit sync`: initial block download from P2P peers.
#include "commands.h"
#include "json_output.h"
#include "interrupt.h"
#include "replay_cli.h"
#include "utxo_export_cli.h"
#include "progress.h"

#include <ibdkit/engine/sync.h>
#include <ibdkit/memory/policy_id.h>
#include <ibdkit/run/classic_run.h>
#include <ibdkit/run/sync_peers.h>
#include <ibdkit/swiftsync/aggregate.h>
#include <ibdkit/wire/host_port.h>

#include <nlohmann/json.hpp>

#include <cstdio>
#include <cstdlib>
#include <memory>

namespace ibdkit::cli {
namespace {

std::atomic<bool> g_interrupt{false};

void PrintHuman(const SyncResult& r)
{
    std::printf("network            %s\n", std::string(ChainTypeName(r.chain)).c_str());
    if (!r.peer_user_agent.empty() || r.peer_version) {
        std::printf("peer               %s (protocol %d, height %d), %s download\n", r.peer_user_agent.c_str(), r.peer_version,
                    r.peer_height, r.mode.c_str());
    }
    std::printf("headers            %d (%llu received)\n", r.header_height, (unsigned long long)r.headers_received);
    std::printf("blocks connected   %llu (from height %d) in %.2f s: %.1f blocks/s, %.1f MB/s\n", (unsigned long long)r.blocks,
                r.start_height, r.seconds, r.seconds > 0 ? double(r.blocks) / r.seconds : 0.0,
                r.seconds > 0 ? double(r.bytes) / 1e6 / r.seconds : 0.0);
    if (r.recovered_blocks) std::printf("recovered          %llu blocks rolled forward after an interrupted flush\n", (unsigned long long)r.recovered_blocks);
    PrintScripts(r);
    PrintRejected(r);
    if (r.interrupted) std::printf("interrupted        flushed at height %d; run again to resume\n", r.height);
    PrintTip(r);
}

/// The peer of the classic sync from one (the first of `connect`); each address checked.
void SetPeer(SyncOptions& o, const std::vector<std::string>& connect)
{
    for (const std::string& c : connect) {
        if (!SplitHostPort(c, GetChainParams(o.chain).default_port)) throw CLI::ValidationError("--connect", "expected HOST:PORT, got '" + c + "'");
    }
    auto hp = SplitHostPort(connect.front(), GetChainParams(o.chain).default_port);
    o.host = hp->first;
    o.port = hp->second;
}

/// The command line of `sync`.
struct SyncArgs {
    std::vector<std::string> connect;
    std::string network, chainstate, undo, datadir;
    SwiftSyncSyncArgs swiftsync;
    double timeout{30};
    double headers_wait{3};
    std::size_t window{16};
    int stop_height{-1};
    int rounds{1};
    bool getblocks{false};
    RunSettingsArgs run;
    ConnectOutputArgs out;
};

/// The classic sync from the first peer, with a progress line; its result printed, its outcome as
/// the exit code.
void RunClassic(SyncOptions& o, const SyncArgs& a, const HeightExport& height_export)
{
    run::RunOutputs outputs;
    outputs.height_export = height_export.Request(o);
    auto bar = std::make_shared<ProgressLine>(!a.out.quiet);
    o.on_sync_progress = [bar](const SyncProgress& p) {
        char text[256];
        if (p.headers_phase) {
            std::snprintf(text, sizeof text, "headers %d/%d", p.header_height, p.tip_height);
        } else {
            const double s = std::max(p.elapsed_s, 1e-9);
            const double bps = double(p.blocks) / s;
            const int left = p.tip_height - p.height;
            std::snprintf(text, sizeof text, "height %d/%d  %.0f blk/s  %.0f tx/s  %.1f MB/s  in flight %zu  cache %zu/%zu MiB  ETA %s",
                          p.height, p.tip_height, bps, double(p.txs) / s, double(p.bytes) / 1e6 / s, p.in_flight,
                          p.cache_bytes >> 20, p.cache_budget >> 20, bps > 0 ? (std::to_string(int(left / bps)) + " s").c_str() : "?");
        }
        bar->Update(p.tip_height > 0 ? double(p.headers_phase ? p.header_height : p.height) / p.tip_height : -1, text);
    };
    StopOnInterrupt(&g_interrupt, o.chainstate.string());
    o.interrupt = &g_interrupt;
    outputs.on_export_progress = ExportProgressPrinter(bar);
    const bool several = a.connect.size() > 1;
    auto run = run::RunSync(o, a.connect, outputs);
    bar->Done();
    ReportInterrupted(run ? run->sync.sync : EngineResult{}, o.chainstate.string());
    if (!run) {
        PrintError(run.error().message);
        ExitCode() = EXIT_FAILED;
        return;
    }
    const SyncResult& r = run->sync.sync;
    if (a.out.json) {
        PrintJsonResult(ToJson(several ? SyncPeersFields(run->sync, o.policy) : SyncResultFields(r, o.policy)));
    } else {
        PrintHuman(r);
        PrintPeers(run->sync.peers, run->sync.unreachable, false);
    }
    if (r.failure) {
        PrintError(SyncStopped(r) + ": " + r.failure->message);
        ExitCode() = EXIT_FAILED;
    }
    ReportReject(r);
    if (r.interrupted) ExitCode() = EXIT_INTERRUPTED;
    height_export.Report(run->outputs);
    if (ExitCode() == EXIT_OK && !a.out.quiet) PrintDatadirHandover(o, o.chain); // only a datadir bitcoind can start on
}

/// `sync --policy all`: the same sync once per policy (CompareAllPolicies), each in a child process
/// into a temporary chainstate; the exit code.
int SyncAllPolicies(const SyncOptions& base, bool quiet, int rounds)
{
    return CompareAllPolicies(rounds, [&](PolicyId id, const std::string& label) {
        auto bar = std::make_shared<ProgressLine>(!quiet);
        PolicyRun run = RunInChild(id, [&]() -> std::string {
            SyncOptions o = base;
            o.policy = id;
            o.on_progress = ProgressPrinter(bar, label);
            auto r = Sync(o);
            if (!r) return "!" + r.error().message;
            if (r->failure) return "!" + SyncStopped(*r) + ": " + r->failure->message;
            return ToJson(SyncResultFields(*r, id)).dump();
        });
        bar->Done();
        return run;
    });
}

/// What `--policy all` cannot go with: it compares runs, each into a temporary chainstate.
void CheckAllPolicies(const SyncArgs& a, const HeightExport& height_export)
{
    if (!a.run.AllPolicies()) {
        if (a.rounds != 1) throw CLI::ValidationError("--rounds", "goes with --policy all");
        return;
    }
    if (!a.chainstate.empty() || !a.datadir.empty() || !a.undo.empty() || height_export.Enabled()) {
        throw CLI::ValidationError("--policy all", "compares the policies, each syncing into a temporary chainstate: drop --chainstate, "
                                                   "--datadir, --undo and --height");
    }
}

const CommandRegistrar sync_cmd([](CLI::App& app) {
    auto* cmd = app.add_subcommand("sync",
        "Initial block download from P2P peers: handshake, headers-first (from one peer, getblocks when it ignores\n"
        "getheaders), blocks in a bounded getdata window per peer (several --connect: in parallel, a peer that\n"
        "stalls or misbehaves dropped and its blocks asked of the others), each checked, connected and flushed\n"
        "as `ibdkit replay` does (scripts verified except where Core's assumevalid rule skips them: --assumevalid).\n"
        "Ctrl-C flushes; the next run on the same --chainstate resumes.");
    auto a = std::make_shared<SyncArgs>();
    auto height_export = std::make_shared<HeightExport>();
    cmd->add_option("--connect", a->connect,
                    "Peer HOST:PORT ([v6]:PORT; the network's default port if omitted); repeat it for every peer to\n"
                    "download from in parallel")
        ->required();
    AddSwiftSyncOptions(cmd, a->swiftsync);
    AddNetworkOption(cmd, a->network, "the one ibdkit recorded in --chainstate or --datadir, else regtest");
    cmd->add_option("--chainstate", a->chainstate, "Chainstate directory to build/resume (default: a temporary one, removed after)");
    cmd->add_option("--undo", a->undo,
        "Write each connected block's undo data to this directory (rev files in Bitcoin Core's format, docs/undo.md);\n"
        "a later run with the same --undo can reorganise below the chainstate's tip");
    cmd->add_option("--datadir", a->datadir,
        "Write a Bitcoin Core data directory here: blocks, undo data, block index, and the chainstate (unless\n"
        "--chainstate names one) in its network's folder; `bitcoind -datadir=DIR` starts on it (docs/sync.md)");
    AddEngineSizeOptions(cmd, a->run, a->stop_height);
    cmd->add_option("--policy", a->run.policy,
                    "Buffer policy: " + PolicyNameList() + ", or all (the same sync once per policy, side by side: docs/sync.md)")
        ->capture_default_str();
    cmd->add_option("--rounds", a->rounds, "With --policy all: interleaved rounds (medians reported)")->check(IntegerIn(1, 100))->capture_default_str();
    cmd->add_option("--timeout", a->timeout,
                    "Seconds without progress before the peer counts as stalled, or (several peers) holding the block the run "
                    "needs next (also connect/handshake)")
        ->check(NumberIn(0.001, 86400))
        ->capture_default_str();
    cmd->add_option("--headers-wait", a->headers_wait, "Seconds to wait for a getheaders answer before falling back to getblocks")
        ->check(NumberIn(0.001, 86400))
        ->capture_default_str();
    cmd->add_option("--window", a->window, "Blocks in flight")->check(IntegerIn(1, 1024))->capture_default_str();
    AddConnectOutputOptions(cmd, a->out, a->run);
    cmd->add_flag("--getblocks", a->getblocks, "Use getblocks/inv instead of headers-first");
    cmd->add_flag("--skip-scripts", a->run.skip_scripts,
                  "Trust every block's scripts, as replay --skip-scripts (a benchmark of the data path, as a node below its\n"
                  "assumevalid block runs it; not a Bitcoin Core mode: never on blocks you have not validated)");
    height_export->AddOptions(cmd);
    cmd->callback([a, height_export] {
        SyncOptions o;
        o.chain = SyncNetwork(ParseNetworkOption(a->network), a->chainstate, a->datadir);
        SetPeer(o, a->connect);
        if (a->swiftsync.hints.empty() && (swiftsync::ParseAggregateMode(a->swiftsync.mode) != swiftsync::AggregateMode::Coins || a->swiftsync.keep_recent)) {
            throw CLI::ValidationError(a->swiftsync.keep_recent ? "--keep-recent" : "--swiftsync-mode", "goes with --swiftsync HINTS");
        }
        CheckAllPolicies(*a, *height_export);
        const bool all = a->run.AllPolicies();
        o.Settings() = SettingsOf(a->run);
        o.chainstate = a->chainstate;
        o.undo_dir = a->undo;
        o.timeout = std::chrono::milliseconds(int64_t(a->timeout * 1000));
        o.headers_wait = std::chrono::milliseconds(int64_t(a->headers_wait * 1000));
        o.window = a->window;
        o.statistics = !a->out.no_stats;
        o.force_getblocks = a->getblocks;
        if (a->getblocks && a->connect.size() > 1) throw CLI::ValidationError("--getblocks", "takes one peer: give one --connect");
        if (a->stop_height >= 0) o.stop_height = a->stop_height;
        UseDatadirOut(o, a->datadir, o.chain);
        CheckEngineOutputs(o);
        if (all && !a->swiftsync.hints.empty()) {
            ExitCode() = SwiftSyncPeersAllPolicies(o, a->connect, a->swiftsync, a->out.quiet, a->rounds);
            return;
        }
        if (all) {
            if (a->connect.size() > 1) throw CLI::ValidationError("--policy", "all compares the classic sync from one peer: give one --connect");
            ExitCode() = SyncAllPolicies(o, a->out.quiet, a->rounds);
            return;
        }
        if (!a->swiftsync.hints.empty()) return RunSwiftSyncFromPeers(o, a->connect, a->swiftsync, a->out);
        RunClassic(o, *a, *height_export);
    });
});

} // namespace
} // namespace ibdkit::cli

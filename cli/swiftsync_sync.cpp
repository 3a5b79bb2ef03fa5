// `ibdkit sync --swiftsync HINTS --connect A --connect B …`: SwiftSync from P2P peers, then the
// classic sync to their tip (run/swiftsync_sync.h), with a progress line; its result printed for
// people or as JSON (run/result_fields.h); its outcome as the exit code.
#include "replay_cli.h"
#include "json_output.h"

#include "interrupt.h"

#include <ibdkit/primitives/amount.h>
#include <ibdkit/run/swiftsync_sync.h>
#include <ibdkit/swiftsync/aggregate.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdio>
#include <string>

namespace ibdkit::cli {

namespace {

/// What SwiftSync checked of blocks 1..n in this run.
void PrintChecked(const run::SwiftSyncPeersResult& run)
{
    const swiftsync::SwiftSyncResult& r = run.swiftsync;
    const auto& v = r.verdict;
    std::printf("swiftsync          coins mode over P2P: blocks 1..%u checked in %.2f s, %.1f blocks/s\n", r.height, r.seconds,
                r.seconds > 0 ? double(v.counts.blocks) / r.seconds : 0.0);
    std::printf("verdict            %s\n", v.ok ? "accepted" : ("REFUSED: " + v.reason).c_str());
    std::printf("counts             %llu transactions, %llu inputs, %llu spendable outputs of which %llu unspent at %u\n",
                (unsigned long long)v.counts.transactions, (unsigned long long)v.counts.inputs, (unsigned long long)v.counts.outputs,
                (unsigned long long)v.counts.unspent, r.height);
    if (r.script_checks_from_height) {
        std::printf("scripts            %llu inputs verified, from height %d (%s)\n", (unsigned long long)r.script_checked_inputs,
                    *r.script_checks_from_height, r.script_check_reason.c_str());
    } else {
        std::printf("scripts            not verified: every block is below the assumevalid block (--assumevalid 0 verifies)\n");
    }
    uint64_t downloaded = 0; // as the peer lines count them: blocks fetched ahead of a refusal too
    for (const PeerSummary& p : run.peers) downloaded += p.block_bytes;
    std::printf("bandwidth          blocks %.1f MB, spent coins (bspent) %.1f MB, %.1f MB saved by the cutoff\n", double(downloaded) / 1e6,
                double(run.spent_bytes) / 1e6, double(run.spent_bytes_saved) / 1e6);
}

void PrintHuman(const run::SwiftSyncPeersResult& run)
{
    const swiftsync::SwiftSyncResult& r = run.swiftsync;
    std::printf("network            %s\n", std::string(ChainTypeName(r.chain)).c_str());
    std::printf("headers            %d, from the peers\n", run.header_height);
    PrintPeers(run.peers, run.unreachable, true);
    if (run.resumed) {
        std::printf("swiftsync          resumed: the chainstate held blocks 1..%u (an earlier sync's: SwiftSync's, then any the "
                    "classic sync connected after them); the classic sync continued\n", r.height);
    } else {
        PrintChecked(run);
    }
    for (const std::string& n : run.notes) std::printf("note               %s\n", n.c_str());
    if (run.continuation) {
        const SyncResult& c = *run.continuation;
        std::printf("classic            %llu blocks connected after %u, to height %d, in %.2f s\n", (unsigned long long)c.blocks, r.height,
                    c.height, c.total_seconds);
    }
    std::printf("memory             peak RSS %.0f MiB\n", double(run.peak_rss_bytes) / double(1 << 20));
    if (!r.verdict.ok) return;
    if (run.continuation) {
        PrintTip(*run.continuation);
        return;
    }
    std::printf("height             %u\nbestblock          %s\n", r.height, r.tip.ToHex().c_str());
    if (run.utxo) {
        const UtxoStats& s = *run.utxo;
        std::printf("txouts             %llu\ntotal_amount       %s\nhash_serialized_3  %s\n", (unsigned long long)s.txouts,
                    FormatMoney(s.total_amount).c_str(), s.hash_serialized.ToHex().c_str());
    }
}

} // namespace

void AddSwiftSyncOptions(CLI::App* cmd, SwiftSyncSyncArgs& args)
{
    cmd->add_option("--swiftsync", args.hints,
                    "Hintsfile (BIP 456, from `ibdkit hints`) for height n: blocks 1..n with their spent coins (BIP 455)\n"
                    "from every peer that serves them, checked as coins mode checks a datadir (docs/swiftsync.md, Over P2P),\n"
                    "written as the chainstate at n; then the classic sync to the peers' tip")
        ->check(CLI::ExistingFile);
    cmd->add_option("--swiftsync-mode", args.mode,
                    "With --swiftsync: coins (every rule Core checks, the spent coins from peers that serve BIP 455) or\n"
                    "outpoints (blocks alone from any peer, stock Core too; checks much less than Core's assumevalid: no\n"
                    "amounts, maturity, BIP68, sigops, scripts)")
        ->check(SwiftSyncModeIn())
        ->capture_default_str();
    cmd->add_option("--keep-recent", args.keep_recent,
                    "With --swiftsync: keep the outputs of the last N blocks and ask the peers only for older spent coins\n"
                    "(BIP 455's cutoff; 0 asks for every coin)")
        ->check(IntegerIn(0, 100000))
        ->capture_default_str();
}

namespace {

/// The run's options from the classic sync's (its continuation) and --swiftsync's.
run::SwiftSyncPeersOptions PeersOptions(const SyncOptions& classic, const std::vector<std::string>& connect, const SwiftSyncSyncArgs& args)
{
    if (!classic.undo_dir.empty()) throw CLI::ValidationError("--undo", "is not written by --swiftsync (the spent coins are the peers')");
    const bool outpoints = swiftsync::ParseAggregateMode(args.mode) == swiftsync::AggregateMode::OutPoints;
    if (outpoints && !classic.datadir_out.empty()) {
        throw CLI::ValidationError("--datadir", "its undo data comes from the peers' spent coins: --swiftsync-mode coins");
    }
    if (outpoints && args.keep_recent) throw CLI::ValidationError("--keep-recent", "cuts the spent coins of coins mode: --swiftsync-mode coins");
    run::SwiftSyncPeersOptions o;
    o.swiftsync.hints = args.hints;
    o.swiftsync.mode = outpoints ? swiftsync::AggregateMode::OutPoints : swiftsync::AggregateMode::Coins;
    o.swiftsync.chainstate = classic.chainstate;
    o.swiftsync.source.chain = classic.chain;
    o.swiftsync.Settings() = classic;
    o.connect = connect;
    o.chain = classic.chain;
    o.timeout = classic.timeout;
    o.window = classic.window;
    o.keep_recent = args.keep_recent;
    o.statistics = classic.statistics;
    o.continuation = classic;
    o.datadir = classic.datadir_out;
    return o;
}

/// One policy's run for `--policy all`: the result's fields, counts over SwiftSync and the classic
/// rest together (PolicyRun's), or "!" and why it failed.
std::string PolicyRunJson(const Result<run::SwiftSyncPeersResult>& r, PolicyId policy)
{
    if (!r) return "!" + r.error().message;
    const swiftsync::SwiftSyncResult& s = r->swiftsync;
    if (!s.verdict.ok) return "!SwiftSync refuses blocks 1.." + std::to_string(s.height) + ": " + s.verdict.reason;
    const SyncResult* c = r->continuation ? &*r->continuation : nullptr;
    if (c && c->failure) return "!the classic sync after height " + std::to_string(s.height) + ": " + c->failure->message;
    nlohmann::json j = ToJson(SwiftSyncPeersFields(*r, policy));
    j["blocks_connected"] = s.verdict.counts.blocks + (c ? c->blocks : 0);
    j["transactions_connected"] = s.verdict.counts.transactions + (c ? c->txs : 0);
    j["bytes"] = s.block_bytes + (c ? c->bytes : 0);
    j["bytes_cleansed"] = s.bytes_cleansed + (c ? c->bytes_cleansed : 0);
    return j.dump();
}

} // namespace

int SwiftSyncPeersAllPolicies(const SyncOptions& classic, const std::vector<std::string>& connect, const SwiftSyncSyncArgs& args,
                              bool quiet, int rounds)
{
    return CompareAllPolicies(rounds, [&](PolicyId id, const std::string& label) {
        auto bar = std::make_shared<ProgressLine>(!quiet);
        PolicyRun run = RunInChild(id, [&]() -> std::string {
            SyncOptions c = classic;
            c.policy = id;
            run::SwiftSyncPeersOptions o = PeersOptions(c, connect, args);
            o.swiftsync.on_progress = [&](const swiftsync::SwiftSyncProgress& p) {
                bar->Update(SwiftSyncProgressFraction(p), SwiftSyncProgressText(p, label + ": swiftsync"));
            };
            return PolicyRunJson(run::SyncSwiftSync(std::move(o)), id);
        });
        bar->Done();
        return run;
    });
}

void RunSwiftSyncFromPeers(const SyncOptions& classic, const std::vector<std::string>& connect, const SwiftSyncSyncArgs& args,
                           const ConnectOutputArgs& out)
{
    run::SwiftSyncPeersOptions o = PeersOptions(classic, connect, args);
    const std::filesystem::path chainstate = o.swiftsync.chainstate;
    SetInterruptNote(chainstate.empty() ? "" : "the chainstate " + chainstate.string() +
                                                   " is written only once SwiftSync accepts blocks 1..n: run the same command again, "
                                                   "it starts over or resumes the classic sync after n");
    auto bar = std::make_shared<ProgressLine>(!out.quiet && !out.json);
    o.swiftsync.on_progress = [bar](const swiftsync::SwiftSyncProgress& p) {
        bar->Update(SwiftSyncProgressFraction(p), SwiftSyncProgressText(p, "swiftsync"));
    };
    auto classic_bar = std::make_shared<ProgressLine>(!out.quiet && !out.json);
    if (o.continuation) o.continuation->on_progress = ProgressPrinter(classic_bar, "classic");
    const PolicyId policy = o.swiftsync.policy;
    // The first Ctrl-C stops the download (nothing kept) or flushes the classic rest; a second exits.
    static std::atomic<bool> stop{false};
    o.interrupt = &stop;
    InstallInterruptFlag(&stop);
    auto r = run::SyncSwiftSync(std::move(o));
    bar->Done();
    classic_bar->Done();
    if (r && r->continuation) {
        ReportInterrupted(*r->continuation, chainstate.string());
    } else {
        InstallInterruptExit();
    }
    if (!r && stop.load()) {
        std::fprintf(stderr, "ibdkit: interrupted: %s\n",
                     chainstate.empty() ? "nothing kept" : ("the chainstate " + chainstate.string() +
                                                            " holds nothing yet: run the same command again to start over").c_str());
        ExitCode() = EXIT_INTERRUPTED;
        return;
    }
    SetInterruptNote("");
    if (!r) {
        PrintError(r.error().message);
        ExitCode() = r.error().code == Errc::Refused ? EXIT_USAGE : EXIT_FAILED;
        return;
    }
    if (out.json) {
        PrintJsonResult(ToJson(SwiftSyncPeersFields(*r, policy)));
    } else {
        PrintHuman(*r);
    }
    const auto& v = r->swiftsync.verdict;
    if (!v.ok) {
        const bool peers = v.kind == swiftsync::VerdictKind::AggregatesDiffer;
        PrintError("SwiftSync refuses blocks 1.." + std::to_string(r->swiftsync.height) + ": " + v.reason +
                   (peers ? " (the spent coins the peers served; try other peers)" : ""));
        ExitCode() = peers || v.kind == swiftsync::VerdictKind::HintsMismatch ? EXIT_FAILED : EXIT_INVALID_CHAIN;
        return;
    }
    if (r->continuation) {
        if (r->continuation->failure) {
            PrintError("the classic sync after height " + std::to_string(r->swiftsync.height) + " stopped at height " +
                       std::to_string(r->continuation->height) + ": " + r->continuation->failure->message);
            ExitCode() = EXIT_FAILED;
        }
        ReportReject(*r->continuation);
    }
    if (ExitCode() == EXIT_OK && !out.quiet) PrintDatadirHandover(classic, classic.chain);
}

} // namespace ibdkit::cli

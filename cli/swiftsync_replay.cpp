// `ibdkit replay --swiftsync HINTS`: the run (run/swiftsync_run.h) with a progress line, its
// result printed for people or as JSON (run/result_fields.h), its outcome as the exit code.
#include "replay_cli.h"
#include "json_output.h"

#include "interrupt.h"

#include <ibdkit/primitives/amount.h>
#include <ibdkit/run/swiftsync_run.h>
#include <ibdkit/swiftsync/aggregate.h>

#include <cstdio>
#include <filesystem>
#include <string>

namespace ibdkit::cli {

namespace {

void PrintHuman(const run::SwiftSyncRunResult& run)
{
    const swiftsync::SwiftSyncResult& r = run.swiftsync;
    const auto& v = r.verdict;
    const bool coins = r.mode == swiftsync::AggregateMode::Coins;
    const std::string mode(swiftsync::AggregateModeName(r.mode));
    std::printf("network            %s\n", std::string(ChainTypeName(r.chain)).c_str());
    std::printf("swiftsync          %s mode: blocks 1..%u checked in %.2f s, %.1f blocks/s\n", mode.c_str(), r.height,
                r.seconds, r.seconds > 0 ? double(v.counts.blocks) / r.seconds : 0.0);
    std::printf("verdict            %s\n", v.ok ? (coins ? "accepted" : "accepted (outpoints mode: much less than Core's assumevalid, docs/swiftsync.md)")
                                                : ("REFUSED: " + v.reason).c_str());
    std::printf("counts             %llu transactions, %llu inputs, %llu spendable outputs of which %llu unspent at %u\n",
                (unsigned long long)v.counts.transactions, (unsigned long long)v.counts.inputs, (unsigned long long)v.counts.outputs,
                (unsigned long long)v.counts.unspent, r.height);
    if (coins && r.script_checks_from_height) {
        std::printf("scripts            %llu inputs verified, from height %d (%s)\n", (unsigned long long)r.script_checked_inputs,
                    *r.script_checks_from_height, r.script_check_reason.c_str());
    } else if (coins) {
        std::printf("scripts            not verified: every block is below the assumevalid block (--assumevalid 0 verifies)\n");
    }
    std::printf("memory             peak RSS %.0f MiB\n", double(run.peak_rss_bytes) / double(1 << 20));
    if (!v.ok) return;
    std::printf("height             %u\nbestblock          %s\n", r.height, r.tip.ToHex().c_str());
    if (!run.utxo) {
        std::printf("statistics         skipped (--no-stats)\n");
        return;
    }
    const UtxoStats& stats = *run.utxo;
    std::printf("txouts             %llu\ntransactions       %llu\nbogosize           %llu\ntotal_amount       %s\nhash_serialized_3  %s\n",
                (unsigned long long)stats.txouts, (unsigned long long)stats.transactions, (unsigned long long)stats.bogosize,
                FormatMoney(stats.total_amount).c_str(), stats.hash_serialized.ToHex().c_str());
}

void PrintFallback(const run::FallbackVerdict& f, uint32_t n)
{
    if (f.error) {
        std::printf("fallback           the classic replay failed: %s\n", f.error->c_str());
    } else if (f.reject_reason) {
        std::printf("fallback           the classic replay REJECTS block at height %d: %s\n", f.reject_height, f.reject_reason->c_str());
    } else if (!f.valid) {
        std::printf("fallback           the classic replay stopped at height %d of %u\n", f.height, n);
    } else {
        std::printf("fallback           the classic replay accepts blocks 1..%u (hash_serialized_3 %s): the hints, or the\n"
                    "                   datadir's rev data, were wrong\n",
                    n, f.hash_serialized ? f.hash_serialized->ToHex().c_str() : "");
    }
}

} // namespace

void RunSwiftSyncReplay(run::SwiftSyncRunOptions o, const ConnectOutputArgs& out)
{
    const std::filesystem::path chainstate = o.swiftsync.chainstate;
    SetInterruptNote(chainstate.empty() ? "" : "nothing was written into the chainstate " + chainstate.string() +
                                                   " (an accepted history is written at the end): run the same command again, it starts over");
    auto bar = std::make_shared<ProgressLine>(!out.quiet && !out.json);
    o.swiftsync.on_progress = [bar](const swiftsync::SwiftSyncProgress& p) {
        bar->Update(SwiftSyncProgressFraction(p), SwiftSyncProgressText(p, "swiftsync"));
    };
    auto fallback_bar = std::make_shared<ProgressLine>(!out.quiet && !out.json);
    if (o.fallback) o.fallback->on_progress = ProgressPrinter(fallback_bar, "fallback");
    const PolicyId policy = o.swiftsync.policy;
    auto r = run::RunSwiftSync(std::move(o));
    bar->Done();
    fallback_bar->Done();
    SetInterruptNote("");
    if (!r) {
        PrintError(r.error().message);
        ExitCode() = r.error().code == Errc::Refused ? EXIT_USAGE : EXIT_FAILED;
        return;
    }
    if (out.json) {
        PrintJsonResult(ToJson(SwiftSyncRunFields(*r, policy)));
    } else {
        PrintHuman(*r);
        if (r->fallback) PrintFallback(*r->fallback, r->swiftsync.height);
    }
    const std::string refused = "SwiftSync refuses blocks 1.." + std::to_string(r->swiftsync.height) + ": " + r->swiftsync.verdict.reason;
    switch (run::OutcomeOf(*r)) {
    case run::SwiftSyncOutcome::Accepted: break;
    case run::SwiftSyncOutcome::Refused:
        PrintError(r->fallback && r->fallback->reject_reason
                       ? refused + "; the classic replay rejects the block at height " + std::to_string(r->fallback->reject_height) + ": " +
                             *r->fallback->reject_reason
                       : refused);
        ExitCode() = r->swiftsync.verdict.kind == swiftsync::VerdictKind::HintsMismatch ? EXIT_FAILED : EXIT_INVALID_CHAIN;
        break;
    case run::SwiftSyncOutcome::HintsWrong:
        PrintError(refused + "; the classic replay accepts them: the hints, or the datadir's rev data, were wrong");
        ExitCode() = EXIT_FAILED;
        break;
    case run::SwiftSyncOutcome::FallbackFailed:
        PrintError(refused + "; the classic replay could not finish: " + *r->fallback->error);
        ExitCode() = EXIT_FAILED;
        break;
    }
}

int SwiftSyncAllPolicies(const swiftsync::SwiftSyncOptions& base, bool quiet, int rounds)
{
    return CompareAllPolicies(rounds, [&](PolicyId id, const std::string& label) {
        auto bar = std::make_shared<ProgressLine>(!quiet);
        PolicyRun run = RunInChild(id, [&]() -> std::string {
            run::SwiftSyncRunOptions o;
            o.swiftsync = base;
            o.swiftsync.policy = id;
            o.swiftsync.chainstate.clear(); // a temporary one, for the statistics
            o.swiftsync.on_progress = [&](const swiftsync::SwiftSyncProgress& p) {
                bar->Update(SwiftSyncProgressFraction(p), SwiftSyncProgressText(p, label));
            };
            auto r = run::RunSwiftSync(std::move(o));
            if (!r) return "!" + r.error().message;
            const swiftsync::SwiftSyncResult& s = r->swiftsync;
            if (!s.verdict.ok) return "!the history is refused: " + s.verdict.reason;
            const nlohmann::json j{{"blocks_connected", s.verdict.counts.blocks}, {"bytes", s.block_bytes},
                                   {"transactions_connected", s.verdict.counts.transactions}, {"seconds", s.seconds},
                                   {"bytes_cleansed", s.bytes_cleansed}, {"height", s.height},
                                   {"hash_serialized_3", r->utxo->hash_serialized.ToHex()}, {"txouts", r->utxo->txouts}};
            return j.dump();
        });
        bar->Done();
        return run;
    });
}

} // namespace ibdkit::cli

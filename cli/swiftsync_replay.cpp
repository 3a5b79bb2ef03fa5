// `ibdkit replay --swiftsync HINTS`: the chain checked with SwiftSync (swiftsync/replay.h), the UTXO
// set at the hintsfile's height written as a chainstate, and its statistics.
#include "replay_cli.h"

#include "interrupt.h"

#include <ibdkit/coins/coins_db.h>
#include <ibdkit/engine/engine.h>
#include <ibdkit/primitives/amount.h>
#include <ibdkit/utxo/stats.h>

#include "coins/coins_db_internal.h"

#include <cstdio>
#include <filesystem>
#include <optional>

namespace ibdkit::cli {

namespace {

namespace fs = std::filesystem;

nlohmann::json VerdictJson(const swiftsync::SwiftSyncResult& r)
{
    const auto& v = r.verdict;
    const auto& c = v.counts;
    return {{"ok", v.ok},
            {"reason", v.reason},
            {"mode", r.mode == swiftsync::AggregateMode::Coins ? "coins" : "outpoints"},
            {"blocks", c.blocks},
            {"transactions", c.transactions},
            {"inputs", c.inputs},
            {"outputs", c.outputs},
            {"unspent", c.unspent},
            {"unspendable", c.unspendable},
            {"supply_sat", v.supply},
            {"supply_bound_sat", v.supply_bound}};
}

/// The statistics of the chainstate SwiftSync wrote.
Result<UtxoStats> StatsOf(const fs::path& dir)
{
    CoinsDBOptions o;
    o.read_only = true;
    StoreStatus st;
    auto db = OpenCoinsDB(dir, o, &st);
    if (!db) return Error{Errc::Corrupt, "cannot read the chainstate written: " + st.message};
    return ComputeUtxoStats(*db);
}

void PrintHuman(const swiftsync::SwiftSyncResult& r, const std::optional<UtxoStats>& stats)
{
    const auto& v = r.verdict;
    const bool coins = r.mode == swiftsync::AggregateMode::Coins;
    std::printf("network            %s\n", std::string(ChainTypeName(r.chain)).c_str());
    std::printf("swiftsync          %s mode: blocks 1..%u checked in %.2f s, %.1f blocks/s\n", coins ? "coins" : "outpoints", r.height,
                r.seconds, r.seconds > 0 ? double(v.counts.blocks) / r.seconds : 0.0);
    std::printf("verdict            %s\n", v.ok ? (coins ? "accepted" : "accepted (outpoints mode: much less than Core's assumevalid, docs/swiftsync.md)")
                                                : ("REFUSED: " + v.reason).c_str());
    std::printf("counts             %llu transactions, %llu inputs, %llu spendable outputs of which %llu unspent at %u\n",
                (unsigned long long)v.counts.transactions, (unsigned long long)v.counts.inputs, (unsigned long long)v.counts.outputs,
                (unsigned long long)v.counts.unspent, r.height);
    if (coins && r.scripts_from_height) {
        std::printf("scripts            %llu inputs verified, from height %u (%s)\n", (unsigned long long)r.script_checked_inputs,
                    *r.scripts_from_height, r.script_check_reason.c_str());
    } else if (coins) {
        std::printf("scripts            not verified: every block is below the assumevalid block (--assumevalid 0 verifies)\n");
    }
    std::printf("memory             peak RSS %.0f MiB\n", double(PeakRssBytes()) / double(1 << 20));
    if (!v.ok) return;
    std::printf("height             %u\nbestblock          %s\n", r.height, r.tip.ToHex().c_str());
    if (!stats) {
        std::printf("statistics         skipped (--no-stats)\n");
        return;
    }
    std::printf("txouts             %llu\ntransactions       %llu\nbogosize           %llu\ntotal_amount       %s\nhash_serialized_3  %s\n",
                (unsigned long long)stats->txouts, (unsigned long long)stats->transactions, (unsigned long long)stats->bogosize,
                FormatMoney(stats->total_amount).c_str(), stats->hash_serialized.ToHex().c_str());
}

} // namespace

/// --fallback: the classic replay of blocks 1..n (into a temporary chainstate), for Core's reason
/// of the first invalid block, or to tell that the chain is valid and the hints (or rev data)
/// were wrong.
nlohmann::json Fallback(ReplayOptions classic, uint32_t n, bool quiet)
{
    classic.chainstate.clear();
    classic.stop_height = int(n);
    classic.statistics = true;
    auto bar = std::make_shared<ProgressLine>(!quiet);
    classic.on_progress = ProgressPrinter(bar, "fallback");
    auto r = Replay(classic);
    bar->Done();
    if (!r) return {{"error", r.error().message}};
    if (r->reject_reason) return {{"valid", false}, {"reject_height", r->reject_height}, {"reject_reason", *r->reject_reason}};
    nlohmann::json j{{"valid", r->height == int(n)}, {"height", r->height}};
    if (r->utxo) j["hash_serialized_3"] = r->utxo->hash_serialized.ToHex();
    return j;
}

void PrintFallback(const nlohmann::json& f, uint32_t n)
{
    if (f.contains("error")) {
        std::printf("fallback           the classic replay failed: %s\n", f["error"].get<std::string>().c_str());
    } else if (!f["valid"].get<bool>()) {
        std::printf("fallback           the classic replay REJECTS block at height %d: %s\n", f["reject_height"].get<int>(),
                    f["reject_reason"].get<std::string>().c_str());
    } else {
        std::printf("fallback           the classic replay accepts blocks 1..%u (hash_serialized_3 %s): the hints, or the\n"
                    "                   datadir's rev data, were wrong\n",
                    n, f.value("hash_serialized_3", "").c_str());
    }
}

void RunSwiftSyncReplay(swiftsync::SwiftSyncOptions o, const ConnectOutputArgs& out, const ReplayOptions* fallback)
{
    // Without --chainstate the statistics need one: a temporary one, removed after.
    std::optional<TemporaryDir> temporary;
    if (o.chainstate.empty() && !out.no_stats) o.chainstate = temporary.emplace("swiftsync").Path();
    SetInterruptNote(o.chainstate.empty() ? "" : "nothing was written into the chainstate " + o.chainstate.string() +
                                                     " (an accepted history is written at the end): remove it and run again");
    auto bar = std::make_shared<ProgressLine>(!out.quiet && !out.json);
    o.progress = [bar](uint32_t h, uint32_t n) { bar->Update(n ? double(h) / n : 1.0, "block " + std::to_string(h) + " of " + std::to_string(n)); };
    auto r = swiftsync::SwiftSyncReplay(o);
    bar->Done();
    SetInterruptNote("");
    if (!r) {
        PrintError(r.error().message);
        ExitCode() = r.error().code == Errc::Refused ? EXIT_USAGE : EXIT_FAILED;
        return;
    }
    std::optional<UtxoStats> stats;
    if (r->verdict.ok && !out.no_stats) {
        auto s = StatsOf(o.chainstate);
        if (!s) {
            PrintError(s.error().message);
            ExitCode() = EXIT_FAILED;
            return;
        }
        stats = *s;
    }
    nlohmann::json fell;
    if (!r->verdict.ok && fallback) fell = Fallback(*fallback, r->height, out.quiet || out.json);
    if (out.json) {
        nlohmann::json j = stats ? ToJson(UtxoStatsFields(*stats)) : nlohmann::json::object();
        if (!fell.is_null()) j["fallback"] = fell;
        j["network"] = std::string(ChainTypeName(r->chain));
        j["height"] = r->height;
        j["bestblock"] = r->tip.ToHex();
        j["swiftsync"] = VerdictJson(*r);
        j["seconds"] = r->seconds;
        j["check_seconds"] = r->check_seconds;
        j["throughput_by_decile"] = ToJson(DecilesValue(r->throughput_by_decile));
        j["script_checked_inputs"] = r->script_checked_inputs;
        j["script_checks_from_height"] = r->scripts_from_height ? nlohmann::json(*r->scripts_from_height) : nlohmann::json(nullptr);
        j["script_check_reason"] = r->script_check_reason;
        j["coins_written"] = r->coins_written;
        j["peak_rss_bytes"] = PeakRssBytes();
        std::printf("%s\n", j.dump(2).c_str());
    } else {
        PrintHuman(*r, stats);
        if (!fell.is_null()) PrintFallback(fell, r->height);
    }
    if (!r->verdict.ok) ExitCode() = EXIT_INVALID_CHAIN;
    // The classic replay found the chain valid: what failed was the hints or the rev data.
    if (!fell.is_null() && fell.value("valid", false)) ExitCode() = EXIT_FAILED;
    if (!fell.is_null() && fell.contains("error")) ExitCode() = EXIT_FAILED;
}

int SwiftSyncAllPolicies(const swiftsync::SwiftSyncOptions& base, bool quiet, int rounds)
{
    return CompareAllPolicies(rounds, [&](PolicyId id, const std::string& label) {
        auto bar = std::make_shared<ProgressLine>(!quiet);
        PolicyRun run = RunInChild(id, [&]() -> std::string {
            const TemporaryDir cs("swiftsync");
            swiftsync::SwiftSyncOptions o = base;
            o.policy = id;
            o.chainstate = cs.Path();
            o.progress = [&](uint32_t h, uint32_t n) { bar->Update(n ? double(h) / n : 1.0, label + ": block " + std::to_string(h) + " of " + std::to_string(n)); };
            auto r = swiftsync::SwiftSyncReplay(o);
            if (!r) return "!" + r.error().message;
            if (!r->verdict.ok) return "!the history is refused: " + r->verdict.reason;
            auto stats = StatsOf(cs.Path());
            if (!stats) return "!" + stats.error().message;
            const nlohmann::json j{{"blocks_connected", r->verdict.counts.blocks}, {"bytes", r->block_bytes},
                                   {"transactions_connected", r->verdict.counts.transactions}, {"seconds", r->seconds},
                                   {"bytes_cleansed", r->bytes_cleansed}, {"height", r->height},
                                   {"hash_serialized_3", stats->hash_serialized.ToHex()}, {"txouts", stats->txouts}};
            return j.dump();
        });
        bar->Done();
        return run;
    });
}

} // namespace ibdkit::cli

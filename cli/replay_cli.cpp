// Shared pieces of the replay-driven commands (`replay`, `run`).
#include "replay_cli.h"
#include "interrupt.h"

#include <ibdkit/blockfile/locate.h>
#include <ibdkit/common/write_guard.h>
#include <ibdkit/memory/policy_id.h>

#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <type_traits>
#include <variant>
#include <cstdio>
#include <cstdlib>

namespace ibdkit::cli {

nlohmann::json ToJson(const ResultValue& v)
{
    return std::visit(
        [](const auto& x) -> nlohmann::json {
            using T = std::decay_t<decltype(x)>;
            if constexpr (std::is_same_v<T, ResultValue::List>) {
                nlohmann::json a = nlohmann::json::array();
                for (const auto& item : x) a.push_back(ToJson(item));
                return a;
            } else if constexpr (std::is_same_v<T, ResultValue::Object>) {
                return ToJson(x);
            } else {
                return nlohmann::json(x);
            }
        },
        v.value);
}

nlohmann::json ToJson(const ResultFields& fields)
{
    nlohmann::json j = nlohmann::json::object();
    for (const auto& f : fields) j[f.key] = ToJson(f.value);
    return j;
}

nlohmann::json ToJson(const ReplayResult& r, PolicyId policy) { return ToJson(ReplayResultFields(r, policy)); }

void PrintHuman(const ReplayResult& r)
{
    std::printf("network            %s\n", std::string(ChainTypeName(r.chain)).c_str());
    std::printf("blocks connected   %llu (heights %d..%d) in %.2f s: %.1f blocks/s, %.1f MB/s, %.0f tx/s\n",
                (unsigned long long)r.blocks, r.start_height, r.height, r.seconds,
                r.seconds > 0 ? double(r.blocks) / r.seconds : 0.0, r.seconds > 0 ? double(r.bytes) / 1e6 / r.seconds : 0.0,
                r.seconds > 0 ? double(r.txs) / r.seconds : 0.0);
    if (r.recovered_blocks) std::printf("recovered          %llu blocks rolled forward after an interrupted flush\n", (unsigned long long)r.recovered_blocks);
    if (r.orphans || r.stale || r.duplicates || r.scan.truncated || r.scan.skipped_bytes) {
        std::printf("skipped            %llu orphan, %llu stale, %llu duplicate blocks; %llu truncated records; %llu garbage bytes\n",
                    (unsigned long long)r.orphans, (unsigned long long)r.stale, (unsigned long long)r.duplicates,
                    (unsigned long long)r.scan.truncated, (unsigned long long)r.scan.skipped_bytes);
    }
    std::printf("memory             peak RSS %.0f MiB; %llu coins read back from the chainstate\n",
                double(r.peak_rss_bytes) / double(1 << 20), (unsigned long long)r.coins_read_from_disk);
    PrintScripts(r);
    PrintRejected(r);
    if (r.interrupted) std::printf("interrupted        flushed at height %d; run again to resume\n", r.height);
    PrintTip(r);
}

void PrintRejected(const EngineResult& r)
{
    if (!r.reject_reason) return;
    std::printf("REJECTED           block at height %d: %s\n", r.reject_height, r.reject_reason->c_str());
    if (r.kept_height) {
        std::printf("kept               every block before it: the chainstate is at height %d, where a rerun resumes\n",
                    *r.kept_height);
    }
}

void AddConnectOutputOptions(CLI::App* cmd, ConnectOutputArgs& args, RunSettingsArgs& run)
{
    cmd->add_option("--assumevalid", run.assumevalid,
                    "Skip the scripts of blocks below this block hash where Bitcoin Core would (it is in the\n"
                    "chain, two weeks of work deep, the chain has the network's minimum work); 0 = verify every\n"
                    "script. Default: Core's for the network (none on regtest: every script verified)");
    cmd->add_option("--minimum-chain-work", run.minimum_chain_work,
                    "Core's -minimumchainwork, hex: a peers' header chain with less work is not synced, and no script is\n"
                    "skipped by --assumevalid while the best header chain has less. Default: Core's for the network (0 on regtest)");
    cmd->add_flag("--no-stats", args.no_stats,
                  "Skip the final statistics walk (coins, amount, hash_serialized_3): end at the final flush, as\n"
                  "Core's -reindex-chainstate does; height and best block are still printed");
    cmd->add_flag("--json", args.json, "Print the result as JSON (gettxoutsetinfo field names plus timing)");
    AddQuietOption(cmd, args.quiet);
}

void AddEngineSizeOptions(CLI::App* cmd, RunSettingsArgs& run, int& stop_height)
{
    cmd->add_option("--dbcache", run.dbcache, "UTXO cache budget in MiB: flush when reached (0 = the least: a flush after every block; SwiftSync sorts in\nits smallest runs)")
        ->check(IntegerIn(0, MAX_DBCACHE_MIB))
        ->capture_default_str();
    cmd->add_option("--stop-height", stop_height, "Stop (and flush) after this height")->check(IntegerIn(0, MAX_HEIGHT));
    AddThreadsOption(cmd, run.threads, "Threads (read or peer, decode+check workers, connect)");
}

void CheckEngineOutputs(const EngineOptions& o)
{
    if (auto refused = CheckChainstateWritable(o.chainstate)) throw UsageError("--chainstate: " + refused->message);
    if (auto refused = CheckUndoDirWritable(o.undo_dir)) throw UsageError("--undo: " + refused->message);
    if (CheckUndoApartFromChainstate(o.undo_dir, o.chainstate)) {
        throw UsageError("--undo and --chainstate share a folder: give each a folder of its own");
    }
}

void UseDatadirOut(EngineOptions& o, const std::string& datadir, ChainType chain)
{
    if (datadir.empty()) return;
    o.datadir_out = datadir;
    auto in_datadir = DatadirChainstate(o.datadir_out, chain);
    if (!in_datadir) throw UsageError("--datadir: " + in_datadir.error().message);
    if (o.chainstate.empty()) o.chainstate = *in_datadir;
}

void PrintDatadirHandover(const EngineOptions& o, ChainType chain)
{
    if (o.datadir_out.empty()) return;
    const std::string flag = chain == ChainType::MAIN ? "" : " -chain=" + std::string(ChainTypeName(chain));
    std::fprintf(stderr, "data directory     %s: start Bitcoin Core on it with `bitcoind -datadir=%s%s`\n", o.datadir_out.c_str(),
                 o.datadir_out.c_str(), flag.c_str());
}

void ReportReject(const EngineResult& r)
{
    if (!r.reject_reason) return;
    PrintError("block at height " + std::to_string(r.reject_height) + " is invalid: " + *r.reject_reason);
    ExitCode() = EXIT_INVALID_CHAIN;
}

void PrintScripts(const EngineResult& r)
{
    if (r.script_checks_from_height) {
        std::printf("scripts            %llu inputs verified, from height %d (%s)\n", (unsigned long long)r.script_checked_inputs,
                    *r.script_checks_from_height, r.script_check_reason.c_str());
    } else if (r.blocks) {
        std::printf("scripts            not verified: every block connected is below the assumevalid block (--assumevalid 0 verifies)\n");
    }
}

void StopOnInterrupt(std::atomic<bool>* flag, const std::string& chainstate)
{
    SetInterruptNote(chainstate.empty()
                         ? "interrupted again during the flush; the temporary chainstate is left in the temporary directory"
                         : "interrupted again during the flush of the chainstate " + chainstate +
                               ": the same command run again completes it (no block is lost)");
    InstallInterruptFlag(flag);
}

void ReportInterrupted(const EngineResult& r, const std::string& chainstate)
{
    InstallInterruptExit();
    SetInterruptNote("");
    if (!r.interrupted) return;
    if (chainstate.empty()) {
        std::fprintf(stderr, "ibdkit: interrupted: stopped at height %d; the temporary chainstate is removed, nothing kept\n", r.height);
    } else {
        std::fprintf(stderr, "ibdkit: interrupted: chainstate %s flushed at height %d; run the same command again to resume\n",
                     chainstate.c_str(), r.height);
    }
    ExitCode() = EXIT_INTERRUPTED;
}

void PrintTip(const EngineResult& r)
{
    if (r.height < 0) return;
    std::printf("height             %d\nbestblock          %s\n", r.height, r.tip.ToHex().c_str());
    if (!r.utxo) {
        std::printf("statistics         skipped (--no-stats)\n");
        return;
    }
    const UtxoStats& u = *r.utxo;
    std::printf("txouts             %llu\ntransactions       %llu\nbogosize           %llu\ntotal_amount       %s\n"
                "hash_serialized_3  %s\n",
                (unsigned long long)u.txouts, (unsigned long long)u.transactions, (unsigned long long)u.bogosize,
                FormatMoney(u.total_amount).c_str(), u.hash_serialized.ToHex().c_str());
}

// The replay progress line: height, blocks/s, tx/s, MB/s, cache use, ETA.
std::function<void(const ReplayProgress&)> ProgressPrinter(std::shared_ptr<ProgressLine> bar, std::string label)
{
    return [bar, label](const ReplayProgress& p) {
        const double s = std::max(p.elapsed_s, 1e-9);
        const double bps = double(p.blocks) / s;
        const int left = p.tip_height - p.height;
        char text[256];
        if (p.flushing) {
            std::snprintf(text, sizeof text, "%s%sheight %d/%d  writing the cache's coins to the chainstate (%.1f MiB in the cache)...",
                          label.c_str(), label.empty() ? "" : ": ", p.height, p.tip_height, double(p.cache_bytes) / (1 << 20));
            bar->Update(p.tip_height > 0 ? double(p.height) / p.tip_height : -1, text);
            return;
        }
        std::snprintf(text, sizeof text, "%s%sheight %d/%d  %.0f blk/s  %.0f tx/s  %.1f MB/s  cache %zu/%zu MiB  ETA %s",
                      label.c_str(), label.empty() ? "" : ": ", p.height, p.tip_height, bps, double(p.txs) / s,
                      double(p.bytes) / 1e6 / s, p.cache_bytes >> 20, p.cache_budget >> 20,
                      bps > 0 ? (std::to_string(int(left / bps)) + " s").c_str() : "?");
        bar->Update(p.tip_height > 0 ? double(p.height) / p.tip_height : -1, text);
    };
}

// Runs one replay in a child process so each policy's peak RSS is its own.
PolicyRun RunReplayInChild(ReplayOptions opts)
{
    return RunInChild(opts.policy, [&] {
        auto r = Replay(opts);
        return r ? ToJson(*r, opts.policy).dump() : std::string("!") + r.error().message;
    });
}

PolicyRun RunInChild(PolicyId policy, const std::function<std::string()>& job)
{
    PolicyRun pr{policy, {}, 0, {}};
    int fd[2];
    if (pipe(fd) != 0) {
        pr.error = "pipe failed";
        return pr;
    }
    std::fflush(nullptr);
    const pid_t pid = fork();
    if (pid == 0) {
        close(fd[0]);
        const std::string out = job();
        std::size_t off = 0;
        while (off < out.size()) {
            ssize_t n = write(fd[1], out.data() + off, out.size() - off);
            if (n <= 0) break;
            off += std::size_t(n);
        }
        _exit(!out.empty() && out[0] == '!' ? 1 : 0);
    }
    close(fd[1]);
    std::string buf;
    char tmp[4096];
    ssize_t n;
    while ((n = read(fd[0], tmp, sizeof tmp)) > 0) buf.append(tmp, std::size_t(n));
    close(fd[0]);
    int status = 0;
    rusage ru{};
    wait4(pid, &status, 0, &ru);
    pr.peak_rss_kib = ru.ru_maxrss;
    if (buf.empty() || buf[0] == '!') {
        pr.error = buf.empty() ? "replay child failed" : buf.substr(1);
        return pr;
    }
    auto j = nlohmann::json::parse(buf);
    pr.result.blocks = j["blocks_connected"];
    pr.result.bytes = j["bytes"];
    pr.result.txs = j["transactions_connected"];
    pr.result.seconds = j["seconds"];
    pr.result.bytes_cleansed = j["bytes_cleansed"];
    pr.result.coins_read_from_disk = j.value("coins_read_from_disk", uint64_t(0));
    pr.result.height = j.value("height", -1);
    if (j.contains("hash_serialized_3")) {
        UtxoStats u;
        u.hash_serialized = uint256::FromHex(j["hash_serialized_3"].get<std::string>()).value_or(uint256{});
        u.txouts = j["txouts"];
        pr.result.utxo = u;
    }
    return pr;
}

// The side-by-side table of `--policy all`.
void PrintPolicyTable(const std::vector<PolicyRun>& runs, const std::vector<std::vector<double>>* ratios)
{
    const PolicyRun* plain = nullptr;
    for (const auto& r : runs) {
        if (r.policy == PolicyId::Plain) plain = &r;
    }
    std::printf("\n| %-16s | %9s | %9s | %8s | %13s | %15s | %15s | %-19s |\n", "policy", "wall s", "blocks/s", "MB/s",
                "peak RSS MiB", "coins from disk", "bytes cleansed", "vs plain");
    std::printf("|:-----------------|----------:|----------:|---------:|--------------:|----------------:|----------------:|:--------------------|\n");
    for (const auto& r : runs) {
        const auto& x = r.result;
        char ratio[64];
        if (ratios) {
            auto v = (*ratios)[std::size_t(&r - runs.data())];
            std::sort(v.begin(), v.end());
            std::snprintf(ratio, sizeof ratio, "%.2fx [%.2f-%.2f]", v[v.size() / 2], v.front(), v.back());
        } else {
            std::snprintf(ratio, sizeof ratio, "%.2fx", plain && plain->result.seconds > 0 ? x.seconds / plain->result.seconds : 0.0);
        }
        std::printf("| %-16s | %9.2f | %9.1f | %8.2f | %13.1f | %15llu | %15llu | %-19s |\n",
                    std::string(PolicyName(r.policy)).c_str(), x.seconds, x.seconds > 0 ? double(x.blocks) / x.seconds : 0.0,
                    x.seconds > 0 ? double(x.bytes) / 1e6 / x.seconds : 0.0, double(r.peak_rss_kib) / 1024.0,
                    (unsigned long long)x.coins_read_from_disk, (unsigned long long)x.bytes_cleansed, ratio);
    }
    bool same = true;
    for (const auto& r : runs) {
        if (!r.result.utxo || !runs.front().result.utxo || r.result.utxo->hash_serialized != runs.front().result.utxo->hash_serialized) same = false;
    }
    if (!runs.empty() && runs.front().result.utxo) {
        std::printf("\nheight %d, %llu txouts, hash_serialized_3 %s — %s\n", runs.front().result.height,
                    (unsigned long long)runs.front().result.utxo->txouts, runs.front().result.utxo->hash_serialized.ToHex().c_str(),
                    same ? "identical under every policy" : "DIFFERS between policies (bug!)");
    }
    if (!same) ExitCode() = EXIT_FAILED;
}

int ReplayAllPolicies(const ReplayOptions& base, bool quiet, int rounds)
{
    return CompareAllPolicies(rounds, [&](PolicyId id, const std::string& label) {
        ReplayOptions po = base;
        po.policy = id;
        auto bar = std::make_shared<ProgressLine>(!quiet);
        po.on_progress = ProgressPrinter(bar, label);
        PolicyRun run = RunReplayInChild(po);
        bar->Done();
        return run;
    });
}

int CompareAllPolicies(int rounds, const std::function<PolicyRun(PolicyId, const std::string& label)>& run)
{
    // Rounds interleave the policies (P Z B S H, P Z B S H, …) so drift hits all alike; each
    // policy's row holds its median wall time and the median [min–max] of its per-round ratio to plain.
    rounds = std::max(1, rounds);
    std::vector<std::vector<PolicyRun>> all(ALL_POLICIES.size());
    for (int r = 0; r < rounds; ++r) {
        for (std::size_t k = 0; k < ALL_POLICIES.size(); ++k) {
            const PolicyId id = ALL_POLICIES[k];
            std::string label = std::string(PolicyName(id));
            if (rounds > 1) label += " (round " + std::to_string(r + 1) + "/" + std::to_string(rounds) + ")";
            all[k].push_back(run(id, label));
            if (!all[k].back().error.empty()) {
                PrintError("the run with " + std::string(PolicyName(id)) + " failed: " + all[k].back().error);
                return EXIT_FAILED;
            }
        }
    }
    std::vector<PolicyRun> rows;
    std::vector<std::vector<double>> ratios(ALL_POLICIES.size());
    for (std::size_t k = 0; k < ALL_POLICIES.size(); ++k) {
        auto runs = all[k];
        for (int r = 0; r < rounds; ++r) ratios[k].push_back(runs[std::size_t(r)].result.seconds / all[0][std::size_t(r)].result.seconds);
        PolicyRun row = runs.front();
        std::sort(runs.begin(), runs.end(), [](const PolicyRun& a, const PolicyRun& b) { return a.result.seconds < b.result.seconds; });
        row.result = runs[runs.size() / 2].result; // the median run
        for (const auto& x : runs) row.peak_rss_kib = std::max(row.peak_rss_kib, x.peak_rss_kib);
        rows.push_back(row);
    }
    PrintPolicyTable(rows, rounds > 1 ? &ratios : nullptr);
    return ExitCode();
}

void PrintPeers(const std::vector<PeerSummary>& peers, const std::vector<std::string>& unreachable, bool spent_coins)
{
    for (const PeerSummary& p : peers) {
        char spent[64] = "";
        if (spent_coins) std::snprintf(spent, sizeof spent, ", spent coins %.1f MB", double(p.spent_bytes) / 1e6);
        std::printf("peer               %s (%s): %llu blocks, %.1f MB%s%s\n", p.address.c_str(), p.user_agent.c_str(), (unsigned long long)p.blocks,
                    double(p.block_bytes) / 1e6, spent, p.dropped.empty() ? "" : (", DROPPED: " + p.dropped).c_str());
    }
    for (const std::string& u : unreachable) std::printf("not used           %s\n", u.c_str());
}

} // namespace ibdkit::cli

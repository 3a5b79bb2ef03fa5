// `ibdkit utxo stats|get|dump|balances|snapshot|load-snapshot` (and verify-snapshot: cmd_verify_snapshot.cpp): views of a chainstate in Core's format
// (read-only) and assumeutxo snapshots in and out.
#include "commands.h"
#include "json_output.h"
#include "interrupt.h"
#include "progress.h"
#include "utxo_export_cli.h"
#include "verify_snapshot_cli.h"

#include <ibdkit/blockfile/locate.h>
#include <ibdkit/chain/params.h>
#include <ibdkit/coins/coins_db.h>
#include <ibdkit/common/write_guard.h>
#include <ibdkit/encoding/hex.h>
#include <ibdkit/memory/policy_id.h>
#include <ibdkit/spent/tables.h>
#include <ibdkit/utxo/address.h>
#include <ibdkit/utxo/balances.h>
#include <ibdkit/utxo/snapshot.h>
#include <ibdkit/utxo/stats.h>

#include <nlohmann/json.hpp>

#include <unistd.h>

#include <cctype>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>

namespace ibdkit::cli {
namespace {

namespace fs = std::filesystem;

struct CommonOpts {
    std::string chainstate, datadir, network;
    std::string policy{ibdkit::PolicyName(ibdkit::PolicyId::Hardened)}; // replay, sync and Python default to it too
    std::size_t dbcache_mib{64};
    bool quiet{false}, json{false};
};

void AddCommon(CLI::App* cmd, CommonOpts& o)
{
    auto* cs = cmd->add_option("--chainstate", o.chainstate,
                               "Chainstate folder: one ibdkit wrote, or Core's DATADIR/chainstate (a data directory is accepted)");
    auto* dd = cmd->add_option("--datadir", o.datadir, "Bitcoin Core data directory: its network's chainstate is read");
    cs->excludes(dd);
    AddNetworkOption(cmd, o.network, "what ibdkit recorded in its chainstate, else the data directory's layout, else main");
    cmd->add_option("--policy", o.policy, "Buffer policy for database keys/values: " + PolicyNameList())->capture_default_str();
    cmd->add_option("--dbcache", o.dbcache_mib, "LevelDB cache in MiB")->check(IntegerIn(1, MAX_DBCACHE_MIB))->capture_default_str();
    AddQuietOption(cmd, o.quiet);
    cmd->add_flag("--json", o.json, "Print the result as JSON");
}

struct OpenedChainstate {
    std::unique_ptr<CoinsDB> db;
    std::optional<ChainType> chain; ///< given, recorded by ibdkit, or from the data directory's layout
    fs::path dir;
};

/// The chainstate --chainstate or --datadir names, opened read-only (nothing in it is written).
OpenedChainstate OpenReadOnly(const CommonOpts& o)
{
    if (o.chainstate.empty() == o.datadir.empty()) {
        throw UsageError("give --chainstate DIR (a chainstate folder) or --datadir DIR (Bitcoin Core's data directory)");
    }
    auto policy = ParsePolicy(o.policy);
    if (!policy) throw CLI::ValidationError("--policy", "unknown policy '" + o.policy + "' (" + PolicyNameList() + ")");
    auto loc = LocateChainstate(o.chainstate.empty() ? o.datadir : o.chainstate, ParseNetworkOption(o.network));
    if (!loc) throw std::runtime_error(loc.error().message);
    auto opened = CoinsDB::Open(loc->dir, CoinsDBOptions::ForReading(o.dbcache_mib, *policy));
    if (!opened) throw std::runtime_error("cannot read the chainstate " + loc->dir.string() + ": " + opened.error().message);
    std::unique_ptr<CoinsDB> db = std::move(*opened);
    if (db->FromSnapshot() && !o.quiet) {
        auto best = db->GetBestBlock();
        // ibdkit marks every chainstate it makes: then the writer holding the LOCK is another ibdkit.
        const std::string who = HoldsChainstateMarker(loc->dir) ? "another ibdkit is writing this chainstate: reading a snapshot of it"
                                                                : "bitcoind is running: reading a snapshot of its chainstate";
        PrintNote(who + "; consistent at best block " + (best ? best->ToHex() : "(unreadable)"));
    }
    return {std::move(db), loc->chain, loc->dir};
}

/// The network of addresses: the chainstate's, else main (said once on stderr).
AddressNetwork AddressNetworkFor(const OpenedChainstate& c, const CommonOpts& o)
{
    if (c.chain) return AddressNetworkOf(*c.chain);
    if (!o.quiet) PrintNote("nothing says which network " + c.dir.string() + " is of: addresses are mainnet's (pass --network)");
    return AddressNetwork::Main;
}

class ProgressBar {
public:
    explicit ProgressBar(bool enabled) : m_enabled(enabled && ::isatty(STDERR_FILENO)), m_start(Clock::now()) {}
    void Update(uint64_t coins, double fraction)
    {
        if (!m_enabled) return;
        const double secs = std::chrono::duration<double>(Clock::now() - m_start).count();
        const int width = 40, filled = int(fraction * width);
        std::string bar(std::size_t(filled), '#');
        bar.resize(width, '.');
        std::fprintf(stderr, "\r[%s] %5.1f%%  %llu coins  %.1f s", bar.c_str(), fraction * 100.0,
                     (unsigned long long)coins, secs);
        std::fflush(stderr);
    }
    void Done()
    {
        if (m_enabled) std::fprintf(stderr, "\n");
    }

private:
    using Clock = std::chrono::steady_clock;
    bool m_enabled;
    Clock::time_point m_start;
};

void PrintStats(const UtxoStats& s, bool json)
{
    const std::string best = s.best_block.ToHex();
    const bool adds_up = s.BreakdownAddsUp();
    if (json) {
        std::printf("{\n  \"height\": %u,\n  \"bestblock\": \"%s\",\n  \"txouts\": %llu,\n  \"bogosize\": %llu,\n",
                    s.height, best.c_str(), (unsigned long long)s.txouts, (unsigned long long)s.bogosize);
        if (s.hashes.hash_serialized) std::printf("  \"hash_serialized_3\": \"%s\",\n", s.hash_serialized.ToHex().c_str());
        if (s.hashes.muhash) std::printf("  \"muhash\": \"%s\",\n", s.muhash.ToHex().c_str());
        std::printf("  \"total_amount\": %s,\n  \"transactions\": %llu,\n"
                    "  \"height_source\": \"%s\",\n  \"total_amount_sat\": %lld,\n  \"script_types\": {",
                    FormatMoney(s.total_amount).c_str(), (unsigned long long)s.transactions,
                    s.height_from_coins ? "max-coin-height" : "argument", (long long)s.total_amount);
        bool first = true;
        for (const TxoutType t : SCRIPT_TYPE_ORDER) {
            const auto label = ScriptTypeLabel(t);
            const auto& v = s.by_type[std::size_t(t)];
            std::printf("%s\n    \"%.*s\": {\"count\": %llu, \"amount\": %s, \"amount_sat\": %lld}", first ? "" : ",",
                        int(label.size()), label.data(), (unsigned long long)v.count, FormatMoney(v.amount).c_str(),
                        (long long)v.amount);
            first = false;
        }
        std::printf("\n  },\n  \"script_types_add_up\": %s", adds_up ? "true" : "false");
        if (s.interrupted_flush) {
            std::printf(",\n  \"interrupted_flush\": {\"new_tip\": \"%s\", \"old_tip\": \"%s\"}",
                        s.interrupted_flush->new_tip.ToHex().c_str(), s.interrupted_flush->old_tip.ToHex().c_str());
        }
        std::printf("\n}\n");
        return;
    }
    std::printf("height             %u%s\n", s.height, s.height_from_coins ? " (highest coin height)" : "");
    std::printf("bestblock          %s\n", best.c_str());
    std::printf("txouts             %llu\n", (unsigned long long)s.txouts);
    std::printf("transactions       %llu\n", (unsigned long long)s.transactions);
    std::printf("bogosize           %llu\n", (unsigned long long)s.bogosize);
    std::printf("total_amount       %s\n", FormatMoney(s.total_amount).c_str());
    if (s.hashes.hash_serialized) std::printf("hash_serialized_3  %s\n", s.hash_serialized.ToHex().c_str());
    if (s.hashes.muhash) std::printf("muhash             %s\n", s.muhash.ToHex().c_str());
    std::printf("\nscript type            coins                amount\n");
    for (const TxoutType t : SCRIPT_TYPE_ORDER) {
        const auto label = ScriptTypeLabel(t);
        std::printf("%-16.*s %12llu %21s\n", int(label.size()), label.data(),
                    (unsigned long long)s.by_type[std::size_t(t)].count, FormatMoney(s.by_type[std::size_t(t)].amount).c_str());
    }
    std::printf("%-16s %12llu %21s  %s\n", "total", (unsigned long long)s.txouts, FormatMoney(s.total_amount).c_str(),
                adds_up ? "(the types add up to the totals)" : "(MISMATCH: the types do not add up)");
    if (s.interrupted_flush) {
        std::printf("WARNING: interrupted flush (H marker): replay blocks after %s up to %s\n",
                    s.interrupted_flush->old_tip.ToHex().c_str(), s.interrupted_flush->new_tip.ToHex().c_str());
    }
}

[[noreturn]] void Fail(const Error& e) { throw std::runtime_error(e.message); }

/// "TXID:VOUT" with the txid in Core's display form.
OutPoint ParseOutPoint(const std::string& s)
{
    const auto colon = s.find(':');
    if (colon == std::string::npos) throw CLI::ValidationError("OUTPOINT", "expected TXID:VOUT");
    const auto txid = Txid::FromHex(s.substr(0, colon));
    if (!txid) throw CLI::ValidationError("OUTPOINT", "bad txid '" + s.substr(0, colon) + "'");
    const std::string vs = s.substr(colon + 1);
    if (vs.empty() || vs.size() > 10 || vs.find_first_not_of("0123456789") != std::string::npos ||
        std::stoull(vs) > 0xffffffffULL) {
        throw CLI::ValidationError("OUTPOINT", "bad output index '" + vs + "'");
    }
    return OutPoint{*txid, uint32_t(std::stoull(vs))};
}

UtxoHashTypes ParseHashType(const std::string& t)
{
    UtxoHashTypes h;
    h.hash_serialized = t == "hash_serialized_3" || t == "both";
    h.muhash = t == "muhash" || t == "both";
    return h;
}

/// "64" (MiB), "512K", "64M", "1G": bytes, from 1 KiB to 1 TiB.
std::size_t ParseMemory(const std::string& s)
{
    std::size_t unit = std::size_t(1) << 20;
    std::string digits = s;
    if (!digits.empty() && std::string("KkMmGg").find(digits.back()) != std::string::npos) {
        const char u = char(std::toupper(static_cast<unsigned char>(digits.back())));
        unit = std::size_t(1) << (u == 'K' ? 10 : u == 'M' ? 20 : 30);
        digits.pop_back();
    }
    if (digits.empty() || digits.size() > 9 || digits.find_first_not_of("0123456789") != std::string::npos ||
        std::stoull(digits) == 0 || std::stoull(digits) * unit > (std::size_t(1) << 40)) {
        throw CLI::ValidationError("--memory", "expected a size such as 64, 512K, 64M or 1G, from 1K to 1024G");
    }
    return std::size_t(std::stoull(digits)) * unit;
}

/// `utxo stats`: gettxoutsetinfo's statistics and hashes.
void AddStats(CLI::App* utxo)
{
    auto* stats = utxo->add_subcommand("stats", "UTXO set statistics like gettxoutsetinfo (hash_serialized_3)");
    auto so = std::make_shared<CommonOpts>();
    auto height = std::make_shared<std::optional<uint32_t>>();
    auto hash_type = std::make_shared<std::string>("hash_serialized_3");
    AddCommon(stats, *so);
    stats->add_option("--hash-type", *hash_type,
                      "Set hash as gettxoutsetinfo's hash_type: hash_serialized_3, muhash, none; or both (one walk)")
        ->check(CLI::IsMember({"hash_serialized_3", "muhash", "none", "both"}))
        ->capture_default_str();
    stats->add_option("--height", *height, "Report this height (default: the highest coin height)")->check(IntegerIn(0, MAX_HEIGHT));
    stats->callback([so, height, hash_type] {
        auto cs = OpenReadOnly(*so);
        ProgressBar bar(!so->quiet);
        auto r = ComputeUtxoStats(*cs.db, ParseHashType(*hash_type), *height, [&](uint64_t n, double f) { bar.Update(n, f); });
        bar.Done();
        if (!r) Fail(r.error());
        PrintStats(*r, so->json);
        if (!r->BreakdownAddsUp()) throw std::runtime_error("script-type breakdown does not add up to the totals");
    });
}

/// `utxo get`: one coin, as gettxout.
void AddGet(CLI::App* utxo)
{
    auto* get = utxo->add_subcommand("get", "Look up one coin (gettxout on the chainstate)");
    auto gopt = std::make_shared<CommonOpts>();
    auto gout = std::make_shared<std::string>();
    AddCommon(get, *gopt);
    get->add_option("outpoint", *gout, "TXID:VOUT (txid as Core displays it)")->required();
    get->callback([gopt, gout] {
        const OutPoint op = ParseOutPoint(*gout);
        auto cs = OpenReadOnly(*gopt);
        const bool json = gopt->json;
        auto r = cs.db->GetCoin(op);
        if (!r) Fail(r.error());
        if (!*r) {
            if (json) std::printf("null\n");
            else std::printf("%s:%u is not in the UTXO set\n", op.hash.ToHex().c_str(), op.n);
            PrintError(op.hash.ToHex() + ":" + std::to_string(op.n) + " is not in the UTXO set");
            throw CLI::RuntimeError(EXIT_FAILED);
        }
        const Coin& c = **r;
        const TxoutType tt = Solver(c.out.script_pubkey.span());
        const auto addr = EncodeAddress(c.out.script_pubkey, tt, AddressNetworkFor(cs, *gopt));
        const auto type = GetTxnOutputType(tt);
        const std::string hex = HexStr(c.out.script_pubkey.span());
        if (json) {
            std::printf("{\"txid\": \"%s\", \"vout\": %u, \"height\": %u, \"coinbase\": %s, \"value\": %s, "
                        "\"amount_sat\": %lld, \"scriptPubKey\": {\"hex\": \"%s\", \"type\": \"%.*s\"%s%s%s}}\n",
                        op.hash.ToHex().c_str(), op.n, c.height, c.coinbase ? "true" : "false",
                        FormatMoney(c.out.value).c_str(), (long long)c.out.value, hex.c_str(), int(type.size()), type.data(),
                        addr ? ", \"address\": \"" : "", addr ? addr->c_str() : "", addr ? "\"" : "");
        } else {
            std::printf("outpoint  %s:%u\nheight    %u\ncoinbase  %s\nvalue     %s\ntype      %.*s\naddress   %s\nscript    %s\n",
                        op.hash.ToHex().c_str(), op.n, c.height, c.coinbase ? "yes" : "no", FormatMoney(c.out.value).c_str(),
                        int(type.size()), type.data(), addr ? addr->c_str() : "", hex.c_str());
        }
    });
}

/// `utxo snapshot`: an assumeutxo snapshot (dumptxoutset).
void AddSnapshot(CLI::App* utxo)
{
    auto* snap = utxo->add_subcommand("snapshot", "Write an assumeutxo snapshot in Core's dumptxoutset format, then verify it");
    auto sopt = std::make_shared<CommonOpts>();
    auto sout = std::make_shared<std::string>();
    AddCommon(snap, *sopt);
    snap->add_option("--out", *sout, "Snapshot file to write (its folder must exist)")->required();
    snap->callback([sopt, sout] {
        CheckOutput(*sout);
        auto cs = OpenReadOnly(*sopt);
        if (!cs.chain) throw UsageError("nothing says which network " + cs.dir.string() + " is of (its magic goes into the snapshot): pass --network");
        WriteUtxoExport(*cs.db, "snapshot", *sout, GetChainParams(*cs.chain), AddressNetwork::Main, !sopt->quiet, stdout, sopt->json);
    });
}

/// `utxo load-snapshot`: a chainstate from a snapshot (loadtxoutset).
void AddLoadSnapshot(CLI::App* utxo)
{
    auto* load = utxo->add_subcommand("load-snapshot", "Build a chainstate from an assumeutxo snapshot (loadtxoutset), verifying every coin and the hash");
    auto lfile = std::make_shared<std::string>();
    auto ldir = std::make_shared<std::string>();
    auto lnet = std::make_shared<std::string>();
    auto lhash = std::make_shared<std::string>();
    auto lprog = std::make_shared<bool>(false);
    auto ljson = std::make_shared<bool>(false);
    load->add_option("file", *lfile, "Snapshot file")->required();
    load->add_option("--chainstate", *ldir, "New chainstate directory (must not exist or be empty)")->required();
    AddNetworkOption(load, *lnet, "the snapshot's, which it must match");
    load->add_option("--expect-hash", *lhash, "hash_serialized_3 the set must have (required unless Core pins the base block)");
    AddQuietOption(load, *lprog);
    load->add_flag("--json", *ljson, "Print the result as JSON");
    load->callback([lfile, ldir, lnet, lhash, lprog, ljson] {
        const std::optional<ChainType> given = ParseNetworkOption(*lnet);
        if (auto refused = CheckChainstateWritable(*ldir)) throw UsageError("--chainstate: " + refused->message);
        SnapshotLoadOptions opt;
        if (!lhash->empty()) {
            opt.expected_hash = uint256::FromHex(*lhash);
            if (!opt.expected_hash) throw CLI::ValidationError("--expect-hash", "expected 64 hex digits");
        }
        // A --network that differs from the snapshot's is refused by the load, in Core's words.
        auto stated = SnapshotNetwork(*lfile);
        if (!stated) Fail(stated.error());
        const ChainParams& params = GetChainParams(given.value_or(*stated));
        SetInterruptNote("chainstate " + *ldir + " is incomplete: remove it, then load the snapshot again");
        ProgressBar bar(!*lprog);
        auto r = LoadUtxoSnapshot(*lfile, params, *ldir, opt, [&](uint64_t n, double f) { bar.Update(n, f); });
        SetInterruptNote(r ? "chainstate " + *ldir + " is complete" : "");
        bar.Done();
        if (!r) Fail(r.error());
        if (*ljson) {
            nlohmann::json j{{"chainstate", *ldir}, {"base_blockhash", r->metadata.base_blockhash.ToHex()},
                             {"coins_loaded", r->stats.txouts}, {"total_amount_sat", r->stats.total_amount},
                             {"hash_serialized_3", r->stats.hash_serialized.ToHex()}};
            if (r->height) j["base_height"] = *r->height;
            PrintJsonResult(j);
            return;
        }
        std::printf("chainstate         %s\nbase_blockhash     %s\n", ldir->c_str(), r->metadata.base_blockhash.ToHex().c_str());
        if (r->height) std::printf("base_height        %d (Core's assumeutxo parameters)\n", *r->height);
        std::printf("coins_loaded       %llu\ntotal_amount       %s\nhash_serialized_3  %s (verified)\n",
                    (unsigned long long)r->stats.txouts, FormatMoney(r->stats.total_amount).c_str(),
                    r->stats.hash_serialized.ToHex().c_str());
    });
}

/// `utxo dump`: every coin to CSV, JSON lines or SQLite, checked.
void AddDump(CLI::App* utxo)
{
    auto* dump = utxo->add_subcommand("dump", "Export every coin as CSV, JSON lines or SQLite, then re-read the file and check it");
    auto dopt = std::make_shared<CommonOpts>();
    auto format = std::make_shared<std::string>("csv");
    auto out = std::make_shared<std::string>();
    AddCommon(dump, *dopt);
    dump->add_option("--format", *format, "csv, jsonl or sqlite (schemas: docs/utxo-export.md)")
        ->check(CLI::IsMember({"csv", "jsonl", "sqlite"}))
        ->capture_default_str();
    dump->add_option("--out", *out, "Output file (replaced; its folder must exist); it is re-read and verified afterwards")->required();
    dump->callback([dopt, format, out] {
        CheckOutput(*out);
        auto cs = OpenReadOnly(*dopt);
        const AddressNetwork net = AddressNetworkFor(cs, *dopt);
        WriteUtxoExport(*cs.db, *format, *out, GetChainParams(cs.chain.value_or(ChainType::MAIN)), net, !dopt->quiet,
                        dopt->quiet ? nullptr : stderr, dopt->json);
    });
}

/// `utxo balances`: one row per distinct script, largest first.
void AddBalances(CLI::App* utxo)
{
    auto* bal = utxo->add_subcommand(
        "balances", "Balance of every distinct output script (coins, value), largest first, in bounded memory");
    auto bopt = std::make_shared<CommonOpts>();
    auto bformat = std::make_shared<std::string>("csv");
    auto bout = std::make_shared<std::string>();
    auto btop = std::make_shared<std::optional<uint64_t>>();
    auto bmem = std::make_shared<std::string>("64");
    auto btmp = std::make_shared<std::string>();
    AddCommon(bal, *bopt);
    bal->add_option("--format", *bformat, "csv, jsonl or sqlite (columns: docs/utxo-export.md)")
        ->check(CLI::IsMember({"csv", "jsonl", "sqlite"}))
        ->capture_default_str();
    bal->add_option("--out", *bout, "Output file (replaced when complete; its folder must exist)")->required();
    bal->add_option("--top", *btop, "Keep only the N largest balances")->check(IntegerIn(0, MAX_COUNT));
    bal->add_option("--memory", *bmem, "Memory for each sort's buffer, beyond which runs spill to disk: MiB, or with a K/M/G suffix")
        ->capture_default_str();
    bal->add_option("--tmpdir", *btmp, "Directory for the sort's run files (default: the directory of --out)");
    bal->callback([bopt, bformat, bout, btop, bmem, btmp] {
        CheckOutput(*bout);
        BalancesOptions opt;
        opt.memory_bytes = ParseMemory(*bmem);
        if (auto refused = CheckTempDirWritable(*btmp, "--tmpdir")) throw UsageError(refused->message);
        auto cs = OpenReadOnly(*bopt);
        const AddressNetwork net = AddressNetworkFor(cs, *bopt);
        opt.top = *btop;
        opt.tmp_dir = btmp->empty() ? fs::absolute(*bout).parent_path() : fs::path(*btmp);
        ProgressLine line(!bopt->quiet);
        const auto r = WriteBalances(*cs.db, *ParseTableFormat(*bformat), *bout, net, opt,
                                     [&](std::string_view phase, uint64_t n, double f) {
                                         line.Update(f, std::string(phase) + "  " + std::to_string(n));
                                     });
        line.Done();
        if (!r) Fail(r.error());
        if (bopt->json) {
            const nlohmann::json j{{"out", *bout}, {"rows", r->rows}, {"scripts", r->scripts}, {"coins", r->coins},
                                   {"txouts", r->stats.txouts}, {"value_sat", r->value}, {"total_amount_sat", r->stats.total_amount},
                                   {"runs", r->runs}};
            PrintJsonResult(j);
            return;
        }
        std::printf("rows               %llu\nscripts            %llu\n", (unsigned long long)r->rows,
                    (unsigned long long)r->scripts);
        std::printf("coins              %llu (txouts %llu)\n", (unsigned long long)r->coins,
                    (unsigned long long)r->stats.txouts);
        std::printf("value              %s (total_amount %s)\n", FormatMoney(r->value).c_str(),
                    FormatMoney(r->stats.total_amount).c_str());
        std::printf("sort runs          %llu\n", (unsigned long long)r->runs);
    });
}

const CommandRegistrar utxo_cmd([](CLI::App& app) {
    auto* utxo = app.add_subcommand("utxo", "Read a chainstate (UTXO set) in Bitcoin Core's LevelDB format, read-only");
    utxo->require_subcommand(1);

    AddStats(utxo);
    AddGet(utxo);
    AddSnapshot(utxo);
    AddLoadSnapshot(utxo);
    AddDump(utxo);
    AddBalances(utxo);
    AddVerifySnapshot(utxo);
});

} // namespace
} // namespace ibdkit::cli

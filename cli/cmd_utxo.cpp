// `ibdkit utxo stats` and `ibdkit utxo dump`: read-only views of a chainstate in Core's format.
#include "commands.h"

#include <ibdkit/encoding/hex.h>
#include <ibdkit/coins/address.h>
#include <ibdkit/coins/coins_db.h>
#include <ibdkit/coins/stats.h>
#include <ibdkit/memory/policy.h>

#include <unistd.h>

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
    std::string chainstate;
    std::string policy{DefaultPolicy::name};
    std::size_t dbcache_mib{64};
    bool no_progress{false};
};

void AddCommon(CLI::App* cmd, CommonOpts& o)
{
    cmd->add_option("--chainstate", o.chainstate, "Chainstate directory (Core's DATADIR/chainstate; a datadir is accepted)")
        ->required();
    cmd->add_option("--policy", o.policy, "Buffer policy for database keys/values: " + PolicyNameList())->capture_default_str();
    cmd->add_option("--dbcache", o.dbcache_mib, "LevelDB cache in MiB")->capture_default_str();
    cmd->add_flag("--no-progress", o.no_progress, "Do not draw a progress bar on stderr");
}

std::unique_ptr<CoinsDB> OpenReadOnly(const CommonOpts& o)
{
    fs::path dir = o.chainstate;
    if (!fs::exists(dir / "CURRENT") && fs::exists(dir / "chainstate" / "CURRENT")) dir /= "chainstate";
    auto policy = ParsePolicy(o.policy);
    if (!policy) throw CLI::ValidationError("--policy", "unknown policy '" + o.policy + "' (" + PolicyNameList() + ")");
    CoinsDBOptions opt;
    opt.read_only = true;
    opt.policy = *policy;
    opt.cache_bytes = o.dbcache_mib << 20;
    StoreStatus st;
    auto db = CoinsDB::Open(dir, opt, &st);
    if (!db) throw std::runtime_error(st.message);
    return db;
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
    if (json) {
        std::printf("{\n  \"height\": %u,\n  \"bestblock\": \"%s\",\n  \"txouts\": %llu,\n  \"bogosize\": %llu,\n"
                    "  \"hash_serialized_3\": \"%s\",\n  \"total_amount\": %s,\n  \"transactions\": %llu,\n"
                    "  \"height_source\": \"%s\",\n  \"total_amount_sat\": %lld",
                    s.height, best.c_str(), (unsigned long long)s.txouts, (unsigned long long)s.bogosize,
                    s.hash_serialized.ToHex().c_str(), FormatMoney(s.total_amount).c_str(),
                    (unsigned long long)s.transactions, s.height_from_coins ? "max-coin-height" : "argument",
                    (long long)s.total_amount);
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
    std::printf("hash_serialized_3  %s\n", s.hash_serialized.ToHex().c_str());
    if (s.interrupted_flush) {
        std::printf("WARNING: interrupted flush (H marker): replay blocks after %s up to %s\n",
                    s.interrupted_flush->old_tip.ToHex().c_str(), s.interrupted_flush->new_tip.ToHex().c_str());
    }
}


const CommandRegistrar utxo_cmd([](CLI::App& app) {
    auto* utxo = app.add_subcommand("utxo", "Read a chainstate (UTXO set) in Bitcoin Core's LevelDB format, read-only");
    utxo->require_subcommand(1);

    // ---- stats ----
    auto* stats = utxo->add_subcommand("stats", "UTXO set statistics like gettxoutsetinfo (hash_serialized_3)");
    auto so = std::make_shared<CommonOpts>();
    auto json = std::make_shared<bool>(false);
    auto height = std::make_shared<std::optional<uint32_t>>();
    AddCommon(stats, *so);
    stats->add_flag("--json", *json, "JSON output with gettxoutsetinfo's field names");
    stats->add_option("--height", *height, "Report this height (default: the highest coin height)");
    stats->callback([so, json, height] {
        auto db = OpenReadOnly(*so);
        ProgressBar bar(!so->no_progress);
        auto r = ComputeUtxoStats(*db, *height, [&](uint64_t n, double f) { bar.Update(n, f); });
        bar.Done();
        if (!r) throw std::runtime_error(std::string(ErrcName(r.error().code)) + ": " + r.error().message);
        PrintStats(*r, *json);
    });

    // ---- dump ----
    auto* dump = utxo->add_subcommand("dump", "Dump every coin as CSV or JSON lines");
    auto dopt = std::make_shared<CommonOpts>();
    auto format = std::make_shared<std::string>("csv");
    auto out = std::make_shared<std::string>();
    auto network = std::make_shared<std::string>("main");
    AddCommon(dump, *dopt);
    dump->add_option("--format", *format, "csv or jsonl")->check(CLI::IsMember({"csv", "jsonl"}))->capture_default_str();
    dump->add_option("--out", *out, "Output file (default: stdout)");
    dump->add_option("--network", *network, "Network for addresses: main, test, signet, regtest")->capture_default_str();
    dump->callback([dopt, format, out, network] {
        const auto net = ParseAddressNetwork(*network);
        if (!net) throw CLI::ValidationError("--network", "unknown network '" + *network + "'");
        auto db = OpenReadOnly(*dopt);
        FILE* f = stdout;
        if (!out->empty()) {
            f = std::fopen(out->c_str(), "wb");
            if (!f) throw std::runtime_error("cannot open " + *out + " for writing");
        }
        static char buf[1 << 20];
        std::setvbuf(f, buf, _IOFBF, sizeof(buf));
        const bool csv = *format == "csv";
        if (csv) std::fputs("txid,vout,height,coinbase,amount,script,type,address\n", f);
        ProgressBar bar(!dopt->no_progress);
        uint64_t n = 0;
        auto r = db->ForEachCoin([&](const OutPoint& op, const Coin& c) {
            const std::string txid = op.hash.ToHex();
            const std::string script = HexStr(c.out.script_pubkey.span());
            const std::string_view type = ScriptTypeName(c.out.script_pubkey);
            const auto addr = EncodeAddress(c.out.script_pubkey, *net);
            if (csv) {
                std::fprintf(f, "%s,%u,%u,%d,%lld,%s,%.*s,%s\n", txid.c_str(), op.n, c.height, c.coinbase ? 1 : 0,
                             (long long)c.out.value, script.c_str(), int(type.size()), type.data(),
                             addr ? addr->c_str() : "");
            } else {
                std::fprintf(f,
                             "{\"txid\":\"%s\",\"vout\":%u,\"height\":%u,\"coinbase\":%s,\"amount\":%lld,"
                             "\"script\":\"%s\",\"type\":\"%.*s\",\"address\":%s%s%s}\n",
                             txid.c_str(), op.n, c.height, c.coinbase ? "true" : "false", (long long)c.out.value,
                             script.c_str(), int(type.size()), type.data(), addr ? "\"" : "",
                             addr ? addr->c_str() : "null", addr ? "\"" : "");
            }
            if ((++n & 0xffff) == 0) bar.Update(n, (op.hash.data()[0] * 256.0 + op.hash.data()[1]) / 65536.0);
            return true;
        });
        bar.Update(n, 1.0);
        bar.Done();
        if (f != stdout) std::fclose(f);
        else std::fflush(f);
        if (!r) throw std::runtime_error(std::string(ErrcName(r.error().code)) + ": " + r.error().message);
    });
});

} // namespace
} // namespace ibdkit::cli

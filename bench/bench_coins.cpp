// CCoinsViewDBFlush (the seed PR's benchmark): ≈1.33 million random coins (random txid, vout 0,
// random height and amount, 56-byte scripts) are added to a CoinsCache and flushed into a fresh,
// obfuscated LevelDB in a temporary directory. Unit: coin. One variant per buffer policy: every
// key and value passes through DataStream<Policy> on its way into LevelDB.
//
// One op = open a fresh database + add every coin to the cache + Flush() (Core's protocol, 32 MiB
// batches, first and last batch synced) + close (which waits for LevelDB's background compaction).
// The coins themselves are generated once, untimed.
//
// Also: UtxoStats — the `utxo stats` walk (decode + hash_serialized_3) over the flushed database.
#include "bench_case.h"

#include <ibdkit/coins/coins_db.h>
#include <ibdkit/utxo/stats.h>

#include "coins/coins_cache.h"
#include "kv/store.h"
#include "memory/policy.h"
#include "coins/coins_db_internal.h"

#include <unistd.h>

#include <filesystem>
#include <memory>
#include <random>
#include <vector>

namespace ibdkit::bench {
namespace {

namespace fs = std::filesystem;

constexpr std::size_t NUM_COINS = 1'330'000;
/// Core caps the coins database's own LevelDB cache at 8 MiB (nMaxCoinsDBCache): write buffer 2 MiB.
constexpr std::size_t COINS_DB_CACHE = 8 << 20;

struct CoinSet {
    std::vector<std::pair<OutPoint, Coin>> coins;
};

std::shared_ptr<CoinSet> MakeCoins(std::size_t n, uint64_t seed)
{
    auto set = std::make_shared<CoinSet>();
    set->coins.reserve(n);
    std::mt19937_64 rng(seed);
    for (std::size_t i = 0; i < n; ++i) {
        std::array<uint8_t, 32> t;
        for (std::size_t w = 0; w < 4; ++w) {
            const uint64_t v = rng();
            std::memcpy(t.data() + 8 * w, &v, 8);
        }
        std::array<uint8_t, 56> s;
        for (std::size_t w = 0; w < 7; ++w) {
            const uint64_t v = rng();
            std::memcpy(s.data() + 8 * w, &v, 8);
        }
        s[0] = 0x51; // not OP_RETURN: spendable
        Coin c(TxOut{Amount(rng() % uint64_t(MAX_MONEY)), Script(s.data(), s.size())}, uint32_t(rng() % 900'000),
               false);
        set->coins.emplace_back(OutPoint{Txid(uint256(t)), 0}, std::move(c));
    }
    return set;
}

struct TempDirHolder {
    fs::path path;
    TempDirHolder()
    {
        std::string t = (fs::temp_directory_path() / "ibdkit-bench-coins-XXXXXX").string();
        if (::mkdtemp(t.data())) path = t;
    }
    ~TempDirHolder()
    {
        std::error_code ec;
        if (!path.empty()) fs::remove_all(path, ec);
    }
};

BlockHash Tip()
{
    std::array<uint8_t, 32> b{};
    b[0] = 1;
    return BlockHash(uint256(b));
}

template <typename P>
Case FlushCase()
{
    return {"CCoinsViewDBFlush", std::string(P::name), "coin", double(NUM_COINS),
            [](std::string* why) -> Op {
                auto coins = MakeCoins(NUM_COINS, 42);
                auto tmp = std::make_shared<TempDirHolder>();
                if (tmp->path.empty()) {
                    *why = "cannot create a temporary directory";
                    return {};
                }
                return [coins, tmp] {
                    const fs::path dir = tmp->path / "chainstate";
                    std::error_code ec;
                    fs::remove_all(dir, ec);
                    CoinsDBOptions o;
                    o.policy = P::id;
                    o.cache_bytes = COINS_DB_CACHE;
                    o.obfuscate = true;
                    StoreStatus st;
                    auto db = OpenCoinsDB(dir, o, &st);
                    if (!db) std::abort();
                    {
                        CoinsCache cache(*db, std::size_t(1) << 40);
                        for (const auto& [op, coin] : coins->coins) cache.AddCoin(op, Coin(coin), false);
                        cache.SetBestBlock(Tip());
                        if (!cache.Flush().ok()) std::abort();
                    }
                    db.reset();
                };
            },
            /*smoke_ok=*/false};
}

template <typename P>
Case StatsCase()
{
    return {"UtxoStats", std::string(P::name), "coin", double(NUM_COINS),
            [](std::string* why) -> Op {
                auto tmp = std::make_shared<TempDirHolder>();
                if (tmp->path.empty()) {
                    *why = "cannot create a temporary directory";
                    return {};
                }
                {
                    auto coins = MakeCoins(NUM_COINS, 43);
                    CoinsDBOptions o;
                    StoreStatus st;
                    auto db = OpenCoinsDB(tmp->path, o, &st);
                    if (!db) std::abort();
                    CoinsCache cache(*db, std::size_t(1) << 40);
                    for (const auto& [op, coin] : coins->coins) cache.AddCoin(op, Coin(coin), false);
                    cache.SetBestBlock(Tip());
                    if (!cache.Flush().ok()) std::abort();
                    db->store().CompactAll();
                }
                auto db = std::shared_ptr<CoinsDB>([&] {
                    CoinsDBOptions o;
                    o.policy = P::id;
                    o.read_only = true;
                    o.cache_bytes = 64 << 20;
                    StoreStatus st;
                    return OpenCoinsDB(tmp->path, o, &st).release();
                }());
                if (!db) {
                    *why = "cannot reopen read-only";
                    return {};
                }
                return [db, tmp] {
                    auto r = ComputeUtxoStats(*db);
                    if (!r || r->txouts != NUM_COINS) std::abort();
                    DoNotOptimize(r->hash_serialized);
                };
            },
            /*smoke_ok=*/false};
}

const bool registered = [] {
    RegisterPerPolicy([]<typename P>(P) { return FlushCase<P>(); });
    RegisterPerPolicy([]<typename P>(P) { return StatsCase<P>(); });
    return true;
}();

} // namespace
} // namespace ibdkit::bench

// Balances per script (include/ibdkit/utxo/balances.h): the rows equal a map built from every coin,
// in value order, whatever the memory budget (a tiny one forces many runs in both sorts), --top
// through the heap and through the sort, totals equal to the UTXO statistics.
#include <ibdkit/coins/coins_db.h>
#include <ibdkit/utxo/balances.h>

#include "coins/coins_cache.h"

#include "test_util.h"
#include "coins/coins_db_internal.h"

#include <gtest/gtest.h>

#include <map>
#include <random>
#include <tuple>

namespace ibdkit {
namespace {

namespace fs = std::filesystem;
using Bytes = std::vector<uint8_t>;

struct Row {
    Bytes script;
    uint64_t coins;
    Amount value;
    bool operator==(const Row&) const = default;
};

/// A chainstate of random coins over `distinct` scripts of 0..40 bytes (some values 0, many equal
/// values), and the rows expected of it.
std::vector<Row> MakeChainstate(const fs::path& dir, int coins, int distinct, uint64_t seed)
{
    std::mt19937_64 rng(seed);
    std::vector<Bytes> scripts;
    for (int i = 0; i < distinct; ++i) {
        Bytes s(rng() % 41);
        for (auto& b : s) b = uint8_t(0x51 + rng() % 3); // OP_1..OP_3: spendable, prefixes of one another
        scripts.push_back(s);
    }
    std::map<Bytes, std::pair<uint64_t, Amount>> want;
    {
        StoreStatus st;
        auto db = OpenCoinsDB(dir, {}, &st);
        EXPECT_TRUE(db) << st.message;
        CoinsCache cache(*db, 1 << 20);
        for (int i = 0; i < coins; ++i) {
            std::array<uint8_t, 32> t{};
            for (auto& b : t) b = uint8_t(rng());
            const Bytes& s = scripts[rng() % scripts.size()];
            const Amount v = Amount(rng() % 4) * COIN; // equal values everywhere: ties by script
            cache.AddCoin(OutPoint{Txid(uint256(t)), uint32_t(i % 3)}, Coin(TxOut{v, Script(s.data(), s.size())}, 1, false),
                          false);
            want[s].first += 1;
            want[s].second += v;
        }
        std::array<uint8_t, 32> tip{};
        tip[0] = 7;
        cache.SetBestBlock(BlockHash(uint256(tip)));
        EXPECT_TRUE(cache.Flush().ok());
    }
    std::vector<Row> rows;
    for (const auto& [s, cv] : want) rows.push_back({s, cv.first, cv.second});
    std::stable_sort(rows.begin(), rows.end(), [](const Row& a, const Row& b) { return a.value > b.value; });
    return rows;
}

std::unique_ptr<CoinsDB> OpenRO(const fs::path& dir)
{
    StoreStatus st;
    CoinsDBOptions ro;
    ro.read_only = true;
    return OpenCoinsDB(dir, ro, &st);
}

std::pair<std::vector<Row>, BalancesResult> Balances(const CoinsDB& db, BalancesOptions opt)
{
    std::vector<Row> rows;
    auto r = ComputeBalances(db, opt, [&](const BalanceRow& b) {
        rows.push_back({Bytes(b.script.begin(), b.script.end()), b.coins, b.value});
        return true;
    });
    EXPECT_TRUE(r.ok()) << r.error().message;
    return {rows, r.ok() ? *r : BalancesResult{}};
}

TEST(Balances, RowsEqualEveryCoinSummedByScriptAtAnyBudget)
{
    const uint64_t seed = test::TestSeed();
    test::TempDir d;
    const auto want = MakeChainstate(d.path / "cs", 6000, 700, seed);
    auto db = OpenRO(d.path / "cs");
    ASSERT_TRUE(db);
    auto stats = ComputeUtxoStats(*db);
    ASSERT_TRUE(stats.ok());
    fs::create_directory(d.path / "tmp");
    for (const std::size_t memory : {std::size_t(64) << 20, std::size_t(16) << 10, std::size_t(1) << 10}) {
        BalancesOptions opt;
        opt.memory_bytes = memory;
        opt.tmp_dir = d.path / "tmp";
        const auto [rows, res] = Balances(*db, opt);
        EXPECT_EQ(rows, want) << "memory " << memory << " seed " << seed;
        EXPECT_EQ(res.scripts, want.size());
        EXPECT_EQ(res.rows, want.size());
        EXPECT_EQ(res.coins, stats->txouts);
        EXPECT_EQ(res.value, stats->total_amount);
        EXPECT_EQ(res.stats.txouts, stats->txouts);
        EXPECT_EQ(res.stats.total_amount, stats->total_amount);
        if (memory < (1 << 20)) {
            EXPECT_GT(res.runs, 4u) << memory;
        } else {
            EXPECT_EQ(res.runs, 0u);
        }
        EXPECT_TRUE(fs::is_empty(d.path / "tmp"));
    }
}

TEST(Balances, TopKeepsTheLargestThroughTheHeapAndThroughTheSort)
{
    test::TempDir d;
    const auto want = MakeChainstate(d.path / "cs", 3000, 400, test::TestSeed());
    auto db = OpenRO(d.path / "cs");
    ASSERT_TRUE(db);
    for (const uint64_t top : {uint64_t(0), uint64_t(1), uint64_t(37), uint64_t(100000)}) {
        // 1 MiB: a heap up to 4,096 rows; 4 KiB: a heap of at most 16, else the sort.
        for (const std::size_t memory : {std::size_t(1) << 20, std::size_t(4) << 10}) {
            BalancesOptions opt;
            opt.memory_bytes = memory;
            opt.tmp_dir = d.path;
            opt.top = top;
            const auto [rows, res] = Balances(*db, opt);
            const std::vector<Row> head(want.begin(), want.begin() + std::ptrdiff_t(std::min<uint64_t>(top, want.size())));
            EXPECT_EQ(rows, head) << "top " << top << " memory " << memory;
            EXPECT_EQ(res.scripts, want.size());
        }
    }
}

TEST(Balances, AnEmptySetHasNoRows)
{
    test::TempDir d;
    const auto want = MakeChainstate(d.path / "cs", 0, 1, 1);
    auto db = OpenRO(d.path / "cs");
    ASSERT_TRUE(db);
    const auto [rows, res] = Balances(*db, {});
    EXPECT_TRUE(rows.empty());
    EXPECT_EQ(res.scripts, 0u);
    EXPECT_EQ(res.coins, 0u);
}

} // namespace
} // namespace ibdkit

// CoinsMap (coins/coins_map.h): the open-addressing table against a std::map model — inserts
// through growth, erase by key and by iterators found before other inserts and erases moved
// slots, walks that erase as they go, clear; ForEach and the prefetch hints.
#include <ibdkit/coins/coins_map.h>

#include <gtest/gtest.h>

#include <array>
#include <map>
#include <random>
#include <vector>

namespace ibdkit {
namespace {

OutPoint Op(std::mt19937_64& rng, uint32_t range)
{
    OutPoint op;
    std::array<uint8_t, 32> b{};
    const uint64_t v = rng() % range;
    for (int i = 0; i < 8; ++i) b[i] = uint8_t(v >> (8 * i));
    op.hash = Txid(uint256(std::span<const uint8_t, 32>(b)));
    op.n = uint32_t(v % 3);
    return op;
}

Coin CoinOf(uint32_t height) { return Coin(TxOut{Amount(height) * 10, Script(std::vector<uint8_t>(height % 60, 0x51))}, height, false); }

void ExpectSame(const CoinsMap& m, const std::map<OutPoint, uint32_t>& model)
{
    ASSERT_EQ(m.size(), model.size());
    std::size_t walked = 0;
    for (const auto& [op, e] : m) {
        auto it = model.find(op);
        ASSERT_NE(it, model.end());
        ASSERT_EQ(e.coin.height, it->second);
        ++walked;
    }
    EXPECT_EQ(walked, model.size());
    for (const auto& [op, h] : model) {
        auto it = m.find(op);
        ASSERT_NE(it, m.end());
        EXPECT_EQ(it->second.coin, CoinOf(h));
    }
}

TEST(CoinsMap, RandomOperationsMatchAModel)
{
    std::mt19937_64 rng(21);
    CoinsMap m;
    std::map<OutPoint, uint32_t> model;
    std::vector<CoinsMap::iterator> held; // iterators kept across later inserts and erases
    for (int step = 0; step < 200'000; ++step) {
        const int op = int(rng() % 100);
        const OutPoint key = Op(rng, 20'000);
        if (op < 50) {
            const uint32_t h = uint32_t(rng() % 1000) + 1;
            auto [it, inserted] = m.try_emplace(key, CoinOf(h));
            ASSERT_EQ(inserted, !model.contains(key));
            if (inserted) model[key] = h;
            ASSERT_EQ(it->first, key);
            if (inserted && held.size() < 64) held.push_back(it);
        } else if (op < 70) {
            std::erase_if(held, [&](const CoinsMap::iterator& h) { return h->first == key; });
            ASSERT_EQ(m.erase(key), model.erase(key));
        } else if (op < 85 && !held.empty()) {
            // A held iterator still names its entry (nodes never move) and erases the right one.
            const std::size_t i = rng() % held.size();
            const OutPoint k = held[i]->first;
            ASSERT_TRUE(model.contains(k));
            ASSERT_EQ(held[i]->second.coin.height, model[k]);
            m.erase(held[i]);
            model.erase(k);
            held.erase(held.begin() + std::ptrdiff_t(i));
        } else {
            ASSERT_EQ(m.find(key) != m.end(), model.contains(key));
        }
    }
    ExpectSame(m, model);

    // A walk that erases every other height meets each entry, and what stays is what the model keeps.
    for (auto it = m.begin(); it != m.end();) {
        if (it->second.coin.height % 2) {
            model.erase(it->first);
            it = m.erase(it);
        } else {
            ++it;
        }
    }
    ExpectSame(m, model);

    const std::size_t before = m.MemoryUsage();
    EXPECT_GT(before, 0u);
    m.clear();
    EXPECT_EQ(m.size(), 0u);
    EXPECT_EQ(m.MemoryUsage(), 0u);
    EXPECT_EQ(m.begin(), m.end());
    // Usable again after clear.
    EXPECT_TRUE(m.try_emplace(OutPoint{}, CoinOf(5)).second);
    EXPECT_EQ(m.find(OutPoint{})->second.coin.height, 5u);
}

TEST(CoinsMap, NodeMemoryIsReusedNotGrown)
{
    std::mt19937_64 rng(4);
    CoinsMap m;
    std::vector<OutPoint> keys;
    for (int i = 0; i < 50'000; ++i) {
        keys.push_back(Op(rng, 1u << 30));
        m.try_emplace(keys.back(), CoinOf(1));
    }
    const std::size_t usage = m.MemoryUsage();
    // Erase and insert as many again: freed nodes are reused, the slabs do not grow.
    for (int round = 0; round < 3; ++round) {
        for (int i = 0; i < 25'000; ++i) m.erase(keys[std::size_t(i)]);
        for (int i = 0; i < 25'000; ++i) keys[std::size_t(i)] = Op(rng, 1u << 30), m.try_emplace(keys[std::size_t(i)], CoinOf(2));
    }
    EXPECT_LE(m.MemoryUsage(), usage);
    EXPECT_LE(m.NodeBytes(), m.MemoryUsage());
}

TEST(CoinsMap, ForEachVisitsEveryEntryOnceAndPrefetchingChangesNothing)
{
    CoinsMap m;
    std::mt19937_64 rng(9);
    // Hints on an empty map (no slot table yet) and for absent keys are harmless.
    m.PrefetchSlot(Op(rng, 100));
    m.PrefetchNode(Op(rng, 100));
    std::map<OutPoint, uint32_t> model;
    for (uint32_t i = 1; i <= 30'000; ++i) {
        const OutPoint key = Op(rng, 1u << 20);
        m.PrefetchSlot(key);
        m.PrefetchNode(key);
        if (m.try_emplace(key, CoinOf(i)).second) model[key] = i;
        if (i % 3 == 0) {
            const OutPoint gone = Op(rng, 1u << 20);
            m.PrefetchNode(gone);
            m.erase(gone);
            model.erase(gone);
        }
    }
    ExpectSame(m, model);
    std::map<OutPoint, uint32_t> seen;
    m.ForEach([&](CoinsMap::value_type& kv) { EXPECT_TRUE(seen.emplace(kv.first, kv.second.coin.height).second); });
    EXPECT_EQ(seen, model);
}

} // namespace
} // namespace ibdkit

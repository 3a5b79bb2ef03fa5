// CoinsMap (src/coins/coins_map.h): the open-addressing table against a std::map model — inserts
// through growth, erase by key and by iterators found before other inserts and erases moved
// slots, walks that erase as they go, clear; ForEach and the prefetch hints; entries of every
// script kind in nodes of both sizes, read back and serialized as Core's coins.
#include "coins/coins_map.h"

#include <ibdkit/encoding/hex.h>
#include <ibdkit/span.h>

#include "stream/streams.h"

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
        ASSERT_EQ(e.Height(), it->second);
        ++walked;
    }
    EXPECT_EQ(walked, model.size());
    for (const auto& [op, h] : model) {
        auto it = m.find(op);
        ASSERT_NE(it, m.end());
        EXPECT_EQ(it->second.GetCoin(), CoinOf(h));
    }
}

// A walk that erases every entry of odd height meets each entry once, and what stays is what the
// model keeps.
void EraseOddHeightsWhileWalking(CoinsMap& m, std::map<OutPoint, uint32_t>& model)
{
    for (auto it = m.begin(); it != m.end();) {
        if (it->second.Height() % 2) {
            model.erase(it->first);
            it = m.erase(it);
        } else {
            ++it;
        }
    }
    ExpectSame(m, model);
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
            ASSERT_EQ(held[i]->second.Height(), model[k]);
            m.erase(held[i]);
            model.erase(k);
            held.erase(held.begin() + std::ptrdiff_t(i));
        } else {
            ASSERT_EQ(m.find(key) != m.end(), model.contains(key));
        }
    }
    ExpectSame(m, model);

    EraseOddHeightsWhileWalking(m, model);

    const std::size_t before = m.MemoryUsage();
    EXPECT_GT(before, 0u);
    m.clear();
    EXPECT_EQ(m.size(), 0u);
    EXPECT_EQ(m.MemoryUsage(), 0u);
    EXPECT_EQ(m.begin(), m.end());
    // Usable again after clear.
    EXPECT_TRUE(m.try_emplace(OutPoint{}, CoinOf(5)).second);
    EXPECT_EQ(m.find(OutPoint{})->second.Height(), 5u);
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
    m.ForEach([&](CoinsMap::value_type& kv) { EXPECT_TRUE(seen.emplace(kv.first, kv.second.Height()).second); });
    EXPECT_EQ(seen, model);
}

// With a size hint the slot table stops growing where the hinted number of entries fills it to
// 0.8 (a size that is not a power of two), and grows on from there when more come; lookups, erases
// and walks stay right at every size.
TEST(CoinsMap, ASizeHintEndsTheTableNearItsLoadLimit)
{
    CoinsMap m;
    m.SetSizeHint(50'000);
    std::mt19937_64 rng(8);
    std::map<OutPoint, uint32_t> model;
    while (model.size() < 50'000) {
        const OutPoint key = Op(rng, 1u << 30);
        if (m.try_emplace(key, CoinOf(uint32_t(model.size() % 1000))).second) model[key] = uint32_t(model.size() % 1000);
    }
    EXPECT_GE(double(m.size()) / double(m.bucket_count()), 0.79);
    EXPECT_LE(double(m.size()) / double(m.bucket_count()), 0.8);
    ExpectSame(m, model);
    // More than the hint: the table grows on (doubling), and everything is still found.
    for (int step = 0; step < 60'000; ++step) {
        const OutPoint key = Op(rng, 1u << 30);
        if (step % 3 == 0 && !model.empty()) {
            const OutPoint gone = model.begin()->first;
            ASSERT_EQ(m.erase(gone), 1u);
            model.erase(gone);
        }
        if (m.try_emplace(key, CoinOf(uint32_t(step % 1000))).second) model[key] = uint32_t(step % 1000);
    }
    EXPECT_LE(double(m.size()) / double(m.bucket_count()), 0.8);
    ExpectSame(m, model);
    EraseOddHeightsWhileWalking(m, model);
}

// A slot table of a huge page or more has a whole number of them (NewSlots asks the kernel for
// transparent huge pages): the hint's 287,564 slots become two huge pages' worth.
TEST(CoinsMap, ALargeTableFillsWholeHugePages)
{
    constexpr std::size_t huge_slots = CoinsMap::HUGE_PAGE_BYTES / sizeof(uint64_t);
    CoinsMap m;
    m.SetSizeHint(230'000); // at load 0.8: 287,564 slots, more than one huge page's and less than two
    std::mt19937_64 rng(9);
    std::map<OutPoint, uint32_t> model;
    while (model.size() < 230'000) {
        const OutPoint key = Op(rng, 1u << 30);
        if (m.try_emplace(key, CoinOf(uint32_t(model.size() % 1000))).second) model[key] = uint32_t(model.size() % 1000);
    }
    EXPECT_EQ(m.bucket_count(), 2 * huge_slots);
    ExpectSame(m, model);
}

// A map that held many entries of both node sizes and lost most of them here and there keeps its
// slabs until Compact() packs the rest: then it holds what it uses (up to a slab a node size), every
// entry still holds its coin, and freed nodes are reused by later inserts.
TEST(CoinsMap, CompactReturnsTheSlabsOfErasedEntries)
{
    std::mt19937_64 rng(5);
    CoinsMap m;
    std::map<OutPoint, uint32_t> model;
    for (uint32_t i = 1; i <= 120'000; ++i) {
        const OutPoint key = Op(rng, 1u << 30);
        if (m.try_emplace(key, CoinOf(i)).second) model[key] = i;
    }
    const std::size_t full = m.MemoryUsage();
    for (auto it = m.begin(); it != m.end();) {
        if (rng() % 10 != 0) {
            model.erase(it->first);
            it = m.erase(it);
        } else {
            ++it;
        }
    }
    EXPECT_EQ(m.MemoryUsage(), full); // erasing frees nodes, not slabs
    m.Compact();
    const std::size_t slots = m.bucket_count() * sizeof(uint64_t);
    EXPECT_LE(m.MemoryUsage(), slots + m.NodeBytes() + 2 * CoinsMap::SLAB_BYTES); // one part-used slab a size
    EXPECT_LE(m.MemoryUsage() - slots, (full - slots) / 4);
    ExpectSame(m, model);
    const std::size_t packed = m.MemoryUsage();
    // Compacting again changes nothing; inserts take the free nodes before new slabs.
    m.Compact();
    EXPECT_EQ(m.MemoryUsage(), packed);
    for (int i = 0; i < 200; ++i) {
        const OutPoint key = Op(rng, 1u << 30);
        if (m.try_emplace(key, CoinOf(uint32_t(i % 60))).second) model[key] = uint32_t(i % 60);
    }
    EXPECT_EQ(m.MemoryUsage(), packed);
    ExpectSame(m, model);
    m.clear();
    m.Compact(); // an empty map too
    EXPECT_EQ(m.MemoryUsage(), 0u);
}

std::vector<uint8_t> Bytes(const std::string& hex) { return *ParseHex(hex); }

// Every kind of script an entry holds — the 20-byte templates, raw scripts of every size class,
// scripts on the heap, near-misses of the templates — comes back as the coin that went in, takes
// the node size it should, and serializes to the bytes of Core's chainstate value for that coin.
// Assign moves an entry between node sizes keeping its flags; Spend releases its script.
TEST(CoinsMap, EveryScriptKindRoundTripsAndSerializesAsItsCoin)
{
    const std::string h20(40, 'a'), h32(64, 'b');
    const std::string g = "0479be667ef9dcbbac55a06295ce870b07029bfcdb2dce28d959f2815b16f81798483ada7726a3c4655da4fbfc0e1108a8fd17b448a68554199c47d08ffb10d4b8";
    struct Case {
        std::vector<uint8_t> script;
        std::size_t node;
        bool heap;
    };
    const std::vector<Case> cases = {
        {{}, 72, false},
        {Bytes("51"), 72, false},
        {Bytes("76a914" + h20 + "88ac"), 72, false},                      // P2PKH
        {Bytes("a914" + h20 + "87"), 72, false},                          // P2SH
        {Bytes("0014" + h20), 72, false},                                 // P2WPKH
        {Bytes("76a914" + h20 + "88ad"), 88, false},                      // not P2PKH (last byte)
        {Bytes("a914" + h20 + "88"), 88, false},                          // not P2SH
        {Bytes("0015" + h20 + "cc"), 88, false},                          // not P2WPKH
        {Bytes(std::string(40, '5')), 72, false},                         // 20 bytes raw
        {Bytes(std::string(42, '5')), 88, false},                         // 21 bytes raw
        {Bytes("0020" + h32), 88, false},                                 // P2WSH
        {Bytes("5120" + h32), 88, false},                                 // P2TR
        {Bytes("21" "02" + h32 + "ac"), 88, false},                       // P2PK, compressed key
        {Bytes(std::string(72, '6')), 88, false},                         // 36 bytes raw
        {Bytes(std::string(74, '6')), 72, true},                          // 37 bytes: heap
        {Bytes("41" + g + "ac"), 72, true},                               // P2PK, uncompressed valid key
        {Bytes("41" "04" + std::string(128, '0') + "ac"), 72, true},      // not a curve point: raw
        {std::vector<uint8_t>(10'000, 0x61), 72, true},
    };
    CoinsMap m;
    std::vector<OutPoint> keys;
    for (std::size_t i = 0; i < cases.size(); ++i) {
        const Case& k = cases[i];
        const Coin coin(TxOut{Amount(5'000'000'000 + i), Script(k.script.data(), k.script.size())}, uint32_t(123'456 + i), i % 2 == 0);
        OutPoint op;
        op.n = uint32_t(i);
        keys.push_back(op);
        auto [it, inserted] = m.try_emplace(op, coin, CoinsCacheEntry::DIRTY);
        ASSERT_TRUE(inserted);
        const CoinsCacheEntry& e = it->second;
        EXPECT_EQ(e.GetCoin(), coin) << i;
        EXPECT_EQ(CoinsMap::NodeBytesOf(e), k.node) << i;
        EXPECT_EQ(CoinsMap::NodeBytesFor(coin), k.node) << i;
        EXPECT_EQ(e.HeapUsage() > 0, k.heap) << i;
        EXPECT_EQ(e.Height(), coin.height);
        EXPECT_EQ(e.IsCoinBase(), coin.coinbase);
        EXPECT_EQ(e.Value(), coin.out.value);
        DataStream<> want, got;
        want << coin;
        got << e;
        EXPECT_EQ(HexStr(UCharSpan(got.span())), HexStr(UCharSpan(want.span()))) << i;
    }
    std::size_t node_bytes = 0;
    for (const Case& k : cases) node_bytes += k.node;
    EXPECT_EQ(m.NodeBytes(), node_bytes);

    // Each entry takes the next case's coin: half of them change node size.
    for (std::size_t i = 0; i < cases.size(); ++i) {
        const Case& k = cases[(i + 1) % cases.size()];
        const Coin coin(TxOut{Amount(7 + i), Script(k.script.data(), k.script.size())}, uint32_t(9 + i), false);
        auto it = m.find(keys[i]);
        ASSERT_NE(it, m.end());
        it = m.Assign(it, coin);
        EXPECT_EQ(it->first, keys[i]);
        EXPECT_EQ(it->second.flags, CoinsCacheEntry::DIRTY);
        EXPECT_EQ(CoinsMap::NodeBytesOf(it->second), k.node);
        EXPECT_EQ(m.find(keys[i])->second.GetCoin(), coin) << i;
    }
    EXPECT_EQ(m.size(), cases.size());
    EXPECT_EQ(m.NodeBytes(), node_bytes);

    for (const OutPoint& op : keys) {
        auto it = m.find(op);
        m.Spend(it);
        EXPECT_TRUE(it->second.IsSpent());
        EXPECT_TRUE(it->second.GetCoin().IsSpent());
        EXPECT_EQ(it->second.HeapUsage(), 0u);
        EXPECT_EQ(it->second.flags, CoinsCacheEntry::DIRTY);
    }
    EXPECT_EQ(m.size(), cases.size());
}

} // namespace
} // namespace ibdkit

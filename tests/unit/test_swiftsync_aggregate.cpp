// SwiftSync's aggregate (BIP 457): the element bytes, the salted hash, and the properties a sum
// modulo 2^256 must have (order independence, partials combine, carries cross every limb).
#include "test_util.h"

#include <ibdkit/coins/compressor.h>
#include <ibdkit/swiftsync/aggregate.h>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <fstream>
#include <random>
#include <type_traits>

using namespace ibdkit;
using namespace ibdkit::swiftsync;
using ibdkit::test::ParseHex;
using ibdkit::test::ToHex;

namespace {

Salt CountingSalt()
{
    std::array<uint8_t, 32> b;
    for (std::size_t i = 0; i < 32; ++i) b[i] = uint8_t(i);
    return Salt::FromBytes(b);
}

OutPoint SampleOutPoint()
{
    OutPoint op;
    std::fill(op.hash.AsUint256().begin(), op.hash.AsUint256().end(), uint8_t{0xaa});
    op.n = 7;
    return op;
}

std::array<uint8_t, 32> Digest(std::initializer_list<std::pair<int, uint8_t>> bytes)
{
    std::array<uint8_t, 32> d{};
    for (auto [i, v] : bytes) d[std::size_t(i)] = v;
    return d;
}

// Streaming a salt must not compile (checked at compile time, not at run time).
template <typename T>
concept Streamable = requires(std::ostream& os, const T& t) { os << t; };
static_assert(!Streamable<Salt>, "a salt has no text form");

} // namespace

TEST(SwiftSyncAggregate, ElementsAreBip457Bytes)
{
    const OutPoint op = SampleOutPoint();
    EXPECT_EQ(ToHex(OutPointElement(op)), std::string(64, 'a') + "07000000");
    const uint8_t script[] = {0x51, 0x52};
    const Coin coin(TxOut{5'000'000'000, Script(std::span<const uint8_t>(script))}, 100, true);
    // LE32(100·2 + 1) | CompactSize(2) | script | LE64(amount) | txid | LE32(vout)
    EXPECT_EQ(ToHex(CoinElement(op, coin)), "c9000000" "02" "5152" "00f2052a01000000" + std::string(64, 'a') + "07000000");
}

TEST(SwiftSyncAggregate, HashIsSha256OfSaltThenElement)
{
    const SaltedHasher h(CountingSalt());
    const OutPoint op = SampleOutPoint();
    // Known answers: hashlib.sha256(bytes(range(32)) + element).
    EXPECT_EQ(ToHex(h.HashOutPoint(op)), "7a69b86296311cd244dc5d70b3029a59c23297ce39d53dbc3acc1cbfdbedee81");
    const uint8_t script[] = {0x51, 0x52};
    const Coin coin(TxOut{5'000'000'000, Script(std::span<const uint8_t>(script))}, 100, true);
    EXPECT_EQ(ToHex(h.HashCoin(op, coin)), "c0852198379ed24762c88dcb8a02654b1032e79a86143e89b188ed7391728b08");
    EXPECT_EQ(h.HashElement(AggregateMode::OutPoints, op, coin), h.HashOutPoint(op));
    EXPECT_EQ(h.HashElement(AggregateMode::Coins, op, coin), h.HashCoin(op, coin));
    // Another salt, another hash; the same salt copied, the same hash.
    std::array<uint8_t, 32> copy;
    CountingSalt().CopyForWorker(copy);
    EXPECT_EQ(SaltedHasher(Salt::FromBytes(copy)).HashOutPoint(op), h.HashOutPoint(op));
    EXPECT_NE(SaltedHasher(Salt::Random()).HashOutPoint(op), h.HashOutPoint(op));
}

// HashCoin writes the element piece by piece: the same hash as the element's bytes, for scripts
// whose length takes one, three and five bytes of CompactSize.
TEST(SwiftSyncAggregate, HashCoinIsTheHashOfCoinElement)
{
    const SaltedHasher h(CountingSalt());
    const OutPoint op = SampleOutPoint();
    for (std::size_t len : {0, 1, 25, 252, 253, 10'000, 70'000}) {
        std::vector<uint8_t> script(len);
        for (std::size_t i = 0; i < len; ++i) script[i] = uint8_t(i * 7 + len);
        const Coin coin(TxOut{123'456, Script(std::span<const uint8_t>(script))}, uint32_t(len), len % 2 == 0);
        EXPECT_EQ(h.HashCoin(op, coin), h.Hash(CoinElement(op, coin))) << len;
    }
}

TEST(SwiftSyncAggregate, RandomSaltsDiffer)
{
    std::array<uint8_t, 32> a, b;
    Salt::Random().CopyForWorker(a);
    Salt::Random().CopyForWorker(b);
    EXPECT_NE(a, b);
}

TEST(SwiftSyncAggregate, CarryAndBorrowCrossEveryLimb)
{
    std::array<uint8_t, 32> all_ones;
    all_ones.fill(0xff);
    Aggregate a;
    a.Add(all_ones); // 2^256 - 1
    a.Add(Digest({{0, 1}}));
    EXPECT_TRUE(a.IsZero()) << "2^256 wraps to zero";
    a.Sub(Digest({{0, 1}}));
    EXPECT_EQ(a.ToBytes(), all_ones) << "0 - 1 borrows through every limb";
    // A carry out of limb 0 into limb 1 only.
    Aggregate b;
    b.Add(Digest({{0, 0xff}, {1, 0xff}, {2, 0xff}, {3, 0xff}, {4, 0xff}, {5, 0xff}, {6, 0xff}, {7, 0xff}}));
    b.Add(Digest({{0, 1}}));
    EXPECT_EQ(b.limbs(), (std::array<uint64_t, 4>{0, 1, 0, 0}));
    // Limb 3's top bit carries out of the number.
    Aggregate c;
    c.Add(Digest({{31, 0x80}}));
    c.Add(Digest({{31, 0x80}}));
    EXPECT_TRUE(c.IsZero());
    EXPECT_EQ(Aggregate::FromBytes(b.ToBytes()), b);
}

TEST(SwiftSyncAggregate, OrderPartialsAndSubtraction)
{
    std::mt19937_64 rng(ibdkit::test::TestSeed());
    std::printf("seed %llu\n", (unsigned long long)ibdkit::test::TestSeed());
    const SaltedHasher h(Salt::Random());
    std::vector<OutPoint> ops(200);
    for (auto& op : ops) {
        for (auto& byte : op.hash.AsUint256()) byte = uint8_t(rng());
        op.n = uint32_t(rng() % 5);
    }
    Aggregate forward, backward, three[3];
    for (std::size_t i = 0; i < ops.size(); ++i) {
        forward.Add(h.HashOutPoint(ops[i]));
        backward.Add(h.HashOutPoint(ops[ops.size() - 1 - i]));
        three[rng() % 3].Add(h.HashOutPoint(ops[i]));
    }
    EXPECT_EQ(forward, backward);
    EXPECT_EQ(three[2] + three[0] + three[1], forward) << "partials combine by addition, in any order";
    Aggregate left = forward;
    for (const auto& op : ops) left.Sub(h.HashOutPoint(op));
    EXPECT_TRUE(left.IsZero());
    EXPECT_TRUE((forward - backward).IsZero());

    // Outputs minus the unspent ones equal the inputs; one changed element breaks it.
    Aggregate outputs, inputs;
    for (std::size_t i = 0; i < ops.size(); ++i) {
        if (i % 4 != 0) outputs.Add(h.HashOutPoint(ops[i])); // i % 4 == 0: unspent at the end
        if (i % 4 != 0) inputs.Add(h.HashOutPoint(ops[i]));
    }
    EXPECT_EQ(outputs, inputs);
    OutPoint changed = ops[1];
    changed.n ^= 1;
    Aggregate tampered = inputs;
    tampered.Sub(h.HashOutPoint(ops[1]));
    tampered.Add(h.HashOutPoint(changed));
    EXPECT_NE(outputs, tampered);
}

TEST(SwiftSyncAggregate, CoinModeSeesEveryField)
{
    const SaltedHasher h(CountingSalt());
    const OutPoint op = SampleOutPoint();
    const uint8_t script[] = {0x00, 0x14, 1, 2, 3};
    const Coin base(TxOut{1234, Script(std::span<const uint8_t>(script))}, 500, false);
    const auto d0 = h.HashCoin(op, base);
    Coin c = base;
    c.height = 501;
    EXPECT_NE(h.HashCoin(op, c), d0);
    c = base;
    c.coinbase = true;
    EXPECT_NE(h.HashCoin(op, c), d0);
    c = base;
    c.out.value = 1235;
    EXPECT_NE(h.HashCoin(op, c), d0);
    c = base;
    const uint8_t other[] = {0x00, 0x14, 1, 2, 4};
    c.out.script_pubkey = Script(std::span<const uint8_t>(other));
    EXPECT_NE(h.HashCoin(op, c), d0);
    OutPoint op2 = op;
    op2.n = 8;
    EXPECT_NE(h.HashCoin(op2, base), d0);
}

// BIP 455's amount vectors (tests/data/bips/bip-0455): the same CompressAmount as the chainstate's.
TEST(SwiftSyncAggregate, Bip455CompressedAmountVectors)
{
    auto path = ibdkit::test::TestData("bips/bip-0455/compressed_amount.json");
    ASSERT_TRUE(path) << "tests/data/bips is incomplete";
    std::ifstream f(*path);
    const auto vectors = nlohmann::json::parse(f);
    ASSERT_EQ(vectors.size(), 6u);
    for (const auto& v : vectors) {
        const uint64_t amount = v[0].get<uint64_t>();
        const uint64_t want = std::stoull(v[1].get<std::string>(), nullptr, 16);
        EXPECT_EQ(CompressAmount(amount), want) << amount;
        EXPECT_EQ(DecompressAmount(want), amount) << amount;
    }
}

TEST(SwiftSyncAggregate, ModeNamesRoundTrip)
{
    EXPECT_EQ(AggregateModeName(AggregateMode::Coins), "coins");
    EXPECT_EQ(AggregateModeName(AggregateMode::OutPoints), "outpoints");
    for (AggregateMode m : {AggregateMode::Coins, AggregateMode::OutPoints}) {
        EXPECT_EQ(ParseAggregateMode(AggregateModeName(m)), m);
    }
    for (std::string_view name : AGGREGATE_MODE_NAMES) {
        ASSERT_TRUE(ParseAggregateMode(name));
        EXPECT_EQ(AggregateModeName(*ParseAggregateMode(name)), name);
    }
}

TEST(SwiftSyncAggregate, UnknownModeNameIsNullopt)
{
    for (std::string_view name : {"", "Coins", "OUTPOINTS", "coin", "outpoint", "coins ", " outpoints", "both"}) {
        EXPECT_EQ(ParseAggregateMode(name), std::nullopt) << "'" << name << "'";
    }
    EXPECT_EQ(ParseAggregateMode(std::string_view("coins\0", 6)), std::nullopt);
}

#include "test_util.h"

#include "stream/streams.h"

#include <gtest/gtest.h>

using namespace ibdkit;
using ibdkit::test::ToHex;

template <typename P>
class StreamTest : public ::testing::Test {};
using AllPolicies = AllPolicyTypes::Apply<::testing::Types>;
TYPED_TEST_SUITE(StreamTest, AllPolicies);

TYPED_TEST(StreamTest, WriteReadAndResetWhenDrained)
{
    DataStream<TypeParam> s;
    s << uint32_t{0xdeadbeef} << uint8_t{7};
    EXPECT_EQ(s.size(), 5u);
    uint32_t a;
    s >> a;
    EXPECT_EQ(a, 0xdeadbeef);
    EXPECT_EQ(s.size(), 1u);
    uint8_t b;
    s >> b;
    EXPECT_EQ(b, 7);
    EXPECT_TRUE(s.empty());
    EXPECT_FALSE(s.Rewind(1)) << "a drained stream is cleared, as in Core";
}

TYPED_TEST(StreamTest, ReadPastEndIsEndOfData)
{
    DataStream<TypeParam> s;
    s << uint16_t{1};
    uint32_t v;
    try {
        s >> v;
        FAIL();
    } catch (const DecodeError& e) {
        EXPECT_EQ(e.code(), Errc::EndOfData);
    }
    EXPECT_EQ(s.size(), 2u) << "a failed read consumes nothing";
    EXPECT_THROW(s.ignore(3), DecodeError);
    s.ignore(2);
    EXPECT_TRUE(s.empty());
}

TYPED_TEST(StreamTest, RewindCompactXor)
{
    DataStream<TypeParam> s;
    s << uint8_t{1} << uint8_t{2} << uint8_t{3} << uint8_t{4};
    uint8_t x;
    s >> x >> x;
    EXPECT_TRUE(s.Rewind(1));
    EXPECT_EQ(ToHex(s), "020304");
    EXPECT_FALSE(s.Rewind(2));
    s.Compact();
    EXPECT_EQ(ToHex(s), "020304");
    EXPECT_FALSE(s.Rewind(1));
    ObfuscationKey key;
    for (int i = 0; i < 8; ++i) key.bytes[i] = std::byte(0x10 * (i + 1));
    s.Xor(key, 0);
    EXPECT_EQ(ToHex(s), "122334");
    s.Xor(key, 0);
    s.Xor(key, 7); // key[7], key[0], key[1]
    EXPECT_EQ(ToHex(s), "821324");
}

TYPED_TEST(StreamTest, ConstructFromSpanAndClear)
{
    std::vector<uint8_t> src(10000);
    for (std::size_t i = 0; i < src.size(); ++i) src[i] = uint8_t(i * 7);
    DataStream<TypeParam> s{std::span<const uint8_t>(src)};
    ASSERT_EQ(s.size(), src.size());
    EXPECT_TRUE(std::equal(src.begin(), src.end(), reinterpret_cast<const uint8_t*>(s.data())));
    s.resize(3);
    EXPECT_EQ(ToHex(s), "00070e");
    s.clear();
    EXPECT_TRUE(s.empty());
}

TEST(Obfuscation, XorMatchesBytewiseDefinition)
{
    std::mt19937_64 rng(ibdkit::test::TestSeed());
    for (int round = 0; round < 200; ++round) {
        ObfuscationKey key;
        for (auto& b : key.bytes) b = std::byte(rng());
        std::vector<std::byte> data(rng() % 100);
        for (auto& b : data) b = std::byte(rng());
        const std::size_t off = rng() % 1000;
        auto expect = data;
        for (std::size_t i = 0; i < expect.size(); ++i) expect[i] ^= key.bytes[(off + i) % 8];
        XorBytes(data, key, off);
        ASSERT_EQ(data, expect);
    }
}

TEST(SpanReaderTest, ZeroCopyAndBounds)
{
    std::vector<uint8_t> v{1, 2, 3, 4, 5};
    SpanReader r{std::span<const uint8_t>(v)};
    auto sp = r.ReadSpan(2);
    EXPECT_EQ(reinterpret_cast<const uint8_t*>(sp.data()), v.data()) << "no copy";
    EXPECT_THROW(r.ReadSpan(4), DecodeError);
    uint16_t x;
    r >> x;
    EXPECT_EQ(x, 0x0403);
    EXPECT_EQ(r.size(), 1u);
}

TEST(VectorWriterTest, OverwritesThenAppends)
{
    std::vector<uint8_t> v{9, 9, 9};
    VectorWriter w(v, 1);
    w << uint32_t{0x04030201};
    EXPECT_EQ(ToHex(v), "0901020304");
}

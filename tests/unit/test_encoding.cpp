#include "test_util.h"

#include <ibdkit/encoding/hex.h>
#include <ibdkit/encoding/serialize.h>

#include "stream/streams.h"

#include <gtest/gtest.h>

#include <limits>

using namespace ibdkit;
using ibdkit::test::ParseHex;
using ibdkit::test::ToHex;

namespace {

template <typename T>
std::string Encode(const T& obj)
{
    DataStream<policy::Plain> s;
    s << obj;
    return ToHex(s);
}

std::string EncodeCompactSize(uint64_t n)
{
    DataStream<policy::Plain> s;
    WriteCompactSize(s, n);
    return ToHex(s);
}

Errc DecodeCompactSizeError(const std::string& hex, bool range_check = true)
{
    auto bytes = ParseHex(hex);
    SpanReader r{std::span<const uint8_t>(bytes)};
    try {
        ReadCompactSize(r, range_check);
    } catch (const DecodeError& e) {
        return e.code();
    }
    return Errc::Ok;
}

} // namespace

TEST(Encoding, IntegersAreLittleEndian)
{
    EXPECT_EQ(Encode(uint16_t{0x0102}), "0201");
    EXPECT_EQ(Encode(uint32_t{0x01020304}), "04030201");
    EXPECT_EQ(Encode(int32_t{-2}), "feffffff");
    EXPECT_EQ(Encode(uint64_t{0x0102030405060708}), "0807060504030201");
    EXPECT_EQ(Encode(int64_t{-1}), "ffffffffffffffff");
    EXPECT_EQ(Encode(true), "01");
}

TEST(Encoding, CompactSizeBoundaries)
{
    EXPECT_EQ(EncodeCompactSize(0), "00");
    EXPECT_EQ(EncodeCompactSize(252), "fc");
    EXPECT_EQ(EncodeCompactSize(253), "fdfd00");
    EXPECT_EQ(EncodeCompactSize(0xffff), "fdffff");
    EXPECT_EQ(EncodeCompactSize(0x10000), "fe00000100");
    EXPECT_EQ(EncodeCompactSize(0xffffffff), "feffffffff");
    EXPECT_EQ(EncodeCompactSize(0x100000000ULL), "ff0000000001000000");
    for (uint64_t n : {0ULL, 252ULL, 253ULL, 0xffffULL, 0x10000ULL, 0xffffffffULL, 0x100000000ULL, ~0ULL}) {
        DataStream<policy::Plain> s;
        WriteCompactSize(s, n);
        EXPECT_EQ(s.size(), GetSizeOfCompactSize(n)) << n;
        EXPECT_EQ(ReadCompactSize(s, /*range_check=*/false), n);
        EXPECT_TRUE(s.empty());
    }
}

TEST(Encoding, CompactSizeRejectsNonCanonical)
{
    EXPECT_EQ(DecodeCompactSizeError("fdfc00"), Errc::NonCanonicalCompactSize);   // 252 in 3 bytes
    EXPECT_EQ(DecodeCompactSizeError("fdfd00"), Errc::Ok);
    EXPECT_EQ(DecodeCompactSizeError("feffff0000"), Errc::NonCanonicalCompactSize); // 0xffff in 5 bytes
    EXPECT_EQ(DecodeCompactSizeError("ffffffffff00000000", false), Errc::NonCanonicalCompactSize);
    EXPECT_EQ(DecodeCompactSizeError("fd00"), Errc::EndOfData);
    EXPECT_EQ(DecodeCompactSizeError(""), Errc::EndOfData);
}

TEST(Encoding, CompactSizeRangeCheck)
{
    DataStream<policy::Plain> s;
    WriteCompactSize(s, MAX_SIZE);
    WriteCompactSize(s, MAX_SIZE + 1);
    EXPECT_EQ(ReadCompactSize(s), MAX_SIZE);
    try {
        ReadCompactSize(s);
        FAIL() << "expected SizeTooLarge";
    } catch (const DecodeError& e) {
        EXPECT_EQ(e.code(), Errc::SizeTooLarge);
    }
}

TEST(Encoding, VarIntVectors)
{
    const std::pair<uint64_t, const char*> vectors[] = {
        {0, "00"}, {127, "7f"}, {128, "8000"}, {255, "807f"}, {256, "8100"}, {16383, "fe7f"},
        {16384, "ff00"}, {65535, "82fe7f"}, {uint64_t{1} << 32, "8efefeff00"}};
    for (const auto& [n, hex] : vectors) {
        DataStream<policy::Plain> s;
        WriteVarInt(s, n);
        EXPECT_EQ(ToHex(s), hex) << n;
        EXPECT_EQ(s.size(), GetSizeOfVarInt(n));
        EXPECT_EQ(ReadVarInt<uint64_t>(s), n);
    }
}

TEST(Encoding, VarIntOverflowRejected)
{
    // 2^32 does not fit a uint32_t.
    auto bytes = test::ParseHex("8efefeff00");
    SpanReader r{std::span<const uint8_t>(bytes)};
    try {
        ReadVarInt<uint32_t>(r);
        FAIL();
    } catch (const DecodeError& e) {
        EXPECT_EQ(e.code(), Errc::VarIntOverflow);
    }
    // uint64 max round-trips; one more group overflows.
    DataStream<policy::Plain> s;
    WriteVarInt(s, std::numeric_limits<uint64_t>::max());
    EXPECT_EQ(ReadVarInt<uint64_t>(s), std::numeric_limits<uint64_t>::max());
    auto big = test::ParseHex("ffffffffffffffffffff7f");
    SpanReader r2{std::span<const uint8_t>(big)};
    EXPECT_THROW(ReadVarInt<uint64_t>(r2), DecodeError);
}

TEST(Encoding, VarIntRandomRoundTrip)
{
    std::mt19937_64 rng(ibdkit::test::TestSeed());
    for (int i = 0; i < 20000; ++i) {
        uint64_t n = rng() >> (rng() % 64);
        DataStream<policy::Hardened> s;
        s << VarInt(n);
        EXPECT_EQ(s.size(), GetSizeOfVarInt(n));
        uint64_t back = 0;
        s >> VarInt(back);
        ASSERT_EQ(back, n) << "seed " << ibdkit::test::TestSeed();
    }
}

namespace {
struct Sample {
    uint32_t a{0};
    std::vector<uint8_t> bytes;
    std::string str;
    uint64_t v{0};
    std::vector<uint16_t> nums;
    template <typename Op, typename Self>
    static void SerOps(Op& op, Self& self)
    {
        op(self.a, self.bytes, self.str, VarInt(self.v), self.nums);
    }
    friend bool operator==(const Sample&, const Sample&) = default;
};
} // namespace

TEST(Encoding, OneDefinitionBothDirections)
{
    Sample s{7, {1, 2, 3}, "hi", 300, {1, 0xffff}};
    const auto bytes = SerializeToVector(s);
    EXPECT_EQ(ToHex(bytes), "07000000" "03010203" "026869" "812c" "020100ffff");
    EXPECT_EQ(bytes.size(), GetSerializeSize(s));
    auto back = DecodeExact<Sample>(MakeByteSpan(bytes));
    ASSERT_TRUE(back.ok());
    EXPECT_EQ(*back, s);
    auto with_trailing = bytes;
    with_trailing.push_back(0);
    auto bad = DecodeExact<Sample>(MakeByteSpan(with_trailing));
    ASSERT_FALSE(bad.ok());
    EXPECT_EQ(bad.error().code, Errc::TrailingData);
}

TEST(Encoding, VectorCountIsNotTrusted)
{
    // A count of MAX_SIZE with 3 bytes behind it must fail with EndOfData after allocating at most
    // one batch, not MAX_SIZE elements.
    DataStream<policy::Plain> s;
    WriteCompactSize(s, MAX_SIZE);
    s << uint8_t{1} << uint8_t{2} << uint8_t{3};
    std::vector<uint8_t> v;
    try {
        s >> v;
        FAIL();
    } catch (const DecodeError& e) {
        EXPECT_EQ(e.code(), Errc::EndOfData);
    }
    EXPECT_LE(v.capacity(), MAX_VECTOR_ALLOCATE);

    DataStream<policy::Plain> s2;
    WriteCompactSize(s2, MAX_SIZE);
    s2 << uint64_t{1};
    std::vector<uint64_t> v2;
    EXPECT_THROW(s2 >> v2, DecodeError);
    EXPECT_LE(v2.capacity() * sizeof(uint64_t), MAX_VECTOR_ALLOCATE);
}

TEST(Encoding, StringAndArray)
{
    EXPECT_EQ(Encode(std::string("abc")), "03616263");
    std::array<uint8_t, 4> a{1, 2, 3, 4};
    EXPECT_EQ(Encode(a), "01020304");
    EXPECT_EQ(Encode(std::string(253, 'x')).substr(0, 8), "fdfd0078");
}

TEST(Encoding, RandomVectorsRoundTrip)
{
    std::mt19937_64 rng(ibdkit::test::TestSeed());
    for (int i = 0; i < 300; ++i) {
        std::vector<uint32_t> v(rng() % 600);
        for (auto& x : v) x = uint32_t(rng());
        const auto bytes = SerializeToVector(v);
        ASSERT_EQ(bytes.size(), GetSizeOfCompactSize(v.size()) + 4 * v.size());
        auto back = DecodeExact<std::vector<uint32_t>>(MakeByteSpan(bytes));
        ASSERT_TRUE(back.ok());
        ASSERT_EQ(*back, v) << "seed " << ibdkit::test::TestSeed();
    }
}

TEST(Hex, ParseHexIsHexStrsInverseAndRefusesWhatIsNotHex)
{
    const std::vector<uint8_t> bytes{0x00, 0x01, 0xab, 0xff, 0x7f};
    EXPECT_EQ(ibdkit::HexStr(bytes), "0001abff7f");
    EXPECT_EQ(ibdkit::ParseHex("0001abff7f"), bytes);
    EXPECT_EQ(ibdkit::ParseHex("0001ABFF7F"), bytes);
    EXPECT_EQ(ibdkit::ParseHex(""), std::vector<uint8_t>{});
    EXPECT_FALSE(ibdkit::ParseHex("abc"));   // odd length
    EXPECT_FALSE(ibdkit::ParseHex("0g"));    // not a digit
    EXPECT_FALSE(ibdkit::ParseHex("0x00"));  // no prefix
    EXPECT_FALSE(ibdkit::ParseHex("00 01")); // no whitespace
    EXPECT_EQ(ibdkit::HexDigit('f'), 15);
    EXPECT_EQ(ibdkit::HexDigit('G'), -1);
}

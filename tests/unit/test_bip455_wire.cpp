// BIPs 434 and 455 on the wire: `feature`, `getbspent`, `bspent` and the reconstructable script,
// against the BIP's vectors and bytes written out by hand; malformed payloads as typed errors.
#include "test_util.h"

#include <ibdkit/coins/compressor.h>

#include "wire/message.h"
#include "wire/protocol.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <fstream>
#include <string>
#include <vector>

using namespace ibdkit;
using ibdkit::test::ParseHex;
using ibdkit::test::ToHex;

namespace {

const std::string HASH_HEX = "0102030405060708091011121314151617181920212223242526272829303132";

BlockHash TheHash()
{
    BlockHash h;
    const auto b = ParseHex(HASH_HEX);
    std::copy(b.begin(), b.end(), h.AsUint256().data());
    return h;
}

template <typename T>
Errc ErrOf(const Result<T>& r)
{
    return r.ok() ? Errc::Ok : r.error().code;
}

Script ScriptOf(const std::string& hex)
{
    const auto b = ParseHex(hex);
    return Script(b.data(), b.size());
}

const std::string P2PKH_HEX = "76a9142365e46227cc171083ea275f45ea8646c61d1fbb88ac";

/// A `bspent` of two coins: input 2, a coinbase coin from height 0x27 paying 50 BTC to a P2PKH;
/// input 5, a coin from height 300 with an unknown script 6a and 1 satoshi.
const std::string TWO_COINS_HEX = HASH_HEX + "02"
                                  "02000000" "4f000000" "01" "2365e46227cc171083ea275f45ea8646c61d1fbb" "32"
                                  "05000000" "58020000" "00016a" "01";

} // namespace

TEST(Bip455, ReconstructableScriptVectors)
{
    auto path = ibdkit::test::TestData("bips/bip-0455/reconstructable_script.json");
    ASSERT_TRUE(path) << "tests/data/bips is incomplete";
    std::ifstream f(*path);
    const auto vectors = nlohmann::json::parse(f);
    ASSERT_EQ(vectors.size(), 9u); // P2PKH, P2SH, P2TR, P2WPKH, P2WSH, P2PK odd, even, full, OP_RETURN
    for (const auto& v : vectors) {
        const auto script = ParseHex(v[0].get<std::string>());
        const std::string want = v[1].get<std::string>();
        std::vector<uint8_t> got;
        AppendReconstructableScript(got, script);
        EXPECT_EQ(ToHex(got), want) << v[0];
        const auto enc = ParseHex(want);
        std::size_t used = 0;
        auto back = DecodeReconstructableScript(enc, &used);
        ASSERT_TRUE(back.ok()) << want << ": " << back.error().message;
        EXPECT_EQ(ToHex(back->span()), v[0].get<std::string>());
        EXPECT_EQ(used, enc.size());
    }
}

TEST(Bip455, ReconstructableScriptNearMissesStayRaw)
{
    // One byte off each row's shape: no row matches, the script goes as it is.
    const std::vector<std::string> near_misses{
             "76a9142365e46227cc171083ea275f45ea8646c61d1fbb88ad",           // P2PKH ending in CHECKSIGVERIFY
             "a914b472a266d0bd89c13706a4132ccfb16f7c3b9fcb88",               // P2SH ending in EQUALVERIFY
             "0014" "6262b97a514ea54d12f51e0a4fe4c09fb74ff7",                // P2WPKH one byte short
             "5220720b1ffb2c63684973c5e9898b188c9d367fa2bc1ce76b8ea02872b5e3ffe705", // witness v2
             "210534ed84e3c579d5ff9122fb4215210ec5aaad51c3f60bf971d939db1c5b56a9fbac", // key prefix 05
             "",
    };
    for (const std::string& hex : near_misses) {
        std::vector<uint8_t> got;
        AppendReconstructableScript(got, ParseHex(hex));
        std::vector<uint8_t> want{0x00, uint8_t(hex.size() / 2)};
        const auto raw = ParseHex(hex);
        want.insert(want.end(), raw.begin(), raw.end());
        EXPECT_EQ(ToHex(got), ToHex(want)) << hex;
    }
    // A raw form of a script a row would fit is still that script.
    auto raw = DecodeReconstructableScript(ParseHex("0019" + P2PKH_HEX));
    ASSERT_TRUE(raw.ok());
    EXPECT_EQ(ToHex(raw->span()), P2PKH_HEX);
    EXPECT_EQ(ErrOf(DecodeReconstructableScript(ParseHex("09"))), Errc::InvalidValue);
    EXPECT_EQ(ErrOf(DecodeReconstructableScript(ParseHex("01" "2365e46227cc171083ea275f45ea8646c61d1f"))), Errc::EndOfData);
    EXPECT_EQ(ErrOf(DecodeReconstructableScript(ParseHex("00fd0100" "6a"))), Errc::NonCanonicalCompactSize);
    EXPECT_EQ(ErrOf(DecodeReconstructableScript(ParseHex("00fe00000004"))), Errc::SizeTooLarge); // above MAX_SIZE
    EXPECT_EQ(ErrOf(DecodeReconstructableScript(ParseHex("0005" "6a6a"))), Errc::EndOfData);
}

TEST(Bip434, FeatureBytesAndLimits)
{
    const FeatureMessage m{std::string(FEATURE_BLOCK_SPENT_COINS_V1), {0x00}};
    const auto bytes = EncodeFeature(m);
    EXPECT_EQ(ToHex(bytes), "11" + ToHex(std::string("blockspentcoinsv1")) + "0100");
    auto back = DecodeFeature(bytes);
    ASSERT_TRUE(back.ok());
    EXPECT_EQ(*back, m);
    EXPECT_TRUE(DecodeFeature(ParseHex("04" + ToHex(std::string("BIP4")) + "00")).ok()); // empty data
    EXPECT_EQ(ErrOf(DecodeFeature(ParseHex("03" + ToHex(std::string("BIP")) + "00"))), Errc::InvalidValue);
    EXPECT_EQ(ErrOf(DecodeFeature(EncodeFeature({std::string(81, 'x'), {}}))), Errc::SizeTooLarge);
    EXPECT_TRUE(DecodeFeature(EncodeFeature({std::string(80, 'x'), std::vector<uint8_t>(512)})).ok());
    EXPECT_EQ(ErrOf(DecodeFeature(EncodeFeature({"BIP434", std::vector<uint8_t>(513)}))), Errc::SizeTooLarge);
    auto trailing = bytes;
    trailing.push_back(0);
    EXPECT_EQ(ErrOf(DecodeFeature(trailing)), Errc::TrailingData);
    for (std::size_t n = 0; n < bytes.size(); ++n) {
        EXPECT_EQ(ErrOf(DecodeFeature(std::span(bytes.data(), n))), Errc::EndOfData) << n;
    }
    EXPECT_EQ(ErrOf(DecodeFeature(ParseHex("fd1100" + ToHex(std::string("blockspentcoinsv1")) + "00"))),
              Errc::NonCanonicalCompactSize);
}

TEST(Bip455, GetBspentBytesAndCutoff)
{
    const GetBspentMessage m{TheHash(), 0x01020304};
    const auto bytes = EncodeGetBspent(m);
    EXPECT_EQ(ToHex(bytes), HASH_HEX + "04030201");
    auto back = DecodeGetBspent(bytes);
    ASSERT_TRUE(back.ok());
    EXPECT_EQ(*back, m);
    EXPECT_EQ(ErrOf(DecodeGetBspent(std::span(bytes.data(), 35))), Errc::EndOfData);
    auto longer = bytes;
    longer.push_back(0);
    EXPECT_EQ(ErrOf(DecodeGetBspent(longer)), Errc::TrailingData);
    // "If greater than zero, include only coins created before this height."
    const GetBspentMessage all{TheHash(), 0};
    EXPECT_TRUE(all.Wants(0) && all.Wants(0x7fffffff));
    const GetBspentMessage below{TheHash(), 100};
    EXPECT_TRUE(below.Wants(0) && below.Wants(99));
    EXPECT_FALSE(below.Wants(100) || below.Wants(101));
}

TEST(Bip455, BspentBytes)
{
    BspentMessage m;
    m.block_hash = TheHash();
    m.coins.push_back({2, 0x27, true, ScriptOf(P2PKH_HEX), CompressAmount(50'0000'0000)});
    m.coins.push_back({5, 300, false, ScriptOf("6a"), CompressAmount(1)});
    const auto bytes = EncodeBspent(m);
    EXPECT_EQ(ToHex(bytes), TWO_COINS_HEX);
    auto back = DecodeBspent(bytes);
    ASSERT_TRUE(back.ok()) << back.error().message;
    EXPECT_EQ(*back, m);
    auto empty = DecodeBspent(ParseHex(HASH_HEX + "00"));
    ASSERT_TRUE(empty.ok());
    EXPECT_TRUE(empty->coins.empty());
    // The largest amount, 21 M BTC, and a height at the code's limit.
    m.coins = {{0xffffffff, 0x7fffffff, true, ScriptOf("51"), CompressAmount(uint64_t(MAX_MONEY))}};
    back = DecodeBspent(EncodeBspent(m));
    ASSERT_TRUE(back.ok());
    EXPECT_EQ(*back, m);
}

TEST(Bip455, MalformedBspentIsATypedError)
{
    const auto good = ParseHex(TWO_COINS_HEX);
    for (std::size_t n = 0; n < good.size(); ++n) {
        EXPECT_EQ(ErrOf(DecodeBspent(std::span(good.data(), n))), Errc::EndOfData) << n;
    }
    auto trailing = good;
    trailing.push_back(0);
    EXPECT_EQ(ErrOf(DecodeBspent(trailing)), Errc::TrailingData);
    // Counts: above what a message can hold (refused before any allocation), above what the bytes
    // hold, and not in their shortest form.
    EXPECT_EQ(ErrOf(DecodeBspent(ParseHex(HASH_HEX + "ffffffffffffffffff"))), Errc::SizeTooLarge);
    EXPECT_EQ(ErrOf(DecodeBspent(ParseHex(HASH_HEX + "fe" + "758c0500"))), Errc::SizeTooLarge); // 363,637
    EXPECT_EQ(ErrOf(DecodeBspent(ParseHex(HASH_HEX + "fe" + "748c0500"))), Errc::EndOfData);   // 363,636
    EXPECT_EQ(ErrOf(DecodeBspent(ParseHex(HASH_HEX + "03" + TWO_COINS_HEX.substr(66)))), Errc::EndOfData);
    EXPECT_EQ(ErrOf(DecodeBspent(ParseHex(HASH_HEX + "fd0200" + TWO_COINS_HEX.substr(66)))),
              Errc::NonCanonicalCompactSize);
    // A non-canonical amount (1 as fd 01 00), a script prefix past the table, indexes that repeat
    // or go back.
    EXPECT_EQ(ErrOf(DecodeBspent(ParseHex(HASH_HEX + "01" "00000000" "00000000" "00016a" "fd0100"))),
              Errc::NonCanonicalCompactSize);
    EXPECT_EQ(ErrOf(DecodeBspent(ParseHex(HASH_HEX + "01" "00000000" "00000000" "09" "0101"))), Errc::InvalidValue);
    const std::string coin_at_3 = "03000000" "00000000" "00016a" "01";
    EXPECT_EQ(ErrOf(DecodeBspent(ParseHex(HASH_HEX + "02" + coin_at_3 + coin_at_3))), Errc::InvalidValue);
    EXPECT_EQ(ErrOf(DecodeBspent(ParseHex(HASH_HEX + "02" + coin_at_3 + "02000000" "00000000" "00016a" "01"))),
              Errc::InvalidValue);
    // Core's message limit: one byte more is refused unread.
    std::vector<uint8_t> huge(MAX_PROTOCOL_MESSAGE_LENGTH + 1);
    EXPECT_EQ(ErrOf(DecodeBspent(huge)), Errc::OversizedMessage);
}

TEST(Bip455, ALyingCountCostsNoMoreThanTheBytesGiven)
{
    // 363,000 coins announced, 36,300 bytes of coins given: EndOfData at once, no vector of 363,000.
    std::vector<uint8_t> p = ParseHex(HASH_HEX + "fe" + "f8890500");
    p.resize(p.size() + 36'300, 0);
    EXPECT_EQ(ErrOf(DecodeBspent(p)), Errc::EndOfData);
    // As many bytes as the count needs, the first coin malformed: the error comes from it.
    p.resize(37);
    p.resize(37 + 363'000 * MIN_BSPENT_COIN_SIZE, 0xff);
    EXPECT_EQ(ErrOf(DecodeBspent(p)), Errc::InvalidValue); // prefix ff
}

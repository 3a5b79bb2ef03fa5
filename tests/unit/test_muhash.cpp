// MuHash3072 and ChaCha20: RFC 8439 vectors, Bitcoin Core's muhash_tests (src/test/crypto_tests.cpp)
// and the empty-set constant `gettxoutsetinfo muhash` prints for an empty UTXO set.
#include "crypto/muhash.h"

#include "test_util.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <iostream>
#include <random>
#include <string>

namespace ibdkit {
namespace {

using test::ParseHex;
using test::ToHex;

std::string Display(std::array<uint8_t, 32> h)
{
    std::reverse(h.begin(), h.end());
    return ToHex(h);
}

MuHash3072 FromInt(uint8_t i)
{
    uint8_t tmp[32] = {i, 0};
    return MuHash3072(std::span<const uint8_t>(tmp));
}

TEST(ChaCha20, Rfc8439Vectors)
{
    // RFC 8439 A.1 test vector #1: zero key, zero nonce, counter 0.
    uint8_t key[32] = {}, nonce[12] = {}, out[64];
    ChaCha20Block(key, 0, nonce, out);
    EXPECT_EQ(ToHex(std::span<const uint8_t>(out)),
              "76b8e0ada0f13d90405d6ae55386bd28bdd219b8a08ded1aa836efcc8b770dc7"
              "da41597c5157488d7724e03fb8d84a376a43b8f41518a11cc387b669b2ee6586");
    // RFC 8439 2.3.2: key 00..1f, nonce 000000090000004a00000000, counter 1.
    for (int i = 0; i < 32; ++i) key[i] = uint8_t(i);
    const auto n = ParseHex("000000090000004a00000000");
    std::copy(n.begin(), n.end(), nonce);
    ChaCha20Block(key, 1, nonce, out);
    EXPECT_EQ(ToHex(std::span<const uint8_t>(out)),
              "10f1e7e4d13b5915500fdd1fa32071c4c7d1f4c733c068030422aa9ac3d46c4e"
              "d2826446079faa0914c2d705d98b02a2b5129cd1de164eb9cbd083e8a2503c4e");
}

TEST(MuHash, EmptySetIsCoresConstant)
{
    MuHash3072 empty;
    EXPECT_EQ(Display(empty.Finalize()), "dd5ad2a105c2d29495f577245c357409002329b9f4d6182c0af3dc2f462555c8");
}

TEST(MuHash, CoreVectors)
{
    MuHash3072 acc = FromInt(0);
    acc *= FromInt(1);
    acc /= FromInt(2);
    EXPECT_EQ(Display(acc.Finalize()), "10d312b100cbd32ada024a6646e40d3482fcff103668d2625f10002a607d5863");

    MuHash3072 acc2 = FromInt(0);
    uint8_t one[32] = {1, 0}, two[32] = {2, 0};
    acc2.Insert(std::span<const uint8_t>(one));
    acc2.Remove(std::span<const uint8_t>(two));
    EXPECT_EQ(Display(acc2.Finalize()), "10d312b100cbd32ada024a6646e40d3482fcff103668d2625f10002a607d5863");

    // Serialization of FromInt(1) * FromInt(2): numerator (reduced), then denominator 1.
    MuHash3072 serchk = FromInt(1);
    serchk *= FromInt(2);
    const std::string ser_exp =
        "1fa093295ea30a6a3acdc7b3f770fa538eff537528e990e2910e40bbcfd7f6696b1256901929094694b56316de342f593303dd12ac43e06dce1be1ff8301c845beb15468fff0ef002dbf80c29f26e6452bccc91b5cb9437ad410d2a67ea847887fa3c6a6553309946880fe20db2c73fe0641adbd4e86edfee0d9f8cd0ee1230898873dc13ed8ddcaf045c80faa082774279007a2253f8922ee3ef361d378a6af3ddaf180b190ac97e556888c36b3d1fb1c85aab9ccd46e3deaeb7b7cf5db067a7e9ff86b658cf3acd6662bbcce37232daa753c48b794356c020090c831a8304416e2aa7ad633c0ddb2f11be1be316a81be7f7e472071c042cb68faef549c221ebff209273638b741aba5a81675c45a5fa92fea4ca821d7a324cb1e1a2ccd3b76c4228ec8066dad2a5df6e1bd0de45c7dd5de8070bdb46db6c554cf9aefc9b7b2bbf9f75b1864d9f95005314593905c0109b71f703d49944ae94477b51dac10a816bb6d1c700bafabc8bd86fac8df24be519a2f2836b16392e18036cb13e48c5c01" +
        std::string(2 * 383, '0');
    const auto ser = serchk.Serialize();
    EXPECT_EQ(ToHex(ser), ser_exp);
    MuHash3072 deser = MuHash3072::Deserialize(std::span<const uint8_t, MuHash3072::SERIALIZED_SIZE>(ser));
    EXPECT_EQ(Display(deser.Finalize()), Display(serchk.Finalize()));

    // Overflow: a deserialized numerator above the modulus (all ones), denominator 1.
    std::vector<uint8_t> max(MuHash3072::SERIALIZED_SIZE, 0);
    std::fill(max.begin(), max.begin() + 384, 0xff);
    max[384] = 1;
    MuHash3072 overflow = MuHash3072::Deserialize(std::span<const uint8_t, MuHash3072::SERIALIZED_SIZE>(max.data(), max.size()));
    EXPECT_EQ(ToHex(overflow.Finalize()), "3a31e6903aff0de9f62f9a9f7f8b861de76ce2cda09822b90014319ae5dc2271"); // HexStr: internal order
}

TEST(MuHash, OrderIndependenceAndCancellation)
{
    // Core's randomized part of muhash_tests.
    const uint64_t seed = test::TestSeed();
    std::cout << "seed " << seed << "\n";
    std::mt19937_64 rng(seed);
    for (int iter = 0; iter < 10; ++iter) {
        int table[4];
        for (int& t : table) t = int(rng() & 7);
        std::string res;
        for (int order = 0; order < 4; ++order) {
            MuHash3072 acc;
            for (int i = 0; i < 4; ++i) {
                const int t = table[i ^ order];
                if (t & 4) acc /= FromInt(uint8_t(t & 3));
                else acc *= FromInt(uint8_t(t & 3));
            }
            const std::string out = Display(acc.Finalize());
            if (order == 0) res = out;
            else EXPECT_EQ(res, out);
        }
        MuHash3072 x = FromInt(uint8_t(rng() & 15)), y = FromInt(uint8_t(rng() & 15)), z;
        z *= x;
        z *= y;
        y *= x;
        z /= y;
        EXPECT_EQ(Display(z.Finalize()), Display(MuHash3072().Finalize()));
    }
}

} // namespace
} // namespace ibdkit

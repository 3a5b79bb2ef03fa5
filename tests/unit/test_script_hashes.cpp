// RIPEMD-160, SHA-1 and HASH160 (crypto/ripemd160.h) against the algorithms' published vectors,
// and streaming splits agreeing with one-shot hashing.
#include "crypto/ripemd160.h"

#include "test_util.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace ibdkit {
namespace {

using test::ToHex;

std::span<const uint8_t> Bytes(const std::string& s) { return {reinterpret_cast<const uint8_t*>(s.data()), s.size()}; }

std::string Rmd(const std::string& s)
{
    uint8_t out[20];
    Ripemd160().Write(Bytes(s)).Finalize(out);
    return ToHex(std::span<const uint8_t>(out, 20));
}
std::string S1(const std::string& s)
{
    uint8_t out[20];
    Sha1().Write(Bytes(s)).Finalize(out);
    return ToHex(std::span<const uint8_t>(out, 20));
}

TEST(ScriptHashes, Ripemd160KnownVectors)
{
    EXPECT_EQ(Rmd(""), "9c1185a5c5e9fc54612808977ee8f548b2258d31");
    EXPECT_EQ(Rmd("a"), "0bdc9d2d256b3ee9daae347be6f4dc835a467ffe");
    EXPECT_EQ(Rmd("abc"), "8eb208f7e05d987a9b044a8e98c6b087f15a0bfc");
    EXPECT_EQ(Rmd("message digest"), "5d0689ef49d2fae572b881b123a85ffa21595f36");
    EXPECT_EQ(Rmd("abcdefghijklmnopqrstuvwxyz"), "f71c27109c692c1b56bbdceb5b9d2865b3708dbc");
    EXPECT_EQ(Rmd("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq"), "12a053384a9c0c88e405a06c27dcf49ada62eb2b");
    EXPECT_EQ(Rmd("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"), "b0e20b6e3116640286ed3a87a5713079b21f5189");
    EXPECT_EQ(Rmd(std::string(1000000, 'a')), "52783243c1697bdbe16d37f97f68f08325dc1528");
}

TEST(ScriptHashes, Sha1KnownVectors)
{
    EXPECT_EQ(S1(""), "da39a3ee5e6b4b0d3255bfef95601890afd80709");
    EXPECT_EQ(S1("abc"), "a9993e364706816aba3e25717850c26c9cd0d89d");
    EXPECT_EQ(S1("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq"), "84983e441c3bd26ebaae4aa1f95129e5e54670f1");
    EXPECT_EQ(S1(std::string(1000000, 'a')), "34aa973cd4c4daa4f61eeb2bdbad27316534016f");
}

TEST(ScriptHashes, StreamingSplitsAgree)
{
    std::string msg;
    for (int i = 0; i < 300; ++i) msg.push_back(char(i * 7 + 3));
    for (std::size_t cut = 0; cut <= msg.size(); cut += 13) {
        uint8_t a[20], b[20];
        Ripemd160().Write(Bytes(msg.substr(0, cut))).Write(Bytes(msg.substr(cut))).Finalize(a);
        Ripemd160().Write(Bytes(msg)).Finalize(b);
        EXPECT_EQ(ToHex(std::span<const uint8_t>(a, 20)), ToHex(std::span<const uint8_t>(b, 20)));
        Sha1().Write(Bytes(msg.substr(0, cut))).Write(Bytes(msg.substr(cut))).Finalize(a);
        Sha1().Write(Bytes(msg)).Finalize(b);
        EXPECT_EQ(ToHex(std::span<const uint8_t>(a, 20)), ToHex(std::span<const uint8_t>(b, 20)));
    }
}

TEST(ScriptHashes, Hash160OfAPublicKey)
{
    // The generator's compressed encoding: key hash of private key 1.
    auto pub = test::ParseHex("0279be667ef9dcbbac55a06295ce870b07029bfcdb2dce28d959f2815b16f81798");
    uint8_t out[20];
    Hash160(pub, out);
    EXPECT_EQ(ToHex(std::span<const uint8_t>(out, 20)), "751e76e8199196d454941c45d1b3a323f1433bd6");
}

} // namespace
} // namespace ibdkit

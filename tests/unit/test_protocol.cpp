// P2P messages: known byte vectors, round trips, hostile payloads.
#include "test_util.h"

#include <ibdkit/chain/params.h>

#include "wire/peer.h"
#include "wire/protocol.h"

#include <gtest/gtest.h>

#include <algorithm>

using namespace ibdkit;
using ibdkit::test::ParseHex;
using ibdkit::test::ToHex;

namespace {

std::string Rev(const std::string& hex) // display order <-> internal order
{
    std::string out;
    for (std::size_t i = hex.size(); i >= 2; i -= 2) out += hex.substr(i - 2, 2);
    return out;
}

const std::string REGTEST_GENESIS = "0f9188f13cb7b2c71f2a335e3a4fc328bf5beb436012afca590b1a11466e2206";
// Regtest genesis header: version 1, null prev, merkle 4a5e1e4b..., time 1296688602, bits 207fffff, nonce 2.
const std::string REGTEST_GENESIS_HEADER =
    "01000000" "0000000000000000000000000000000000000000000000000000000000000000"
    "3ba3edfd7a7b12b27ac72c3e67768f617fc81bc3888a51323a9fb8aa4b1e5e4a" "dae5494d" "ffff7f20" "02000000";

} // namespace

TEST(Protocol, VersionBytes)
{
    VersionMessage v;
    v.version = 70016;
    v.services = NODE_NONE;
    v.time = 0x0000000065000000;
    v.addr_recv = VersionAddress::FromIPv4({127, 0, 0, 1}, 18444);
    v.addr_from = VersionAddress::FromIPv4({0, 0, 0, 0}, 0);
    v.nonce = 0x0102030405060708;
    v.start_height = 206;
    v.relay = false;
    const std::string want =
        "80110100"                                               // version 70016
        "0000000000000000"                                       // services
        "0000006500000000"                                       // time
        "0000000000000000" "00000000000000000000ffff7f000001" "480c" // addr_recv, port 18444 big-endian
        "0000000000000000" "00000000000000000000ffff00000000" "0000" // addr_from
        "0807060504030201"                                       // nonce
        "0c2f6962646b69743a302e312f"                             // "/ibdkit:0.1/"
        "ce000000"                                               // start height 206
        "00";                                                    // relay false
    EXPECT_EQ(ToHex(EncodeVersion(v)), want);
    auto back = DecodeVersion(ParseHex(want));
    ASSERT_TRUE(back.ok()) << back.error().message;
    EXPECT_EQ(*back, v);
    // Without the relay byte (pre-BIP37): relay defaults to true. Extra trailing fields: ignored.
    auto short_v = DecodeVersion(ParseHex(want.substr(0, want.size() - 2)));
    ASSERT_TRUE(short_v.ok());
    EXPECT_TRUE(short_v->relay);
    EXPECT_TRUE(DecodeVersion(ParseHex(want + "deadbeef")).ok());
    // Truncated inside the user agent: EndOfData.
    EXPECT_EQ(DecodeVersion(ParseHex(want.substr(0, 170))).error().code, Errc::EndOfData);
    // Core reads each later group only when bytes remain: a payload may stop after addr_recv
    // (46 bytes), after the nonce (80), the user agent or the start height; not inside a group.
    auto minimal = DecodeVersion(ParseHex(want.substr(0, 2 * 46)));
    ASSERT_TRUE(minimal.ok()) << minimal.error().message;
    EXPECT_EQ(minimal->addr_recv, v.addr_recv);
    EXPECT_EQ(minimal->nonce, 0u);
    EXPECT_EQ(minimal->user_agent, "");
    EXPECT_EQ(minimal->start_height, 0);
    EXPECT_TRUE(minimal->relay);
    auto with_nonce = DecodeVersion(ParseHex(want.substr(0, 2 * 80)));
    ASSERT_TRUE(with_nonce.ok());
    EXPECT_EQ(with_nonce->nonce, v.nonce);
    EXPECT_EQ(with_nonce->user_agent, "");
    auto with_agent = DecodeVersion(ParseHex(want.substr(0, want.size() - 10)));
    ASSERT_TRUE(with_agent.ok());
    EXPECT_EQ(with_agent->user_agent, v.user_agent);
    EXPECT_EQ(with_agent->start_height, 0);
    EXPECT_EQ(DecodeVersion(ParseHex(want.substr(0, 2 * 50))).error().code, Errc::EndOfData); // inside addr_from
    EXPECT_EQ(DecodeVersion(ParseHex(want.substr(0, 2 * 45))).error().code, Errc::EndOfData); // inside addr_recv
}

TEST(Protocol, VersionUserAgentLimit)
{
    VersionMessage v;
    v.user_agent = std::string(257, 'a');
    EXPECT_EQ(DecodeVersion(EncodeVersion(v)).error().code, Errc::SizeTooLarge);
    v.user_agent = std::string(256, 'a');
    EXPECT_TRUE(DecodeVersion(EncodeVersion(v)).ok());
}

TEST(Protocol, PingPong)
{
    EXPECT_EQ(ToHex(EncodePing(0x1122334455667788)), "8877665544332211");
    EXPECT_EQ(*DecodePing(ParseHex("8877665544332211")), 0x1122334455667788u);
    EXPECT_EQ(DecodePing({}).error().code, Errc::EndOfData);
    EXPECT_EQ(*DecodePing(ParseHex("887766554433221100")), 0x1122334455667788u); // trailing: ignored, as Core
    // A whole ping message: header with the command and checksum, then the nonce.
    const auto msg = MakeMessage(GetChainParams(ChainType::REGTEST).message_start, "ping", EncodePing(0));
    EXPECT_EQ(ToHex(msg).substr(0, 40), "fabfb5da" "70696e670000000000000000" "08000000");
}

TEST(Protocol, GetHeadersBytes)
{
    LocatorMessage m;
    m.locator.push_back(*BlockHash::FromHex(REGTEST_GENESIS));
    const std::string want = "80110100" "01" + Rev(REGTEST_GENESIS) + std::string(64, '0');
    EXPECT_EQ(ToHex(EncodeLocator(m)), want);
    auto back = DecodeLocator(ParseHex(want));
    ASSERT_TRUE(back.ok());
    EXPECT_EQ(*back, m);
    // 102 hashes: above MAX_LOCATOR_SZ.
    std::string big = "80110100" "66";
    for (int i = 0; i < 102; ++i) big += std::string(64, '1');
    big += std::string(64, '0');
    EXPECT_EQ(DecodeLocator(ParseHex(big)).error().code, Errc::SizeTooLarge);
}

TEST(Protocol, HeadersBytes)
{
    const auto& genesis = GetChainParams(ChainType::REGTEST).genesis;
    EXPECT_EQ(ToHex(HeaderToBytes(genesis.header())), REGTEST_GENESIS_HEADER);
    EXPECT_EQ(genesis.GetHash().ToHex(), REGTEST_GENESIS);
    const BlockHeader hs[] = {genesis.header(), genesis.header()};
    const std::string want = "02" + REGTEST_GENESIS_HEADER + "00" + REGTEST_GENESIS_HEADER + "00";
    EXPECT_EQ(ToHex(EncodeHeaders(hs)), want);
    auto back = DecodeHeaders(ParseHex(want));
    ASSERT_TRUE(back.ok());
    ASSERT_EQ(back->size(), 2u);
    EXPECT_EQ((*back)[1], genesis.header());
    // A header that claims transactions: Core reads the count and ignores it (so do we); the count
    // must still be a valid CompactSize. Bytes after the last header: ignored. Truncated: EndOfData.
    auto with_txs = DecodeHeaders(ParseHex("01" + REGTEST_GENESIS_HEADER + "fd0301" "ff"));
    ASSERT_TRUE(with_txs.ok());
    EXPECT_EQ(with_txs->at(0), genesis.header());
    EXPECT_EQ(DecodeHeaders(ParseHex("01" + REGTEST_GENESIS_HEADER + "fd0100")).error().code, Errc::NonCanonicalCompactSize);
    EXPECT_EQ(DecodeHeaders(ParseHex("01" + REGTEST_GENESIS_HEADER)).error().code, Errc::EndOfData);
    EXPECT_EQ(DecodeHeaders(ParseHex("01" + REGTEST_GENESIS_HEADER.substr(0, 100))).error().code, Errc::EndOfData);
    // 2001 headers announced: refused before any is read (no allocation from the count).
    EXPECT_EQ(DecodeHeaders(ParseHex("fdd107")).error().code, Errc::SizeTooLarge);
    EXPECT_TRUE(DecodeHeaders(ParseHex("00"))->empty());
}

TEST(Protocol, InvAndGetDataBytes)
{
    const Inv invs[] = {{MSG_WITNESS_BLOCK, BlockHash::FromHex(REGTEST_GENESIS)->ToUint256()}, {MSG_TX, uint256{}}};
    const std::string want = "02" "02000040" + Rev(REGTEST_GENESIS) + "01000000" + std::string(64, '0');
    EXPECT_EQ(ToHex(EncodeInv(invs)), want);
    auto back = DecodeInv(ParseHex(want));
    ASSERT_TRUE(back.ok());
    EXPECT_EQ((*back)[0], invs[0]);
    EXPECT_TRUE((*back)[0].IsBlock());
    EXPECT_FALSE((*back)[1].IsBlock());
    EXPECT_EQ(MSG_WITNESS_BLOCK, 0x40000002u);
    // 50,001 entries: SizeTooLarge. A count of 50,000 with 1 entry of bytes: EndOfData, no 1.8 MB vector.
    EXPECT_EQ(DecodeInv(ParseHex("fd51c3")).error().code, Errc::SizeTooLarge);
    EXPECT_EQ(DecodeInv(ParseHex("fd50c3" "02000000" + std::string(64, '0'))).error().code, Errc::EndOfData);
    EXPECT_EQ(DecodeInv(ParseHex(want + "00"))->size(), 2u); // trailing: ignored, as Core
}

TEST(Protocol, AddrBytes)
{
    const AddrEntry a{0x65000000, VersionAddress::FromIPv4({10, 0, 0, 1}, 8333, NODE_NETWORK | NODE_WITNESS)};
    const std::string want = "01" "00000065" "0900000000000000" "00000000000000000000ffff0a000001" "208d";
    EXPECT_EQ(ToHex(EncodeAddr(std::span(&a, 1))), want);
    auto back = DecodeAddr(ParseHex(want + "00"));
    ASSERT_TRUE(back.ok());
    ASSERT_EQ(back->size(), 1u);
    EXPECT_EQ((*back)[0], a);
    EXPECT_EQ(DecodeAddr(ParseHex("fde903")).error().code, Errc::SizeTooLarge); // 1001
    EXPECT_EQ(DecodeAddr(ParseHex("fde803" + want.substr(2))).error().code, Errc::EndOfData);
    EXPECT_TRUE(DecodeAddr(ParseHex("00"))->empty());
}

TEST(Protocol, BlockMessageIgnoresTrailingBytes)
{
    // Core's `block` handler reads one block and ignores the rest of the payload; DecodeBlock
    // (a block alone) refuses trailing bytes.
    const Block& genesis = GetChainParams(ChainType::REGTEST).genesis;
    std::vector<uint8_t> payload = EncodeBlock(genesis);
    payload.push_back(0x42);
    EXPECT_EQ(DecodeBlock(payload).error().code, Errc::TrailingData);
    auto b = DecodeBlockMessage(payload);
    ASSERT_TRUE(b.ok());
    EXPECT_EQ(b->GetHash(), genesis.GetHash());
    payload.resize(payload.size() - 2);
    EXPECT_EQ(DecodeBlockMessage(payload).error().code, Errc::EndOfData);
}

TEST(Protocol, RejectParsesToAMessage)
{
    RejectMessage r{"version", 0x11, "Version must be 70001 or greater", std::nullopt};
    const auto bytes = EncodeReject(r);
    EXPECT_EQ(ToHex(bytes).substr(0, 18), "0776657273696f6e11");
    auto back = DecodeReject(bytes);
    ASSERT_TRUE(back.ok());
    EXPECT_EQ(back->ToString(), "reject of 'version' (obsolete 0x11): Version must be 70001 or greater");
    RejectMessage with_hash{"block", 0x10, "bad-txns", uint256{}};
    EXPECT_TRUE(DecodeReject(EncodeReject(with_hash))->hash.has_value());
    EXPECT_EQ(DecodeReject(ParseHex("0d" + std::string(26, '6'))).error().code, Errc::SizeTooLarge);
}

// A peer's text keeps Core's SAFE_CHARS_DEFAULT only: no escape, no line break reaches our lines.
TEST(Protocol, PeerTextIsSanitizedAsCoreDoes)
{
    EXPECT_EQ(SanitizePeerText("/Satoshi:27.0.0(a; b)@x?y,z-_./"), "/Satoshi:27.0.0(a; b)@x?y,z-_./");
    EXPECT_EQ(SanitizePeerText("/evil:1.0/\x1b[2J\r\nforged\x07\t'\"<>%"), "/evil:1.0/2Jforged");
    EXPECT_EQ(SanitizePeerText(std::string("a\0b", 3)), "ab");
    const RejectMessage r{"blo\nck", 0x10, "bad\x1b[31m\nreason", std::nullopt};
    EXPECT_EQ(r.ToString(), "reject of 'block' (invalid 0x10): bad31mreason");
}

TEST(Protocol, LocatorShape)
{
    std::vector<BlockHash> chain(1000);
    for (std::size_t i = 0; i < chain.size(); ++i) chain[i].AsUint256().data()[0] = uint8_t(i), chain[i].AsUint256().data()[1] = uint8_t(i >> 8);
    const auto loc = MakeLocator(chain);
    // 999, 998, ..., 989 (11 dense), then steps of 2, 4, 8, ... and the genesis last.
    ASSERT_GE(loc.size(), 12u);
    EXPECT_EQ(loc[0], chain[999]);
    EXPECT_EQ(loc[10], chain[989]);
    EXPECT_EQ(loc[11], chain[987]);
    EXPECT_EQ(loc[12], chain[983]);
    EXPECT_EQ(loc.back(), chain[0]);
    EXPECT_LE(loc.size(), MAX_LOCATOR_SZ);
    EXPECT_EQ(MakeLocator(std::span<const BlockHash>(chain.data(), 1)).size(), 1u);
    // A branch's tip leads the chain's entries, which keep their shape.
    BlockHash branch;
    branch.AsUint256().data()[5] = 1;
    const auto led = MakeLocator(chain, branch);
    ASSERT_EQ(led.size(), loc.size() + 1);
    EXPECT_EQ(led[0], branch);
    EXPECT_TRUE(std::equal(loc.begin(), loc.end(), led.begin() + 1));
    // The last block asked for, on the chain: first, and not again where the chain has it.
    const auto asked = MakeLocator(chain, chain[999]);
    EXPECT_EQ(asked[0], chain[999]);
    EXPECT_EQ(std::count(asked.begin(), asked.end(), chain[999]), 1);
    EXPECT_EQ(asked[1], chain[998]);
}

TEST(Protocol, SplitHostPort)
{
    EXPECT_EQ(SplitHostPort("127.0.0.1:18444", 1), std::make_pair(std::string("127.0.0.1"), uint16_t(18444)));
    EXPECT_EQ(SplitHostPort("localhost", 8333), std::make_pair(std::string("localhost"), uint16_t(8333)));
    EXPECT_EQ(SplitHostPort("[::1]:9", 1), std::make_pair(std::string("::1"), uint16_t(9)));
    EXPECT_EQ(SplitHostPort("::1", 7), std::make_pair(std::string("::1"), uint16_t(7)));
    EXPECT_FALSE(SplitHostPort("host:0", 1));
    EXPECT_FALSE(SplitHostPort("host:70000", 1));
    EXPECT_FALSE(SplitHostPort("host:", 1));
    EXPECT_FALSE(SplitHostPort(":5", 1));
    EXPECT_FALSE(SplitHostPort("[::1", 1));
}

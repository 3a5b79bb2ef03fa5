#include "test_util.h"

#include "wire/message.h"

#include <gtest/gtest.h>

using namespace ibdkit;

namespace {

const MessageStart REGTEST{0xfa, 0xbf, 0xb5, 0xda};

std::vector<uint8_t> Msg(const std::string& cmd, const std::vector<uint8_t>& payload, const MessageStart& magic = REGTEST)
{
    std::vector<uint8_t> out;
    VectorWriter w(out, 0);
    WriteMessage(w, magic, cmd, payload);
    return out;
}

struct Got {
    std::vector<std::pair<std::string, std::vector<uint8_t>>> msgs;
    std::optional<Errc> error;
};

Got FeedInChunks(const std::vector<uint8_t>& stream, const std::vector<std::size_t>& cuts, MessageReceiver* keep = nullptr,
                 PolicyId policy = PolicyId::Hardened)
{
    MessageReceiver local(REGTEST, policy);
    MessageReceiver& rx = keep ? *keep : local;
    Got g;
    std::size_t start = 0;
    auto feed = [&](std::size_t end) {
        std::span<const uint8_t> chunk(stream.data() + start, end - start);
        while (!chunk.empty() || false) {
            auto r = rx.Feed(chunk);
            if (!r) {
                g.error = r.error().code;
                return false;
            }
            if (*r) {
                auto m = rx.TakeMessage();
                g.msgs.emplace_back(m.command, std::vector<uint8_t>(reinterpret_cast<const uint8_t*>(m.payload.data()),
                                                                    reinterpret_cast<const uint8_t*>(m.payload.data()) + m.payload.size()));
            }
        }
        start = end;
        return true;
    };
    for (std::size_t c : cuts) {
        if (!feed(c)) return g;
    }
    feed(stream.size());
    return g;
}

} // namespace

TEST(Wire, HeaderLayoutAndEmptyChecksum)
{
    auto m = Msg("verack", {});
    ASSERT_EQ(m.size(), 24u);
    EXPECT_EQ(ibdkit::test::ToHex(m), "fabfb5da" "76657261636b000000000000" "00000000" "5df6e0e2");
}

TEST(Wire, EverySplitPointDecodesIdentically)
{
    std::vector<uint8_t> stream;
    std::vector<uint8_t> big(300);
    for (std::size_t i = 0; i < big.size(); ++i) big[i] = uint8_t(i * 13);
    for (auto& part : {Msg("ping", {1, 2, 3, 4, 5, 6, 7, 8}), Msg("verack", {}), Msg("block", big)}) {
        stream.insert(stream.end(), part.begin(), part.end());
    }
    const auto whole = FeedInChunks(stream, {});
    ASSERT_EQ(whole.msgs.size(), 3u);
    EXPECT_EQ(whole.msgs[0].first, "ping");
    EXPECT_EQ(whole.msgs[2].second, big);
    for (std::size_t cut = 0; cut <= stream.size(); ++cut) {
        ASSERT_EQ(FeedInChunks(stream, {cut}).msgs, whole.msgs) << "split at " << cut;
    }
    std::mt19937_64 rng(ibdkit::test::TestSeed());
    for (int round = 0; round < 200; ++round) {
        std::vector<std::size_t> cuts;
        for (std::size_t p = 0; p < stream.size(); p += 1 + rng() % 40) cuts.push_back(p);
        ASSERT_EQ(FeedInChunks(stream, cuts, nullptr, PolicyId::ZeroAfterFree).msgs, whole.msgs);
    }
}

TEST(Wire, BadChecksumAndCommandAreDroppedNotFatal)
{
    auto bad_sum = Msg("ping", {1, 2, 3});
    bad_sum[20] ^= 0xff;
    auto bad_cmd = Msg("pi\x01ng", {});
    auto gap_cmd = Msg("ping", {});
    gap_cmd[4 + 5] = 'x'; // "ping\0x..." — a non-NUL after the first NUL
    std::vector<uint8_t> stream;
    for (auto& part : {bad_sum, bad_cmd, gap_cmd, Msg("pong", {9})}) stream.insert(stream.end(), part.begin(), part.end());
    MessageReceiver rx(REGTEST, PolicyId::Plain);
    auto g = FeedInChunks(stream, {}, &rx);
    ASSERT_FALSE(g.error);
    ASSERT_EQ(g.msgs.size(), 1u);
    EXPECT_EQ(g.msgs[0].first, "pong");
    EXPECT_EQ(rx.stats().dropped_checksum, 1u);
    EXPECT_EQ(rx.stats().dropped_command, 2u);
    EXPECT_EQ(rx.stats().bytes, stream.size());
}

TEST(Wire, WrongMagicAndOversizeDisconnect)
{
    auto g = FeedInChunks(Msg("ping", {}, MessageStart{0xf9, 0xbe, 0xb4, 0xd9}), {});
    EXPECT_EQ(g.error, Errc::BadMagic);

    // A header that announces 4,000,001 bytes: rejected at the header, before any allocation.
    auto hdr = Msg("block", {});
    WriteLE32(hdr.data() + 16, MAX_PROTOCOL_MESSAGE_LENGTH + 1);
    MessageReceiver rx(REGTEST, PolicyId::Hardened);
    auto g2 = FeedInChunks(hdr, {}, &rx);
    EXPECT_EQ(g2.error, Errc::OversizedMessage);
    EXPECT_TRUE(rx.failed());
    std::span<const uint8_t> more(hdr);
    EXPECT_FALSE(rx.Feed(more).ok()) << "a failed receiver stays failed";
}

TEST(Wire, LyingLengthDoesNotAllocateAhead)
{
    // A header announcing 3.9 MB followed by 1,000 bytes: the buffer holds what arrived, not 3.9 MB.
    auto hdr = Msg("block", {});
    WriteLE32(hdr.data() + 16, 3'900'000);
    hdr.insert(hdr.end(), 1000, 0xab);
    MessageReceiver rx(REGTEST, PolicyId::Plain);
    std::span<const uint8_t> in(hdr);
    auto r = rx.Feed(in);
    ASSERT_TRUE(r.ok());
    EXPECT_FALSE(*r);
    EXPECT_EQ(rx.PendingBytes(), 24u + 1000u);
}

#include "engine/process.h"

TEST(Wire, ProcessMessageBlockEndToEnd)
{
    auto path = ibdkit::test::TestData("mainnet/blocks/block_413567.raw");
    if (!path) FAIL() << "tests/data is incomplete";
    const auto block = ibdkit::test::ReadFile(*path);
    const auto& params = GetChainParams(ChainType::MAIN);
    auto msg = Msg("block", block, params.message_start);

    auto ok = ProcessMessageBlock(msg, params, PolicyId::Hardened);
    ASSERT_TRUE(ok.block) << ok.state.GetRejectReason();
    EXPECT_EQ(ok.block->block().vtx.size(), 1557u);

    // A flipped payload byte with the old checksum: dropped at the frame, never decoded.
    auto corrupt = msg;
    corrupt[24 + 500] ^= 1;
    auto dropped = ProcessMessageBlock(corrupt, params, PolicyId::Plain);
    EXPECT_FALSE(dropped.block);
    EXPECT_EQ(dropped.dropped, 1u);

    // The same flip inside the merkle root with a correct checksum: framed fine, rejected by
    // CheckBlock with Core's reason.
    auto bad_root = block;
    bad_root[36] ^= 1;
    auto rejected = ProcessMessageBlock(Msg("block", bad_root, params.message_start), params, PolicyId::ZeroAfterFree,
                                           CheckBlockOptions{.check_pow = false, .check_merkle_root = true});
    EXPECT_FALSE(rejected.block);
    EXPECT_FALSE(rejected.error);
    EXPECT_EQ(rejected.state.GetRejectReason(), "bad-txnmrklroot");

    auto wrong_cmd = ProcessMessageBlock(Msg("tx", block, params.message_start), params, PolicyId::Plain);
    ASSERT_TRUE(wrong_cmd.error);
    EXPECT_EQ(wrong_cmd.error->code, Errc::BadCommand);
}

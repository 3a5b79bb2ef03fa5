// BIP 455's `bspent` made from rev records and read back against the blocks: for every block of
// Core's regtest test chain, of a generated chain and of Core's mainnet rev file, and for mainnet
// block 866,342, the message decodes to exactly the record's coins, with and without a cutoff; a
// message that does not fit its block is refused with the input it is wrong about.
#include "replay_test_util.h"
#include "test_util.h"

#include <ibdkit/blockfile/blockfile.h>
#include <ibdkit/blockfile/locate.h>
#include <ibdkit/coins/compressor.h>
#include <ibdkit/encoding/endian.h>
#include <ibdkit/spent/reader.h>
#include <ibdkit/spent/spent_block.h>

#include "blockfile/undo_file.h"
#include "swiftsync/spent_coins.h"
#include "wire/protocol.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <fstream>
#include <map>
#include <string>
#include <vector>

namespace ibdkit {
namespace {

using swiftsync::BlockUndoFromBspent;
using swiftsync::BspentPayload;
using swiftsync::MakeBspent;
using swiftsync::SpentCoinsFromBspent;

struct BlockAndRecord {
    Block block;
    uint32_t height{0};
    BlockUndo undo; ///< the block's rev record, as read from the rev file
};

std::vector<Coin> Flat(const BlockUndo& undo)
{
    std::vector<Coin> out;
    for (const TxUndo& t : undo.vtxundo) out.insert(out.end(), t.prevout.begin(), t.prevout.end());
    return out;
}

/// Each block of `blocks` (replayed for its blocks) with the rev record a replay wrote for it.
std::vector<BlockAndRecord> RevRecords(const std::filesystem::path& blocks, ChainType chain)
{
    std::map<BlockHash, BlockAndRecord> by_hash;
    SpentReaderOptions o;
    o.source.blocks_dir = blocks;
    o.source.chain = chain;
    o.from_height = 1;
    o.threads = 2;
    auto r = SpentBlockReader::Open(o);
    EXPECT_TRUE(r.ok()) << (r.ok() ? "" : r.error().message);
    if (!r.ok()) return {};
    for (;;) {
        auto b = (*r)->Next();
        EXPECT_TRUE(b.ok()) << (b.ok() ? "" : b.error().message);
        if (!b.ok() || !*b) break;
        by_hash[(*b)->hash()] = BlockAndRecord{(*b)->view().ToOwned(), uint32_t((*b)->height()), {}};
    }
    test::TempDir t;
    ReplayOptions ro;
    ro.source.blocks_dir = blocks;
    ro.source.chain = chain;
    ro.statistics = false;
    ro.skip_scripts = true;
    ro.undo_dir = t.path / "undo";
    test::MustReplay(ro);
    auto index = ReadUndoIndex(ro.undo_dir);
    EXPECT_TRUE(index.ok());
    if (!index.ok()) return {};
    UndoFileReader rev(ro.undo_dir, ObfuscationKey{}, GetChainParams(chain).message_start);
    std::vector<BlockAndRecord> out;
    for (const auto& e : *index) {
        auto it = by_hash.find(e.hash);
        if (e.height == 0 || it == by_hash.end()) continue;
        auto u = rev.Read(e.pos.file, e.pos.pos, it->second.block.hash_prev_block);
        EXPECT_TRUE(u.ok()) << e.height << ": " << (u.ok() ? "" : u.error().message);
        if (!u.ok()) return {};
        it->second.undo = std::move(*u);
        out.push_back(std::move(it->second));
    }
    EXPECT_EQ(out.size(), by_hash.size());
    return out;
}

/// The whole round trip for one block and one cutoff; returns the coins the message carried.
uint64_t RoundTrip(const BlockAndRecord& b, uint32_t cutoff)
{
    const GetBspentMessage request{b.block.GetHash(), cutoff};
    auto payload = BspentPayload(request, b.undo);
    EXPECT_TRUE(payload.ok()) << b.height;
    if (!payload.ok()) return 0;
    auto message = DecodeBspent(*payload);
    EXPECT_TRUE(message.ok()) << b.height << ": " << message.error().message;
    if (!message.ok()) return 0;
    EXPECT_EQ(*message, MakeBspent(request, b.undo)) << b.height;
    EXPECT_EQ(EncodeBspent(*message), *payload) << b.height;
    auto coins = SpentCoinsFromBspent(*message, request, b.block);
    EXPECT_TRUE(coins.ok()) << b.height << ": " << coins.error().message;
    if (!coins.ok()) return 0;
    const auto want = Flat(b.undo);
    EXPECT_EQ(coins->size(), want.size()) << b.height;
    for (std::size_t i = 0; i < want.size() && i < coins->size(); ++i) {
        if (request.Wants(want[i].height)) {
            EXPECT_TRUE((*coins)[i].has_value() && *(*coins)[i] == want[i]) << b.height << " input " << i;
        } else {
            EXPECT_FALSE((*coins)[i].has_value()) << b.height << " input " << i;
        }
    }
    if (cutoff == 0) {
        auto undo = BlockUndoFromBspent(*message, b.block);
        EXPECT_TRUE(undo.ok() && *undo == b.undo) << b.height;
    }
    return message->coins.size();
}

/// Every block with no cutoff and with cutoffs around its coins' heights; the coins carried per
/// cutoff offset (0: none asked, 1: the block's own height, 2: ten below it, 3: height 1).
std::array<uint64_t, 4> RoundTripAll(const std::vector<BlockAndRecord>& blocks)
{
    std::array<uint64_t, 4> carried{};
    for (const auto& b : blocks) {
        carried[0] += RoundTrip(b, 0);
        carried[1] += RoundTrip(b, b.height);
        carried[2] += RoundTrip(b, b.height > 10 ? b.height - 10 : 1);
        carried[3] += RoundTrip(b, 1);
    }
    return carried;
}

TEST(Bip455Rev, CoresRegtestChainEveryBlockRoundTrips)
{
    auto core = test::TestData("regtest/core_kernel_blocks_1-206.blk");
    ASSERT_TRUE(core) << "tests/data/regtest is missing";
    const auto blocks = RevRecords(*core, ChainType::REGTEST);
    ASSERT_EQ(blocks.size(), 206u);
    uint64_t spent = 0;
    uint64_t same_block = 0;
    for (const auto& b : blocks) {
        spent += b.undo.CoinCount();
        for (const Coin& c : Flat(b.undo)) same_block += c.height == b.height;
    }
    const auto carried = RoundTripAll(blocks);
    EXPECT_GT(spent, 0u);
    EXPECT_EQ(carried[0], spent);
    EXPECT_EQ(carried[1], spent - same_block); // a coin of the block's own height is at the cutoff
    EXPECT_LT(carried[2], carried[1]);
    EXPECT_EQ(carried[3], 0u); // no coin of height 0 is spendable: the genesis output never is
}

TEST(Bip455Rev, GeneratedChainEveryBlockRoundTrips)
{
    const auto blocks = RevRecords(test::GeneratedBlocks(), ChainType::REGTEST);
    ASSERT_EQ(blocks.size(), 220u);
    uint64_t spent = 0;
    uint64_t same_block = 0;
    for (const auto& b : blocks) {
        spent += b.undo.CoinCount();
        for (const Coin& c : Flat(b.undo)) same_block += c.height == b.height;
    }
    const auto carried = RoundTripAll(blocks);
    EXPECT_GT(spent, 1000u);
    EXPECT_EQ(carried[0], spent);
    EXPECT_EQ(carried[1], spent - same_block); // a coin of the block's own height is at the cutoff
    EXPECT_LT(carried[2], carried[1]);
    EXPECT_EQ(carried[3], 0u);
}

TEST(Bip455Rev, CoresMainnetRevRecordsRoundTrip)
{
    auto dir = test::TestData("mainnet/blk_0-599");
    ASSERT_TRUE(dir) << "tests/data is incomplete";
    auto chain = LocateFromBlocksDir(*dir, ChainType::MAIN);
    ASSERT_TRUE(chain.ok()) << chain.error().message;
    BlockFileReader files(chain->files, chain->key);
    const auto rev = test::ReadFile(*dir / "rev00000.dat");
    UndoFileReader reader(*dir, ObfuscationKey{}, GetChainParams(ChainType::MAIN).message_start);
    std::vector<BlockAndRecord> blocks;
    uint64_t pos = 8; // Core wrote the records of heights 1..40 back to back
    for (uint32_t h = 1; h <= 40; ++h) {
        ASSERT_LT(pos, rev.size());
        auto u = reader.Read(0, uint32_t(pos), chain->headers.Hash(int(h) - 1));
        ASSERT_TRUE(u.ok()) << h << ": " << u.error().message;
        auto bytes = files.Read(chain->order.blocks[h]);
        ASSERT_TRUE(bytes.ok());
        auto block = DecodeBlock(*bytes);
        ASSERT_TRUE(block.ok());
        blocks.push_back({std::move(*block), h, std::move(*u)});
        pos += ReadLE32(rev.data() + pos - 4) + 32 + 8;
    }
    const auto carried = RoundTripAll(blocks);
    EXPECT_EQ(carried[0], 0u); // the first blocks spend nothing: every message is its hash and 00
    const auto payload = BspentPayload({blocks[0].block.GetHash(), 0}, blocks[0].undo);
    ASSERT_TRUE(payload.ok());
    EXPECT_EQ(test::ToHex(*payload), test::ToHex(std::span(blocks[0].block.GetHash().data(), 32)) + "00");
}

/// Mainnet block 866,342 with the coins it spent (Floresta's test data) as its undo record.
std::optional<BlockAndRecord> Block866342()
{
    auto pb = test::TestData("mainnet/blocks/block_866342.raw");
    auto pj = test::TestData("mainnet/blocks/block_866342.spent_utxos.json");
    if (!pb || !pj) return std::nullopt;
    std::ifstream f(*pj);
    std::vector<Coin> coins;
    for (const auto& e : nlohmann::json::parse(f)) {
        const auto script = test::ParseHex(e["txout"]["script_pubkey"].get<std::string>());
        coins.emplace_back(TxOut{e["txout"]["value"].get<Amount>(), Script(script.data(), script.size())},
                           e["creation_height"].get<uint32_t>(), e["is_coinbase"].get<bool>());
    }
    auto spent = SpentBlock::FromCoins(test::ReadFile(*pb), 866342, coins, ChainType::MAIN);
    EXPECT_TRUE(spent.ok()) << spent.error().message;
    if (!spent.ok()) return std::nullopt;
    return BlockAndRecord{spent->view().ToOwned(), 866342, spent->undo()};
}

TEST(Bip455Rev, Block866342RoundTripsWithEveryScriptForm)
{
    const auto loaded = Block866342();
    ASSERT_TRUE(loaded) << "tests/data is incomplete";
    const BlockAndRecord& b = *loaded;
    const auto coins = Flat(b.undo);
    const auto carried = RoundTripAll({b});
    EXPECT_EQ(carried[0], 7972u);
    EXPECT_LT(carried[2], carried[1]);
    // The message's coins by script form: P2PKH, P2SH, P2WPKH, P2WSH and P2TR are all there.
    const auto payload = BspentPayload({b.block.GetHash(), 0}, b.undo);
    ASSERT_TRUE(payload.ok());
    std::map<uint8_t, uint64_t> forms;
    for (const Coin& c : coins) {
        std::vector<uint8_t> enc;
        AppendReconstructableScript(enc, c.out.script_pubkey.span());
        ++forms[enc[0]];
    }
    for (uint8_t form : {1, 5, 6, 7, 8}) EXPECT_GT(forms[form], 0u) << int(form);
    // Smaller than the coins written plainly (u32 index, u32 code, script with its length, u64
    // amount); larger than Core's rev record, whose VARINTs and script compression beat
    // CompactSizes and which needs no input indexes.
    uint64_t plain = 32 + 3;
    for (const Coin& c : coins) plain += 4 + 4 + GetSizeOfCompactSize(c.out.script_pubkey.size()) + c.out.script_pubkey.size() + 8;
    EXPECT_LT(payload->size(), plain);
    EXPECT_GT(payload->size(), SerializeBlockUndo(b.undo).size());
}

TEST(Bip455Rev, AMessageThatDoesNotFitItsBlockIsRefused)
{
    const auto loaded = Block866342();
    ASSERT_TRUE(loaded) << "tests/data is incomplete";
    const BlockAndRecord& b = *loaded;
    const GetBspentMessage all{b.block.GetHash(), 0};
    const BspentMessage good = MakeBspent(all, b.undo);
    ASSERT_EQ(good.coins.size(), 7972u);
    ASSERT_TRUE(SpentCoinsFromBspent(good, all, b.block).ok());
    auto refused = [&](const BspentMessage& m, const GetBspentMessage& request, const std::string& words) {
        auto r = SpentCoinsFromBspent(m, request, b.block);
        ASSERT_FALSE(r.ok()) << words;
        EXPECT_EQ(r.error().code, Errc::InvalidValue) << words;
        EXPECT_NE(r.error().message.find(words), std::string::npos) << r.error().message;
    };
    // Another block's hash, or the right hash for the wrong block.
    BspentMessage other = good;
    other.block_hash = b.block.hash_prev_block;
    refused(other, all, "asked for");
    refused(other, {other.block_hash, 0}, "not the one asked for");
    // An index past the block's inputs.
    BspentMessage past = good;
    past.coins.push_back(past.coins.back());
    past.coins.back().input_index = 7972;
    refused(past, all, "input index 7972 past the block's 7972 inputs");
    // A coin left out, first, in the middle and last, when no cutoff was asked for.
    for (std::size_t i : {std::size_t(0), std::size_t(3000), std::size_t(7971)}) {
        BspentMessage missing = good;
        missing.coins.erase(missing.coins.begin() + std::ptrdiff_t(i));
        refused(missing, all, "no coin for input " + std::to_string(i));
    }
    // With a cutoff: a coin at the cutoff is one not asked for; a coin left out below it is the
    // client's to notice (it has no coin for that input in its cache either).
    const uint32_t cutoff = good.coins[100].height;
    const GetBspentMessage below{b.block.GetHash(), cutoff};
    BspentMessage too_many = MakeBspent(below, b.undo);
    too_many.coins.insert(std::upper_bound(too_many.coins.begin(), too_many.coins.end(), good.coins[100],
                                           [](const BspentCoin& x, const BspentCoin& y) { return x.input_index < y.input_index; }),
                          good.coins[100]);
    refused(too_many, below, "at or above the cutoff " + std::to_string(cutoff));
    // An amount no value compresses to, and indexes that are not increasing (a message built
    // by hand; the decoder refuses those itself).
    ASSERT_NE(CompressAmount(DecompressAmount(UINT64_MAX)), UINT64_MAX);
    BspentMessage wrapping = good;
    wrapping.coins[5].compressed_amount = UINT64_MAX;
    refused(wrapping, all, "input 5's amount");
    BspentMessage swapped = good;
    std::swap(swapped.coins[1], swapped.coins[2]);
    refused(swapped, all, "no coin for input 1"); // without a cutoff, input 1 comes first
    refused(swapped, {b.block.GetHash(), UINT32_MAX}, "not strictly increasing");
    // Every one of those coins changed instead: accepted here, for only the aggregate can tell.
    BspentMessage lying = good;
    lying.coins[7].height += 1;
    lying.coins[8].compressed_amount = CompressAmount(1);
    EXPECT_TRUE(SpentCoinsFromBspent(lying, all, b.block).ok());
}

} // namespace
} // namespace ibdkit

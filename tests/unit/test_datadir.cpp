// Reading a Bitcoin Core data directory: the block index (real v25 logs), best-chain selection,
// layout detection, the snapshot while locked, the read-only guarantee, and blocks read from disk once.
#include "lock_holder.h"
#include "test_util.h"

#include <ibdkit/blockfile/locate.h>
#include <ibdkit/consensus/pow.h>
#include <ibdkit/encoding/endian.h>
#include <ibdkit/engine/replay.h>

#include "blockfile/block_index.h"
#include "kv/store.h"

#include <gtest/gtest.h>


#include <cstdlib>
#include <fstream>
#include <map>

using namespace ibdkit;
namespace fs = std::filesystem;

namespace {

using TempDir = ibdkit::test::TempDir;

/// A directory under tests/data, or a failure (the repository carries it).
#define REQUIRE_DATA(var, rel)                                                                  \
    auto var = ibdkit::test::TestData(rel);                                                     \
    if (!var) FAIL() << "tests/data/" << rel << " is missing (see tests/data/README.md)"

// The v25 index logs hold fewer blocks than their blk files (Core writes the index lazily): testnet3
// heights 0..120 of the file's 0..121, signet 0..2 of 0..70.
struct RealIndex {
    const char* rel;
    ChainType chain;
    int tip;      ///< last height in the index
    int file_tip; ///< last height in blk00000.dat
};
constexpr RealIndex REAL[] = {{"testnet3/core_v25_0-121", ChainType::TESTNET, 120, 121},
                              {"signet/core_v25_0-70", ChainType::SIGNET, 2, 70}};

/// Every file under `dir` (relative path → bytes).
std::map<std::string, std::vector<uint8_t>> Snapshot(const fs::path& dir)
{
    std::map<std::string, std::vector<uint8_t>> out;
    for (const auto& e : fs::recursive_directory_iterator(dir)) {
        const auto rel = fs::relative(e.path(), dir).string();
        out[rel] = e.is_regular_file() ? test::ReadFile(e.path()) : std::vector<uint8_t>{};
    }
    return out;
}

/// Copies a v25 blocks directory into DATADIR/<sub>/blocks (writable), as Core lays it out.
fs::path MakeDatadir(const fs::path& root, const fs::path& blocks_src, const std::string& sub)
{
    const fs::path blocks = sub.empty() ? root / "blocks" : root / sub / "blocks";
    // File by file: a recursive copy would give the new directories the source's read-only modes.
    for (const auto& e : fs::recursive_directory_iterator(blocks_src)) {
        const auto to = blocks / fs::relative(e.path(), blocks_src);
        if (e.is_directory()) {
            fs::create_directories(to);
        } else {
            fs::create_directories(to.parent_path());
            std::ofstream(to, std::ios::binary) << std::ifstream(e.path(), std::ios::binary).rdbuf();
        }
    }
    return blocks;
}

using test::LockHolder;

} // namespace

TEST(Datadir, DecodesEntryAndRejectsBadOnes)
{
    // height 5, status HAVE_DATA|valid-tree, 1 tx, file 0, data pos 0x1234 (VARINT 0xa3 0x34), header.
    std::vector<uint8_t> v{0x80, 0x80, 0x01, 0x05, 0x0a, 0x01, 0x00, 0xa3, 0x34};
    v.resize(v.size() + 80, 0x11);
    auto e = DecodeBlockIndexEntry(BlockHash{}, v);
    ASSERT_TRUE(e.ok()) << e.error().message;
    EXPECT_EQ(e->height, 5);
    EXPECT_EQ(e->status, 10u);
    EXPECT_EQ(e->file, 0);
    EXPECT_EQ(e->data_pos, 0x1234u);
    auto longer = v;
    longer.push_back(0);
    EXPECT_EQ(DecodeBlockIndexEntry(BlockHash{}, longer).error().code, Errc::TrailingData);
    auto shorter = v;
    shorter.pop_back();
    EXPECT_EQ(DecodeBlockIndexEntry(BlockHash{}, shorter).error().code, Errc::EndOfData);
    // A negative (above INT32_MAX) height.
    std::vector<uint8_t> neg{0x01, 0x8e, 0xfe, 0xfe, 0xff, 0x7f};
    EXPECT_FALSE(DecodeBlockIndexEntry(BlockHash{}, neg).ok());
}

TEST(Datadir, RealV25IndexesPointAtTheirBlocks)
{
    for (const auto& real : REAL) {
        SCOPED_TRACE(real.rel);
        REQUIRE_DATA(dir, real.rel);
        const auto before = Snapshot(*dir);
        auto index = ReadBlockIndex(*dir / "index");
        ASSERT_TRUE(index.ok()) << index.error().message;
        EXPECT_FALSE(index->reindexing);
        ASSERT_EQ(index->entries.size(), std::size_t(real.tip + 1));
        const auto& params = GetChainParams(real.chain);
        auto best = SelectBestChain(*index, params.consensus.hash_genesis_block);
        ASSERT_TRUE(best.ok()) << best.error().message;
        ASSERT_EQ(best->entries.size(), std::size_t(real.tip + 1));
        // Every entry with data: its position holds exactly its block.
        BlockFileReader reader({*dir / "blk00000.dat"}, ObfuscationKey{});
        const auto magic = std::span<const uint8_t, 4>(params.message_start);
        int with_data = 0;
        for (const auto& e : index->entries) {
            if (!(e.status & BLOCK_HAVE_DATA)) continue;
            ++with_data;
            ASSERT_EQ(e.file, 0);
            auto pos = reader.ReadFrame(0, e.data_pos, magic);
            ASSERT_TRUE(pos.ok()) << pos.error().message;
            auto bytes = reader.Read(*pos);
            ASSERT_TRUE(bytes.ok());
            EXPECT_EQ(BlockHash(HashSha256d(std::span<const uint8_t>(bytes->data(), 80))), e.hash);
            EXPECT_TRUE(std::equal(e.header.begin(), e.header.end(), bytes->begin()));
        }
        EXPECT_EQ(with_data, real.tip + 1);
        for (std::size_t h = 0; h < best->entries.size(); ++h) {
            const auto& e = index->entries[best->entries[h]];
            EXPECT_EQ(e.height, int(h));
            if (h > 0) {
                EXPECT_EQ(e.Prev(), index->entries[best->entries[h - 1]].hash);
            }
        }
        // The datadir route finds a prefix of the bare scan's chain (the index is behind the file),
        // at the same positions.
        auto located = LocateFromDatadir(*dir, std::nullopt);
        ASSERT_TRUE(located.ok()) << located.error().message;
        EXPECT_EQ(located->chain, real.chain);
        EXPECT_TRUE(located->from_index);
        EXPECT_EQ(located->TipHeight(), real.tip);
        auto scanned = LocateFromBlocksDir(*dir, std::nullopt);
        ASSERT_TRUE(scanned.ok()) << scanned.error().message;
        ASSERT_EQ(scanned->TipHeight(), real.file_tip);
        ASSERT_EQ(located->order.blocks.size(), std::size_t(real.tip + 1));
        for (std::size_t i = 0; i < located->order.blocks.size(); ++i) {
            EXPECT_EQ(located->headers.Hash(int(i)), scanned->headers.Hash(int(i)));
            EXPECT_EQ(located->headers.Info(int(i)).time, scanned->headers.Info(int(i)).time);
            EXPECT_EQ(located->headers.Info(int(i)).bits, scanned->headers.Info(int(i)).bits);
            EXPECT_EQ(located->order.blocks[i].offset, scanned->order.blocks[i].offset);
            EXPECT_EQ(located->order.blocks[i].size, scanned->order.blocks[i].size);
        }
        EXPECT_EQ(located->headers.ChainWork().back(), scanned->headers.ChainWork()[std::size_t(real.tip)]);
        EXPECT_EQ(scanned->scan.bytes_read, scanned->scan.records * RECORD_PREFIX_SIZE);
        EXPECT_EQ(Snapshot(*dir), before) << "read-only";
    }
}

TEST(Datadir, LocateBlocksReadsTheDirectoryTheSourceNames)
{
    const auto& real = REAL[0];
    REQUIRE_DATA(dir, real.rel);
    // A datadir goes through its block index, a blocks directory through a scan of its files:
    // the same folder gives the index's tip one way and the files' the other.
    const BlockFileSource as_datadir{*dir, {}, std::nullopt};
    const BlockFileSource as_blocks{{}, *dir, real.chain};
    EXPECT_TRUE(as_datadir.NamesOne());
    EXPECT_TRUE(as_blocks.NamesOne());
    EXPECT_FALSE((BlockFileSource{*dir, *dir, std::nullopt}.NamesOne()));
    EXPECT_FALSE(BlockFileSource{}.NamesOne());
    auto indexed = LocateBlocks(as_datadir);
    ASSERT_TRUE(indexed.ok()) << indexed.error().message;
    EXPECT_TRUE(indexed->from_index);
    EXPECT_EQ(indexed->chain, real.chain);
    EXPECT_EQ(indexed->TipHeight(), real.tip);
    auto scanned = LocateBlocks(as_blocks);
    ASSERT_TRUE(scanned.ok()) << scanned.error().message;
    EXPECT_FALSE(scanned->from_index);
    EXPECT_EQ(scanned->TipHeight(), real.file_tip);
    // Neither directory: the blocks directory's error, as every run without one gets it.
    auto none = LocateBlocks(BlockFileSource{});
    auto bare = LocateFromBlocksDir({}, std::nullopt);
    ASSERT_FALSE(none.ok());
    ASSERT_FALSE(bare.ok());
    EXPECT_EQ(none.error().code, bare.error().code);
    EXPECT_EQ(none.error().message, bare.error().message);
}

TEST(Datadir, BestChainIsMostWorkWithDataAndNoFailure)
{
    REQUIRE_DATA(dir, "testnet3/core_v25_0-121");
    auto index = ReadBlockIndex(*dir / "index");
    ASSERT_TRUE(index.ok());
    const auto genesis = GetChainParams(ChainType::TESTNET).consensus.hash_genesis_block;
    auto by_height = [](BlockIndex& ix, int h) -> BlockIndexEntry& {
        for (auto& e : ix.entries) {
            if (e.height == h) return e;
        }
        throw std::runtime_error("no height");
    };
    {   // A block without data cuts the chain below it.
        auto ix = *index;
        by_height(ix, 100).status &= ~BLOCK_HAVE_DATA;
        auto best = SelectBestChain(ix, genesis);
        ASSERT_TRUE(best.ok());
        EXPECT_EQ(best->entries.size(), 100u);
        EXPECT_EQ(best->orphans, 20u);
    }
    {   // A failed block and its descendants are excluded.
        auto ix = *index;
        by_height(ix, 50).status |= BLOCK_FAILED_VALID;
        auto best = SelectBestChain(ix, genesis);
        ASSERT_TRUE(best.ok());
        EXPECT_EQ(best->entries.size(), 50u);
        EXPECT_EQ(best->failed, 1u);
    }
    {   // A two-block fork from height 119 with more work wins over the main tip (120).
        auto ix = *index;
        const auto parent = by_height(ix, 119);
        BlockIndexEntry a = parent, b = parent;
        a.height = 120;
        std::copy(parent.hash.ToUint256().begin(), parent.hash.ToUint256().end(), a.header.begin() + 4);
        a.header[76] ^= 0x55;
        a.hash = BlockHash(HashSha256d(std::span<const uint8_t>(a.header)));
        b = a;
        b.height = 121;
        std::copy(a.hash.ToUint256().begin(), a.hash.ToUint256().end(), b.header.begin() + 4);
        WriteLE32(b.header.data() + 72, 0x1c00ffff); // more work than the main chain's blocks
        b.hash = BlockHash(HashSha256d(std::span<const uint8_t>(b.header)));
        ix.entries.push_back(a);
        ix.entries.push_back(b);
        auto best = SelectBestChain(ix, genesis);
        ASSERT_TRUE(best.ok());
        ASSERT_EQ(best->entries.size(), 122u);
        EXPECT_EQ(ix.entries[best->entries.back()].hash, b.hash);
        EXPECT_EQ(best->stale, 1u);
        // Wrong stored height: corrupt.
        ix.entries.back().height = 7;
        EXPECT_EQ(SelectBestChain(ix, genesis).error().code, Errc::Corrupt);
    }
}

TEST(Datadir, LayoutPicksTheNetworkOrAsks)
{
    REQUIRE_DATA(t3, "testnet3/core_v25_0-121");
    REQUIRE_DATA(sig, "signet/core_v25_0-70");
    TempDir d;
    MakeDatadir(d.path, *t3, "testnet3");
    auto one = ResolveDatadir(d.path, std::nullopt);
    ASSERT_TRUE(one.ok()) << one.error().message;
    EXPECT_EQ(one->chain, ChainType::TESTNET);
    EXPECT_EQ(one->blocks_dir, d.path / "testnet3" / "blocks");
    EXPECT_EQ(one->lock_file, d.path / "testnet3" / ".lock");
    // The network's own directory works too (its blocks are DIR/blocks; the magic tells testnet).
    auto own = ResolveDatadir(d.path / "testnet3", std::nullopt);
    ASSERT_TRUE(own.ok()) << own.error().message;
    EXPECT_EQ(own->chain, ChainType::TESTNET);
    auto wrong = ResolveDatadir(d.path, ChainType::SIGNET);
    ASSERT_FALSE(wrong.ok());
    EXPECT_NE(wrong.error().message.find("is a test data directory, not signet: drop --network, or pass --network test"),
              std::string::npos)
        << wrong.error().message;

    MakeDatadir(d.path, *sig, "signet");
    auto two = ResolveDatadir(d.path, std::nullopt);
    ASSERT_FALSE(two.ok());
    EXPECT_NE(two.error().message.find("several networks"), std::string::npos) << two.error().message;
    auto picked = LocateFromDatadir(d.path, ChainType::SIGNET);
    ASSERT_TRUE(picked.ok()) << picked.error().message;
    EXPECT_EQ(picked->TipHeight(), 2);

    TempDir empty;
    auto none = ResolveDatadir(empty.path, std::nullopt);
    ASSERT_FALSE(none.ok());
    EXPECT_NE(none.error().message.find("no Bitcoin Core block index"), std::string::npos) << none.error().message;
    // Signet blocks placed where main's belong: the magic disagrees with an explicit network.
    TempDir misplaced;
    MakeDatadir(misplaced.path, *sig, "");
    auto mis = LocateFromDatadir(misplaced.path, ChainType::MAIN);
    ASSERT_FALSE(mis.ok());
    EXPECT_EQ(mis.error().code, Errc::BadMagic);
}

TEST(Datadir, ReadOnlyAndASnapshotWhileLocked)
{
    REQUIRE_DATA(t3, "testnet3/core_v25_0-121");
    TempDir d;
    const auto blocks = MakeDatadir(d.path, *t3, "testnet3");
    std::ofstream(d.path / "testnet3" / ".lock").flush(); // as bitcoind leaves it
    std::ofstream(blocks / "index" / "LOCK").flush();
    const auto before = Snapshot(d.path);
    for (int round = 0; round < 2; ++round) { // the second open sees the same (unreplayed) log
        auto l = LocateFromDatadir(d.path, std::nullopt);
        ASSERT_TRUE(l.ok()) << l.error().message;
        EXPECT_EQ(l->TipHeight(), 120);
        EXPECT_FALSE(l->live);
    }
    EXPECT_EQ(Snapshot(d.path), before) << "the data directory is byte-identical and gained no file";

    // Either lock held (bitcoind running): the same chain, read from a private snapshot of the index.
    for (const auto& lock : {blocks / "index" / "LOCK", d.path / "testnet3" / ".lock"}) {
        SCOPED_TRACE(lock.string());
        {
            LockHolder held(lock);
            auto l = LocateFromDatadir(d.path, std::nullopt);
            ASSERT_TRUE(l.ok()) << l.error().message;
            EXPECT_TRUE(l->live);
            EXPECT_EQ(l->TipHeight(), 120);
            auto u = LocateUndoInDatadir(d.path, std::nullopt);
            ASSERT_TRUE(u.ok()) << u.error().message;
            EXPECT_TRUE(u->live);
            EXPECT_EQ(Snapshot(d.path), before) << "nothing created, locked or changed in the datadir";
        }
        auto after = LocateFromDatadir(d.path, std::nullopt); // released: read directly again
        ASSERT_TRUE(after.ok()) << after.error().message;
        EXPECT_FALSE(after->live);
    }
    EXPECT_EQ(LiveDatadirMessage(7, BlockHash{}),
              "bitcoind is running: reading a snapshot of its block index; data consistent up to height 7 (" +
                  BlockHash{}.ToHex() + ")");
}

// A node that has just started has an index without its genesis block until its first flush: with
// the node running that is a moment to wait for, not a damaged datadir.
TEST(Datadir, AnEmptyIndexOfARunningNodeSaysToWait)
{
    TempDir d;
    const fs::path blocks = d.path / "regtest" / "blocks";
    fs::create_directories(blocks);
    StoreStatus status;
    ASSERT_NE(Store::Open(blocks / "index", {}, &status), nullptr) << status.message;
    std::ofstream(d.path / "regtest" / ".lock").flush();

    auto stopped = LocateFromDatadir(d.path, ChainType::REGTEST);
    ASSERT_FALSE(stopped.ok());
    EXPECT_NE(stopped.error().message.find("has no stored regtest genesis block (0 entries"), std::string::npos)
        << stopped.error().message;

    LockHolder held(d.path / "regtest" / ".lock");
    auto running = LocateFromDatadir(d.path, ChainType::REGTEST);
    ASSERT_FALSE(running.ok());
    EXPECT_NE(running.error().message.find("bitcoind is running and its block index"), std::string::npos)
        << running.error().message;
    EXPECT_NE(running.error().message.find("holds no regtest genesis block yet"), std::string::npos);
    EXPECT_NE(running.error().message.find("try again in a moment"), std::string::npos);
}

TEST(Datadir, ReplayReadsEachBlockOnce)
{
    REQUIRE_DATA(t3, "testnet3/core_v25_0-121");
    TempDir d;
    MakeDatadir(d.path, *t3, "testnet3");
    const auto before = Snapshot(d.path);
    ReplayOptions o;
    o.source.datadir = d.path;
    auto r = Replay(o);
    ASSERT_TRUE(r.ok()) << r.error().message;
    EXPECT_FALSE(r->reject_reason) << *r->reject_reason;
    EXPECT_EQ(r->height, 120);
    EXPECT_EQ(r->chain, ChainType::TESTNET);
    // Heights 1..120 connected: each block's bytes read exactly once (the genesis is never read).
    auto located = LocateFromDatadir(d.path, std::nullopt);
    ASSERT_TRUE(located.ok());
    uint64_t want = 0;
    for (std::size_t i = 1; i < located->order.blocks.size(); ++i) want += located->order.blocks[i].size;
    EXPECT_EQ(r->bytes_read, want);
    EXPECT_EQ(r->bytes, want);
    EXPECT_EQ(Snapshot(d.path), before);

    // The same blocks through a bare scan: the same UTXO set, the same bytes read once, and the
    // scan itself reads only 88 bytes per record.
    ReplayOptions b;
    b.source.blocks_dir = *t3;
    b.stop_height = 120;
    auto rb = Replay(b);
    ASSERT_TRUE(rb.ok()) << rb.error().message;
    EXPECT_EQ(rb->height, 120);
    ASSERT_TRUE(r->utxo && rb->utxo);
    EXPECT_EQ(r->utxo->hash_serialized, rb->utxo->hash_serialized);
    EXPECT_EQ(rb->bytes_read, want);
    EXPECT_EQ(rb->scan.bytes_read, rb->scan.records * RECORD_PREFIX_SIZE);

    ReplayOptions both = o;
    both.source.blocks_dir = *t3;
    EXPECT_FALSE(Replay(both).ok());
}

// A run that fails keeps what it did: after a block ConnectBlock rejects (which takes its changes
// to the cache back) or a block the files cannot deliver, the chainstate given holds every block
// before it, says so, and a rerun on repaired blocks goes on from there to the UTXO hash of a run
// that never failed. With one thread and two, with undo data and without.
#include "replay_test_util.h"

#include <ibdkit/blockfile/blockfile.h>
#include <ibdkit/chain/params.h>

#include "common/test_hooks.h"
#include "consensus/merkle.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <optional>
#include <string>

using namespace ibdkit;
namespace fs = std::filesystem;

namespace {

using ibdkit::test::BrokenChain;
using ibdkit::test::GeneratedBlocks;
using ibdkit::test::HashOf;
using ibdkit::test::MustReplay;
using ibdkit::test::TempDir;

constexpr int AT = 120;

// The coinbase claims one satoshi more than the block's subsidy and fees: bad-cb-amount, found
// after every transaction of the block went through the cache.
void PayTooMuch(Block& b, const std::vector<Block>&)
{
    MutableTransaction cb = b.vtx[0].ToMutable();
    cb.vout[0].value += 1;
    b.vtx[0] = Transaction(std::move(cb));
    b.hash_merkle_root = BlockMerkleRoot(b);
}

// Where block `height` of the generated chain in `blocks` lies: its file and its bytes.
std::pair<fs::path, BlockRecordPos> Position(const fs::path& blocks, int height)
{
    const auto& params = GetChainParams(ChainType::REGTEST);
    std::vector<fs::path> files = ListBlockFiles(blocks).value();
    auto key = ReadXorKey(blocks);
    EXPECT_TRUE(key.ok());
    ChainOrderer orderer(params.consensus.hash_genesis_block);
    auto scan = ScanBlockFiles(files, std::span<const uint8_t, 4>(params.message_start), *key,
                               [&](const BlockRecordPos& p, std::span<const uint8_t> b) { orderer.Add(p, b.first<80>()); });
    EXPECT_TRUE(scan.ok());
    const auto order = orderer.Finish();
    const BlockRecordPos pos = order.blocks.at(std::size_t(height));
    return {files[pos.file], pos};
}

} // namespace

TEST(EngineFailure, ARejectedBlockKeepsEveryBlockBeforeIt)
{
    TempDir dir;
    const auto bad = BrokenChain(dir.path / "bad", AT, PayTooMuch);
    const auto good = BrokenChain(dir.path / "good", AT, [](Block&, const std::vector<Block>&) {});
    ReplayOptions whole_run;
    whole_run.source.blocks_dir = good;
    const auto whole = MustReplay(whole_run);
    ASSERT_EQ(whole.height, AT);
    for (const unsigned threads : {1u, 2u}) {
        for (const bool undo : {false, true}) {
            SCOPED_TRACE(std::to_string(threads) + " threads" + (undo ? ", undo data" : ""));
            TempDir cs, undo_dir;
            ReplayOptions o;
            o.source.blocks_dir = bad;
            o.chainstate = cs.path / "cs";
            if (undo) o.undo_dir = undo_dir.path / "undo";
            o.threads = threads;
            const auto r = MustReplay(o);
            ASSERT_TRUE(r.reject_reason);
            EXPECT_EQ(*r.reject_reason, "bad-cb-amount");
            EXPECT_EQ(r.reject_height, AT);
            EXPECT_EQ(r.height, AT - 1);
            EXPECT_EQ(r.kept_height, AT - 1);
            EXPECT_EQ(r.flushes, 1u); // the cache held every block: the final flush wrote them
            // The blocks repaired: the rerun connects the one block left, to the same hash.
            o.source.blocks_dir = good;
            const auto again = MustReplay(o);
            EXPECT_FALSE(again.reject_reason);
            EXPECT_EQ(again.start_height, AT);
            EXPECT_EQ(again.height, AT);
            EXPECT_EQ(HashOf(again), HashOf(whole));
        }
    }
    // A temporary chainstate keeps nothing, and says so.
    ReplayOptions o;
    o.source.blocks_dir = bad;
    const auto r = MustReplay(o);
    EXPECT_EQ(r.reject_height, AT);
    EXPECT_FALSE(r.kept_height);
}

TEST(EngineFailure, ABlockThatCannotBeReadKeepsEveryBlockBeforeIt)
{
    ReplayOptions whole_run;
    whole_run.source.blocks_dir = GeneratedBlocks();
    const auto whole = MustReplay(whole_run);
    ASSERT_EQ(whole.height, 220);
    for (const unsigned threads : {1u, 2u}) {
        SCOPED_TRACE(std::to_string(threads) + " threads");
        TempDir dir;
        fs::copy(GeneratedBlocks(), dir.path / "blocks");
        const auto [file, pos] = Position(dir.path / "blocks", 150);
        const fs::path cut = dir.path / "blocks" / file.filename();
        const uint64_t cut_size = pos.offset - 8; // a copy: clang 14 lambdas cannot capture a structured binding
        ReplayOptions o;
        o.source.blocks_dir = dir.path / "blocks";
        o.chainstate = dir.path / "cs";
        o.threads = threads;
        o.dbcache_mib = 1; // flushes along the way too
        // Once block 100 is connected (the pipeline holds at most 16 blocks ahead), block 150's
        // record is cut off its file, as a disk error or a truncated copy would.
        o.test_hooks = TestHooks::AfterBlock([&](int h) {
            if (h == 100) fs::resize_file(cut, cut_size);
        });
        auto r = Replay(o);
        ASSERT_FALSE(r.ok());
        EXPECT_NE(r.error().message.find("cannot read block at height 150"), std::string::npos) << r.error().message;
        EXPECT_NE(r.error().message.find("keeps every block before it, up to height 149: a rerun resumes there"), std::string::npos)
            << r.error().message;
        EXPECT_TRUE(fs::exists(o.chainstate));
        // The file repaired: the rerun resumes after block 149 and ends at the same hash.
        fs::copy_file(GeneratedBlocks() / file.filename(), cut, fs::copy_options::overwrite_existing);
        o.test_hooks.reset();
        const auto again = MustReplay(o);
        EXPECT_EQ(again.start_height, 150);
        EXPECT_EQ(again.height, 220);
        EXPECT_EQ(HashOf(again), HashOf(whole));
    }
}

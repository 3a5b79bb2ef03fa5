// Building hintsfiles (BIP 456) from a UTXO set and its blocks: a chainstate and a snapshot of it
// give the same bytes, and every hint says exactly whether the replayed chainstate holds the output.
#include "replay_test_util.h"

#include <ibdkit/blockfile/locate.h>
#include <ibdkit/coins/coins_db.h>
#include <ibdkit/swiftsync/build_hints.h>
#include <ibdkit/swiftsync/hints.h>
#include <ibdkit/utxo/snapshot.h>

#include "coins/coins_db_internal.h"

#include <gtest/gtest.h>

#include <unistd.h>

using namespace ibdkit;
using namespace ibdkit::swiftsync;
using ibdkit::test::TempDir;
namespace fs = std::filesystem;

namespace {

std::unique_ptr<CoinsDB> OpenRO(const fs::path& dir)
{
    CoinsDBOptions opt;
    opt.read_only = true;
    StoreStatus st;
    auto db = OpenCoinsDB(dir, opt, &st);
    EXPECT_TRUE(db) << st.message;
    return db;
}

// Every hint of `hints` against the chainstate: an output is hinted unspent exactly when the
// chainstate holds it with the block's height.
void ExpectHintsMatchChainstate(const Hints& hints, const LocatedChain& loc, const CoinsDB& db)
{
    BlockFileReader reader(loc.files, loc.key);
    uint64_t hinted = 0;
    for (uint32_t h = 1; h <= hints.height(); ++h) {
        auto raw = reader.Read(loc.order.blocks[std::size_t(h - uint32_t(loc.base_height))]);
        ASSERT_TRUE(raw.ok());
        auto block = DecodeBlock(std::span<const uint8_t>(*raw));
        ASSERT_TRUE(block.ok());
        const auto indices = hints.Indices(h);
        std::size_t next = 0;
        ForEachSpendableOutput(*block, false, [&](std::size_t t, uint32_t vout, uint32_t index) {
            auto coin = db.GetCoin(OutPoint{block->vtx[t].GetHash(), vout});
            ASSERT_TRUE(coin.ok());
            const bool unspent = coin->has_value() && (*coin)->height == h;
            const bool hint = next < indices.size() && indices[next] == index;
            if (hint) ++next;
            EXPECT_EQ(hint, unspent) << "height " << h << " output " << index;
        });
        EXPECT_EQ(next, indices.size()) << "height " << h << ": hint beyond the spendable outputs";
        hinted += indices.size();
    }
    EXPECT_EQ(hinted, hints.total());
}

void RoutesAgree(const fs::path& blocks, std::optional<int> stop_height, uint32_t want_height)
{
    TempDir t;
    ReplayOptions ro;
    ro.source.blocks_dir = blocks;
    ro.chainstate = t.path / "cs";
    ro.threads = 1;
    ro.stop_height = stop_height;
    const auto replayed = ibdkit::test::MustReplay(ro);
    ASSERT_EQ(replayed.height, int(want_height));

    BuildHintsOptions o;
    o.chainstate = t.path / "cs";
    o.source.blocks_dir = blocks;
    o.out = t.path / "from-chainstate.hints";
    o.threads = 2;
    auto a = BuildHints(o);
    ASSERT_TRUE(a.ok()) << a.error().message;
    EXPECT_EQ(a->height, want_height);
    EXPECT_EQ(a->coins, replayed.utxo->txouts);
    EXPECT_EQ(a->attempts, 1u);

    auto db = OpenRO(t.path / "cs");
    ASSERT_TRUE(db);
    auto snap = WriteUtxoSnapshot(*db, GetChainParams(a->chain), t.path / "utxo.dat");
    ASSERT_TRUE(snap.ok()) << snap.error().message;
    o.chainstate.clear();
    o.snapshot = t.path / "utxo.dat";
    o.out = t.path / "from-snapshot.hints";
    o.threads = 1;
    auto b = BuildHints(o);
    ASSERT_TRUE(b.ok()) << b.error().message;
    EXPECT_EQ(b->tip, a->tip);
    const auto bytes_a = ibdkit::test::ReadFile(t.path / "from-chainstate.hints");
    EXPECT_EQ(bytes_a, ibdkit::test::ReadFile(t.path / "from-snapshot.hints")) << "both routes give the same bytes";
    EXPECT_EQ(bytes_a.size(), a->bytes);
    EXPECT_FALSE(fs::exists(t.path / ("from-snapshot.hints.partial-" + std::to_string(::getpid()))));

    auto hints = Hints::Read(t.path / "from-chainstate.hints");
    ASSERT_TRUE(hints.ok()) << hints.error().message;
    EXPECT_EQ(hints->height(), want_height);
    auto loc = LocateFromBlocksDir(blocks, std::nullopt);
    ASSERT_TRUE(loc.ok());
    ExpectHintsMatchChainstate(*hints, *loc, *db);
}

} // namespace

TEST(SwiftSyncBuildHints, MainnetChainstateAndSnapshotGiveTheSameFile)
{
    auto dir = ibdkit::test::TestData("mainnet/blk_0-599");
    ASSERT_TRUE(dir) << "tests/data is incomplete";
    RoutesAgree(*dir, std::nullopt, 599);
    RoutesAgree(*dir, 321, 321);
}

TEST(SwiftSyncBuildHints, GeneratedChainWithSpends)
{
    RoutesAgree(ibdkit::test::GeneratedBlocks(), std::nullopt, 220);
}

TEST(SwiftSyncBuildHints, RefusesWhatDoesNotFit)
{
    auto dir = ibdkit::test::TestData("mainnet/blk_0-599");
    ASSERT_TRUE(dir) << "tests/data is incomplete";
    TempDir t;
    ReplayOptions ro;
    ro.source.blocks_dir = *dir;
    ro.chainstate = t.path / "cs";
    ro.threads = 1;
    (void)ibdkit::test::MustReplay(ro);

    BuildHintsOptions o;
    o.chainstate = t.path / "cs";
    o.out = t.path / "h.hints";
    // The chainstate's tip (599) is not among blocks 0..299.
    o.source.blocks_dir = *dir / "blk00000.dat";
    auto r = BuildHints(o);
    ASSERT_FALSE(r.ok());
    EXPECT_NE(r.error().message.find("not in the best chain"), std::string::npos) << r.error().message;
    EXPECT_FALSE(fs::exists(o.out));
    // Two sources, no source.
    o.source.blocks_dir = *dir;
    o.snapshot = t.path / "x.dat";
    EXPECT_FALSE(BuildHints(o).ok());
    o.snapshot.clear();
    o.chainstate.clear();
    EXPECT_FALSE(BuildHints(o).ok());
    o.chainstate = t.path / "absent";
    EXPECT_FALSE(BuildHints(o).ok());
    EXPECT_FALSE(fs::exists(o.out));
}

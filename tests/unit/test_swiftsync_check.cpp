// SwiftSync's range check in outpoints mode against a classic replay: the hinted-unspent coins are
// the replayed UTXO set, ranges combine in any split, and a wrong hint, a dropped input or a
// damaged block makes the verdict fail.
#include "replay_test_util.h"

#include <ibdkit/blockfile/locate.h>
#include <ibdkit/coins/coins_db.h>
#include <ibdkit/encoding/endian.h>
#include <ibdkit/swiftsync/build_hints.h>
#include <ibdkit/swiftsync/check_range.h>
#include <ibdkit/swiftsync/partial.h>

#include "coins/coins_db_internal.h"
#include "swiftsync/range_internal.h"

#include <gtest/gtest.h>

#include <fstream>

using namespace ibdkit;
using namespace ibdkit::swiftsync;
using ibdkit::test::TempDir;
namespace fs = std::filesystem;

namespace {

using CoinList = std::vector<std::pair<OutPoint, Coin>>;

struct Replayed {
    TempDir dir;
    CoinList coins;      ///< the replayed UTXO set, in key order
    std::optional<Hints> hints;
    std::optional<LocatedChain> loc;
};

// Replays `blocks`, builds the hints from the chainstate, and reads the UTXO set back.
void Prepare(const fs::path& blocks, Replayed& r)
{
    ReplayOptions ro;
    ro.source.blocks_dir = blocks;
    ro.chainstate = r.dir.path / "cs";
    ro.threads = 1;
    (void)ibdkit::test::MustReplay(ro);
    BuildHintsOptions o;
    o.chainstate = r.dir.path / "cs";
    o.source.blocks_dir = blocks;
    o.out = r.dir.path / "h.hints";
    auto built = BuildHints(o);
    ASSERT_TRUE(built.ok()) << built.error().message;
    auto hints = Hints::Read(o.out);
    ASSERT_TRUE(hints.ok());
    r.hints = std::move(*hints);
    auto loc = LocateFromBlocksDir(blocks, std::nullopt);
    ASSERT_TRUE(loc.ok());
    r.loc = std::move(*loc);
    CoinsDBOptions opt;
    opt.read_only = true;
    StoreStatus st;
    auto db = OpenCoinsDB(r.dir.path / "cs", opt, &st);
    ASSERT_TRUE(db);
    ASSERT_TRUE(db->ForEachCoin([&](const OutPoint& op, const Coin& c) {
                      r.coins.emplace_back(op, c);
                      return true;
                  }).ok());
}

CoinList Sorted(CoinList v)
{
    std::sort(v.begin(), v.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
    return v;
}

Hints WithHints(const Hints& h, uint32_t height, const std::vector<uint32_t>& list)
{
    std::vector<uint8_t> bytes(h.bytes().begin(), h.bytes().begin() + HINTS_HEADER_SIZE);
    for (uint32_t b = 1; b <= h.height(); ++b) AppendEliasFano(bytes, b == height ? list : h.Indices(b));
    auto parsed = Hints::Parse(std::move(bytes));
    EXPECT_TRUE(parsed.ok());
    return std::move(*parsed);
}

} // namespace

TEST(SwiftSyncCheckRange, HintedUnspentCoinsAreTheReplayedUtxoSet)
{
    Replayed r;
    ASSERT_NO_FATAL_FAILURE(Prepare(ibdkit::test::GeneratedBlocks(), r));
    const uint32_t n = r.hints->height();
    ASSERT_EQ(n, 220u);
    const Salt salt = Salt::Random();
    // Three ranges, checked out of order with different thread counts.
    CheckRangeOptions o;
    o.threads = 2;
    auto c = CheckRange(*r.loc, *r.hints, salt, 151, n, o);
    o.threads = 1;
    auto a = CheckRange(*r.loc, *r.hints, salt, 1, 60, o);
    auto b = CheckRange(*r.loc, *r.hints, salt, 61, 150, o);
    ASSERT_TRUE(a.ok() && b.ok() && c.ok());
    const std::vector<Partial> parts{*c, *a, *b};
    const Verdict v = Combine(parts, n, r.loc->chain);
    EXPECT_TRUE(v.ok) << v.reason;
    EXPECT_EQ(v.counts.blocks, n);
    EXPECT_GT(v.counts.inputs, 100u) << "the generated chain spends";
    EXPECT_EQ(v.counts.unspent, r.coins.size());
    EXPECT_LE(v.supply, v.supply_bound);

    CoinList unspent;
    for (const auto* p : {&*a, &*b, &*c}) unspent.insert(unspent.end(), p->unspent.begin(), p->unspent.end());
    EXPECT_EQ(Sorted(unspent), Sorted(r.coins));

    // Ranges that leave a gap or overlap are no verdict.
    EXPECT_FALSE(Combine(std::vector<Partial>{*a, *c}, n, r.loc->chain).ok);
    EXPECT_FALSE(Combine(std::vector<Partial>{*a, *b, *b, *c}, n, r.loc->chain).ok);
    // A different salt per range breaks the sums.
    auto b2 = CheckRange(*r.loc, *r.hints, Salt::Random(), 61, 150, o);
    ASSERT_TRUE(b2.ok());
    EXPECT_FALSE(Combine(std::vector<Partial>{*a, *b2, *c}, n, r.loc->chain).ok);
}

TEST(SwiftSyncCheckRange, AWrongHintOrADroppedInputFails)
{
    Replayed r;
    ASSERT_NO_FATAL_FAILURE(Prepare(ibdkit::test::GeneratedBlocks(), r));
    const uint32_t n = r.hints->height();
    const Salt salt = Salt::Random();
    // A block with a spent output: flip its hint bit (spent marked unspent), then an unspent one off.
    BlockFileReader reader(r.loc->files, r.loc->key);
    uint32_t height = 0;
    std::vector<uint32_t> list;
    Block block;
    for (uint32_t h = n / 2; h <= n && !height; ++h) {
        auto raw = reader.Read(r.loc->order.blocks[h - uint32_t(r.loc->base_height)]);
        ASSERT_TRUE(raw.ok());
        auto decoded = DecodeBlock(std::span<const uint8_t>(*raw));
        ASSERT_TRUE(decoded.ok());
        uint32_t spendable = 0;
        ForEachSpendableOutput(*decoded, false, [&](std::size_t, uint32_t, uint32_t) { ++spendable; });
        list = r.hints->Indices(h);
        if (list.size() < spendable && decoded->vtx.size() > 1) {
            height = h;
            block = std::move(*decoded);
        }
    }
    ASSERT_NE(height, 0u);
    std::vector<uint32_t> flipped = list;
    for (uint32_t i = 0;; ++i) {
        if (!std::binary_search(list.begin(), list.end(), i)) {
            flipped.insert(std::upper_bound(flipped.begin(), flipped.end(), i), i);
            break;
        }
    }
    for (const auto& bad : {WithHints(*r.hints, height, flipped),
                            WithHints(*r.hints, height, std::vector<uint32_t>(list.begin() + 1, list.end()))}) {
        auto p = CheckRange(*r.loc, bad, salt, 1, n);
        ASSERT_TRUE(p.ok());
        const Verdict v = Combine(std::vector<Partial>{*p}, n, r.loc->chain);
        EXPECT_FALSE(v.ok);
        EXPECT_NE(v.reason.find("aggregates differ"), std::string::npos) << v.reason;
    }

    // A hint past the block's spendable outputs refuses the block.
    auto past = CheckRange(*r.loc, WithHints(*r.hints, height, {1'000'000}), salt, height, height);
    ASSERT_TRUE(past.ok());
    ASSERT_TRUE(past->failure);
    EXPECT_EQ(past->failure->reason, "swiftsync-hint-out-of-range");

    // The same block with one input dropped (AccumulateBlock takes blocks from anywhere).
    const SaltedHasher hasher(salt);
    Partial whole, dropped;
    AccumulateBlock(block, height, block.GetHash(), r.loc->chain, list, hasher, false, whole);
    MutableTransaction m = block.vtx[1].ToMutable();
    ASSERT_FALSE(m.vin.empty());
    m.vin.pop_back();
    Block less = block;
    less.vtx[1] = Transaction(m);
    AccumulateBlock(less, height, block.GetHash(), r.loc->chain, list, hasher, false, dropped);
    // The transaction's txid changes with its inputs, so its outputs' outpoints change too; either
    // way the block's net contribution differs, and the sums over the chain can no longer agree.
    EXPECT_NE(whole.agg_in, dropped.agg_in);
    EXPECT_NE(whole.agg_in - whole.agg_out, dropped.agg_in - dropped.agg_out);
    EXPECT_EQ(dropped.counts.inputs + 1, whole.counts.inputs);
}

TEST(SwiftSyncCheckRange, ADamagedBlockIsRefusedWithCoresReason)
{
    auto dir = ibdkit::test::TestData("mainnet/blk_0-599");
    ASSERT_TRUE(dir) << "tests/data is incomplete";
    Replayed r;
    ASSERT_NO_FATAL_FAILURE(Prepare(*dir, r));
    const Salt salt = Salt::Random();
    auto good = CheckRange(*r.loc, *r.hints, salt, 1, 599, CheckRangeOptions{2, true, {}, {}});
    ASSERT_TRUE(good.ok());
    EXPECT_FALSE(good->failure);
    EXPECT_TRUE(Combine(std::vector<Partial>{*good}, 599, ChainType::MAIN).ok);
    EXPECT_EQ(Sorted(good->unspent), Sorted(r.coins));

    // Block 1's last byte (its coinbase's lock time) changed: same header, another merkle root.
    TempDir t;
    auto file = ibdkit::test::ReadFile(*dir / "blk00000.dat");
    const uint32_t size0 = ReadLE32(file.data() + 4);
    const std::size_t rec1 = 8 + size0;
    const uint32_t size1 = ReadLE32(file.data() + rec1 + 4);
    file[rec1 + 8 + size1 - 1] ^= 1;
    std::ofstream(t.path / "blk00000.dat", std::ios::binary).write(reinterpret_cast<const char*>(file.data()), std::streamsize(file.size()));
    auto loc = LocateFromBlocksDir(t.path, std::nullopt);
    ASSERT_TRUE(loc.ok());
    auto bad = CheckRange(*loc, *r.hints, salt, 1, 200);
    ASSERT_TRUE(bad.ok());
    ASSERT_TRUE(bad->failure);
    EXPECT_EQ(bad->failure->height, 1u);
    EXPECT_EQ(bad->failure->reason, "bad-txnmrklroot");
    EXPECT_EQ(bad->counts.blocks, 0u) << "the walk stops at the refused block";
    const Verdict v = Combine(std::vector<Partial>{*bad}, 200, ChainType::MAIN);
    EXPECT_FALSE(v.ok);
    EXPECT_NE(v.reason.find("bad-txnmrklroot"), std::string::npos);
}

// Coins mode collects the coinbases BIP30 applies to; one repeated across ranges refuses the
// history (whether the first was spent by then is the classic replay's to decide), naming the
// later height; the same ranges without the repeat pass.
TEST(SwiftSyncCheckRange, ARepeatedCoinbaseWhereBip30AppliesIsUndecided)
{
    Partial a, b;
    a.from = 1;
    a.to = 5;
    b.from = 6;
    b.to = 10;
    Txid t1, t2;
    t1.AsUint256().data()[0] = 1;
    t2.AsUint256().data()[0] = 2;
    a.mode = b.mode = AggregateMode::Coins;
    a.counts.blocks = b.counts.blocks = 5;
    a.bip30_coinbases = {{t1, 3}, {t2, 4}};
    b.bip30_coinbases = {{t1, 8}};
    const Verdict v = Combine(std::vector<Partial>{a, b}, 10, ChainType::MAIN);
    EXPECT_FALSE(v.ok);
    EXPECT_NE(v.reason.find("at height 8: swiftsync-bip30-undecided"), std::string::npos) << v.reason;
    // The same after the partials travelled as bytes (partial.h), as between machines.
    auto a2 = DeserializePartial(SerializePartial(a)), b2 = DeserializePartial(SerializePartial(b));
    ASSERT_TRUE(a2.ok() && b2.ok());
    EXPECT_EQ(Combine(std::vector<Partial>{*a2, *b2}, 10, ChainType::MAIN).reason, v.reason);
    // Ranges checked in different modes never combine.
    Partial c = b;
    c.mode = AggregateMode::OutPoints;
    c.bip30_coinbases.clear();
    const Verdict mixed = Combine(std::vector<Partial>{a, c}, 10, ChainType::MAIN);
    EXPECT_FALSE(mixed.ok);
    EXPECT_NE(mixed.reason.find("different modes"), std::string::npos) << mixed.reason;
    Txid t3;
    t3.AsUint256().data()[0] = 3;
    b.bip30_coinbases = {{t3, 8}};
    const Verdict w = Combine(std::vector<Partial>{a, b}, 10, ChainType::MAIN);
    EXPECT_TRUE(w.ok) << w.reason;
}

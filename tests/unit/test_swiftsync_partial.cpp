// A range's Partial as bytes and its unspent coins as sorted runs (swiftsync/partial.h): partials
// of a real chain survive the round trip and combine to the same verdict, the runs merge into the
// replayed UTXO set in the chainstate's own order, and every malformation is its typed error.
#include "replay_test_util.h"

#include <ibdkit/blockfile/locate.h>
#include <ibdkit/coins/coins_db.h>
#include <ibdkit/swiftsync/build_hints.h>
#include <ibdkit/swiftsync/partial.h>

#include "coins/coins_db_internal.h"

#include <gtest/gtest.h>

using namespace ibdkit;
using namespace ibdkit::swiftsync;
using ibdkit::test::TempDir;

namespace {

using CoinList = std::vector<std::pair<OutPoint, Coin>>;

Partial SamplePartial()
{
    Partial p;
    p.from = 5;
    p.to = 9;
    std::array<uint8_t, 32> d{};
    d[0] = 7;
    d[31] = 0x80;
    p.agg_in.Add(d);
    d[3] = 1;
    p.agg_out.Add(d);
    p.counts = RangeCounts{5, 12, 9, 20, 4, 1};
    p.supply = 123456789;
    return p;
}

Result<Partial> Decode(const std::vector<uint8_t>& b) { return DeserializePartial(b); }

Errc CodeOf(const Result<Partial>& r) { return r.ok() ? Errc::Ok : r.error().code; }

CoinList MergeAll(const std::vector<std::vector<uint8_t>>& runs, Errc* error = nullptr)
{
    std::vector<std::span<const uint8_t>> spans(runs.begin(), runs.end());
    auto m = UnspentRunMerger::Open(spans);
    if (!m) {
        if (error) *error = m.error().code;
        return {};
    }
    CoinList out;
    OutPoint op;
    Coin c;
    for (;;) {
        auto more = (*m)->Next(op, c);
        if (!more) {
            if (error) *error = more.error().code;
            return out;
        }
        if (!*more) break;
        out.emplace_back(op, c);
    }
    if (error) *error = Errc::Ok;
    return out;
}

Coin CoinAt(uint32_t height, Amount value)
{
    TxOut out;
    out.value = value;
    out.script_pubkey = Script(std::vector<uint8_t>{0x51});
    return Coin(out, height, false);
}

OutPoint Op(uint8_t b, uint32_t n)
{
    std::array<uint8_t, 32> h{};
    h[0] = b;
    return OutPoint{Txid(uint256(std::span<const uint8_t, 32>(h))), n};
}

} // namespace

TEST(SwiftSyncPartial, RoundTripOfARealChainCombinesAndMergesIntoTheReplayedSet)
{
    TempDir dir;
    ReplayOptions ro;
    ro.source.blocks_dir = ibdkit::test::GeneratedBlocks();
    ro.chainstate = dir.path / "cs";
    ro.threads = 1;
    (void)ibdkit::test::MustReplay(ro);
    BuildHintsOptions bo;
    bo.chainstate = ro.chainstate;
    bo.source.blocks_dir = ro.source.blocks_dir;
    bo.out = dir.path / "h.hints";
    ASSERT_TRUE(BuildHints(bo).ok());
    auto hints = Hints::Read(bo.out);
    auto loc = LocateFromBlocksDir(ro.source.blocks_dir, std::nullopt);
    ASSERT_TRUE(hints.ok() && loc.ok());
    CoinList replayed; // in the chainstate's key order
    CoinsDBOptions opt;
    opt.read_only = true;
    StoreStatus st;
    auto db = OpenCoinsDB(ro.chainstate, opt, &st);
    ASSERT_TRUE(db);
    ASSERT_TRUE(db->ForEachCoin([&](const OutPoint& op, const Coin& c) {
                      replayed.emplace_back(op, c);
                      return true;
                  }).ok());

    const uint32_t n = hints->height();
    const Salt salt = Salt::Random();
    std::vector<Partial> direct, travelled;
    std::vector<std::vector<uint8_t>> runs;
    for (auto [a, b] : {std::pair{151u, n}, std::pair{1u, 70u}, std::pair{71u, 150u}}) {
        auto p = CheckRange(*loc, *hints, salt, a, b);
        ASSERT_TRUE(p.ok());
        auto back = DeserializePartial(SerializePartial(*p));
        ASSERT_TRUE(back.ok()) << back.error().message;
        EXPECT_TRUE(back->unspent.empty());
        EXPECT_EQ(back->agg_in, p->agg_in);
        EXPECT_EQ(back->agg_out, p->agg_out);
        EXPECT_EQ(back->counts, p->counts);
        EXPECT_EQ(back->supply, p->supply);
        EXPECT_EQ(SerializePartial(*back), SerializePartial(*p));
        auto run = SerializeUnspentRun(a, b, p->unspent);
        ASSERT_TRUE(run.ok());
        runs.push_back(std::move(*run));
        direct.push_back(std::move(*p));
        travelled.push_back(std::move(*back));
    }
    const Verdict v1 = Combine(direct, n, loc->chain), v2 = Combine(travelled, n, loc->chain);
    EXPECT_TRUE(v2.ok) << v2.reason;
    EXPECT_EQ(v1.agg_in, v2.agg_in);
    EXPECT_EQ(v1.counts, v2.counts);
    Errc e = Errc::Corrupt;
    EXPECT_EQ(MergeAll(runs, &e), replayed);
    EXPECT_EQ(e, Errc::Ok);
    // The same range twice: its coins are in two runs.
    MergeAll({runs[0], runs[1], runs[0]}, &e);
    EXPECT_EQ(e, Errc::InvalidValue);
}

TEST(SwiftSyncPartial, AFailureTravelsWithItsReason)
{
    Partial p = SamplePartial();
    p.failure = BlockFailure{7, BlockHash{}, "bad-txnmrklroot"};
    auto back = Decode(SerializePartial(p));
    ASSERT_TRUE(back.ok());
    ASSERT_TRUE(back->failure);
    EXPECT_EQ(back->failure->height, 7u);
    EXPECT_EQ(back->failure->reason, "bad-txnmrklroot");
}

// A coins-mode partial is version 2: it also carries the inputs whose scripts ran and the
// coinbases BIP30 applies to, so that a driver combining partials from other machines still finds
// a repeated coinbase. An outpoints-mode partial keeps version 1's bytes.
TEST(SwiftSyncPartial, ACoinsModePartialCarriesItsScriptCountAndBip30Coinbases)
{
    Partial p = SamplePartial();
    EXPECT_EQ(SerializePartial(p)[4], PARTIAL_VERSION);
    p.mode = AggregateMode::Coins;
    p.script_checked_inputs = 9;
    Txid t1, t2;
    t1.AsUint256().data()[0] = 1;
    t2.AsUint256().data()[0] = 2;
    p.bip30_coinbases = {{t1, 5}, {t2, 9}};
    p.failure = BlockFailure{9, BlockHash{}, "bad-cb-amount"};
    const std::vector<uint8_t> good = SerializePartial(p);
    EXPECT_EQ(good[4], PARTIAL_VERSION_COINS);
    auto back = Decode(good);
    ASSERT_TRUE(back.ok()) << back.error().message;
    EXPECT_EQ(back->mode, AggregateMode::Coins);
    EXPECT_EQ(back->script_checked_inputs, 9u);
    EXPECT_EQ(back->bip30_coinbases, p.bip30_coinbases);
    EXPECT_EQ(SerializePartial(*back), good);
    for (std::size_t cut = 0; cut < good.size(); ++cut) {
        EXPECT_EQ(CodeOf(Decode({good.begin(), good.begin() + cut})), Errc::EndOfData) << cut;
    }
    auto refused = [&](auto change) {
        Partial q = p;
        change(q);
        return CodeOf(Decode(SerializePartial(q)));
    };
    EXPECT_EQ(refused([](Partial& q) { q.script_checked_inputs = 10; }), Errc::InvalidValue); // above the 9 inputs
    EXPECT_EQ(refused([&](Partial& q) { q.bip30_coinbases.assign(6, {t1, 5}); }), Errc::InvalidValue); // six in five blocks
    EXPECT_EQ(refused([&](Partial& q) { q.bip30_coinbases = {{t1, 9}, {t2, 5}}; }), Errc::InvalidValue); // not increasing
    EXPECT_EQ(refused([&](Partial& q) { q.bip30_coinbases = {{t1, 5}, {t2, 5}}; }), Errc::InvalidValue); // two at one height
    EXPECT_EQ(refused([&](Partial& q) { q.bip30_coinbases = {{t1, 4}}; }), Errc::InvalidValue);  // below the range
    EXPECT_EQ(refused([&](Partial& q) { q.bip30_coinbases = {{t1, 10}}; }), Errc::InvalidValue); // above it
    auto plus = good;
    plus.push_back(0);
    EXPECT_EQ(CodeOf(Decode(plus)), Errc::TrailingData);
    auto v3 = good;
    v3[4] = 3;
    EXPECT_EQ(CodeOf(Decode(v3)), Errc::InvalidValue);
}

TEST(SwiftSyncPartial, EveryMalformationIsATypedError)
{
    Partial p = SamplePartial();
    p.failure = BlockFailure{6, BlockHash{}, "bad-cb-length"};
    const std::vector<uint8_t> good = SerializePartial(p);
    for (std::size_t cut = 0; cut < good.size(); ++cut) {
        EXPECT_EQ(CodeOf(Decode({good.begin(), good.begin() + cut})), Errc::EndOfData) << cut;
    }
    auto with = [&](std::size_t at, uint8_t v) {
        auto b = good;
        b[at] = v;
        return CodeOf(Decode(b));
    };
    auto plus = good;
    plus.push_back(0);
    EXPECT_EQ(CodeOf(Decode(plus)), Errc::TrailingData);
    EXPECT_EQ(with(0, 'x'), Errc::BadMagic);
    EXPECT_EQ(with(4, 3), Errc::InvalidValue);                 // version
    EXPECT_EQ(with(5, 0), Errc::InvalidValue);                 // first = 0
    EXPECT_EQ(with(9, 4), Errc::InvalidValue);                 // last < first
    const std::size_t counts = 4 + 1 + 8 + 64;
    EXPECT_EQ(with(counts, 6), Errc::InvalidValue);            // six blocks in a range of five
    EXPECT_EQ(with(counts + 32, 21), Errc::InvalidValue);      // unspent above outputs
    const std::size_t flag = counts + 56;
    EXPECT_EQ(with(flag, 2), Errc::InvalidValue);
    EXPECT_EQ(with(flag + 1, 10), Errc::InvalidValue);         // failure outside 5..9
    EXPECT_EQ(with(flag + 37, 0xfd), Errc::SizeTooLarge); // "ba" of the reason read as a length: 24,930
    auto short_form = good;
    short_form[flag + 37] = 0xfd;
    short_form[flag + 38] = 0x05;
    short_form[flag + 39] = 0x00;
    EXPECT_EQ(CodeOf(Decode(short_form)), Errc::NonCanonicalCompactSize);
    EXPECT_EQ(with(flag + 38, '\n'), Errc::InvalidValue);      // not printable
    auto long_reason = good;
    long_reason.resize(flag + 37);
    long_reason.push_back(0xfd);
    long_reason.push_back(0x01);
    long_reason.push_back(0x01); // 257 bytes announced
    EXPECT_EQ(CodeOf(Decode(long_reason)), Errc::SizeTooLarge);
}

TEST(SwiftSyncPartial, RunsRefuseDisorderLiesAndStrangers)
{
    const CoinList coins{{Op(2, 0), CoinAt(5, 10)}, {Op(1, 128), CoinAt(6, 20)}, {Op(1, 3), CoinAt(5, 30)}};
    auto run = SerializeUnspentRun(5, 6, coins);
    ASSERT_TRUE(run.ok());
    Errc e = Errc::Corrupt;
    const CoinList merged = MergeAll({*run}, &e);
    ASSERT_EQ(e, Errc::Ok);
    ASSERT_EQ(merged.size(), 3u);
    EXPECT_EQ(merged[0].first, Op(1, 3));   // key order: txid bytes, then VARINT(vout) bytes
    EXPECT_EQ(merged[1].first, Op(1, 128));
    EXPECT_EQ(merged[2].first, Op(2, 0));

    const CoinList twice{{Op(1, 3), CoinAt(5, 10)}, {Op(1, 3), CoinAt(6, 10)}};
    EXPECT_FALSE(SerializeUnspentRun(5, 6, twice).ok());

    const std::size_t header = 4 + 1 + 4 + 4 + 8;
    auto lie = *run;
    lie[header - 8] = 4; // four records claimed, three present
    MergeAll({lie}, &e);
    EXPECT_EQ(e, Errc::EndOfData);
    lie[header - 8] = 2;
    MergeAll({lie}, &e);
    EXPECT_EQ(e, Errc::TrailingData);
    auto bad = *run;
    bad[0] = 0;
    MergeAll({bad}, &e);
    EXPECT_EQ(e, Errc::BadMagic);
    // Two records in the wrong order: the header of a two-record run, then the records of two
    // one-record runs, the larger key first.
    auto two = SerializeUnspentRun(5, 6, CoinList{coins[0], coins[2]});
    auto big = SerializeUnspentRun(5, 6, CoinList{coins[0]}), small = SerializeUnspentRun(5, 6, CoinList{coins[2]});
    ASSERT_TRUE(two.ok() && big.ok() && small.ok());
    std::vector<uint8_t> swapped(two->begin(), two->begin() + header);
    swapped.insert(swapped.end(), big->begin() + header, big->end());
    swapped.insert(swapped.end(), small->begin() + header, small->end());
    ASSERT_EQ(swapped.size(), two->size());
    MergeAll({swapped}, &e);
    EXPECT_EQ(e, Errc::InvalidValue);
    // A coin from outside the run's range.
    auto outside = SerializeUnspentRun(5, 6, CoinList{{Op(1, 3), CoinAt(9, 10)}});
    ASSERT_TRUE(outside.ok());
    MergeAll({*outside}, &e);
    EXPECT_EQ(e, Errc::InvalidValue);
}

// Context-free checks: every reject reason of CheckTransaction / CheckBlock, their order, the
// CheckedBlock type-state, the witness commitment and BIP34.
#include "consensus/tx_check_internal.h"
#include "test_primitives_data.h"

#include <ibdkit/chain/params.h>
#include <ibdkit/consensus/check.h>
#include <ibdkit/primitives/block.h>
#include <ibdkit/primitives/consensus_constants.h>
#include <ibdkit/primitives/script_ops.h>

#include "consensus/merkle.h"
#include "consensus/tx_check.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <functional>
#include <random>

namespace ibdkit {
namespace {

const ConsensusParams& Main() { return GetChainParams(ChainType::MAIN).consensus; }
constexpr CheckBlockOptions NO_POW{false, true};

/// A regtest block with a coinbase and at least one spending transaction.
Block SpendingBlock()
{
    for (const auto& rb : test::AllTestBlocks()) {
        if (rb.chain != ChainType::REGTEST) continue;
        auto b = DecodeBlock(rb.bytes);
        if (b && b->vtx.size() >= 2) return std::move(*b);
    }
    // Fallback without data: a synthetic block.
    Block b;
    MutableTransaction cb;
    cb.vin.resize(1);
    cb.vin[0].script_sig = Script(std::vector<uint8_t>{0x51, 0x00});
    cb.vout.resize(1);
    cb.vout[0].value = 50 * COIN;
    MutableTransaction spend;
    spend.vin.resize(1);
    spend.vin[0].prevout.hash.AsUint256().data()[0] = 1;
    spend.vin[0].prevout.n = 0;
    spend.vout.resize(1);
    spend.vout[0].value = COIN;
    b.vtx.emplace_back(cb);
    b.vtx.emplace_back(spend);
    b.hash_merkle_root = BlockMerkleRoot(b);
    return b;
}

Transaction Edit(const Transaction& tx, const std::function<void(MutableTransaction&)>& fn)
{
    MutableTransaction m = tx.ToMutable();
    fn(m);
    return Transaction(std::move(m));
}

std::string Reason(const Block& b, CheckBlockOptions opts = NO_POW, const ConsensusParams& p = Main())
{
    BlockValidationState st;
    if (CheckBlockRules(b, st, p, opts)) return "ok";
    return st.GetRejectReason();
}

/// Edits transaction i and fixes the merkle root, so the edit is what the check sees.
std::string ReasonAfter(std::size_t i, const std::function<void(MutableTransaction&)>& fn)
{
    Block b = SpendingBlock();
    b.vtx[i] = Edit(b.vtx[i], fn);
    b.hash_merkle_root = BlockMerkleRoot(b);
    return Reason(b);
}

TEST(CheckBlock, ValidBlockPasses)
{
    EXPECT_EQ(Reason(SpendingBlock()), "ok");
    BlockValidationState st;
    EXPECT_TRUE(CheckBlockRules(GetChainParams(ChainType::MAIN).genesis, st, Main()));
    EXPECT_TRUE(st.IsValid());
}

TEST(CheckBlock, HighHashComesFirst)
{
    Block g = GetChainParams(ChainType::MAIN).genesis;
    g.nonce += 1;
    g.hash_merkle_root.data()[0] ^= 1; // also a bad merkle root: PoW is checked first
    BlockValidationState st;
    EXPECT_FALSE(CheckBlockRules(g, st, Main()));
    EXPECT_EQ(st.GetRejectReason(), "high-hash");
    EXPECT_EQ(st.GetResult(), BlockValidationResult::BLOCK_INVALID_HEADER);
    EXPECT_EQ(st.GetDebugMessage(), "proof of work failed");
    EXPECT_EQ(Reason(g, {false, true}), "bad-txnmrklroot");
    EXPECT_EQ(Reason(g, {false, false}), "ok");
}

TEST(CheckBlock, MerkleRules)
{
    Block b = SpendingBlock();
    b.hash_merkle_root.data()[5] ^= 0x40;
    BlockValidationState st;
    EXPECT_FALSE(CheckBlockRules(b, st, Main(), NO_POW));
    EXPECT_EQ(st.GetRejectReason(), "bad-txnmrklroot");
    EXPECT_EQ(st.GetResult(), BlockValidationResult::BLOCK_MUTATED);

    // CVE-2012-2459: [a, b, c] and [a, b, c, c] share a root; the second is mutated.
    Block three = SpendingBlock();
    while (three.vtx.size() < 3) three.vtx.push_back(Edit(three.vtx[1], [](MutableTransaction& m) { m.lock_time++; }));
    three.vtx.resize(3);
    three.hash_merkle_root = BlockMerkleRoot(three);
    Block dup = three;
    dup.vtx.push_back(dup.vtx[2]);
    EXPECT_EQ(BlockMerkleRoot(dup), three.hash_merkle_root);
    BlockValidationState d;
    EXPECT_FALSE(CheckBlockRules(dup, d, Main(), NO_POW));
    EXPECT_EQ(d.GetRejectReason(), "bad-txns-duplicate");
    EXPECT_EQ(d.GetResult(), BlockValidationResult::BLOCK_MUTATED);
}

TEST(CheckBlock, MutatedReasonsAreCoresBlockMutatedOnes)
{
    // Every reason a BLOCK_MUTATED state carries above, and none of the block's own faults.
    for (const char* r : {"bad-txnmrklroot", "bad-txns-duplicate", "bad-witness-nonce-size", "bad-witness-merkle-match", "unexpected-witness"}) {
        EXPECT_TRUE(IsMutatedReason(r)) << r;
    }
    for (const char* r : {"", "high-hash", "bad-blk-length", "bad-cb-missing", "bad-txns-inputs-missingorspent", "bad-txnmrklroot "}) {
        EXPECT_FALSE(IsMutatedReason(r)) << r;
    }
}

TEST(CheckBlock, SizeAndCoinbaseRules)
{
    Block empty = SpendingBlock();
    empty.vtx.clear();
    empty.hash_merkle_root = BlockMerkleRoot(empty);
    EXPECT_EQ(Reason(empty), "bad-blk-length");

    Block nocb = SpendingBlock();
    nocb.vtx.erase(nocb.vtx.begin());
    nocb.hash_merkle_root = BlockMerkleRoot(nocb);
    EXPECT_EQ(Reason(nocb), "bad-cb-missing");

    Block two = SpendingBlock();
    two.vtx.push_back(Edit(two.vtx[0], [](MutableTransaction& m) { m.vin[0].script_sig.push_back(0x01); }));
    two.hash_merkle_root = BlockMerkleRoot(two);
    EXPECT_EQ(Reason(two), "bad-cb-multiple");

    // Over 1,000,000 stripped bytes: bad-blk-length (before any transaction check).
    Block big = SpendingBlock();
    big.vtx[1] = Edit(big.vtx[1], [](MutableTransaction& m) { m.vout[0].script_pubkey = Script(std::vector<uint8_t>(1'000'000, 0x6a)); });
    big.hash_merkle_root = BlockMerkleRoot(big);
    EXPECT_EQ(Reason(big), "bad-blk-length");
}

TEST(CheckBlock, TransactionReasonsInOrder)
{
    EXPECT_EQ(ReasonAfter(1, [](MutableTransaction& m) { m.vin.clear(); }), "bad-txns-vin-empty");
    EXPECT_EQ(ReasonAfter(1, [](MutableTransaction& m) { m.vout.clear(); }), "bad-txns-vout-empty");
    EXPECT_EQ(ReasonAfter(1, [](MutableTransaction& m) { m.vout[0].value = -1; }), "bad-txns-vout-negative");
    EXPECT_EQ(ReasonAfter(1, [](MutableTransaction& m) { m.vout[0].value = MAX_MONEY + 1; }), "bad-txns-vout-toolarge");
    EXPECT_EQ(ReasonAfter(1, [](MutableTransaction& m) {
                  m.vout[0].value = MAX_MONEY;
                  m.vout.push_back(m.vout[0]);
              }),
              "bad-txns-txouttotal-toolarge");
    EXPECT_EQ(ReasonAfter(1, [](MutableTransaction& m) { m.vin.push_back(m.vin[0]); }), "bad-txns-inputs-duplicate");
    EXPECT_EQ(ReasonAfter(1, [](MutableTransaction& m) {
                  for (int i = 0; i < 40; ++i) {
                      TxIn in = m.vin[0];
                      in.prevout.n = 1000 + uint32_t(i);
                      m.vin.push_back(in);
                  }
                  m.vin.push_back(m.vin[17]);
              }),
              "bad-txns-inputs-duplicate");
    EXPECT_EQ(ReasonAfter(1, [](MutableTransaction& m) {
                  TxIn in;
                  m.vin.push_back(in); // null prevout in a non-coinbase
              }),
              "bad-txns-prevout-null");
    EXPECT_EQ(ReasonAfter(0, [](MutableTransaction& m) { m.vin[0].script_sig = Script(std::vector<uint8_t>{0x51}); }), "bad-cb-length");
    EXPECT_EQ(ReasonAfter(0, [](MutableTransaction& m) { m.vin[0].script_sig = Script(std::vector<uint8_t>(101, 0x51)); }), "bad-cb-length");
    EXPECT_EQ(ReasonAfter(0, [](MutableTransaction& m) { m.vin[0].script_sig = Script(std::vector<uint8_t>(100, 0x51)); }), "ok");
    // Negative value comes before duplicate inputs.
    EXPECT_EQ(ReasonAfter(1, [](MutableTransaction& m) {
                  m.vin.push_back(m.vin[0]);
                  m.vout[0].value = -5;
              }),
              "bad-txns-vout-negative");

    // The transaction's reason is reported with Core's debug message.
    Block b = SpendingBlock();
    b.vtx[1] = Edit(b.vtx[1], [](MutableTransaction& m) { m.vout.clear(); });
    b.hash_merkle_root = BlockMerkleRoot(b);
    BlockValidationState st;
    EXPECT_FALSE(CheckBlockRules(b, st, Main(), NO_POW));
    EXPECT_EQ(st.GetResult(), BlockValidationResult::BLOCK_CONSENSUS);
    EXPECT_EQ(st.GetDebugMessage(), "Transaction check failed (tx hash " + b.vtx[1].GetHash().ToHex() + ") ");
}

TEST(CheckTransaction, DuplicateInputsWithSharedHashPrefix)
{
    // Many inputs (the sorted path) whose txids share their first 8 bytes and index: a duplicate
    // must still be found wherever it sits (regression guard for a prefix-only sort key).
    MutableTransaction m;
    for (int i = 0; i < 40; ++i) {
        TxIn in;
        in.prevout.n = 7;
        in.prevout.hash.AsUint256().data()[31] = uint8_t(i);
        m.vin.push_back(in);
    }
    m.vout.resize(1);
    m.vout[0].value = 1;
    TxValidationState ok;
    EXPECT_TRUE(CheckTransaction(Transaction(m), ok));
    for (int at : {0, 20, 39}) {
        MutableTransaction d = m;
        d.vin.push_back(d.vin[std::size_t(at)]);
        std::swap(d.vin[1], d.vin.back());
        TxValidationState st;
        EXPECT_FALSE(CheckTransaction(Transaction(d), st));
        EXPECT_EQ(st.GetRejectReason(), "bad-txns-inputs-duplicate");
    }
}

namespace {
/// The inverse of MixDuplicateKey without the seed (what an attacker who knew the seed would use).
uint64_t UnmixDuplicateKey(uint64_t k) noexcept
{
    const auto inverse = [](uint64_t c) {
        uint64_t x = c; // Newton's iteration for c⁻¹ mod 2^64
        for (int i = 0; i < 6; ++i) x *= 2 - c * x;
        return x;
    };
    k ^= k >> 33;
    k *= inverse(0xc4ceb9fe1a85ec53ULL);
    k ^= k >> 33;
    k *= inverse(0xff51afd7ed558ccdULL);
    k ^= k >> 33;
    return k;
}
} // namespace

// 24,000 distinct inputs crafted so that every key lands in the same slot of the duplicate table
// (here with the seed known, which a peer does not have): linear probing alone would make ~288 M
// probes; the probe budget sends the check to a sort instead. Bounded by counting operations.
TEST(CheckTransaction, CollidingInputsTakeBoundedWork)
{
    constexpr std::size_t N = 24'000;
    const uint64_t seed = 0x0123456789abcdefULL;
    std::vector<TxIn> vin(N);
    for (std::size_t i = 0; i < N; ++i) {
        const uint64_t mixed = uint64_t(i + 1) << 20; // the low 20 bits (every slot bit) zero
        const uint64_t key = UnmixDuplicateKey(mixed) ^ seed;
        ASSERT_EQ(detail::MixDuplicateKey(key, seed), mixed);
        uint8_t* h = vin[i].prevout.hash.AsUint256().data();
        for (int b = 0; b < 8; ++b) h[b] = uint8_t(key >> (8 * b)); // GetUint64(0) is little-endian
        vin[i].prevout.n = 0;
        ASSERT_EQ(detail::DuplicateKey(vin[i].prevout), key);
    }
    const auto bound = [](std::size_t n) {
        std::size_t log2 = 0;
        while ((std::size_t(1) << log2) < n) ++log2;
        return detail::DUPLICATE_PROBES_PER_INPUT * n + 1 + 4 * n * log2 + n; // table, sort, scan
    };
    detail::DuplicateCheckWork work;
    EXPECT_FALSE(detail::HasDuplicateInputs(vin, seed, &work));
    EXPECT_TRUE(work.sorted);
    EXPECT_LE(work.probes + work.comparisons, bound(N)) << work.probes << " probes, " << work.comparisons << " comparisons";
    // A planted duplicate among them is still found, within the same bound.
    vin[N / 2].prevout = vin[N / 3].prevout;
    detail::DuplicateCheckWork dup;
    EXPECT_TRUE(detail::HasDuplicateInputs(vin, seed, &dup));
    EXPECT_LE(dup.probes + dup.comparisons, bound(N));
    // Honest (random) inputs stay in the table: about one and a half probes each, no sort.
    std::mt19937_64 rng(test::TestSeed());
    std::printf("seed %llu\n", (unsigned long long)test::TestSeed());
    for (TxIn& in : vin) {
        for (int b = 0; b < 32; ++b) in.prevout.hash.AsUint256().data()[b] = uint8_t(rng());
    }
    detail::DuplicateCheckWork honest;
    EXPECT_FALSE(detail::HasDuplicateInputs(vin, detail::DuplicateInputSeed(), &honest));
    EXPECT_FALSE(honest.sorted);
    EXPECT_LT(honest.probes, 3 * N);
}

TEST(CheckTransaction, Oversize)
{
    MutableTransaction m;
    m.vin.resize(1);
    m.vin[0].prevout.n = 0;
    m.vin[0].prevout.hash.AsUint256().data()[0] = 9;
    m.vout.resize(1);
    m.vout[0].value = 0;
    m.vout[0].script_pubkey = Script(std::vector<uint8_t>(1'000'000, 0x6a));
    TxValidationState st;
    EXPECT_FALSE(CheckTransaction(Transaction(m), st));
    EXPECT_EQ(st.GetRejectReason(), "bad-txns-oversize");
    m.vout[0].script_pubkey = Script(std::vector<uint8_t>(999'900, 0x6a));
    TxValidationState ok;
    EXPECT_TRUE(CheckTransaction(Transaction(m), ok));
}

TEST(CheckBlock, LegacySigops)
{
    // Sigops of everything else in the block, then fill up to exactly the limit and one over.
    Block base = SpendingBlock();
    base.vtx[1] = Edit(base.vtx[1], [](MutableTransaction& m) { m.vout[0].script_pubkey = Script(); });
    unsigned others = 0;
    for (const Transaction& tx : base.vtx) others += GetLegacySigOpCount(tx);
    const unsigned limit = unsigned(MAX_BLOCK_SIGOPS_COST / WITNESS_SCALE_FACTOR);
    auto with = [&](unsigned total) {
        return ReasonAfter(1, [&](MutableTransaction& m) {
            const unsigned n = total - others;
            std::vector<uint8_t> s(n / 20, 0xae); // OP_CHECKMULTISIG counts 20
            s.insert(s.end(), n % 20, 0xac);      // OP_CHECKSIG counts 1
            m.vout[0].script_pubkey = Script(s);
        });
    };
    EXPECT_EQ(with(limit), "ok");
    EXPECT_EQ(with(limit + 1), "bad-blk-sigops");
}

TEST(CheckedBlock, OnlyCheckBlockMakesOneAndFailureKeepsTheBlock)
{
    Block bad = SpendingBlock();
    bad.hash_merkle_root.SetNull();
    const auto bytes = EncodeBlock(bad);
    BlockValidationState st;
    auto none = CheckBlock(std::move(bad), st, Main(), NO_POW);
    EXPECT_FALSE(none);
    EXPECT_EQ(st.GetRejectReason(), "bad-txnmrklroot");
    EXPECT_EQ(EncodeBlock(bad), bytes); // not moved from on failure

    Block good = SpendingBlock();
    const BlockHash h = good.GetHash();
    BlockValidationState ok;
    auto checked = CheckBlock(std::move(good), ok, Main(), NO_POW);
    ASSERT_TRUE(checked);
    EXPECT_EQ((*checked)->GetHash(), h);
    EXPECT_FALSE(checked->options().check_pow);
    static_assert(!std::is_constructible_v<CheckedBlock, Block>);
    static_assert(!std::is_constructible_v<CheckedBlock, Block&&, CheckBlockOptions>);
    Block back = std::move(*checked).Release();
    EXPECT_EQ(back.GetHash(), h);
}

TEST(WitnessCommitment, MalleationRules)
{
    auto p = test::TestData("mainnet/blocks/block_481829.raw");
    auto q = test::TestData("mainnet/blocks/block_413567.raw");
    if (!p || !q) FAIL() << "tests/data is incomplete";
    Block seg = *DecodeBlock(test::ReadFile(*p));
    Block legacy = *DecodeBlock(test::ReadFile(*q));
    BlockValidationState st;
    ASSERT_NE(GetWitnessCommitmentIndex(seg), NO_WITNESS_COMMITMENT);
    EXPECT_TRUE(CheckWitnessMalleation(seg, true, st));
    EXPECT_TRUE(CheckWitnessMalleation(legacy, true, st));
    EXPECT_TRUE(CheckWitnessMalleation(legacy, false, st));

    BlockValidationState unexpected;
    EXPECT_FALSE(CheckWitnessMalleation(seg, false, unexpected));
    EXPECT_EQ(unexpected.GetRejectReason(), "unexpected-witness");

    Block nonce = seg;
    nonce.vtx[0] = Edit(nonce.vtx[0], [](MutableTransaction& m) { m.vin[0].witness.stack[0][3] ^= 1; });
    BlockValidationState a;
    EXPECT_FALSE(CheckWitnessMalleation(nonce, true, a));
    EXPECT_EQ(a.GetRejectReason(), "bad-witness-merkle-match");
    EXPECT_EQ(a.GetResult(), BlockValidationResult::BLOCK_MUTATED);

    Block size = seg;
    size.vtx[0] = Edit(size.vtx[0], [](MutableTransaction& m) { m.vin[0].witness.stack.push_back({1}); });
    BlockValidationState b;
    EXPECT_FALSE(CheckWitnessMalleation(size, true, b));
    EXPECT_EQ(b.GetRejectReason(), "bad-witness-nonce-size");

    // A witness item changed in another transaction changes its wtxid: mismatch. (481,829 has
    // witness data only in its coinbase; 866,342 has plenty.)
    auto r = test::TestData("mainnet/blocks/block_866342.raw");
    if (!r) FAIL() << "tests/data is incomplete";
    Block other = *DecodeBlock(test::ReadFile(*r));
    BlockValidationState before;
    EXPECT_TRUE(CheckWitnessMalleation(other, true, before));
    for (auto& tx : other.vtx) {
        if (&tx != &other.vtx[0] && tx.HasWitness()) {
            tx = Edit(tx, [](MutableTransaction& m) {
                for (auto& in : m.vin) {
                    if (!in.witness.IsNull()) {
                        in.witness.stack[0].push_back(0);
                        break;
                    }
                }
            });
            break;
        }
    }
    BlockValidationState c;
    EXPECT_FALSE(CheckWitnessMalleation(other, true, c));
    EXPECT_EQ(c.GetRejectReason(), "bad-witness-merkle-match");

    // ConnectBlock's form: the facts CheckBlock read give the same verdicts, segwit active or not.
    for (const Block* blk : {&seg, &legacy, &nonce, &size, &other}) {
        for (const bool expect : {true, false}) {
            BlockValidationState direct, checked_state, from_facts;
            CheckWitnessMalleation(*blk, expect, direct);
            auto checked = CheckBlock(Block(*blk), checked_state, Main(), NO_POW);
            ASSERT_TRUE(checked) << checked_state.ToString();
            CheckWitnessMalleation(checked->witness_facts(), expect, from_facts);
            EXPECT_EQ(from_facts.GetRejectReason(), direct.GetRejectReason()) << blk->GetHash().ToHex() << expect;
            EXPECT_EQ(from_facts.IsValid(), direct.IsValid());
        }
    }
}

TEST(Bip34, CoinbaseHeight)
{
    auto q = test::TestData("mainnet/blocks/block_413567.raw");
    if (!q) FAIL() << "tests/data is incomplete";
    Block b = *DecodeBlock(test::ReadFile(*q));
    BlockValidationState st;
    EXPECT_TRUE(CheckCoinbaseHeight(b, 413567, st));
    EXPECT_FALSE(CheckCoinbaseHeight(b, 413568, st));
    EXPECT_EQ(st.GetRejectReason(), "bad-cb-height");
    EXPECT_EQ(DecodeCoinbaseHeight(b.vtx[0].vin()[0].script_sig.span()), 413567);
}

} // namespace
} // namespace ibdkit

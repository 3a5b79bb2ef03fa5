// BIP 325's block solution (consensus/signet.h) inside CheckBlockRules: the real default-signet
// blocks of tests/data pass; a changed signature, another challenge, a missing or malformed
// solution or a coinbase without a witness commitment is refused with Core's bad-signet-blksig.
//
// A changed coinbase changes the block's merkle root, and so its header: a mutated block gets its
// merkle root recomputed and is mined again under parameters whose proof-of-work limit is
// regtest's (the solution signs neither bits nor nonce), so that it breaks the signet rule alone.
// Each mutation is paired with a control, resealed the same way without the change, that passes.
#include "test_primitives_data.h"

#include <ibdkit/chain/params.h>
#include <ibdkit/consensus/check.h>
#include <ibdkit/consensus/pow.h>
#include <ibdkit/primitives/script_ops.h>

#include "consensus/merkle.h"
#include "consensus/signet.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

namespace ibdkit {
namespace {

const ConsensusParams& Signet() { return GetChainParams(ChainType::SIGNET).consensus; }

/// Signet's rules with regtest's proof-of-work limit (and `challenge`, when given).
ConsensusParams EasySignet(std::vector<uint8_t> challenge = GetChainParams(ChainType::SIGNET).consensus.signet_challenge)
{
    ConsensusParams p = Signet();
    p.pow_limit = GetChainParams(ChainType::REGTEST).consensus.pow_limit;
    p.signet_challenge = std::move(challenge);
    return p;
}

const std::vector<uint8_t> OP_TRUE_CHALLENGE{OP_1};

std::vector<Block> SignetBlocks()
{
    std::vector<Block> blocks;
    auto path = test::TestData("signet/blk00000.dat");
    if (!path) return blocks;
    for (const auto& rec : test::ReadBlockFile(test::ReadFile(*path))) {
        auto b = DecodeBlock(rec);
        if (b) blocks.push_back(std::move(*b));
    }
    return blocks;
}

/// The coinbase output holding the witness commitment, and where its signet push's data starts
/// and how long it is (header included).
struct SolutionSpot {
    std::size_t output{0};
    std::size_t data_at{0};
    std::size_t data_size{0};
};

std::optional<SolutionSpot> FindSolution(const Block& b)
{
    const int out = GetWitnessCommitmentIndex(b);
    if (out == NO_WITNESS_COMMITMENT) return std::nullopt;
    const Script& s = b.vtx[0].vout()[std::size_t(out)].script_pubkey;
    const uint8_t* pc = s.data();
    uint8_t op = 0;
    std::span<const uint8_t> data;
    while (GetScriptOp(pc, s.end(), op, &data)) {
        if (data.size() > SIGNET_HEADER.size() && std::equal(SIGNET_HEADER.begin(), SIGNET_HEADER.end(), data.begin())) {
            return SolutionSpot{std::size_t(out), std::size_t(data.data() - s.data()), data.size()};
        }
    }
    return std::nullopt;
}

/// `b` with coinbase output `out`'s script replaced and its merkle root recomputed.
Block WithCommitmentScript(const Block& b, std::size_t out, Script script)
{
    MutableTransaction cb = b.vtx[0].ToMutable();
    cb.vout[out].script_pubkey = std::move(script);
    Block copy = b;
    copy.vtx[0] = Transaction(std::move(cb));
    copy.hash_merkle_root = BlockMerkleRoot(copy);
    return copy;
}

/// Mines `b` again under EasySignet's limit (a couple of tries on average).
Block Reseal(Block b)
{
    const ConsensusParams easy = EasySignet();
    b.bits = 0x207fffff;
    for (b.nonce = 0; !CheckProofOfWork(b.GetHash().ToUint256(), b.bits, easy); ++b.nonce) {
    }
    return b;
}

std::string Verdict(const Block& b, const ConsensusParams& p, CheckBlockOptions opts = {})
{
    BlockValidationState st;
    if (CheckBlockRules(b, st, p, opts)) return "valid";
    return st.GetRejectReason();
}

TEST(Signet, RealBlocksCarryAValidSolution)
{
    const auto blocks = SignetBlocks();
    ASSERT_EQ(blocks.size(), 71u) << "tests/data/signet/blk00000.dat is incomplete";
    EXPECT_EQ(blocks[0].GetHash(), Signet().hash_genesis_block);
    EXPECT_FALSE(MakeSignetTxs(blocks[0], Signet().signet_challenge)) << "the genesis block has no witness commitment";
    for (std::size_t h = 0; h < blocks.size(); ++h) {
        EXPECT_TRUE(CheckSignetBlockSolution(blocks[h], Signet())) << "height " << h;
        EXPECT_EQ(Verdict(blocks[h], Signet()), "valid") << "height " << h;
        if (h == 0) continue;
        ASSERT_TRUE(FindSolution(blocks[h])) << "height " << h;
        const auto txs = MakeSignetTxs(blocks[h], Signet().signet_challenge);
        ASSERT_TRUE(txs) << "height " << h;
        // to_spend's scriptSig: OP_0, then a push of version, previous hash, merkle root and time.
        const Script& sig = txs->to_spend.vin()[0].script_sig;
        ASSERT_EQ(sig.size(), 2u + 72u);
        EXPECT_EQ(sig[0], OP_0);
        EXPECT_EQ(sig[1], 72);
        EXPECT_TRUE(std::equal(sig.begin() + 6, sig.begin() + 38, blocks[h].hash_prev_block.ToUint256().begin()));
        EXPECT_EQ(txs->to_sign.vin()[0].prevout, (OutPoint{txs->to_spend.GetHash(), 0}));
        EXPECT_FALSE(txs->to_sign.vin()[0].script_sig.empty()) << "the default signet's solution is a scriptSig";
        BlockValidationState st;
        EXPECT_TRUE(CheckBlock(Block(blocks[h]), st, Signet()).has_value()) << st.ToString();
    }
}

TEST(Signet, AChangedSignatureIsRefusedAndOnlyForIt)
{
    const auto blocks = SignetBlocks();
    ASSERT_EQ(blocks.size(), 71u);
    const ConsensusParams easy = EasySignet();
    for (std::size_t h = 1; h < blocks.size(); ++h) {
        const auto spot = FindSolution(blocks[h]);
        ASSERT_TRUE(spot);
        const Script& original = blocks[h].vtx[0].vout()[spot->output].script_pubkey;
        // The solution: a 73-byte scriptSig, OP_0 and a push of a DER signature (0x30 ...).
        const std::size_t der = spot->data_at + SIGNET_HEADER.size() + 3;
        ASSERT_EQ(original[der - 2], OP_0);
        ASSERT_EQ(original[der], 0x30);

        const Block control = Reseal(WithCommitmentScript(blocks[h], spot->output, original));
        EXPECT_EQ(Verdict(control, easy), "valid") << "height " << h << ": the reseal alone breaks nothing";

        Script flipped = original;
        flipped.data()[der + 10] ^= 0x01; // a byte of R
        const Block bad = Reseal(WithCommitmentScript(blocks[h], spot->output, flipped));
        BlockValidationState st;
        EXPECT_FALSE(CheckBlockRules(bad, st, easy));
        EXPECT_EQ(st.GetRejectReason(), "bad-signet-blksig") << "height " << h;
        EXPECT_EQ(st.GetDebugMessage(), "signet block signature validation failure");
        EXPECT_EQ(st.GetResult(), BlockValidationResult::BLOCK_CONSENSUS);
        // Core checks the solution only with the proof of work (fCheckPOW).
        EXPECT_EQ(Verdict(bad, easy, {.check_pow = false, .check_merkle_root = true}), "valid");
        // Not a signet: no solution is looked at.
        ConsensusParams not_signet = easy;
        not_signet.signet_blocks = false;
        EXPECT_EQ(Verdict(bad, not_signet), "valid");
    }
}

TEST(Signet, TheSolutionIsCheckedBeforeTheMerkleRoot)
{
    // The real header (real proof of work) over a coinbase whose signature changed: the merkle
    // root no longer matches, but Core refuses the signature first.
    const auto blocks = SignetBlocks();
    ASSERT_EQ(blocks.size(), 71u);
    const auto spot = FindSolution(blocks[40]);
    ASSERT_TRUE(spot);
    Block bad = WithCommitmentScript(blocks[40], spot->output, [&] {
        Script s = blocks[40].vtx[0].vout()[spot->output].script_pubkey;
        s.data()[spot->data_at + SIGNET_HEADER.size() + 13] ^= 0x01;
        return s;
    }());
    bad.hash_merkle_root = blocks[40].hash_merkle_root;
    EXPECT_EQ(bad.GetHash(), blocks[40].GetHash());
    EXPECT_EQ(Verdict(bad, Signet()), "bad-signet-blksig");
    EXPECT_EQ(Verdict(bad, Signet(), {.check_pow = false, .check_merkle_root = true}), "bad-txnmrklroot");
}

TEST(Signet, AnotherChallengeRefusesTheChain)
{
    const auto blocks = SignetBlocks();
    ASSERT_EQ(blocks.size(), 71u);
    // The default challenge is a 1-of-2 multisig: change a byte of its first key.
    std::vector<uint8_t> other = Signet().signet_challenge;
    ASSERT_EQ(other[1], 0x21);
    other[10] ^= 0x01;
    ConsensusParams p = Signet();
    p.signet_challenge = other;
    EXPECT_EQ(Verdict(blocks[0], p), "valid") << "the genesis block is exempt";
    for (std::size_t h = 1; h < blocks.size(); ++h) EXPECT_EQ(Verdict(blocks[h], p), "bad-signet-blksig") << "height " << h;
    // OP_TRUE accepts any solution that decodes.
    p.signet_challenge = OP_TRUE_CHALLENGE;
    for (std::size_t h = 0; h < blocks.size(); ++h) EXPECT_EQ(Verdict(blocks[h], p), "valid") << "height " << h;
}

/// Block 1 with its commitment output's script replaced by the commitment itself followed by
/// `tail`, resealed.
Block WithTail(const Block& b, std::span<const uint8_t> tail)
{
    const int out = GetWitnessCommitmentIndex(b);
    const Script& s = b.vtx[0].vout()[std::size_t(out)].script_pubkey;
    Script script(s.data(), MINIMUM_WITNESS_COMMITMENT);
    script.append(tail);
    return Reseal(WithCommitmentScript(b, std::size_t(out), std::move(script)));
}

TEST(Signet, MissingAndMalformedSolutions)
{
    const auto blocks = SignetBlocks();
    ASSERT_EQ(blocks.size(), 71u);
    const Block& b = blocks[1];
    const ConsensusParams easy = EasySignet();
    const ConsensusParams trivial = EasySignet(OP_TRUE_CHALLENGE);
    const uint8_t H0 = SIGNET_HEADER[0], H1 = SIGNET_HEADER[1], H2 = SIGNET_HEADER[2], H3 = SIGNET_HEADER[3];

    // No solution at all, or a push of the header alone (not a solution): an empty one, which
    // only a trivial challenge accepts.
    for (const std::vector<uint8_t>& tail : {std::vector<uint8_t>{}, std::vector<uint8_t>{4, H0, H1, H2, H3}}) {
        const Block none = WithTail(b, tail);
        EXPECT_EQ(Verdict(none, easy), "bad-signet-blksig");
        EXPECT_EQ(Verdict(none, trivial), "valid");
    }
    // An empty scriptSig and an empty witness, spelled out: the same.
    const Block empty = WithTail(b, std::vector<uint8_t>{6, H0, H1, H2, H3, 0, 0});
    EXPECT_EQ(Verdict(empty, easy), "bad-signet-blksig");
    EXPECT_EQ(Verdict(empty, trivial), "valid");
    // Trailing bytes, a missing witness count, a scriptSig longer than the push: refused even by
    // a trivial challenge (they do not decode).
    for (const std::vector<uint8_t>& tail : {std::vector<uint8_t>{7, H0, H1, H2, H3, 0, 0, 0},
                                             std::vector<uint8_t>{5, H0, H1, H2, H3, 0},
                                             std::vector<uint8_t>{7, H0, H1, H2, H3, 5, 1, 2}}) {
        EXPECT_EQ(Verdict(WithTail(b, tail), trivial), "bad-signet-blksig") << test::ToHex(tail);
    }
    // Only the first signet push counts: a broken second one is a push like any other.
    const Block two = WithTail(b, std::vector<uint8_t>{6, H0, H1, H2, H3, 0, 0, 5, H0, H1, H2, H3, 7});
    EXPECT_EQ(Verdict(two, trivial), "valid");

    // A coinbase without a witness commitment: refused whatever the challenge.
    MutableTransaction cb = b.vtx[0].ToMutable();
    cb.vout.erase(cb.vout.begin() + GetWitnessCommitmentIndex(b));
    for (TxIn& in : cb.vin) in.witness.stack.clear();
    Block bare = b;
    bare.vtx[0] = Transaction(std::move(cb));
    bare.hash_merkle_root = BlockMerkleRoot(bare);
    bare = Reseal(std::move(bare));
    EXPECT_EQ(Verdict(bare, trivial), "bad-signet-blksig");
    EXPECT_EQ(Verdict(bare, trivial, {.check_pow = false, .check_merkle_root = true}), "valid");
}

TEST(Signet, TheSignedMerkleRootReencodesTheCommitmentAsCore)
{
    // Core rewrites the commitment script op by op when it cuts the solution out: a PUSHDATA1 of
    // two bytes becomes a direct push. The signed merkle root is over that rewritten coinbase.
    const auto blocks = SignetBlocks();
    ASSERT_EQ(blocks.size(), 71u);
    const Block& b = blocks[1];
    const uint8_t H0 = SIGNET_HEADER[0], H1 = SIGNET_HEADER[1], H2 = SIGNET_HEADER[2], H3 = SIGNET_HEADER[3];
    const Block block = WithTail(b, std::vector<uint8_t>{6, H0, H1, H2, H3, 0, 0, OP_PUSHDATA1, 2, 0xaa, 0xbb});
    const auto txs = MakeSignetTxs(block, OP_TRUE_CHALLENGE);
    ASSERT_TRUE(txs);

    const int out = GetWitnessCommitmentIndex(block);
    const Script& s = block.vtx[0].vout()[std::size_t(out)].script_pubkey;
    Script rewritten(s.data(), MINIMUM_WITNESS_COMMITMENT);
    rewritten.append(std::vector<uint8_t>{4, H0, H1, H2, H3, 2, 0xaa, 0xbb});
    MutableTransaction cb = block.vtx[0].ToMutable();
    cb.vout[std::size_t(out)].script_pubkey = rewritten;
    const uint256 expect = cb.GetHash().ToUint256(); // a block of one transaction: its txid is the root
    const Script& sig = txs->to_spend.vin()[0].script_sig;
    EXPECT_TRUE(std::equal(sig.begin() + 38, sig.begin() + 70, expect.begin()));
}

} // namespace
} // namespace ibdkit

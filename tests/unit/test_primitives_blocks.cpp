// Every real block under tests/data: round trips, ids, merkle roots, owned vs view.
#include "test_primitives_data.h"

#include <ibdkit/chain/params.h>
#include <ibdkit/consensus/check.h>
#include <ibdkit/primitives/block.h>
#include <ibdkit/primitives/block_view.h>

#include "consensus/merkle.h"

#include <gtest/gtest.h>

#include <map>
#include <random>

namespace ibdkit {
namespace {

using test::AllTestBlocks;

TEST(SharedBlocks, RoundTripIdsMerkleAndViewAgree)
{
    const auto& blocks = AllTestBlocks();
    if (blocks.empty()) FAIL() << "tests/data is incomplete";
    std::size_t witness_blocks = 0, txs = 0;
    std::map<std::string, BlockHash> last_hash; // per file: blocks link to their predecessor
    for (const auto& rb : blocks) {
        SCOPED_TRACE(rb.origin);
        auto owned = DecodeBlock(rb.bytes);
        ASSERT_TRUE(owned) << owned.error().message;
        auto view = BlockView::Parse(rb.bytes);
        ASSERT_TRUE(view) << view.error().message;

        // Encoding reproduces the bytes exactly.
        EXPECT_EQ(EncodeBlock(*owned), rb.bytes);
        EXPECT_EQ(GetBlockTotalSize(*owned), rb.bytes.size());
        EXPECT_EQ(EncodeBlock(*owned, TX_NO_WITNESS).size(), GetBlockStrippedSize(*owned));
        EXPECT_EQ(GetBlockWeight(*owned), GetBlockStrippedSize(*owned) * 3 + rb.bytes.size());

        // Header and hash.
        EXPECT_EQ(view->ComputeHash(), owned->GetHash());
        EXPECT_EQ(view->header(), owned->header());
        EXPECT_TRUE(std::equal(rb.bytes.begin(), rb.bytes.begin() + 80, HeaderToBytes(owned->header()).begin()));

        // Every transaction: the view's ids, sizes and contents match the owned model.
        ASSERT_EQ(view->tx_count(), owned->vtx.size());
        std::size_t i = 0;
        for (TxView tv : view->txs()) {
            const Transaction& tx = owned->vtx[i];
            ASSERT_EQ(tv.ComputeTxid(), tx.GetHash()) << i;
            ASSERT_EQ(tv.ComputeWtxid(), tx.GetWitnessHash()) << i;
            ASSERT_EQ(tv.GetTotalSize(), tx.GetTotalSize());
            ASSERT_EQ(tv.GetStrippedSize(), tx.GetStrippedSize());
            ASSERT_EQ(tv.HasWitness(), tx.HasWitness());
            ASSERT_EQ(tv.IsCoinBase(), tx.IsCoinBase());
            ASSERT_EQ(tv.version(), tx.version());
            ASSERT_EQ(tv.lock_time(), tx.lock_time());
            ASSERT_EQ(tv.inputs().size(), tx.vin().size());
            ASSERT_EQ(tv.outputs().size(), tx.vout().size());
            std::size_t k = 0;
            for (InputView in : tv.inputs()) {
                const TxIn& o = tx.vin()[k++];
                ASSERT_EQ(in.prevout(), o.prevout);
                ASSERT_TRUE(std::equal(in.script_sig.begin(), in.script_sig.end(), o.script_sig.begin(), o.script_sig.end()));
                ASSERT_EQ(in.sequence, o.sequence);
                ASSERT_EQ(in.witness.ToOwned(), o.witness);
            }
            k = 0;
            for (OutputView out : tv.outputs()) {
                const TxOut& o = tx.vout()[k++];
                ASSERT_EQ(out.value, o.value);
                ASSERT_TRUE(std::equal(out.script_pubkey.begin(), out.script_pubkey.end(), o.script_pubkey.begin(), o.script_pubkey.end()));
            }
            // Re-encoding one transaction reproduces its bytes in the block.
            ASSERT_EQ(EncodeTransaction(tx), std::vector<uint8_t>(tv.bytes().begin(), tv.bytes().end()));
            ++i;
        }
        txs += i;
        EXPECT_TRUE(view->ToOwned().vtx == owned->vtx);
        // The batch (multi-buffer) ids of the view equal the owned model's.
        const BlockTxIds ids = view->ComputeTxIds();
        ASSERT_EQ(ids.txids.size(), owned->vtx.size());
        ASSERT_EQ(ids.wtxids.size(), owned->vtx.size());
        for (std::size_t t = 0; t < owned->vtx.size(); ++t) {
            ASSERT_EQ(ids.txids[t], owned->vtx[t].GetHash()) << t;
            ASSERT_EQ(ids.wtxids[t], owned->vtx[t].GetWitnessHash()) << t;
        }

        // Merkle root, no mutation; the view computes the same.
        bool mutated = true;
        EXPECT_EQ(BlockMerkleRoot(*owned, &mutated), owned->hash_merkle_root);
        EXPECT_FALSE(mutated);
        EXPECT_EQ(BlockMerkleRoot(*view), owned->hash_merkle_root);
        EXPECT_EQ(BlockWitnessMerkleRoot(*view), BlockWitnessMerkleRoot(*owned));

        // Witness commitment where present; no witness data where absent.
        BlockValidationState ws;
        const bool has_commitment = GetWitnessCommitmentIndex(*owned) != NO_WITNESS_COMMITMENT;
        EXPECT_TRUE(CheckWitnessMalleation(*owned, true, ws)) << ws.ToString();
        if (has_commitment) ++witness_blocks;
        EXPECT_TRUE(CheckBlockWeight(*owned, ws));

        // Context-free checks pass (signet: the block solution too, BIP 325).
        BlockValidationState st;
        EXPECT_TRUE(CheckBlockRules(*owned, st, GetChainParams(rb.chain).consensus)) << st.ToString();

        // Block files hold a chain in order here: each block links to the previous one.
        const std::string file = rb.origin.substr(0, rb.origin.find('#'));
        if (rb.origin.find('#') != std::string::npos) {
            auto it = last_hash.find(file);
            if (it != last_hash.end()) {
                EXPECT_EQ(owned->hash_prev_block, it->second);
            }
            last_hash[file] = owned->GetHash();
        }
    }
    EXPECT_GE(witness_blocks, 2u); // 481829, 866342 (and signet/regtest blocks with commitments)
    EXPECT_GT(txs, 6000u);
}

// Decoded transactions share storage that holds their own copy of the bytes: they outlive the
// input buffer and the block, copies are independent, and storage is recycled only when no
// transaction uses it any more (run under ASan in CI, where a dangling script would be caught).
TEST(SharedBlocks, DecodedTransactionsOwnTheirBytes)
{
    const auto& blocks = AllTestBlocks();
    if (blocks.size() < 3) FAIL() << "tests/data is incomplete";
    const std::vector<uint8_t> original = blocks[2].bytes; // 866,342: witnesses too
    std::vector<uint8_t> input = original;
    auto block = DecodeBlock(input);
    ASSERT_TRUE(block);
    std::fill(input.begin(), input.end(), 0xAA); // the decoded block must not read the input
    input.clear();
    input.shrink_to_fit();
    EXPECT_EQ(EncodeBlock(*block), original);

    // A transaction copied out of the block survives it, and other blocks decoded into
    // recycled storage meanwhile.
    const Transaction kept = block->vtx[1];
    const std::vector<uint8_t> kept_bytes = EncodeTransaction(kept);
    const Script first_sig = kept.vin()[0].script_sig; // an owning copy
    EXPECT_FALSE(first_sig.is_borrowed());
    EXPECT_TRUE(kept.vin()[0].script_sig.is_borrowed());
    block.value().vtx.clear();
    for (int round = 0; round < 4; ++round) {
        for (const auto& rb : blocks) {
            auto other = DecodeBlock(rb.bytes);
            ASSERT_TRUE(other);
        }
    }
    EXPECT_EQ(EncodeTransaction(kept), kept_bytes);
    EXPECT_EQ(first_sig, kept.vin()[0].script_sig);

    // Copy on write: editing a mutable copy leaves the decoded transaction as it was.
    MutableTransaction m = kept.ToMutable();
    m.vin[0].script_sig.push_back(0x51);
    m.vout[0].script_pubkey.clear();
    EXPECT_EQ(EncodeTransaction(kept), kept_bytes);
    EXPECT_NE(Transaction(m).GetHash(), kept.GetHash());
}

TEST(SharedBlocks, KnownHashes)
{
    const std::pair<const char*, const char*> known[] = {
        {"mainnet/blocks/block_413567.raw", "0000000000000000025aff8be8a55df8f89c77296db6198f272d6577325d4069"},
        {"mainnet/blocks/block_481829.raw", "000000000000000000917cba69f69b758fe396c8e30ae97bbcf08c4eb975e726"},
        {"mainnet/blocks/block_866342.raw", "000000000000000000014ce9ba7c6760053c3c82ce6ab43d60afb101d3c8f1f1"},
    };
    const std::pair<const char*, std::size_t> counts[] = {
        {"mainnet/blocks/block_413567.raw", 1557}, {"mainnet/blocks/block_481829.raw", 2020}, {"mainnet/blocks/block_866342.raw", 4864}};
    for (std::size_t i = 0; i < 3; ++i) {
        auto p = test::TestData(known[i].first);
        if (!p) FAIL() << "tests/data is incomplete";
        const auto bytes = test::ReadFile(*p);
        auto b = DecodeBlock(bytes);
        ASSERT_TRUE(b);
        EXPECT_EQ(b->GetHash().ToHex(), known[i].second);
        EXPECT_EQ(b->vtx.size(), counts[i].second);
    }
    // The first block of the mainnet block file is the genesis block.
    if (auto p = test::TestData("mainnet/blk_0-599/blk00000.dat")) {
        auto recs = test::ReadBlockFile(test::ReadFile(*p));
        ASSERT_FALSE(recs.empty());
        auto g = DecodeBlock(recs[0]);
        ASSERT_TRUE(g);
        EXPECT_EQ(g->GetHash(), GetChainParams(ChainType::MAIN).consensus.hash_genesis_block);
        EXPECT_EQ(EncodeBlock(GetChainParams(ChainType::MAIN).genesis), recs[0]);
    }
}

/// Values of the "value" fields of the spent-outputs file, in order (a minimal reader for this
/// file's fixed shape).
std::vector<int64_t> SpentValues(const std::string& json)
{
    std::vector<int64_t> out;
    const std::string key = "\"value\":";
    for (std::size_t pos = json.find(key); pos != std::string::npos; pos = json.find(key, pos + 1)) {
        std::size_t q = pos + key.size();
        while (json[q] == ' ') ++q;
        out.push_back(std::stoll(json.substr(q, 20)));
    }
    return out;
}

TEST(SharedBlocks, Block866342FeesBalance)
{
    auto pb = test::TestData("mainnet/blocks/block_866342.raw");
    auto pj = test::TestData("mainnet/blocks/block_866342.spent_utxos.json");
    if (!pb || !pj) FAIL() << "tests/data is incomplete";
    auto block = DecodeBlock(test::ReadFile(*pb));
    ASSERT_TRUE(block);
    const auto raw = test::ReadFile(*pj);
    const auto spent = SpentValues(std::string(raw.begin(), raw.end()));
    std::size_t inputs = 0;
    Amount in_total = 0, out_total = 0;
    for (std::size_t i = 1; i < block->vtx.size(); ++i) {
        inputs += block->vtx[i].vin().size();
        out_total += block->vtx[i].GetValueOut();
    }
    ASSERT_EQ(spent.size(), inputs);
    EXPECT_EQ(inputs, 7972u);
    for (int64_t v : spent) in_total += v;
    const Amount fees = in_total - out_total;
    EXPECT_GT(fees, 0);
    EXPECT_EQ(fees + GetBlockSubsidy(866342, GetChainParams(ChainType::MAIN).consensus), block->vtx[0].GetValueOut());
}

TEST(SharedBlocks, MalformedBlocksAgree)
{
    const auto& blocks = AllTestBlocks();
    if (blocks.empty()) FAIL() << "tests/data is incomplete";
    const uint64_t seed = test::TestSeed();
    SCOPED_TRACE("IBDKIT_TEST_SEED=" + std::to_string(seed));
    std::mt19937_64 rng(seed);
    std::size_t checked = 0;
    for (const auto& rb : blocks) {
        if (rb.bytes.size() > 20000) continue; // the small blocks from the block files
        // Truncation at every offset of the small ones (they are a few hundred bytes).
        if (rb.bytes.size() < 1200) {
            for (std::size_t n = 0; n < rb.bytes.size(); ++n) {
                const std::span<const uint8_t> cut(rb.bytes.data(), n);
                auto o = DecodeBlock(cut);
                auto v = BlockView::Parse(cut);
                ASSERT_FALSE(o);
                ASSERT_FALSE(v);
                ASSERT_EQ(o.error().code, v.error().code) << rb.origin << " cut " << n;
            }
        }
        // Random byte flips in the transaction area.
        for (int k = 0; k < 30; ++k) {
            auto b = rb.bytes;
            const std::size_t at = 80 + rng() % (b.size() - 80);
            b[at] = uint8_t(rng());
            if (rng() % 3 == 0) b[80 + rng() % (b.size() - 80)] = uint8_t(rng());
            auto o = DecodeBlock(b);
            auto v = BlockView::Parse(b);
            ASSERT_EQ(o.ok(), v.ok()) << rb.origin;
            if (!o) {
                ASSERT_EQ(o.error().code, v.error().code) << rb.origin;
            } else {
                ASSERT_EQ(EncodeBlock(*o), b);
                ASSERT_EQ(BlockMerkleRoot(*v), BlockMerkleRoot(*o));
            }
            ++checked;
        }
    }
    EXPECT_GT(checked, 1000u);
}

} // namespace
} // namespace ibdkit

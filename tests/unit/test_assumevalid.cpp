// The assumevalid rule (consensus/assumevalid.h): one test per condition of Core's ConnectBlock,
// with Core's reason string, on synthetic header chains at mainnet's difficulty 1 (one block's
// proof is 600 seconds of equivalent time), and the networks' defaults.
#include <ibdkit/chain/params.h>
#include <ibdkit/consensus/header_chain.h>

#include "consensus/assumevalid.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <vector>

namespace ibdkit {
namespace {

constexpr uint32_t DIFF1_BITS = 0x1d00ffff;
constexpr int TWO_WEEKS_OF_BLOCKS = 2016; // at 600 s a block

BlockHash FakeHash(int height, uint8_t branch = 0)
{
    uint256 h;
    h.data()[0] = uint8_t(height);
    h.data()[1] = uint8_t(height >> 8);
    h.data()[2] = uint8_t(height >> 16);
    h.data()[3] = branch;
    h.data()[31] = 1;
    return BlockHash(h);
}

// A chain of `n` headers from mainnet's genesis (difficulty 1) at difficulty 1; `branch` changes
// the hashes from `fork_above` + 1 on.
struct FakeChain {
    HeaderChain chain{GetChainParams(ChainType::MAIN)};
    std::span<const BlockHash> hashes;

    FakeChain(int n, uint8_t branch = 0, int fork_above = -1)
    {
        for (int h = 1; h < n; ++h) chain.AppendKnown(FakeHash(h, h > fork_above ? branch : 0), HeaderInfo{0, DIFF1_BITS});
        hashes = chain.Hashes();
    }
    FakeChain(const FakeChain&) = delete;
    FakeChain& operator=(const FakeChain&) = delete;
    HeaderChainView View() const { return HeaderChainView{0, chain.Hashes(), chain.ChainWork()}; }
    /// The chain up to `height`, as the assumevalid block's ancestors.
    HeaderChainView Upto(int height) const { return HeaderChainView{0, hashes.first(std::size_t(height + 1)), {}}; }
};

// Mainnet's rules with a minimum chain work a few thousand difficulty-1 blocks can meet.
ConsensusParams Params(int minimum_blocks = 1)
{
    ConsensusParams p = GetChainParams(ChainType::MAIN).consensus;
    arith_uint256 w = GetBlockProof(DIFF1_BITS);
    w *= uint32_t(minimum_blocks);
    p.minimum_chain_work = ArithToUint256(w);
    return p;
}

std::string Reason(const AssumeValidChain& av, const FakeChain& best, int height, const ConsensusParams& p)
{
    auto r = ScriptCheckReason(av, best.View(), height, best.chain.Hash(height), p);
    return r ? std::string(*r) : "skip";
}

TEST(AssumeValid, SkipsABlockBuriedUnderTheAssumeValidBlockAndTwoWeeksOfWork)
{
    const FakeChain best(5000);
    const AssumeValidChain av{best.hashes[2500], best.Upto(2500)};
    EXPECT_EQ(Reason(av, best, 1, Params()), "skip");
    EXPECT_EQ(Reason(av, best, 1000, Params()), "skip");
    EXPECT_EQ(Reason(av, best, 2500, Params()), "skip"); // the assumevalid block itself
}

TEST(AssumeValid, ZeroVerifiesEverything)
{
    const FakeChain best(5000);
    EXPECT_EQ(Reason(AssumeValidChain{BlockHash{}, best.Upto(4000)}, best, 10, Params()), "assumevalid=0 (always verify)");
}

TEST(AssumeValid, AHashNotInTheHeadersVerifies)
{
    const FakeChain best(5000);
    EXPECT_EQ(Reason(AssumeValidChain{FakeHash(7, 9), std::nullopt}, best, 10, Params()), "assumevalid hash not in headers");
}

TEST(AssumeValid, ABlockAboveTheAssumeValidBlockVerifies)
{
    const FakeChain best(5000);
    const AssumeValidChain av{best.hashes[1000], best.Upto(1000)};
    EXPECT_EQ(Reason(av, best, 1000, Params()), "skip");
    EXPECT_EQ(Reason(av, best, 1001, Params()), "block height above assumevalid height");
}

TEST(AssumeValid, AnAssumeValidBlockOnAnotherBranchVerifiesTheBlocksAboveTheFork)
{
    const FakeChain best(5000);
    const FakeChain side(3000, /*branch=*/7, /*fork_above=*/1500);
    const AssumeValidChain av{side.hashes[2999], side.Upto(2999)};
    EXPECT_EQ(Reason(av, best, 1500, Params()), "skip");
    EXPECT_EQ(Reason(av, best, 1501, Params()), "block not in assumevalid chain");
}

TEST(AssumeValid, ABlockOffTheBestHeaderChainVerifies)
{
    // The block is the assumevalid block's ancestor, but the best header chain went another way.
    const FakeChain best(5000);
    const FakeChain side(3000, /*branch=*/7, /*fork_above=*/1500);
    const AssumeValidChain av{side.hashes[2999], side.Upto(2999)};
    auto r = ScriptCheckReason(av, best.View(), 2000, side.hashes[2000], Params());
    ASSERT_TRUE(r);
    EXPECT_EQ(*r, "block not in best header chain");
}

TEST(AssumeValid, ABestHeaderBelowTheMinimumChainWorkVerifies)
{
    const FakeChain best(5000);
    const AssumeValidChain av{best.hashes[4000], best.Upto(4000)};
    EXPECT_EQ(Reason(av, best, 10, Params(5000)), "skip"); // exactly the minimum
    EXPECT_EQ(Reason(av, best, 10, Params(5001)), "best header chainwork below minimumchainwork");
}

TEST(AssumeValid, ABlockWithinTwoWeeksOfWorkOfTheBestHeaderVerifies)
{
    const FakeChain best(5000);
    const AssumeValidChain av{best.hashes[4999], best.Upto(4999)};
    const int tip = 4999;
    // Exactly two weeks of work above the block is not more than two weeks: verified.
    EXPECT_EQ(Reason(av, best, tip - TWO_WEEKS_OF_BLOCKS, Params()), "block too recent relative to best header");
    EXPECT_EQ(Reason(av, best, tip - TWO_WEEKS_OF_BLOCKS - 1, Params()), "skip");
    EXPECT_EQ(Reason(av, best, tip, Params()), "block too recent relative to best header");
}

TEST(AssumeValid, TheConditionsInCoreOrder)
{
    // A block that fails every later condition reports the first: not in the assumevalid chain
    // before below the minimum work before too recent.
    const FakeChain best(100);
    const AssumeValidChain av{best.hashes[50], best.Upto(50)};
    EXPECT_EQ(Reason(av, best, 60, Params(1000)), "block height above assumevalid height");
    EXPECT_EQ(Reason(av, best, 40, Params(1000)), "best header chainwork below minimumchainwork");
    EXPECT_EQ(Reason(av, best, 40, Params()), "block too recent relative to best header");
}

TEST(AssumeValid, ProofEquivalentTime)
{
    const ConsensusParams& p = GetChainParams(ChainType::MAIN).consensus;
    const arith_uint256 one = GetBlockProof(DIFF1_BITS);
    arith_uint256 ten = one;
    ten *= 10u;
    EXPECT_EQ(GetBlockProofEquivalentTime(ten, one, one, p), 9 * 600);
    EXPECT_EQ(GetBlockProofEquivalentTime(one, ten, one, p), -9 * 600);
    EXPECT_EQ(GetBlockProofEquivalentTime(one, one, one, p), 0);
    // Work at the pow limit's difficulty measured against a tip of minimal proof saturates.
    EXPECT_EQ(GetBlockProofEquivalentTime(arith_uint256(1) << 200, arith_uint256(0), arith_uint256(1), p),
              std::numeric_limits<int64_t>::max());
    EXPECT_EQ(GetBlockProofEquivalentTime(arith_uint256(0), arith_uint256(1) << 200, arith_uint256(1), p),
              -std::numeric_limits<int64_t>::max());
}

TEST(AssumeValid, TheNetworksDefaultsAreCores)
{
    EXPECT_EQ(GetChainParams(ChainType::MAIN).consensus.default_assume_valid.ToHex(),
              "00000000000000000000611fd22f2df7c8fbd0688745c3a6c3bb5109cc2a12cb");
    EXPECT_EQ(GetChainParams(ChainType::TESTNET).consensus.default_assume_valid.ToHex(),
              "0000000000000065c6c38258e201971a3fdfcc2ceee0dd6e85a6c022d45dee34");
    EXPECT_EQ(GetChainParams(ChainType::TESTNET4).consensus.default_assume_valid.ToHex(),
              "000000000000000180a58e7fa3b0db84b5ea76377524894f53660d93ac839d9b");
    EXPECT_EQ(GetChainParams(ChainType::SIGNET).consensus.default_assume_valid.ToHex(),
              "000000128586e26813922680309f04e1de713c7542fee86ed908f56368aefe2e");
    EXPECT_TRUE(GetChainParams(ChainType::REGTEST).consensus.default_assume_valid.IsNull());

    const ConsensusParams& main = GetChainParams(ChainType::MAIN).consensus;
    EXPECT_EQ(ResolveAssumeValid(std::nullopt, main), main.default_assume_valid);
    EXPECT_TRUE(ResolveAssumeValid(BlockHash{}, main).IsNull());
    EXPECT_EQ(ResolveAssumeValid(FakeHash(3), main), FakeHash(3));
}

// The rule over a HeaderChain reads it as it is at each call: a peer's chain grows (and may be cut
// back) between blocks.
TEST(AssumeValid, TheRuleReadsTheHeaderChainAsItIsNow)
{
    FakeChain growing(1200);
    const ConsensusParams p = Params();
    const AssumeValidRule rule(growing.chain, growing.hashes[1000], p, p.minimum_chain_work);
    EXPECT_EQ(rule.Reason(500), "block too recent relative to best header");
    for (int h = 1200; h < 4000; ++h) growing.chain.AppendKnown(FakeHash(h), HeaderInfo{0, DIFF1_BITS});
    EXPECT_EQ(rule.Reason(500), std::nullopt);
    EXPECT_EQ(rule.Reason(1000), std::nullopt);
    EXPECT_EQ(rule.Reason(1001), "block height above assumevalid height");
    EXPECT_EQ(rule.Reason(4000), "block not in best header chain");
    growing.chain.Truncate(900);
    EXPECT_EQ(rule.Reason(500), "assumevalid hash not in headers");
    EXPECT_EQ(AssumeValidRule(growing.chain, BlockHash{}, p, p.minimum_chain_work).Reason(10), "assumevalid=0 (always verify)");
}

// The run's minimum chain work (--minimum-chain-work), not the network's, decides Core's fourth
// condition: above the chain's work, no script is skipped.
TEST(AssumeValid, TheRunsMinimumChainWorkReplacesTheNetworks)
{
    FakeChain chain(4000);
    const ConsensusParams p = Params();
    const arith_uint256 work = chain.chain.ChainWork().back();
    EXPECT_EQ(AssumeValidRule(chain.chain, chain.hashes[1000], p, ArithToUint256(work)).Reason(500), std::nullopt);
    EXPECT_EQ(AssumeValidRule(chain.chain, chain.hashes[1000], p, ArithToUint256(work + arith_uint256(1))).Reason(500),
              "best header chainwork below minimumchainwork");
}

TEST(HeaderChain, WorkHeightsAndAncestryFromTheGenesis)
{
    const ChainParams& main = GetChainParams(ChainType::MAIN);
    HeaderChain chain(main);
    EXPECT_EQ(chain.Height(), 0);
    EXPECT_EQ(chain.Tip(), main.consensus.hash_genesis_block);
    EXPECT_TRUE(chain.HasFullHeaders());
    for (int h = 1; h <= 3000; ++h) chain.AppendKnown(FakeHash(h), HeaderInfo{uint32_t(1000 + h), DIFF1_BITS});
    EXPECT_FALSE(chain.HasFullHeaders()) << "known headers keep no 80 bytes";
    arith_uint256 want = GetBlockProof(DIFF1_BITS);
    want *= 3001;
    EXPECT_EQ(chain.ChainWork().back(), want);
    EXPECT_EQ(*chain.HeightOf(FakeHash(1234)), 1234);
    EXPECT_EQ(chain.Info(1234).time, 2234u);
    const HeaderAncestry a = chain.AncestryAt(2999);
    EXPECT_EQ(a.prev_height(), 2999);
    EXPECT_EQ(a.headers.size(), std::size_t(HEADER_ANCESTRY_NEEDED));
    EXPECT_EQ(chain.MedianTimePast(3000), 1000 + 2995);
    chain.Truncate(100);
    EXPECT_EQ(chain.Height(), 100);
    EXPECT_FALSE(chain.HeightOf(FakeHash(1234)));
    want = GetBlockProof(DIFF1_BITS);
    want *= 101;
    EXPECT_EQ(chain.ChainWork().back(), want);
}

} // namespace
} // namespace ibdkit

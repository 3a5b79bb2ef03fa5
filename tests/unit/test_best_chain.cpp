// SelectMostWorkChain (consensus/best_chain.h) on small trees of made-up headers: the rule both
// block locators (a blk-file scan, Core's block index) follow.
#include <ibdkit/consensus/best_chain.h>

#include <gtest/gtest.h>

#include <vector>

using namespace ibdkit;

namespace {

constexpr uint32_t EASY = 0x207fffff; // regtest's target: the least work
constexpr uint32_t HARD = 0x1d00ffff; // far more work per block

BlockHash Hash(uint8_t n)
{
    uint256 h;
    h.data()[0] = n;
    return BlockHash(h);
}

ChainCandidate Node(uint8_t n, uint8_t prev, uint32_t bits = EASY) { return {Hash(n), Hash(prev), bits}; }

} // namespace

TEST(BestChain, TheMostWorkWinsOverTheLongest)
{
    // 1 <- 2 <- 3 <- 4 (easy) and 1 <- 5 (hard): one hard block outweighs three easy ones.
    const std::vector<ChainCandidate> nodes{Node(1, 0), Node(2, 1), Node(3, 2), Node(4, 3), Node(5, 1, HARD)};
    const MostWorkChain best = SelectMostWorkChain(nodes, Hash(1));
    EXPECT_EQ(best.chain, (std::vector<std::size_t>{0, 4}));
    EXPECT_EQ(best.heights, (std::vector<int>{0, 1, 2, 3, 1}));
    EXPECT_EQ(best.stale, 3u);
    EXPECT_EQ(best.orphans, 0u);
}

TEST(BestChain, TiesGoToTheTipThatComesFirst)
{
    const std::vector<ChainCandidate> nodes{Node(1, 0), Node(3, 1), Node(2, 1)};
    EXPECT_EQ(SelectMostWorkChain(nodes, Hash(1)).chain, (std::vector<std::size_t>{0, 1}));
    const std::vector<ChainCandidate> swapped{Node(1, 0), Node(2, 1), Node(3, 1)};
    EXPECT_EQ(SelectMostWorkChain(swapped, Hash(1)).chain, (std::vector<std::size_t>{0, 1}));
}

TEST(BestChain, WithoutTheGenesisAsACandidateTheChainStartsAtHeightOne)
{
    // Genesis 1 is no candidate: 2 and 3 hang from it; 9 hangs from nothing known; 2 comes twice.
    const std::vector<ChainCandidate> nodes{Node(2, 1), Node(3, 2), Node(9, 8), Node(2, 1)};
    const MostWorkChain best = SelectMostWorkChain(nodes, Hash(1));
    EXPECT_EQ(best.chain, (std::vector<std::size_t>{0, 1}));
    EXPECT_EQ(best.heights, (std::vector<int>{1, 2, -1, -1}));
    EXPECT_EQ(best.orphans, 1u);
    EXPECT_EQ(best.duplicates, 1u);
    EXPECT_EQ(best.stale, 0u);
}

TEST(BestChain, NothingReachesTheGenesis)
{
    const std::vector<ChainCandidate> nodes{Node(9, 8), Node(10, 9)};
    const MostWorkChain best = SelectMostWorkChain(nodes, Hash(1));
    EXPECT_TRUE(best.chain.empty());
    EXPECT_EQ(best.orphans, 2u);
    EXPECT_TRUE(SelectMostWorkChain({}, Hash(1)).chain.empty());
}

// The header download both P2P syncs share (HeaderWalk, src/consensus/header_walk.h), fed by a
// peer made of a header list that answers a locator as Core does (the first hash of it on its
// chain, then up to 2,000 headers), and by peers that lie: headers that do not connect, a full
// answer of headers held sent again, an invalid header, branches with and without more work.
#include "consensus/header_walk.h"
#include "header_peer.h"

#include <ibdkit/chain/params.h>
#include <ibdkit/consensus/pow.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <vector>

namespace ibdkit {
namespace {

using test::FakePeer;
using test::Mined;
using test::Regtest;

const arith_uint256 NO_MINIMUM; // zero: every chain has the minimum work

/// Walks `peer` onto `chain` until the walk ends; the last step (or the peer's offence) and the answers asked.
struct Walked {
    Result<HeaderWalk::Step, std::string> last{HeaderWalk::Step::More};
    int answers{0};
};
Walked Walk(HeaderWalk& walk, const FakePeer& peer)
{
    Walked w;
    while (w.last.ok() && *w.last == HeaderWalk::Step::More) {
        w.last = walk.Take(peer.Answer(walk.Next()));
        ++w.answers;
    }
    return w;
}

HeaderChain ChainOf(const FakePeer& peer, int height)
{
    HeaderChain chain(Regtest());
    for (int h = 1; h <= height; ++h) EXPECT_EQ(chain.Append(peer.headers[std::size_t(h)]), std::nullopt);
    return chain;
}

TEST(HeaderWalk, FollowsAPeersChainInFullAnswersUntilAShortOne)
{
    FakePeer peer;
    peer.Grow(0, int(HEADERS_PER_ANSWER) + 100);
    HeaderChain chain(Regtest());
    HeaderWalk walk(chain, false, NO_MINIMUM);
    const Walked w = Walk(walk, peer);
    ASSERT_TRUE(w.last.ok()) << w.last.error();
    EXPECT_EQ(*w.last, HeaderWalk::Step::Done);
    EXPECT_EQ(w.answers, 2);
    EXPECT_EQ(chain.Tip(), peer.headers.back().GetHash());
    EXPECT_EQ(walk.Shown(), chain.Height());
    EXPECT_TRUE(walk.Answered());
}

// The first locator starts at the tip's parent, as Core's first getheaders does: a peer at the
// tip answers with the tip, so it shows how far it shares the chain.
TEST(HeaderWalk, APeerAtTheTipShowsIt)
{
    FakePeer peer;
    peer.Grow(0, 10);
    HeaderChain chain = ChainOf(peer, 10);
    HeaderWalk walk(chain, false, NO_MINIMUM);
    EXPECT_EQ(walk.Next().chain.size(), 10u) << "the genesis up to the tip's parent";
    const auto answer = peer.Answer(walk.Next());
    ASSERT_EQ(answer.size(), 1u);
    const auto step = walk.Take(answer);
    ASSERT_TRUE(step.ok());
    EXPECT_EQ(*step, HeaderWalk::Step::Done);
    EXPECT_EQ(walk.Shown(), 10);
    EXPECT_EQ(chain.Height(), 10);

    FakePeer behind = peer;
    behind.Grow(4, 0);
    HeaderWalk second(chain, false, NO_MINIMUM);
    EXPECT_EQ(Walk(second, behind).last.ok(), true);
    EXPECT_EQ(second.Shown(), -1) << "an empty answer shows nothing (the caller takes what the version message claimed)";
    EXPECT_EQ(chain.Height(), 10);
}

// A peer far behind the chain answers from a locator entry well below its tip: a full answer of
// headers held is asked on from its last header, and the next answer must go past it.
TEST(HeaderWalk, AFullAnswerOfHeadersHeldMustGoPastItsLastHeader)
{
    FakePeer peer;
    peer.Grow(0, int(HEADERS_PER_ANSWER) + 10);
    HeaderChain chain = ChainOf(peer, int(HEADERS_PER_ANSWER) + 10);
    const std::vector<BlockHeader> held(peer.headers.begin() + 1, peer.headers.begin() + 1 + std::ptrdiff_t(HEADERS_PER_ANSWER));

    HeaderWalk walk(chain, false, NO_MINIMUM);
    auto step = walk.Take(held);
    ASSERT_TRUE(step.ok());
    EXPECT_EQ(*step, HeaderWalk::Step::More);
    EXPECT_EQ(walk.Shown(), int(HEADERS_PER_ANSWER));
    EXPECT_EQ(walk.Next().chain.size(), HEADERS_PER_ANSWER + 1) << "asked on from the last header held";
    EXPECT_EQ(Walk(walk, peer).last.ok(), true);
    EXPECT_EQ(walk.Shown(), chain.Height());

    HeaderWalk liar(chain, false, NO_MINIMUM);
    ASSERT_TRUE(liar.Take(held).ok());
    step = liar.Take(held);
    ASSERT_FALSE(step.ok());
    EXPECT_EQ(step.error(), "a full headers message of headers held, not past the last one");
}

// A branch forking below the tip is followed to its end, each header checked on the branch's own
// ancestors, and replaces the chain only when the caller adopts it (Core: with more work).
TEST(HeaderWalk, ABranchIsFollowedToItsEndAndAdoptedOnlyOnRequest)
{
    FakePeer ours;
    ours.Grow(0, 10);
    FakePeer peer = ours;
    peer.Grow(5, int(HEADERS_PER_ANSWER) + 3, 1); // a branch after height 5 over two answers
    HeaderChain chain = ChainOf(ours, 10);
    HeaderWalk walk(chain, false, NO_MINIMUM);
    const Walked w = Walk(walk, peer);
    ASSERT_TRUE(w.last.ok()) << w.last.error();
    EXPECT_EQ(*w.last, HeaderWalk::Step::BranchEnded);
    EXPECT_EQ(w.answers, 2);
    ASSERT_NE(walk.Branch(), nullptr);
    EXPECT_EQ(walk.Branch()->Fork(), 5);
    EXPECT_TRUE(walk.Branch()->MoreWork());
    EXPECT_EQ(chain.Tip(), ours.headers.back().GetHash()) << "the chain is unchanged until adopted";
    EXPECT_EQ(walk.Shown(), 5);
    walk.Adopt();
    EXPECT_EQ(chain.Tip(), peer.headers.back().GetHash());
    EXPECT_EQ(walk.Shown(), chain.Height());
    EXPECT_EQ(walk.Branch(), nullptr);

    FakePeer shorter = ours;
    shorter.Grow(5, 3, 1);
    HeaderChain kept = ChainOf(ours, 10);
    HeaderWalk less(kept, false, NO_MINIMUM);
    ASSERT_EQ(*Walk(less, shorter).last, HeaderWalk::Step::BranchEnded);
    EXPECT_FALSE(less.Branch()->MoreWork());
    EXPECT_EQ(kept.Tip(), ours.headers.back().GetHash());
}

// While the chain is only the run's seed, the first answer that forks replaces the chain above the
// fork, as a download from the genesis would have; an answer that does not connect is not one.
TEST(HeaderWalk, ASeedIsReplacedAboveTheForkByTheFirstAnswerOnly)
{
    FakePeer seed;
    seed.Grow(0, 10);
    FakePeer peer = seed;
    peer.Grow(5, 3, 1);
    HeaderChain chain = ChainOf(seed, 10);
    HeaderWalk walk(chain, true, NO_MINIMUM);
    const std::vector<BlockHeader> stranger{Mined(peer.headers.back().GetHash(), 99 * 600)};
    const auto refused = walk.Take(stranger);
    ASSERT_FALSE(refused.ok());
    EXPECT_NE(refused.error().find("headers that do not connect to the chain held"), std::string::npos) << refused.error();
    EXPECT_FALSE(walk.Answered());
    const Walked w = Walk(walk, peer);
    ASSERT_TRUE(w.last.ok()) << w.last.error();
    EXPECT_EQ(*w.last, HeaderWalk::Step::Done);
    EXPECT_EQ(chain.Height(), 8);
    EXPECT_EQ(chain.Tip(), peer.headers.back().GetHash());
    EXPECT_EQ(walk.Shown(), 8);
}

// An invalid header ends the walk with Core's reason; the headers before it stay on the chain.
TEST(HeaderWalk, AnInvalidHeaderEndsTheWalkKeepingTheHeadersBeforeIt)
{
    FakePeer peer;
    peer.Grow(0, 6);
    std::vector<BlockHeader> answer(peer.headers.begin() + 1, peer.headers.end());
    answer[3].nonce++;
    while (CheckProofOfWork(answer[3].GetHash().ToUint256(), answer[3].bits, Regtest().consensus)) answer[3].nonce++;
    HeaderChain chain(Regtest());
    HeaderWalk walk(chain, false, NO_MINIMUM);
    const auto step = walk.Take(answer);
    ASSERT_FALSE(step.ok());
    EXPECT_EQ(step.error().rfind("an invalid header: ", 0), 0u) << step.error();
    EXPECT_NE(step.error().find("high-hash"), std::string::npos) << step.error();
    EXPECT_EQ(chain.Height(), 3);
    EXPECT_EQ(walk.Shown(), 3);
}

/// The chain work of `peer`'s headers up to `height`.
arith_uint256 WorkAt(const FakePeer& peer, int height)
{
    arith_uint256 work;
    for (int h = 0; h <= height; ++h) work += GetBlockProof(peer.headers[std::size_t(h)].bits);
    return work;
}

// Below the minimum chain work a peer's chain is presynced first: the chain does not grow until
// the peer has shown the work and its redownload is checked, and then it holds the peer's chain.
TEST(HeaderWalk, ALowWorkChainReachesTheChainOnlyThroughItsRedownload)
{
    FakePeer peer;
    peer.Grow(0, 3 * int(HEADERS_PER_ANSWER) + 500);
    HeaderChain chain(Regtest());
    HeaderWalk walk(chain, false, WorkAt(peer, 3 * int(HEADERS_PER_ANSWER) + 100));
    int answers = 0;
    int grew_at = -1;
    Result<HeaderWalk::Step, std::string> step = HeaderWalk::Step::More;
    while (step.ok() && *step == HeaderWalk::Step::More) {
        step = walk.Take(peer.Answer(walk.Next()));
        ++answers;
        if (grew_at < 0 && chain.Height() > 0) grew_at = answers;
    }
    ASSERT_TRUE(step.ok()) << step.error();
    EXPECT_EQ(*step, HeaderWalk::Step::Done);
    EXPECT_EQ(answers, 8) << "four answers presynced, four redownloaded";
    EXPECT_GT(grew_at, 4) << "nothing appended while presyncing";
    EXPECT_EQ(chain.Tip(), peer.headers.back().GetHash());
    EXPECT_EQ(walk.Presync(), nullptr);
}

// A chain that never reaches the minimum leaves the chain as it was, a full answer's chain after
// its presync, a short answer's at once; the walk says how far the peer's chain went.
TEST(HeaderWalk, ALowWorkChainLeavesTheChainUntouched)
{
    FakePeer peer;
    peer.Grow(0, int(HEADERS_PER_ANSWER) + 10);
    HeaderChain chain(Regtest());
    HeaderWalk walk(chain, false, WorkAt(peer, int(HEADERS_PER_ANSWER) + 10) + 1);
    const Walked w = Walk(walk, peer);
    ASSERT_TRUE(w.last.ok()) << w.last.error();
    EXPECT_EQ(*w.last, HeaderWalk::Step::LowWork);
    EXPECT_EQ(w.answers, 2);
    EXPECT_EQ(chain.Height(), 0);
    EXPECT_EQ(walk.LowWorkSeen().height, int(HEADERS_PER_ANSWER) + 10);
    EXPECT_EQ(walk.LowWorkSeen().work, WorkAt(peer, int(HEADERS_PER_ANSWER) + 10));

    FakePeer shorter;
    shorter.Grow(0, 10);
    HeaderWalk once(chain, false, WorkAt(shorter, 10) + 1);
    const Walked s = Walk(once, shorter);
    ASSERT_TRUE(s.last.ok());
    EXPECT_EQ(*s.last, HeaderWalk::Step::LowWork);
    EXPECT_EQ(s.answers, 1);
    EXPECT_EQ(once.Presync(), nullptr) << "a short low-work answer starts no presync (Core ignores it)";
    EXPECT_EQ(chain.Height(), 0);
}

// A peer that redownloads another chain than the one it presynced is caught by a commitment
// before any of it reaches the chain.
TEST(HeaderWalk, ALyingRedownloadIsRefusedWithNothingAppended)
{
    FakePeer honest;
    honest.Grow(0, 3 * int(HEADERS_PER_ANSWER) + 500);
    FakePeer other;
    other.Grow(0, 3 * int(HEADERS_PER_ANSWER) + 500, 1);
    HeaderChain chain(Regtest());
    HeaderWalk walk(chain, false, WorkAt(honest, 3 * int(HEADERS_PER_ANSWER) + 100));
    Result<HeaderWalk::Step, std::string> step = HeaderWalk::Step::More;
    while (step.ok() && *step == HeaderWalk::Step::More) {
        const bool redownload = walk.Presync() && walk.Presync()->CurrentPhase() == HeadersPresync::Phase::Redownload;
        step = walk.Take((redownload ? other : honest).Answer(walk.Next()));
    }
    ASSERT_FALSE(step.ok());
    EXPECT_NE(step.error().find("commitment mismatch"), std::string::npos) << step.error();
    EXPECT_EQ(chain.Height(), 0);
}

} // namespace
} // namespace ibdkit

// A peer's low-work header chain downloaded twice (HeadersPresync, src/consensus/headers_presync.h),
// fed by regtest peers (header_peer.h): an honest chain released whole after its redownload, a
// peer that serves another chain on the redownload, a chain that never reaches the minimum work, a
// chain longer than the clock allows, a redownload past the commitments or cut short, and the
// answers' checks in Core's order. Salts are fixed so a commitment's luck replays.
#include "consensus/headers_presync.h"
#include "header_peer.h"

#include <ibdkit/consensus/header_check.h>

#include <gtest/gtest.h>

#include <optional>
#include <vector>

namespace ibdkit {
namespace {

using test::FakePeer;
using test::Mined;
using test::Regtest;

/// A salt whose low 64 bits are `low` (they place the commitments: height % period == low % period).
uint256 SaltOf(uint64_t low, uint8_t rest = 0x5a)
{
    uint256 salt;
    for (uint8_t& b : salt) b = rest;
    for (int i = 0; i < 8; ++i) salt.data()[i] = uint8_t(low >> (8 * i));
    return salt;
}

/// A clock far enough ahead of the regtest genesis that MaxCommitments() binds nothing here.
constexpr int64_t NOW = 2'000'000'000;

arith_uint256 WorkAt(const FakePeer& peer, int height)
{
    arith_uint256 work;
    for (int h = 0; h <= height; ++h) work += GetBlockProof(peer.headers[std::size_t(h)].bits);
    return work;
}

const FakePeer& LongPeer()
{
    static const FakePeer peer = [] {
        FakePeer p;
        p.Grow(0, 10'000);
        return p;
    }();
    return peer;
}

/// Another chain from the genesis, as long, each header the same work.
const FakePeer& OtherPeer()
{
    static const FakePeer peer = [] {
        FakePeer p;
        p.Grow(0, 10'000, 1);
        return p;
    }();
    return peer;
}

/// Drives `presync` to its end: `first` answers while it presyncs, `second` while it redownloads.
struct Driven {
    std::optional<Result<HeadersPresync::Taken, PresyncFailure>> last;
    std::vector<BlockHeader> released;
    int answers{0};
    std::size_t max_buffered{0};
    uint64_t max_commitments{0};
    bool released_in_presync{false};
};
Driven Drive(HeadersPresync& presync, const FakePeer& first, const FakePeer& second)
{
    Driven d;
    while (presync.CurrentPhase() != HeadersPresync::Phase::Final) {
        const bool presyncing = presync.CurrentPhase() == HeadersPresync::Phase::Presync;
        d.last = presync.Take((presyncing ? first : second).Answer(presync.Next()));
        ++d.answers;
        d.max_buffered = std::max(d.max_buffered, presync.Buffered());
        d.max_commitments = std::max(d.max_commitments, presync.Commitments());
        if (!d.last->ok()) break;
        if (presyncing && !(*d.last)->released.empty()) d.released_in_presync = true;
        d.released.insert(d.released.end(), (*d.last)->released.begin(), (*d.last)->released.end());
    }
    return d;
}

uint64_t CommitmentHeights(int64_t from, int64_t to, uint64_t offset, std::size_t period)
{
    uint64_t n = 0;
    for (int64_t h = from; h <= to; ++h) n += uint64_t(h) % period == offset;
    return n;
}

// The minimum is reached at height 9,000 of 10,000: five answers presync the chain, five more
// redownload it; the buffer releases what has redownload_buffer_size headers on top, then all of
// it once the redownloaded chain has the minimum work, and the released headers are the chain.
TEST(HeadersPresync, AnHonestLowWorkChainIsReleasedWholeAfterItsRedownload)
{
    const FakePeer& peer = LongPeer();
    HeaderChain chain(Regtest());
    const std::size_t buffer = Regtest().headers_sync.redownload_buffer_size;
    HeadersPresync presync(chain, 0, WorkAt(peer, 9'000), SaltOf(7), NOW);
    const Driven d = Drive(presync, peer, peer);
    ASSERT_TRUE(d.last->ok()) << Describe(d.last->error());
    EXPECT_EQ((*d.last)->step, HeadersPresync::Step::Complete);
    EXPECT_EQ(d.answers, 10);
    EXPECT_FALSE(d.released_in_presync);
    EXPECT_EQ(d.max_commitments, CommitmentHeights(1, 10'000, 7, Regtest().headers_sync.commitment_period));
    EXPECT_EQ(d.max_buffered, buffer) << "held at the buffer's size until the minimum work";
    ASSERT_EQ(d.released.size(), 10'000u);
    for (std::size_t i = 0; i < d.released.size(); ++i) ASSERT_EQ(d.released[i].GetHash(), peer.headers[i + 1].GetHash()) << i;
    for (const BlockHeader& h : d.released) ASSERT_EQ(chain.Append(h), std::nullopt) << "released headers pass Core's full checks";
    EXPECT_EQ(presync.Commitments(), 0u);
    EXPECT_EQ(presync.Buffered(), 0u);
}

// A peer presyncs one chain and redownloads another of the same work: a commitment catches it
// before any header is released (about two dozen commitments stand between a header and its
// release; a changed header passes each with probability 1/2). Several salts, all caught.
TEST(HeadersPresync, ARedownloadOfAnotherChainIsCaughtBeforeAnyOfItIsReleased)
{
    for (uint64_t s = 0; s < 8; ++s) {
        HeaderChain chain(Regtest());
        HeadersPresync presync(chain, 0, WorkAt(LongPeer(), 9'000), SaltOf(s * 97 + 3, uint8_t(s)), NOW);
        const Driven d = Drive(presync, LongPeer(), OtherPeer());
        ASSERT_FALSE(d.last->ok()) << "salt " << s;
        EXPECT_EQ(d.last->error().code, PresyncErrc::CommitmentMismatch) << Describe(d.last->error());
        EXPECT_TRUE(d.released.empty()) << "salt " << s << ": " << d.released.size() << " headers of the other chain released";
        EXPECT_EQ(presync.CurrentPhase(), HeadersPresync::Phase::Final);
        EXPECT_EQ(presync.Buffered(), 0u);
    }
}

// A peer that changes one header on the redownload (so every hash above it) is caught as well,
// and the headers below the change are the only ones that may be released.
TEST(HeadersPresync, ARedownloadChangingOneHeaderIsCaughtAboveIt)
{
    FakePeer liar = LongPeer();
    liar.Grow(2'999, 7'001, 3);
    HeaderChain chain(Regtest());
    HeadersPresync presync(chain, 0, WorkAt(LongPeer(), 9'900), SaltOf(11), NOW);
    const Driven d = Drive(presync, LongPeer(), liar);
    ASSERT_FALSE(d.last->ok());
    EXPECT_EQ(d.last->error().code, PresyncErrc::CommitmentMismatch);
    EXPECT_GE(d.last->error().height, 3'000);
    EXPECT_LE(d.released.size(), 2'999u);
    for (std::size_t i = 0; i < d.released.size(); ++i) ASSERT_EQ(d.released[i].GetHash(), LongPeer().headers[i + 1].GetHash());
}

// Below the minimum the whole way: nothing is released, nothing buffered, and what is held for the
// peer is one bit per commitment period; its short last answer ends it as low work.
TEST(HeadersPresync, AChainThatNeverReachesTheMinimumHoldsOnlyItsCommitments)
{
    const FakePeer& peer = LongPeer();
    HeaderChain chain(Regtest());
    HeadersPresync presync(chain, 0, WorkAt(peer, 10'000) + 1, SaltOf(100), NOW);
    const std::size_t period = Regtest().headers_sync.commitment_period;
    const Driven d = Drive(presync, peer, peer);
    ASSERT_TRUE(d.last->ok()) << Describe(d.last->error());
    EXPECT_EQ((*d.last)->step, HeadersPresync::Step::LowWork);
    EXPECT_EQ(d.answers, 6) << "five full answers and an empty one";
    EXPECT_TRUE(d.released.empty());
    EXPECT_EQ(d.max_buffered, 0u);
    EXPECT_EQ(d.max_commitments, CommitmentHeights(1, 10'000, 100 % period, period));
    EXPECT_LE(d.max_commitments, 10'000 / period + 1);
    EXPECT_LE(d.max_commitments, presync.MaxCommitments());
    EXPECT_EQ(presync.Commitments(), 0u) << "freed at the end";
}

// With a clock that allows three commitments since the genesis's median time past, the fourth is
// refused: no valid chain can be that long yet.
TEST(HeadersPresync, AChainLongerThanTheClockAllowsIsAbandonedAtMaxCommitments)
{
    HeaderChain chain(Regtest());
    const std::size_t period = Regtest().headers_sync.commitment_period;
    const int64_t seconds = int64_t(3 * period + 5) / 6;
    const int64_t now = chain.MedianTimePast(0) - MAX_FUTURE_BLOCK_TIME + seconds;
    HeadersPresync presync(chain, 0, WorkAt(LongPeer(), 10'000), SaltOf(9), now);
    ASSERT_EQ(presync.MaxCommitments(), 3u);
    const auto taken = presync.Take(LongPeer().Answer(presync.Next()));
    ASSERT_FALSE(taken.ok());
    EXPECT_EQ(taken.error().code, PresyncErrc::TooManyCommitments);
    EXPECT_EQ(taken.error().height, int64_t(9 + 3 * period)) << "the fourth commitment's height";
    EXPECT_EQ(presync.CurrentPhase(), HeadersPresync::Phase::Final);
}

// The presynced chain reaches the minimum with ten hard headers after 600 easy ones; the
// redownload serves the same 600 and then easy ones: every commitment matches, and past the last
// one without the minimum work the peer has overrun what it presynced.
TEST(HeadersPresync, ARedownloadPastTheCommitmentsWithoutTheMinimumIsAnOverrun)
{
    FakePeer hard;
    hard.Grow(0, 600);
    hard.Grow(600, 10, 0, 0x1f7fffff);
    FakePeer easy = hard;
    easy.Grow(600, 2'000, 1);
    HeaderChain chain(Regtest());
    // Commitments at heights 5, 280 and 555: all below the fork at 600.
    HeadersPresync presync(chain, 0, WorkAt(hard, 610), SaltOf(5), NOW);
    const Driven d = Drive(presync, hard, easy);
    ASSERT_FALSE(d.last->ok());
    EXPECT_EQ(d.last->error().code, PresyncErrc::CommitmentOverrun);
    EXPECT_EQ(d.last->error().height, 830);
    EXPECT_TRUE(d.released.empty());
}

// A redownload answered short before the minimum: only what has a full buffer of checked
// headers on top is released.
TEST(HeadersPresync, ARedownloadCutShortReleasesOnlyWhatItsCommitmentsProved)
{
    FakePeer shorter = LongPeer();
    shorter.Grow(8'500, 0);
    HeaderChain chain(Regtest());
    HeadersPresync presync(chain, 0, WorkAt(LongPeer(), 9'000), SaltOf(42), NOW);
    const Driven d = Drive(presync, LongPeer(), shorter);
    ASSERT_TRUE(d.last->ok()) << Describe(d.last->error());
    EXPECT_EQ((*d.last)->step, HeadersPresync::Step::Abandoned);
    EXPECT_EQ(d.released.size(), 8'500u - Regtest().headers_sync.redownload_buffer_size);
}

// Core's order: every header's proof of work first (high-hash names the first failing one even
// after a break in continuity), then continuity within the answer, then with the last header.
TEST(HeadersPresync, AnswersAreCheckedInCoresOrder)
{
    const FakePeer& peer = LongPeer();
    HeaderChain chain(Regtest());
    std::vector<BlockHeader> answer(peer.headers.begin() + 1, peer.headers.begin() + 11);
    answer[3] = Mined(answer[4].GetHash(), 7); // valid work, on the wrong parent
    answer[7].nonce++;
    while (CheckProofOfWork(answer[7].GetHash().ToUint256(), answer[7].bits, Regtest().consensus)) answer[7].nonce++;

    HeadersPresync first(chain, 0, WorkAt(peer, 10'000), SaltOf(1), NOW);
    auto taken = first.Take(answer);
    ASSERT_FALSE(taken.ok());
    EXPECT_EQ(taken.error().code, PresyncErrc::HighHash);
    EXPECT_EQ(taken.error().height, 8);

    answer[7] = peer.headers[8];
    HeadersPresync second(chain, 0, WorkAt(peer, 10'000), SaltOf(1), NOW);
    taken = second.Take(answer);
    ASSERT_FALSE(taken.ok());
    EXPECT_EQ(taken.error().code, PresyncErrc::NotContinuous);
    EXPECT_EQ(taken.error().height, 4);
    EXPECT_NE(Describe(taken.error()).find("non-continuous"), std::string::npos);

    HeadersPresync third(chain, 0, WorkAt(peer, 10'000), SaltOf(1), NOW);
    taken = third.Take(std::vector<BlockHeader>(peer.headers.begin() + 2, peer.headers.begin() + 5));
    ASSERT_FALSE(taken.ok());
    EXPECT_EQ(taken.error().code, PresyncErrc::DoesNotConnect);
    EXPECT_EQ(taken.error().height, 1);
}

// A fork above the genesis: the first locator leads with the fork's header and goes on down the
// chain from it; the work counts from the chain's work there.
TEST(HeadersPresync, AStartAboveTheGenesisAsksFromItsFork)
{
    const FakePeer& peer = LongPeer();
    HeaderChain chain(Regtest());
    for (int h = 1; h <= 20; ++h) ASSERT_EQ(chain.Append(peer.headers[std::size_t(h)]), std::nullopt);
    HeadersPresync presync(chain, 12, WorkAt(peer, 10'000), SaltOf(1), NOW);
    const HeadersAsk ask = presync.Next();
    EXPECT_EQ(ask.chain.size(), 13u);
    EXPECT_EQ(ask.first, chain.Hash(12));
    EXPECT_EQ(presync.Work(), chain.ChainWork()[12]);
    EXPECT_EQ(presync.Height(), 12);
    const auto answer = peer.Answer(ask);
    EXPECT_EQ(answer.front().GetHash(), peer.headers[13].GetHash());
    ASSERT_TRUE(presync.Take(answer).ok());
    EXPECT_EQ(presync.Height(), 12 + int64_t(HEADERS_PER_ANSWER));
}

// Core's PermittedDifficultyTransition on mainnet: equal bits between retargets, a factor of 4
// each way at one (compact-rounded), anything where minimum-difficulty blocks are allowed.
TEST(PermittedDifficultyTransition, MainnetRetargetsWithinAFactorOfFour)
{
    const ConsensusParams& main = GetChainParams(ChainType::MAIN).consensus;
    const uint32_t bits = 0x1b0404cb;
    EXPECT_TRUE(PermittedDifficultyTransition(main, 2017, bits, bits));
    EXPECT_FALSE(PermittedDifficultyTransition(main, 2017, bits, bits - 1));
    arith_uint256 target;
    target.SetCompact(bits);
    auto times = [&](uint32_t k) {
        arith_uint256 t = target;
        t *= k;
        return t.GetCompact();
    };
    const uint32_t easier = times(4);
    const uint32_t harder = (target / arith_uint256(4)).GetCompact();
    EXPECT_TRUE(PermittedDifficultyTransition(main, 2016 * 5, bits, easier));
    EXPECT_TRUE(PermittedDifficultyTransition(main, 2016 * 5, bits, harder));
    EXPECT_FALSE(PermittedDifficultyTransition(main, 2016 * 5, bits, times(5)));
    EXPECT_FALSE(PermittedDifficultyTransition(main, 2016 * 5, bits, (target / arith_uint256(5)).GetCompact()));
    EXPECT_FALSE(PermittedDifficultyTransition(main, 2016 * 5, 0x1d00ffff, 0x1d01fffe)) << "never easier than the pow limit";
    EXPECT_TRUE(PermittedDifficultyTransition(GetChainParams(ChainType::TESTNET).consensus, 2017, bits, 0x1d00ffff));
}

} // namespace
} // namespace ibdkit

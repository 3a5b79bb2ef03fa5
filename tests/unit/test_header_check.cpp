// Contextual header checks (consensus/header_check.h): Core's retarget vectors (pow_tests.cpp),
// testnet's minimum-difficulty rule, testnet4's BIP94, regtest's no-retargeting, and one test per
// reject reason asserting Core's exact string; a competing branch chosen by its work (HeaderBranch).
#include "test_primitives_data.h"

#include <ibdkit/chain/params.h>
#include <ibdkit/consensus/header_chain.h>
#include <ibdkit/consensus/header_check.h>
#include <ibdkit/consensus/pow.h>

#include <gtest/gtest.h>

#include <map>
#include <vector>

namespace ibdkit {
namespace {

const ConsensusParams& Params(ChainType t) { return GetChainParams(t).consensus; }

/// `count` ancestors from `first_height`, `spacing` seconds apart from `time0`, all with `bits`.
std::vector<HeaderInfo> Chain(int count, uint32_t time0, uint32_t spacing, uint32_t bits)
{
    std::vector<HeaderInfo> v(static_cast<std::size_t>(count));
    for (int i = 0; i < count; ++i) v[std::size_t(i)] = {time0 + uint32_t(i) * spacing, bits};
    return v;
}

BlockHeader Header(int32_t version, uint32_t time, uint32_t bits)
{
    BlockHeader h;
    h.version = version;
    h.time = time;
    h.bits = bits;
    return h;
}

std::string Reject(const BlockHeader& h, const HeaderAncestry& prev, const ConsensusParams& p, int64_t now)
{
    BlockValidationState st;
    if (ContextualCheckBlockHeader(h, prev, p, now, st)) return "";
    return st.GetRejectReason();
}

constexpr int64_t NOW = 2'000'000'000;

// Core's pow_tests.cpp vectors for CalculateNextWorkRequired on mainnet.
TEST(HeaderCheck, RetargetVectorsFromCore)
{
    const auto& main = Params(ChainType::MAIN);
    EXPECT_EQ(CalculateNextWorkRequired(0x1d00ffff, 1262152739, 1261130161, 0x1d00ffff, main), 0x1d00d86au);
    EXPECT_EQ(CalculateNextWorkRequired(0x1d00ffff, 1233061996, 1231006505, 0x1d00ffff, main), 0x1d00ffffu); // pow limit
    EXPECT_EQ(CalculateNextWorkRequired(0x1c05a3f4, 1279297671, 1279008237, 0x1c05a3f4, main), 0x1c0168fdu); // ÷4 clamp
    EXPECT_EQ(CalculateNextWorkRequired(0x1c387f6f, 1269211443, 1263163443, 0x1c387f6f, main), 0x1d00e1fdu); // ×4 clamp
}

TEST(HeaderCheck, MainnetRetargetAtTheBoundaryAndBadDiffbits)
{
    const auto& main = Params(ChainType::MAIN);
    // Heights 30240..32255 (one interval), first and last times as Core's first vector.
    auto v = Chain(2016, 1261130161, 0, 0x1d00ffff);
    v.back().time = 1262152739;
    for (std::size_t i = 1; i + 1 < v.size(); ++i) v[i].time = 1261130161 + uint32_t(i); // increasing
    const HeaderAncestry prev{30240, v};
    EXPECT_EQ(GetNextWorkRequired(prev, 1262152739 + 600, main), 0x1d00d86au);
    EXPECT_EQ(Reject(Header(1, 1262152739 + 600, 0x1d00d86a), prev, main, NOW), "");
    EXPECT_EQ(Reject(Header(1, 1262152739 + 600, 0x1d00ffff), prev, main, NOW), "bad-diffbits");
    // Between retargets the previous bits are required.
    const HeaderAncestry mid{30240, std::span(v).first(100)};
    EXPECT_EQ(GetNextWorkRequired(mid, 1262152739, main), 0x1d00ffffu);
    BlockValidationState st;
    EXPECT_FALSE(ContextualCheckBlockHeader(Header(1, v[99].time + 1, 0x207fffff), mid, main, NOW, st));
    EXPECT_EQ(st.GetRejectReason(), "bad-diffbits");
    EXPECT_EQ(st.GetResult(), BlockValidationResult::BLOCK_INVALID_HEADER);
}

TEST(HeaderCheck, TestnetTwentyMinuteMinimumDifficultyRule)
{
    const auto& test = Params(ChainType::TESTNET);
    const uint32_t limit = 0x1d00ffff, real = 0x1c0fffff;
    // Heights 4032..4131: real difficulty, then from 4100 three minimum-difficulty blocks.
    auto v = Chain(100, 1'400'000'000, 600, real);
    for (std::size_t i = 97; i < 100; ++i) v[i].bits = limit;
    const HeaderAncestry prev{4032, v};
    const uint32_t last = v.back().time;
    // More than 20 minutes after the parent: the pow limit.
    EXPECT_EQ(GetNextWorkRequired(prev, last + 1201, test), limit);
    EXPECT_EQ(Reject(Header(4, last + 1201, limit), prev, test, NOW), "");
    // Not more than 20 minutes: the last bits not set by the exception (walking back over them).
    EXPECT_EQ(GetNextWorkRequired(prev, last + 1200, test), real);
    EXPECT_EQ(Reject(Header(4, last + 1200, limit), prev, test, NOW), "bad-diffbits");
    EXPECT_EQ(Reject(Header(4, last + 1200, real), prev, test, NOW), "");
    // The walk stops at a retarget boundary even when that block has the limit bits.
    auto w = Chain(5, 1'400'000'000, 600, limit);
    EXPECT_EQ(GetNextWorkRequired(HeaderAncestry{4032, w}, w.back().time + 60, test), limit);
}

TEST(HeaderCheck, TestnetWalkBackOverLongRunsOfMinimumDifficulty)
{
    // The walk back reads eight headers at a time: real bits at every offset from the tip, over
    // runs longer and shorter than eight, must be found; with none, the period's first block's.
    const auto& test = Params(ChainType::TESTNET);
    const uint32_t limit = 0x1d00ffff, real = 0x1c0fffff, first = 0x1c0ffff0;
    for (std::size_t run = 0; run < 40; ++run) { // run 0: the tip itself has real bits
        auto v = Chain(41, 1'400'000'000, 60, limit); // heights 4032..4072, 60 s apart
        v.front().bits = first;
        v[40 - run].bits = real; // `run` minimum-difficulty blocks above it
        EXPECT_EQ(GetNextWorkRequired(HeaderAncestry{4032, v}, v.back().time + 60, test), real) << run;
    }
    auto all = Chain(41, 1'400'000'000, 60, limit);
    all.front().bits = first;
    EXPECT_EQ(GetNextWorkRequired(HeaderAncestry{4032, all}, all.back().time + 60, test), first);
    all.front().bits = limit; // the period's first block at the limit: the walk stops there anyway
    EXPECT_EQ(GetNextWorkRequired(HeaderAncestry{4032, all}, all.back().time + 60, test), limit);
}

TEST(HeaderCheck, Testnet4RetargetsFromTheFirstBlockOfThePeriodBip94)
{
    const auto& t4 = Params(ChainType::TESTNET4);
    const uint32_t limit = 0x1d00ffff, first_bits = 0x1c0fffff;
    // Heights 2016..4031: the period's first block at real difficulty, the last one at minimum.
    auto v = Chain(2016, 1'700'000'000, 600, first_bits);
    v.back().bits = limit;
    v.back().time = v.front().time + 14 * 24 * 60 * 60; // exactly the target timespan
    const HeaderAncestry prev{2016, v};
    const uint32_t want = CalculateNextWorkRequired(limit, v.back().time, v.front().time, first_bits, t4);
    EXPECT_EQ(want, first_bits); // exactly two weeks: unchanged from the first block's bits
    EXPECT_EQ(GetNextWorkRequired(prev, v.back().time + 600, t4), first_bits);
    // Without BIP94 (testnet3's rule) the minimum-difficulty last block would set it.
    EXPECT_EQ(CalculateNextWorkRequired(limit, v.back().time, v.front().time, first_bits, Params(ChainType::TESTNET)), limit);
    EXPECT_EQ(Reject(Header(4, v.back().time + 600, first_bits), prev, t4, NOW), "");
}

TEST(HeaderCheck, Testnet4TimewarpAttack)
{
    const auto& t4 = Params(ChainType::TESTNET4);
    // The previous block's time is far ahead of the median: a boundary header may not go back
    // more than MAX_TIMEWARP (600 s) before it.
    auto v = Chain(2016, 1'700'000'000, 600, 0x1c0fffff);
    v.back().time += 100'000;
    const HeaderAncestry prev{2016, v};
    const uint32_t bits = GetNextWorkRequired(prev, v.back().time, t4);
    const uint32_t mtp = uint32_t(GetMedianTimePast(prev));
    ASSERT_LT(mtp + 1, v.back().time - 601);
    BlockValidationState st;
    EXPECT_FALSE(ContextualCheckBlockHeader(Header(4, v.back().time - 601, bits), prev, t4, NOW, st));
    EXPECT_EQ(st.GetRejectReason(), "time-timewarp-attack");
    EXPECT_EQ(st.GetResult(), BlockValidationResult::BLOCK_INVALID_HEADER);
    EXPECT_EQ(Reject(Header(4, v.back().time - 600, bits), prev, t4, NOW), "");
    // Not at a boundary, or on a network without BIP94: allowed.
    const HeaderAncestry mid{2016, std::span(v).first(2000)};
    const uint32_t mid_mtp = uint32_t(GetMedianTimePast(mid));
    EXPECT_EQ(Reject(Header(4, mid_mtp + 1, 0x1c0fffff), mid, t4, NOW), "");
}

TEST(HeaderCheck, RegtestDoesNotRetarget)
{
    const auto& reg = Params(ChainType::REGTEST);
    auto v = Chain(2016, 1'296'688'602, 1, 0x207fffff);
    const HeaderAncestry prev{0, v}; // the next header is at 2016, a boundary
    EXPECT_EQ(GetNextWorkRequired(prev, v.back().time + 1, reg), 0x207fffffu);
    EXPECT_EQ(CalculateNextWorkRequired(0x1d00ffff, 100, 0, 0x1d00ffff, reg), 0x1d00ffffu); // no retargeting
    EXPECT_EQ(Reject(Header(4, v.back().time + 1, 0x207fffff), prev, reg, NOW), "");
}

TEST(HeaderCheck, TimeTooOldIsAtOrBelowMedianTimePast)
{
    const auto& main = Params(ChainType::MAIN);
    // Eleven ancestors, times out of order: the median of the last 11 is 1000.
    std::vector<HeaderInfo> v;
    for (uint32_t t : {1500u, 900u, 1100u, 800u, 1000u, 700u, 1200u, 600u, 1300u, 500u, 1400u}) v.push_back({t, 0x1d00ffff});
    const HeaderAncestry prev{100, v};
    EXPECT_EQ(GetMedianTimePast(prev), 1000);
    BlockValidationState st;
    EXPECT_FALSE(ContextualCheckBlockHeader(Header(1, 1000, 0x1d00ffff), prev, main, NOW, st));
    EXPECT_EQ(st.GetRejectReason(), "time-too-old");
    EXPECT_EQ(st.GetResult(), BlockValidationResult::BLOCK_INVALID_HEADER);
    EXPECT_EQ(Reject(Header(1, 1001, 0x1d00ffff), prev, main, NOW), "");
    // Fewer than 11 ancestors (near genesis): the median of those there are.
    const HeaderAncestry early{0, std::span(v).first(3)};
    EXPECT_EQ(GetMedianTimePast(early), 1100);
}

TEST(HeaderCheck, TimeTooNewIsMoreThanTwoHoursAhead)
{
    const auto& main = Params(ChainType::MAIN);
    auto v = Chain(11, 1'600'000'000, 600, 0x1d00ffff);
    const HeaderAncestry prev{1000, v};
    const int64_t now = 1'600'010'000;
    BlockValidationState st;
    EXPECT_FALSE(ContextualCheckBlockHeader(Header(1, uint32_t(now + 7201), 0x1d00ffff), prev, main, now, st));
    EXPECT_EQ(st.GetRejectReason(), "time-too-new");
    EXPECT_EQ(st.GetResult(), BlockValidationResult::BLOCK_TIME_FUTURE);
    EXPECT_EQ(Reject(Header(1, uint32_t(now + 7200), 0x1d00ffff), prev, main, now), "");
}

TEST(HeaderCheck, BadVersionAfterBip34Bip66Bip65)
{
    const auto& main = Params(ChainType::MAIN);
    struct Case {
        int height;
        int32_t version;
        const char* reason;
    };
    for (const Case& c : {Case{227930, 1, ""}, Case{227931, 1, "bad-version(0x00000001)"}, Case{227931, 2, ""},
                          Case{363724, 2, ""}, Case{363725, 2, "bad-version(0x00000002)"}, Case{363725, 3, ""},
                          Case{388380, 3, ""}, Case{388381, 3, "bad-version(0x00000003)"}, Case{388381, 4, ""},
                          Case{388381, 0x20000000, ""}, Case{388381, -1, "bad-version(0xffffffff)"}}) {
        // Ancestors up to height - 1 (not a retarget boundary in any case here).
        auto v = Chain(11, 1'500'000'000, 600, 0x1d00ffff);
        const HeaderAncestry prev{c.height - 11, v};
        ASSERT_NE(c.height % 2016, 0);
        EXPECT_EQ(Reject(Header(c.version, v.back().time + 600, 0x1d00ffff), prev, main, NOW), c.reason) << c.height;
    }
    BlockValidationState st;
    auto v = Chain(11, 1'500'000'000, 600, 0x1d00ffff);
    EXPECT_FALSE(ContextualCheckBlockHeader(Header(1, v.back().time + 600, 0x1d00ffff), HeaderAncestry{227920, v}, main, NOW, st));
    EXPECT_EQ(st.GetResult(), BlockValidationResult::BLOCK_INVALID_HEADER);
    EXPECT_EQ(st.GetDebugMessage(), "rejected nVersion=0x00000001 block");
}

TEST(HeaderCheck, ChainWorkPerHeader)
{
    // Core: the genesis block's work is 0x100010001; the chain work of a header is its parent's
    // plus GetBlockProof of its bits.
    EXPECT_EQ(GetBlockProof(0x1d00ffff), arith_uint256(0x100010001ULL));
    EXPECT_EQ(GetBlockProof(0x207fffff), arith_uint256(2));
    EXPECT_EQ(GetBlockProof(0x1d00ffff) + GetBlockProof(0x1d00ffff), arith_uint256(0x200020002ULL));
}

// Every real header under tests/data (mainnet 0-599, signet, regtest), linked from its
// genesis block, passes on top of its real ancestors; the same header with other bits does not.
TEST(HeaderCheck, RealChainsPass)
{
    std::map<ChainType, std::map<BlockHash, BlockHeader>> by_prev;
    for (const auto& b : test::AllTestBlocks()) {
        if (b.bytes.size() < 80) continue;
        const BlockHeader h = HeaderFromBytes(std::span<const uint8_t, 80>(b.bytes.data(), 80));
        by_prev[b.chain][h.hash_prev_block] = h;
    }
    if (by_prev.empty()) FAIL() << "tests/data is incomplete";
    int checked = 0;
    for (const auto& [chain, children] : by_prev) {
        const ChainParams& cp = GetChainParams(chain);
        std::vector<HeaderInfo> infos{{cp.genesis.time, cp.genesis.bits}};
        BlockHash tip = cp.genesis.GetHash();
        for (auto it = children.find(tip); it != children.end(); it = children.find(tip)) {
            const BlockHeader& h = it->second;
            const int height = int(infos.size());
            const int first = std::max(0, height - HEADER_ANCESTRY_NEEDED);
            const HeaderAncestry prev{first, std::span(infos).subspan(std::size_t(first))};
            BlockValidationState st;
            ASSERT_TRUE(ContextualCheckBlockHeader(h, prev, cp.consensus, NOW, st))
                << cp.name << " height " << height << ": " << st.GetRejectReason();
            BlockHeader other = h;
            other.bits ^= 1;
            EXPECT_EQ(Reject(other, prev, cp.consensus, NOW), "bad-diffbits") << cp.name << " height " << height;
            infos.push_back({h.time, h.bits});
            tip = h.GetHash();
            ++checked;
        }
    }
    EXPECT_GE(checked, 500);
}

/// A regtest header on `prev`, `n` seconds after the genesis, its nonce ground to meet its bits.
BlockHeader Mined(const BlockHash& prev, uint32_t n)
{
    const ChainParams& reg = GetChainParams(ChainType::REGTEST);
    BlockHeader h = Header(0x20000000, reg.genesis.time + n, reg.genesis.bits);
    h.hash_prev_block = prev;
    while (!CheckProofOfWork(h.GetHash().ToUint256(), h.bits, reg.consensus)) ++h.nonce;
    return h;
}

// A branch is checked on its own ancestors and replaces the chain above its fork only with more
// work than the chain has there: on a tie the chain held stays, as Core keeps the first seen.
TEST(HeaderBranch, ReplacesTheChainOnlyWithMoreWork)
{
    HeaderChain chain(GetChainParams(ChainType::REGTEST));
    for (uint32_t i = 1; i <= 10; ++i) ASSERT_EQ(chain.Append(Mined(chain.Tip(), i * 600)), std::nullopt);
    const BlockHash old_tip = chain.Tip();
    HeaderBranch branch(chain, 5);
    EXPECT_EQ(branch.Tip(), chain.Hash(5));
    for (uint32_t i = 6; i <= 10; ++i) ASSERT_EQ(branch.Append(Mined(branch.Tip(), i * 600 + 1)), std::nullopt);
    EXPECT_FALSE(branch.MoreWork()) << "five headers against five: the first seen stays";
    ASSERT_EQ(branch.Append(Mined(branch.Tip(), 11 * 600)), std::nullopt);
    EXPECT_TRUE(branch.MoreWork());
    chain.Adopt(branch);
    EXPECT_EQ(chain.Height(), 11);
    EXPECT_EQ(chain.Tip(), branch.Tip());
    EXPECT_EQ(chain.HeightOf(old_tip), std::nullopt);
    EXPECT_TRUE(chain.HasFullHeaders());
    EXPECT_EQ(chain.Header(6).GetHash(), branch.Headers().front().GetHash());
    arith_uint256 twelve = GetBlockProof(chain.Info(0).bits);
    twelve *= 12;
    EXPECT_EQ(chain.ChainWork().back(), twelve);
}

TEST(HeaderBranch, RefusesAHeaderThatDoesNotLinkOrFailsCoresChecks)
{
    HeaderChain chain(GetChainParams(ChainType::REGTEST));
    for (uint32_t i = 1; i <= 3; ++i) ASSERT_EQ(chain.Append(Mined(chain.Tip(), i * 600)), std::nullopt);
    HeaderBranch branch(chain, 1);
    auto why = branch.Append(Mined(chain.Hash(2), 5000));
    ASSERT_TRUE(why.has_value());
    EXPECT_NE(why->find("does not extend the branch it came in"), std::string::npos) << *why;
    BlockHeader bad = Mined(branch.Tip(), 5000);
    bad.bits = 0x207ffffe;
    while (!CheckProofOfWork(bad.GetHash().ToUint256(), bad.bits, GetChainParams(ChainType::REGTEST).consensus)) ++bad.nonce;
    why = branch.Append(bad);
    ASSERT_TRUE(why.has_value());
    EXPECT_NE(why->find("bad-diffbits"), std::string::npos) << *why;
    EXPECT_TRUE(branch.Headers().empty());
    EXPECT_EQ(branch.Tip(), chain.Hash(1));
}

// A peer's answer is measured against the chain: its first header's parent, then how many of its
// headers in order are the chain's own. A gap or another branch ends the run; a first header
// whose parent is unknown does not connect.
TEST(HeaderChain, HeldRunOfAPeersHeaders)
{
    HeaderChain chain(GetChainParams(ChainType::REGTEST));
    std::vector<BlockHeader> mine;
    for (uint32_t i = 1; i <= 6; ++i) {
        mine.push_back(Mined(chain.Tip(), i * 600));
        ASSERT_EQ(chain.Append(mine.back()), std::nullopt);
    }
    auto run = chain.Held(std::span(mine).subspan(2, 3)); // heights 3..5
    ASSERT_TRUE(run.has_value());
    EXPECT_EQ(run->parent, 2);
    EXPECT_EQ(run->held, 3u);
    EXPECT_EQ(run->Last(), 5);

    // Held up to the tip, then the peer's own header on top.
    std::vector<BlockHeader> longer(mine.begin() + 3, mine.end());
    longer.push_back(Mined(chain.Tip(), 7 * 600));
    run = chain.Held(longer);
    ASSERT_TRUE(run.has_value());
    EXPECT_EQ(run->held, 3u);
    EXPECT_EQ(run->Last(), chain.Height());

    // A fork after height 2: nothing held above the parent.
    const std::vector<BlockHeader> fork{Mined(chain.Hash(2), 3 * 600 + 1)};
    run = chain.Held(fork);
    ASSERT_TRUE(run.has_value());
    EXPECT_EQ(run->held, 0u);
    EXPECT_EQ(run->Last(), 2);

    // Out of order (height 4 after 2): the run ends at the gap.
    const std::vector<BlockHeader> gap{mine[1], mine[3]};
    run = chain.Held(gap);
    ASSERT_TRUE(run.has_value());
    EXPECT_EQ(run->held, 1u);

    const std::vector<BlockHeader> stranger{Mined(fork.front().GetHash(), 4 * 600)};
    EXPECT_EQ(chain.Held(stranger), std::nullopt);
    EXPECT_EQ(chain.Held({}), std::nullopt);
}

} // namespace
} // namespace ibdkit

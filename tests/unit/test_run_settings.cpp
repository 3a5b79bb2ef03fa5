// RunSettings (ibdkit/settings/run_settings.h): the classic engine's and SwiftSync's options share
// one description of the run's settings, with one default each, and hand them on in one assignment.
#include <ibdkit/engine/replay.h>
#include <ibdkit/engine/sync.h>
#include <ibdkit/settings/run_settings.h>
#include <ibdkit/swiftsync/replay.h>
#include <ibdkit/threads.h>

#include <gtest/gtest.h>

namespace ibdkit {
namespace {

void ExpectSameSettings(const RunSettings& a, const RunSettings& b)
{
    EXPECT_EQ(a.dbcache_mib, b.dbcache_mib);
    EXPECT_EQ(a.policy, b.policy);
    EXPECT_EQ(a.threads, b.threads);
    EXPECT_EQ(a.assumevalid, b.assumevalid);
    EXPECT_EQ(a.skip_scripts, b.skip_scripts);
    EXPECT_EQ(a.minimum_chain_work, b.minimum_chain_work);
}

RunSettings Unusual()
{
    RunSettings s;
    s.dbcache_mib = 7;
    s.policy = PolicyId::Plain;
    s.threads = 3;
    s.assumevalid = BlockHash{};
    s.skip_scripts = true;
    s.minimum_chain_work = *ParseMinimumChainWork("1234");
    return s;
}

TEST(RunSettings, EveryRunStartsFromTheSameDefaults)
{
    const RunSettings defaults;
    EXPECT_EQ(defaults.dbcache_mib, 450u); // Core's -dbcache
    EXPECT_EQ(defaults.policy, PolicyId::Hardened);
    EXPECT_EQ(defaults.threads, 0u); // every core
    EXPECT_FALSE(defaults.assumevalid);
    EXPECT_FALSE(defaults.skip_scripts);
    EXPECT_FALSE(defaults.minimum_chain_work); // the network's
    ExpectSameSettings(ReplayOptions{}, defaults);
    ExpectSameSettings(SyncOptions{}, defaults);
    ExpectSameSettings(swiftsync::SwiftSyncOptions{}, defaults);
}

TEST(RunSettings, OneAssignmentHandsAllOfThemOnAndNothingElse)
{
    ReplayOptions classic;
    classic.Settings() = Unusual();
    classic.chainstate = "classic-chainstate";
    swiftsync::SwiftSyncOptions s;
    s.chainstate = "swiftsync-chainstate";
    s.Settings() = classic;
    ExpectSameSettings(s, Unusual());
    EXPECT_EQ(s.chainstate, "swiftsync-chainstate");

    SyncOptions next;
    next.Settings() = s;
    ExpectSameSettings(next, Unusual());
}

// --dbcache 0 once meant "flush after every block" to the classic engine and was refused or raised
// to 1 MiB by SwiftSync, differently in the CLI and Python: it is now the least on every path, and
// the settings' rules are the library's.
TEST(RunSettings, ZeroDbcacheIsTheLeastOnEveryPathAndTheRulesAreChecked)
{
    RunSettings s;
    s.dbcache_mib = 0;
    EXPECT_FALSE(CheckRunSettings(s));
    s.dbcache_mib = MAX_DBCACHE_MIB;
    EXPECT_FALSE(CheckRunSettings(s));
    s.dbcache_mib = MAX_DBCACHE_MIB + 1;
    auto bad = CheckRunSettings(s);
    ASSERT_TRUE(bad);
    EXPECT_EQ(bad->code, Errc::InvalidValue);
    EXPECT_NE(bad->message.find("dbcache must be 0 (the least) to 1048576 MiB"), std::string::npos) << bad->message;

    s = RunSettings{};
    s.threads = MAX_THREADS + 1;
    ASSERT_TRUE(CheckRunSettings(s));
    EXPECT_NE(CheckRunSettings(s)->message.find("threads must be 0 (every core) to 1024"), std::string::npos);

    s = RunSettings{};
    s.skip_scripts = true;
    EXPECT_FALSE(CheckRunSettings(s));
    s.assumevalid = BlockHash{};
    ASSERT_TRUE(CheckRunSettings(s));
    EXPECT_NE(CheckRunSettings(s)->message.find("skip-scripts trusts every script: drop assumevalid"), std::string::npos);
}

TEST(RunSettings, MinimumChainWorkIsParsedAsCoreTakesIt)
{
    auto small = ParseMinimumChainWork("0x1f");
    ASSERT_TRUE(small.ok());
    EXPECT_EQ(small->ToHex(), std::string(62, '0') + "1f");
    auto bare = ParseMinimumChainWork("1F");
    ASSERT_TRUE(bare.ok());
    EXPECT_EQ(*bare, *small);
    const std::string full = "00000000000000000000000000000000000000000000b1f3b93b65b16d035a82";
    ASSERT_TRUE(ParseMinimumChainWork(full).ok());
    EXPECT_EQ(ParseMinimumChainWork(full)->ToHex(), full);
    for (const char* bad : {"", "0x", "xyz", "12 34", "-1", "1" "0000000000000000000000000000000000000000000000000000000000000000"}) {
        auto r = ParseMinimumChainWork(bad);
        ASSERT_FALSE(r.ok()) << bad;
        EXPECT_EQ(r.error().code, Errc::InvalidValue);
        EXPECT_NE(r.error().message.find("as Core's -minimumchainwork takes it, got '" + std::string(bad) + "'"), std::string::npos);
    }
    RunSettings s;
    const uint256 network = *small;
    EXPECT_EQ(s.MinimumChainWork(network), network);
    s.minimum_chain_work = *bare;
    EXPECT_EQ(s.MinimumChainWork(uint256{}), *bare);
}

} // namespace
} // namespace ibdkit

// RunSettings (ibdkit/settings/run_settings.h): the classic engine's and SwiftSync's options share
// one description of the run's settings, with one default each, and hand them on in one assignment.
#include <ibdkit/engine/replay.h>
#include <ibdkit/engine/sync.h>
#include <ibdkit/settings/run_settings.h>
#include <ibdkit/swiftsync/replay.h>

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
}

RunSettings Unusual()
{
    RunSettings s;
    s.dbcache_mib = 7;
    s.policy = PolicyId::Plain;
    s.threads = 3;
    s.assumevalid = BlockHash{};
    s.skip_scripts = true;
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

TEST(RunSettings, SwiftSyncTakesAClassicRunsSettingsWithAtLeastOneMiB)
{
    RunSettings classic = Unusual();
    ExpectSameSettings(swiftsync::SettingsFromClassic(classic), classic);
    classic.dbcache_mib = 0; // the classic engine: flush after every block
    RunSettings expected = classic;
    expected.dbcache_mib = 1;
    ExpectSameSettings(swiftsync::SettingsFromClassic(classic), expected);
}

} // namespace
} // namespace ibdkit

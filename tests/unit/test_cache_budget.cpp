// The split of one --dbcache budget (coins/budget.h).
#include "coins/budget.h"

#include <ibdkit/primitives/consensus_constants.h>

#include <gtest/gtest.h>

#include <limits>

using namespace ibdkit;

namespace {
constexpr std::size_t MiB = std::size_t(1) << 20;
}

TEST(CacheBudget, LevelDbTakesAnEighthBetweenTwoAndEightMiB)
{
    EXPECT_EQ(CacheBudget(8 * MiB).LevelDbBytes(), 2 * MiB);
    EXPECT_EQ(CacheBudget(32 * MiB).LevelDbBytes(), 4 * MiB);
    EXPECT_EQ(CacheBudget(450 * MiB).LevelDbBytes(), 8 * MiB);
    EXPECT_EQ(CacheBudget(450 * MiB).CoinsBytes(), 442 * MiB);
    EXPECT_EQ(CacheBudget(450 * MiB).DbCacheBytes(), 450 * MiB);
}

TEST(CacheBudget, BatchesAreASixtyFourthBetweenFourAndEightMiB)
{
    EXPECT_EQ(CacheBudget(8 * MiB).BatchBytes(), 4 * MiB);
    EXPECT_EQ(CacheBudget(450 * MiB).BatchBytes(), 450 * MiB / 64);
    EXPECT_EQ(CacheBudget(4096 * MiB).BatchBytes(), 8 * MiB);
}

TEST(CacheBudget, ABudgetBelowLevelDbsShareLeavesTheCacheNothing)
{
    EXPECT_EQ(CacheBudget(0).CoinsBytes(), 0u);
    EXPECT_EQ(CacheBudget(MiB).CoinsBytes(), 0u);
    EXPECT_EQ(CacheBudget(0).CacheBytesBeside(uint64_t(1) << 40), 0u);
}

TEST(CacheBudget, OpenTablesComeOutOfTheCacheDownToAQuarter)
{
    const CacheBudget b(450 * MiB);
    EXPECT_EQ(b.CacheBytesBeside(0), b.CoinsBytes());
    const uint64_t disk = uint64_t(4) << 30;
    EXPECT_EQ(b.CacheBytesBeside(disk), b.CoinsBytes() - CacheBudget::OpenTablesBytes(disk));
    EXPECT_GT(CacheBudget::OpenTablesBytes(disk), 0u);
    EXPECT_EQ(b.CacheBytesBeside(uint64_t(1) << 50), b.CoinsBytes() - b.CoinsBytes() / 4 * 3);
}

TEST(CacheBudget, AppliesItsShareToTheDatabaseOptions)
{
    CoinsDBOptions o;
    CacheBudget(450 * MiB).ApplyTo(o);
    EXPECT_EQ(o.cache_bytes, 8 * MiB);
    EXPECT_EQ(o.batch_write_bytes, 450 * MiB / 64);
}

TEST(CacheBudget, SwiftSyncFromPeersKeepsItsBlocksWithinAHalfAndALargestBlockAhead)
{
    for (std::size_t mib : {1, 4, 16, 32, 100, 256, 450, 1000, 4096, 16384}) {
        SCOPED_TRACE(mib);
        const std::size_t n = mib * MiB;
        const SwiftSyncShares s = CacheBudget(n).SwiftSyncFromPeers();
        // A largest block always fits ahead, so the peers can deliver whatever the check waits for.
        EXPECT_GE(s.ahead, std::size_t(MAX_BLOCK_SERIALIZED_SIZE));
        EXPECT_GE(s.batch, CacheBudget::MIN_BATCH_BYTES);
        EXPECT_LE(s.ahead, CacheBudget::MAX_AHEAD_BYTES);
        EXPECT_LE(s.batch, CacheBudget::MAX_BATCH_BYTES);
        EXPECT_GE(s.sort, CacheBudget::MIN_SORT_BYTES);
        // Above the floors, the blocks in flight (ahead, and a batch with its decoded form) take
        // at most half the budget and the sort the rest: together within --dbcache.
        if (n / 4 >= MAX_BLOCK_SERIALIZED_SIZE) {
            EXPECT_LE(s.ahead, n / 4);
        }
        if (n / 4 / CacheBudget::BATCH_EXPANSION >= CacheBudget::MIN_BATCH_BYTES) {
            EXPECT_LE(s.batch * CacheBudget::BATCH_EXPANSION, n / 4);
        }
        if (n >= 64 * MiB) {
            EXPECT_LE(s.ahead + s.batch * CacheBudget::BATCH_EXPANSION + s.sort, n);
        }
    }
}

TEST(CacheBudget, SwiftSyncFromPeersKeepsTheLargeCachesWindow)
{
    const SwiftSyncShares s = CacheBudget(450 * MiB).SwiftSyncFromPeers();
    EXPECT_EQ(s.ahead, CacheBudget::MAX_AHEAD_BYTES);
    EXPECT_EQ(s.batch, CacheBudget::MAX_BATCH_BYTES);
    EXPECT_EQ(s.sort, 450 * MiB - s.ahead - s.batch * CacheBudget::BATCH_EXPANSION);
    // A small cache fetches a largest block's worth ahead, not the large cache's window.
    EXPECT_EQ(CacheBudget(16 * MiB).SwiftSyncFromPeers().ahead, 4 * MiB);
    EXPECT_EQ(CacheBudget(16 * MiB).SwiftSyncFromPeers().batch, CacheBudget::MIN_BATCH_BYTES);
}

TEST(CacheBudget, SwiftSyncFromFilesGivesTheSortWhatTheWalksBatchLeaves)
{
    EXPECT_EQ(CacheBudget(450 * MiB).SwiftSyncFromFiles().ahead, 0u);
    EXPECT_EQ(CacheBudget(450 * MiB).SwiftSyncFromFiles().sort, (450 - 64) * MiB);
    EXPECT_EQ(CacheBudget(16 * MiB).SwiftSyncFromFiles().sort, CacheBudget::MIN_SORT_BYTES);
}

TEST(CacheBudget, FromMiBCountsMebibytesAndSaturates)
{
    EXPECT_EQ(CacheBudget::FromMiB(0).DbCacheBytes(), 0u);
    EXPECT_EQ(CacheBudget::FromMiB(450).DbCacheBytes(), std::size_t(450) * 1024 * 1024);
    constexpr std::size_t MAX = std::numeric_limits<std::size_t>::max();
    EXPECT_EQ(CacheBudget::FromMiB(MAX >> 20).DbCacheBytes(), (MAX >> 20) << 20);
    EXPECT_EQ(CacheBudget::FromMiB((MAX >> 20) + 1).DbCacheBytes(), MAX);
    EXPECT_EQ(CacheBudget::FromMiB(MAX).DbCacheBytes(), MAX);
}

TEST(CacheBudget, AReaderOfAChainstateGivesLevelDbTheWholeBudget)
{
    const auto o = CoinsDBOptions::ForReading(450, PolicyId::Plain);
    EXPECT_TRUE(o.read_only);
    EXPECT_EQ(o.policy, PolicyId::Plain);
    EXPECT_EQ(o.cache_bytes, CacheBudget::FromMiB(450).DbCacheBytes());
    // Python's `Chainstate(dbcache=...)` once shifted the count itself: a huge count wrapped around.
    EXPECT_EQ(CoinsDBOptions::ForReading(std::numeric_limits<std::size_t>::max(), PolicyId::Plain).cache_bytes,
              std::numeric_limits<std::size_t>::max());
}

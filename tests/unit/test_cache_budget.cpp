// The split of one --dbcache budget (coins/budget.h).
#include "coins/budget.h"

#include <gtest/gtest.h>

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

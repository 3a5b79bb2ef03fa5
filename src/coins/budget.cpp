// The split of one --dbcache budget (coins/budget.h).
#include "coins/budget.h"

#include <ibdkit/primitives/consensus_constants.h>

#include "common/chainstate_format.h"

#include <algorithm>
#include <limits>

namespace ibdkit {

CacheBudget::CacheBudget(std::size_t dbcache_bytes) noexcept : m_dbcache(dbcache_bytes)
{
    constexpr std::size_t MiB = std::size_t(1) << 20;
    m_leveldb = std::clamp(dbcache_bytes / 8, 2 * MiB, 8 * MiB);
    m_coins = dbcache_bytes > m_leveldb ? dbcache_bytes - m_leveldb : 0;
    m_batch = std::clamp(dbcache_bytes / 64, 4 * MiB, 8 * MiB);
}

CacheBudget CacheBudget::FromMiB(std::size_t dbcache_mib) noexcept
{
    constexpr std::size_t MAX_MIB = std::numeric_limits<std::size_t>::max() >> 20;
    return CacheBudget(dbcache_mib > MAX_MIB ? std::numeric_limits<std::size_t>::max() : dbcache_mib << 20);
}

std::size_t CacheBudget::CacheBytesBeside(uint64_t table_disk_bytes) const noexcept
{
    return m_coins - std::min(m_coins / 4 * 3, OpenTablesBytes(table_disk_bytes));
}

namespace {

/// What the blocks in flight leave the sort, at least its floor.
std::size_t SortBeside(std::size_t dbcache, std::size_t in_flight) noexcept
{
    return std::max(CacheBudget::MIN_SORT_BYTES, dbcache > in_flight ? dbcache - in_flight : 0);
}

} // namespace

SwiftSyncShares CacheBudget::SwiftSyncFromPeers() const noexcept
{
    SwiftSyncShares s;
    s.ahead = std::clamp(m_dbcache / 4, std::size_t(MAX_BLOCK_SERIALIZED_SIZE), MAX_AHEAD_BYTES);
    s.batch = std::clamp(m_dbcache / 4 / BATCH_EXPANSION, MIN_BATCH_BYTES, MAX_BATCH_BYTES);
    s.sort = SortBeside(m_dbcache, s.ahead + s.batch * BATCH_EXPANSION);
    return s;
}

SwiftSyncShares CacheBudget::SwiftSyncFromFiles() const noexcept
{
    SwiftSyncShares s;
    s.batch = MAX_BATCH_BYTES;
    s.sort = SortBeside(m_dbcache, s.batch * BATCH_EXPANSION);
    return s;
}

void CacheBudget::ApplyTo(CoinsDBOptions& options) const noexcept
{
    options.cache_bytes = m_leveldb;
    options.batch_write_bytes = m_batch;
}

std::size_t CacheBudget::OpenTablesBytes(uint64_t disk_bytes) noexcept
{
    // Per mille of the tables' bytes: the filters and what a replay adds (deletion markers, a
    // compaction's tables open twice) 21, the index entries 4 at 16 KiB blocks, inversely to size.
    constexpr uint64_t PER_MILLE = 21 + (uint64_t(64) << 10) / TABLE_BLOCK_BYTES;
    return std::size_t(disk_bytes / 1000 * PER_MILLE);
}

} // namespace ibdkit

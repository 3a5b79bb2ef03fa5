// src/coins/budget.h — how one --dbcache budget is spent: the one owner of that split.
//
// A run's memory beside the blocks in flight is LevelDB's (block cache, write buffer, the index
// blocks and Bloom filters of its open tables), the UTXO cache's, and a flush's write batches.
// CacheBudget splits the user's --dbcache between them once (docs/chainstate.md, *The budget*):
// LevelDB's block cache and write buffer get an eighth, at least 2 and at most 8 MiB (Core gives its
// coins database at most 8 MiB); the UTXO cache gets the rest. A flush writes batches of a 64th of
// the budget, 4 to 8 MiB (Core: 16 MiB whatever the budget): a batch passes through LevelDB's
// memtable, and while one memtable is compacted the next fills, and with two threads one batch is
// written while the next is filled, so a flush holds about four batches' worth of bytes beyond
// the cache — a fixed cost the budget's 200 MiB of headroom covers. As the chainstate grows, its
// open tables' memory is taken out of the cache's share (CacheBytesBeside).
//
// A value type: copyable, no state beyond the split, every member safe from any thread.
#pragma once

#include <ibdkit/coins/coins_db.h>

#include <cstddef>
#include <cstdint>

namespace ibdkit {

class CacheBudget {
public:
    /// The split of `dbcache_bytes` (0 is allowed: a cache that flushes after every block).
    explicit CacheBudget(std::size_t dbcache_bytes) noexcept;

    std::size_t DbCacheBytes() const noexcept { return m_dbcache; }
    /// LevelDB's block cache and write buffer (CoinsDBOptions::cache_bytes).
    std::size_t LevelDbBytes() const noexcept { return m_leveldb; }
    /// The UTXO cache's share before the open tables take theirs.
    std::size_t CoinsBytes() const noexcept { return m_coins; }
    /// A flush's write batch (CoinsDBOptions::batch_write_bytes).
    std::size_t BatchBytes() const noexcept { return m_batch; }

    /// The UTXO cache's share once the chainstate's tables take `table_disk_bytes` on disk: the
    /// coins' share less OpenTablesBytes, down to a quarter of that share.
    std::size_t CacheBytesBeside(uint64_t table_disk_bytes) const noexcept;

    /// Sets the database's share of `options` (cache_bytes, batch_write_bytes).
    void ApplyTo(CoinsDBOptions& options) const noexcept;

    /// What LevelDB keeps in memory for the open tables of a chainstate whose records take
    /// `disk_bytes` on disk: each open table's index block (one entry per TABLE_BLOCK_BYTES block) and
    /// Bloom filter (BLOOM_BITS_PER_KEY bits per key, spent coins' deletion markers included), and the
    /// tables a compaction opens before its inputs close — a few percent of the tables' bytes, more
    /// with larger filters (measured with heaptrack: docs/chainstate.md).
    static std::size_t OpenTablesBytes(uint64_t disk_bytes) noexcept;

private:
    std::size_t m_dbcache, m_leveldb, m_coins, m_batch;
};

} // namespace ibdkit

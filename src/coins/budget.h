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

/// A SwiftSync run's split of the budget. Bytes of blocks are counted as they were sent or read,
/// with their spent coins as sent.
struct SwiftSyncShares {
    std::size_t ahead{0}; ///< blocks arrived from peers ahead of the check, with those still asked for
    std::size_t batch{0}; ///< a batch under check stops growing here (it holds ~BATCH_EXPANSION× that)
    std::size_t sort{0};  ///< the sort's buffers
};

class CacheBudget {
public:
    /// The split of `dbcache_bytes` (0 is allowed: a cache that flushes after every block).
    explicit CacheBudget(std::size_t dbcache_bytes) noexcept;
    /// The split of `dbcache_mib` MiB, as --dbcache and every run's `dbcache_mib` give it: the one
    /// place MiB become bytes. A count whose bytes exceed size_t (above 2^44 MiB) gives the largest
    /// size_t rather than wrapping around to a small budget.
    static CacheBudget FromMiB(std::size_t dbcache_mib) noexcept;

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

    /// A batch of blocks under check holds this many times its bytes: the bytes themselves and
    /// their decoded form, ~3.5× (docs/chainstate.md, *The budget*).
    static constexpr std::size_t BATCH_EXPANSION = 4;
    /// The largest batch: enough blocks for every thread between two joins of the pool.
    static constexpr std::size_t MAX_BATCH_BYTES = std::size_t(16) << 20;
    /// The smallest: a block is checked on one thread, so a batch of one block would leave the
    /// others idle; two of today's mainnet blocks with their spent coins (the engine keeps as much
    /// in flight, Pipeline::MAX_BYTES_IN_FLIGHT).
    static constexpr std::size_t MIN_BATCH_BYTES = std::size_t(4) << 20;
    /// The most fetched ahead: on a fast link, enough to keep the check from waiting on a peer's
    /// window; more only holds memory.
    static constexpr std::size_t MAX_AHEAD_BYTES = std::size_t(64) << 20;
    /// The least the sort is given: below it the sort spills many small runs for little memory saved.
    static constexpr std::size_t MIN_SORT_BYTES = std::size_t(16) << 20;

    /// SwiftSync from peers: the blocks ahead get a quarter, at least one largest block (a peer
    /// can always deliver the height the check waits for) and at most MAX_AHEAD_BYTES; a batch with
    /// its decoded form a quarter (its bytes between MIN_BATCH_BYTES and MAX_BATCH_BYTES); the
    /// sort the rest, at least MIN_SORT_BYTES.
    SwiftSyncShares SwiftSyncFromPeers() const noexcept;
    /// SwiftSync from block files: nothing ahead (a batch is read when the last is done), batches of
    /// MAX_BATCH_BYTES whatever the budget (the walk is the hints builder's and the range check's
    /// too), the sort the rest, at least MIN_SORT_BYTES.
    SwiftSyncShares SwiftSyncFromFiles() const noexcept;

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

// src/coins/coins_cache.h — the UTXO cache over the chainstate database, with Bitcoin Core's
// semantics (CCoinsViewCache, coins.cpp) and a memory budget (Core's -dbcache).
//
//  - Entries carry FRESH/DIRTY flags (a map private to the cache, src/coins/coins_map.h). AddCoin marks DIRTY (and FRESH when the
//    parent cannot hold an unspent coin there); SpendCoin drops a FRESH entry and otherwise keeps
//    a spent DIRTY entry so the erase reaches the database; reads fetch through to the database
//    and cache the result.
//  - Memory: DynamicMemoryUsage() counts the bytes the cache really holds: the map's nodes in use,
//    its slot table, the scripts too long to live inline, and the index a flush needs to put the
//    dirty entries in key order (16 bytes an entry of the largest shard, twice: a flush sorts and
//    writes one shard at a time on each of at most two threads, FlushIndexBytes). The same for
//    every thread count, so the cache flushes at the same blocks. The caller asks NeedsFlush()
//    after connecting a block and flushes when the budget is reached.
//  - Flush() writes every dirty entry with Core's protocol (coins/coins_db.h) and empties the
//    cache; Sync() writes and keeps unspent entries; FlushWarm() writes, then keeps only the
//    youngest unspent coins (the ones the next blocks are most likely to spend) within a byte
//    limit — Core empties its cache when it is full, which leaves the next blocks to read back
//    from disk the coins they spend minutes after they were created.
//
//  - Shards: the entries live in SHARDS maps, by the first byte of the txid, so each map holds a
//    contiguous range of the chainstate's keys. Calls on outpoints of different shards (AddCoin,
//    TryAddCoin, HaveCoin, SpendCoin, the prefetch hints, ...) may run on different threads at once — what
//    ConnectBlock does with a TaskRunner; everything else (flushes, the counts) is for one thread
//    while no shard call runs, except that FlushWarm given a TaskRunner spreads its eviction over
//    it, one task per shard.
//
// Errors: a corrupt record met while fetching throws DecodeError (Errc::Corrupt or the decoder's
// code); a LevelDB failure throws StoreError. Flush()/Sync() return a StoreStatus.
#pragma once

#include <ibdkit/coins/coin.h>
#include <ibdkit/coins/coins_db.h>
#include <ibdkit/primitives/hash.h>
#include <ibdkit/primitives/transaction.h>

#include "common/executor.h"
#include "kv/status.h"

#include <array>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>

namespace ibdkit {

class CoinsCache {
public:
    /// Maps the cache is split into (a power of two, at most 256).
    static constexpr std::size_t SHARDS = 8;
    /// The shard of an outpoint: the top bits of its txid's first byte (the first byte of its key).
    static std::size_t ShardOf(const OutPoint& outpoint) noexcept { return std::size_t(outpoint.hash.data()[0]) * SHARDS >> 8; }

    /// `db` must outlive the cache. `budget_bytes` is the dbcache budget for NeedsFlush().
    CoinsCache(CoinsDB& db, std::size_t budget_bytes);
    ~CoinsCache();

    /// The coin at outpoint, fetched from the database if not cached; a spent (null) coin if none.
    /// A copy (Core returns a reference): the cache holds coins in a compact form of its own.
    Coin AccessCoin(const OutPoint& outpoint);
    /// Copy of the unspent coin at outpoint, nullopt if none.
    std::optional<Coin> GetCoin(const OutPoint& outpoint);
    bool HaveCoin(const OutPoint& outpoint);
    bool HaveCoinInCache(const OutPoint& outpoint) const;
    /// Core's AddCoin. Unspendable scripts (OP_RETURN, > MAX_SCRIPT_SIZE) are not added. Without
    /// possible_overwrite, adding over an unspent coin is a logic error (std::logic_error).
    void AddCoin(const OutPoint& outpoint, Coin&& coin, bool possible_overwrite);
    /// AddCoin that returns false (and changes nothing) where AddCoin would throw: for a caller that
    /// adds before it knows whether the transaction is valid (ConnectBlock's parallel part).
    bool TryAddCoin(const OutPoint& outpoint, Coin&& coin, bool possible_overwrite);
    /// Core's SpendCoin. Returns false if there is no unspent coin at outpoint. The spent coin is
    /// moved to *moveout when given.
    bool SpendCoin(const OutPoint& outpoint, Coin* moveout = nullptr);
    /// Drops a non-dirty entry from the cache (no effect on the database).
    void Uncache(const OutPoint& outpoint);
    /// Whether the cache holds an entry for `outpoint` (spent or not); never reads the database.
    bool HasEntry(const OutPoint& outpoint) const;
    /// Memory hints for a coming lookup of `outpoint`: first the slot of its map, a little later the
    /// entry the slot points to. Issued for a whole block before its lookups (ConnectBlock), they
    /// let the cache misses of many coins overlap instead of following one another. Change
    /// nothing; safe beside the operations on other shards.
    void PrefetchSlot(const OutPoint& outpoint) const noexcept;
    void PrefetchNode(const OutPoint& outpoint) const noexcept;
    /// Adds a coin read from the database ahead of time (a prefetch), clean, unless the cache
    /// already holds an entry for it (the cache's entry is newer). The caller guarantees that no
    /// flush happened between the read and this call. Returns whether it was added.
    bool AddFetched(const OutPoint& outpoint, Coin&& coin);
    /// Coins this cache read from the database: on a miss (FetchCoin) or by prefetch (AddFetched).
    uint64_t CoinsReadFromDisk() const noexcept;

    /// The block the cache's state corresponds to (the database's best block until set).
    BlockHash GetBestBlock();
    void SetBestBlock(const BlockHash& hash) { m_best_block = hash; }

    /// Writes all dirty entries and the best block to the database and empties the cache.
    StoreStatus Flush();
    /// Writes all dirty entries, keeps the unspent ones cached (clean).
    StoreStatus Sync();
    /// Writes all dirty entries (as Flush), then drops spent entries and the oldest unspent coins
    /// (lowest creation height) until DynamicMemoryUsage() ≤ keep_bytes. The coins kept are clean:
    /// the database holds them, so a crash loses nothing (the flush protocol is unchanged). With
    /// `runner`, the eviction runs one task per shard on it; the entries kept are the same.
    StoreStatus FlushWarm(std::size_t keep_bytes, const TaskRunner* runner = nullptr);

    std::size_t GetCacheSize() const noexcept;
    std::size_t DirtyCount() const noexcept;
    /// Estimated heap bytes used by the cache.
    std::size_t DynamicMemoryUsage() const noexcept;
    std::size_t Budget() const noexcept { return m_budget; }
    /// Sets the budget, and tells each shard how many entries of the smallest kind it would hold
    /// (CoinsMap::SetSizeHint), so that its slot table ends near its load limit when it is full.
    void SetBudget(std::size_t bytes) noexcept;
    /// True once DynamicMemoryUsage() exceeds the budget.
    bool NeedsFlush() const noexcept { return DynamicMemoryUsage() > m_budget; }

    CoinsDB& db() noexcept { return m_db; }

private:
    /// The map calls in terms of the map's own iterators (src/coins/coins_cache_access.h).
    friend class CoinsCacheAccess;
    /// One map and what is counted of it (src/coins/coins_cache_access.h).
    struct Shard;
    Shard& ShardFor(const OutPoint& outpoint) noexcept;
    const Shard& ShardFor(const OutPoint& outpoint) const noexcept;
    /// Writes every shard's dirty entries (CoinsDB::BatchWrite) (the scripts' count drops to 0 after a full flush).
    StoreStatus Write(bool erase);
    /// Drops clean entries, oldest first, until DynamicMemoryUsage() ≤ keep_bytes.
    void EvictOldest(std::size_t keep_bytes, const TaskRunner* runner);
    /// Packs every shard's nodes and returns the slabs it no longer needs (CoinsMap::Compact), so
    /// that the memory held stays what DynamicMemoryUsage() counts, up to a slab a node size.
    void ReturnFreeNodes(const TaskRunner* runner = nullptr);

    CoinsDB& m_db;
    std::size_t m_budget;
    /// The shards, apart: the map is private to src/coins/, so the public header cannot hold it.
    std::unique_ptr<std::array<Shard, SHARDS>> m_shards;
    BlockHash m_best_block;
};

} // namespace ibdkit

// src/coins/coins_cache_access.h — the cache's calls in terms of its private map (coins_map.h),
// which the public coins_cache.h cannot name: ConnectBlock's check-and-spend with one lookup and
// its memory hints (src/connect/connect.cpp), inline because ConnectBlock makes them per coin.
#pragma once

#include "coins/coins_map.h"

#include <ibdkit/coins/coins_cache.h>

#include <cstddef>
#include <cstdint>

namespace ibdkit {

/// One map and what is counted of it, on a cache line of its own (shards run on different threads).
struct alignas(64) CoinsCache::Shard {
    CoinsMap map;
    std::size_t script_usage{0}; ///< heap bytes of the coins' scripts
    uint64_t coins_read{0};
};

inline CoinsCache::Shard& CoinsCache::ShardFor(const OutPoint& outpoint) noexcept { return (*m_shards)[ShardOf(outpoint)]; }
inline const CoinsCache::Shard& CoinsCache::ShardFor(const OutPoint& outpoint) const noexcept { return (*m_shards)[ShardOf(outpoint)]; }

class CoinsCacheAccess {
public:
    /// The entry for `outpoint`, fetched from the database into the cache on a miss; End() if
    /// the coin exists in neither. For callers that check and then spend with one lookup. Throws
    /// as the cache's reads do (DecodeError, StoreError).
    static CoinsMap::iterator FetchCoin(CoinsCache& cache, const OutPoint& outpoint);
    /// SpendCoin for an entry already found with FetchCoin (no second lookup). Precondition: `it`
    /// holds an unspent coin and was not erased since (inserts do not invalidate it).
    static void SpendCoinAt(CoinsCache& cache, CoinsMap::iterator it, Coin* moveout = nullptr);
    /// The end iterator FetchCoin returns for a missing coin (equal to every shard's end).
    static CoinsMap::iterator End() noexcept { return {}; }
    /// Memory hints for a coming lookup of `outpoint` (CoinsMap::PrefetchSlot, then PrefetchNode
    /// a little later): ConnectBlock issues them for a whole block before its lookups, so that
    /// the cache misses of many coins overlap instead of following one another.
    static void PrefetchSlot(const CoinsCache& cache, const OutPoint& outpoint) noexcept
    {
        cache.ShardFor(outpoint).map.PrefetchSlot(outpoint);
    }
    static void PrefetchNode(const CoinsCache& cache, const OutPoint& outpoint) noexcept
    {
        cache.ShardFor(outpoint).map.PrefetchNode(outpoint);
    }
};

} // namespace ibdkit

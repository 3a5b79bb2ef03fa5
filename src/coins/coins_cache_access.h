// src/coins/coins_cache_access.h (private to src/coins/) — the cache's shards and its calls in
// terms of its private map (coins_map.h), which the public coins_cache.h cannot name: the lookup
// that fetches on a miss and the spend of an entry already found, shared by the cache's reads
// and SpendCoin.
#pragma once

#include "coins/coins_map.h"

#include "coins/coins_cache.h"

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
    /// the coin exists in neither. Throws as the cache's reads do (DecodeError, StoreError).
    static CoinsMap::iterator FetchCoin(CoinsCache& cache, const OutPoint& outpoint);
    /// SpendCoin for an entry already found with FetchCoin (no second lookup). Precondition: `it`
    /// holds an unspent coin and was not erased since (inserts do not invalidate it).
    static void SpendCoinAt(CoinsCache& cache, CoinsMap::iterator it, Coin* moveout = nullptr);
    /// The end iterator FetchCoin returns for a missing coin (equal to every shard's end).
    static CoinsMap::iterator End() noexcept { return {}; }
};

} // namespace ibdkit

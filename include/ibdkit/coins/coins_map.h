// ibdkit/coins/coins_map.h — the cache's map of outpoints to entries with Core's FRESH/DIRTY flags
// (coins.h: CCoinsCacheEntry, CCoinsMap).
#pragma once

#include <ibdkit/coins/coin.h>
#include <ibdkit/primitives/transaction.h>

#include <cstddef>
#include <cstdint>
#include <random>
#include <unordered_map>

namespace ibdkit {

/// A cache entry. DIRTY: differs from the parent view. FRESH: the parent has no unspent coin here
/// (so a FRESH entry that gets spent can simply be dropped).
struct CoinsCacheEntry {
    enum Flags : uint8_t { DIRTY = 1 << 0, FRESH = 1 << 1 };
    Coin coin;
    uint8_t flags{0};

    CoinsCacheEntry() = default;
    explicit CoinsCacheEntry(Coin c) : coin(std::move(c)) {}
    bool IsDirty() const noexcept { return flags & DIRTY; }
    bool IsFresh() const noexcept { return flags & FRESH; }
};

/// Outpoint hasher with a per-process random salt, so txids ground by an attacker do not collide
/// in the table (Core uses salted SipHash; a salted multiply-xorshift is enough for a table).
class SaltedOutPointHasher {
public:
    SaltedOutPointHasher() : m_k0(Salt()), m_k1(Salt() | 1) {}
    std::size_t operator()(const OutPoint& o) const noexcept
    {
        uint64_t h = o.hash.ToUint256().GetUint64(0) ^ m_k0;
        h ^= o.hash.ToUint256().GetUint64(2) + (uint64_t(o.n) << 32);
        h *= m_k1;
        h ^= h >> 29;
        h *= 0xbf58476d1ce4e5b9ULL;
        h ^= h >> 32;
        return std::size_t(h);
    }

private:
    static uint64_t Salt()
    {
        static std::random_device rd;
        return (uint64_t(rd()) << 32) | rd();
    }
    uint64_t m_k0, m_k1;
};

using CoinsMap = std::unordered_map<OutPoint, CoinsCacheEntry, SaltedOutPointHasher>;

} // namespace ibdkit

// An outpoint hasher whose salt an attacker cannot know: for tables keyed by outpoints of blocks
// (the UTXO cache's, SwiftSync's recent coins), where txids ground to collide would make each lookup
// walk a long bucket.
#pragma once

#include <ibdkit/primitives/transaction.h>

#include <cstddef>
#include <cstdint>
#include <random>

namespace ibdkit {

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

} // namespace ibdkit

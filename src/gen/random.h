// src/gen/random.h (internal) — the generator's random source: deterministic from a seed and the
// same sequence on every platform and compiler (integer-only), so a seed names one chain.
#pragma once

#include <algorithm>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstring>

namespace ibdkit::gen {

/// One step of SplitMix64 over the state `x`: seeds Rng, and derives keys from a seed.
inline uint64_t SplitMix64(uint64_t& x) noexcept
{
    uint64_t z = (x += 0x9E3779B97F4A7C15ULL);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
}

/// xoshiro256**: fast, and the same sequence on every platform.
class Rng {
public:
    explicit Rng(uint64_t seed) noexcept
    {
        for (auto& s : m_s) s = SplitMix64(seed);
    }
    uint64_t Next() noexcept
    {
        const uint64_t result = Rotl(m_s[1] * 5, 7) * 9;
        const uint64_t t = m_s[1] << 17;
        m_s[2] ^= m_s[0];
        m_s[3] ^= m_s[1];
        m_s[1] ^= m_s[2];
        m_s[0] ^= m_s[3];
        m_s[2] ^= t;
        m_s[3] = Rotl(m_s[3], 45);
        return result;
    }
    /// Uniform in [0, n) (n > 0), by multiply-shift.
    uint64_t Below(uint64_t n) noexcept { return uint64_t((static_cast<unsigned __int128>(Next()) * n) >> 64); }
    /// Uniform in [lo, hi].
    int64_t Range(int64_t lo, int64_t hi) noexcept { return lo + int64_t(Below(uint64_t(hi - lo) + 1)); }
    /// Roughly log-uniform in [lo, hi] (1 <= lo <= hi): a uniform octave, then uniform inside it.
    /// Integer-only, so the same on every platform.
    uint64_t LogUniform(uint64_t lo, uint64_t hi) noexcept
    {
        const int o_lo = std::bit_width(lo) - 1, o_hi = std::bit_width(hi) - 1;
        const int o = o_lo + int(Below(uint64_t(o_hi - o_lo) + 1));
        const uint64_t a = std::max<uint64_t>(lo, uint64_t(1) << o);
        const uint64_t b = o >= 63 ? hi : std::min<uint64_t>(hi, (uint64_t(2) << o) - 1);
        return a + Below(b - a + 1);
    }
    /// True with probability per_mille / 1000.
    bool Chance(unsigned per_mille) noexcept { return Below(1000) < per_mille; }
    void Fill(uint8_t* p, std::size_t n) noexcept
    {
        while (n) {
            const uint64_t v = Next();
            const std::size_t k = std::min<std::size_t>(n, 8);
            std::memcpy(p, &v, k);
            p += k;
            n -= k;
        }
    }

private:
    static uint64_t Rotl(uint64_t x, int k) noexcept { return (x << k) | (x >> (64 - k)); }
    uint64_t m_s[4];
};

} // namespace ibdkit::gen

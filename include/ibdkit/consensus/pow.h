// ibdkit/consensus/pow.h — 256-bit target arithmetic and the context-free proof-of-work check.
//
// Compact "nBits" decoding follows Core's arith_uint256::SetCompact exactly, including its
// negative and overflow flags; CheckProofOfWork rejects a negative, zero, overflowing or
// above-pow-limit target, then compares the hash (as a little-endian number) with the target.
#pragma once

#include <ibdkit/primitives/hash.h>

#include <array>
#include <cstdint>
#include <optional>
#include <string>

namespace ibdkit {

struct ConsensusParams;

/// Unsigned 256-bit integer (Core's arith_uint256), 32-bit limbs, little-endian limb order.
class arith_uint256 {
public:
    static constexpr int WIDTH = 8;
    constexpr arith_uint256() noexcept = default;
    constexpr arith_uint256(uint64_t v) noexcept : m_pn{uint32_t(v), uint32_t(v >> 32), 0, 0, 0, 0, 0, 0} {}

    /// Decodes a compact target (Core's SetCompact); *negative / *overflow as Core sets them.
    arith_uint256& SetCompact(uint32_t compact, bool* negative = nullptr, bool* overflow = nullptr) noexcept;
    /// Encodes as compact (Core's GetCompact).
    uint32_t GetCompact(bool negative = false) const noexcept;
    /// Position of the highest set bit plus one (0 for zero).
    unsigned bits() const noexcept;
    uint64_t GetLow64() const noexcept { return m_pn[0] | uint64_t(m_pn[1]) << 32; }

    arith_uint256& operator<<=(unsigned shift) noexcept;
    arith_uint256& operator>>=(unsigned shift) noexcept;
    arith_uint256& operator+=(const arith_uint256& b) noexcept;
    arith_uint256& operator-=(const arith_uint256& b) noexcept;
    arith_uint256& operator*=(uint32_t b) noexcept;
    /// Division; division by zero returns zero-divisor handling as Core (throws in Core: here asserts).
    arith_uint256& operator/=(const arith_uint256& b) noexcept;
    arith_uint256 operator~() const noexcept
    {
        arith_uint256 r;
        for (int i = 0; i < WIDTH; ++i) r.m_pn[i] = ~m_pn[i];
        return r;
    }
    friend arith_uint256 operator+(arith_uint256 a, const arith_uint256& b) noexcept { return a += b; }
    friend arith_uint256 operator-(arith_uint256 a, const arith_uint256& b) noexcept { return a -= b; }
    friend arith_uint256 operator/(arith_uint256 a, const arith_uint256& b) noexcept { return a /= b; }
    friend arith_uint256 operator<<(arith_uint256 a, unsigned s) noexcept { return a <<= s; }
    friend arith_uint256 operator>>(arith_uint256 a, unsigned s) noexcept { return a >>= s; }

    int CompareTo(const arith_uint256& b) const noexcept;
    friend bool operator==(const arith_uint256& a, const arith_uint256& b) noexcept { return a.m_pn == b.m_pn; }
    friend bool operator<(const arith_uint256& a, const arith_uint256& b) noexcept { return a.CompareTo(b) < 0; }
    friend bool operator>(const arith_uint256& a, const arith_uint256& b) noexcept { return a.CompareTo(b) > 0; }
    friend bool operator<=(const arith_uint256& a, const arith_uint256& b) noexcept { return a.CompareTo(b) <= 0; }
    friend bool operator>=(const arith_uint256& a, const arith_uint256& b) noexcept { return a.CompareTo(b) >= 0; }

    /// Hex of the number, most significant first (same text as the display form of the uint256).
    std::string GetHex() const;

    friend arith_uint256 UintToArith256(const uint256& a) noexcept;
    friend uint256 ArithToUint256(const arith_uint256& a) noexcept;

private:
    std::array<uint32_t, WIDTH> m_pn{};
};

arith_uint256 UintToArith256(const uint256& a) noexcept;
uint256 ArithToUint256(const arith_uint256& a) noexcept;

/// The target encoded by nBits, or nullopt when negative, zero, overflowing or above pow_limit
/// (Core's DeriveTarget).
std::optional<arith_uint256> DeriveTarget(uint32_t bits, const uint256& pow_limit) noexcept;

/// Whether `hash` satisfies the target in `bits` under `params.pow_limit` (Core's CheckProofOfWork).
bool CheckProofOfWork(const uint256& hash, uint32_t bits, const ConsensusParams& params) noexcept;

/// Work represented by a block with this target: 2^256 / (target + 1) (Core's GetBlockProof);
/// zero for an invalid target.
arith_uint256 GetBlockProof(uint32_t bits) noexcept;

/// Difficulty as `getblock` prints it (relative to the 0x1d00ffff target).
double GetDifficulty(uint32_t bits) noexcept;

} // namespace ibdkit

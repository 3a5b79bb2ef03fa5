// src/crypto/ripemd160.h — RIPEMD-160 and SHA-1, the two older hashes Script still offers
// (OP_RIPEMD160, OP_SHA1, and OP_HASH160 = RIPEMD-160 of SHA-256). Portable code: scripts hash
// short strings, so neither is on a hot path.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

namespace ibdkit {

/// Incremental RIPEMD-160 (Dobbertin, Bosselaers, Preneel 1996). Write any number of times, then
/// Finalize once; Reset before reusing the object after Finalize.
class Ripemd160 {
public:
    static constexpr std::size_t OUTPUT_SIZE = 20;
    Ripemd160() noexcept { Reset(); }
    Ripemd160& Write(std::span<const uint8_t> data) noexcept;
    void Finalize(uint8_t out[OUTPUT_SIZE]) noexcept;
    Ripemd160& Reset() noexcept;

private:
    uint32_t m_state[5];
    uint8_t m_buf[64];
    uint64_t m_bytes{0};
};

/// Incremental SHA-1 (FIPS 180-4), same interface as Ripemd160.
class Sha1 {
public:
    static constexpr std::size_t OUTPUT_SIZE = 20;
    Sha1() noexcept { Reset(); }
    Sha1& Write(std::span<const uint8_t> data) noexcept;
    void Finalize(uint8_t out[OUTPUT_SIZE]) noexcept;
    Sha1& Reset() noexcept;

private:
    uint32_t m_state[5];
    uint8_t m_buf[64];
    uint64_t m_bytes{0};
};

/// RIPEMD-160(SHA-256(data)): Bitcoin's 20-byte key and script hash.
void Hash160(std::span<const uint8_t> data, uint8_t out[20]) noexcept;

} // namespace ibdkit

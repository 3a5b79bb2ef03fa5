// src/common/crc32c.h (internal) — CRC-32C (Castagnoli), the checksum of LevelDB's table blocks and
// log records. x86-64 computes it with SSE 4.2's crc32 instruction and 64-bit ARM (Linux) with the
// CRC32 extension when the CPU has them (several times the speed of a table); other CPUs use a
// slicing-by-8 table.
#pragma once

#include <cstddef>
#include <cstdint>

namespace ibdkit {

/// CRC-32C of `n` bytes, continuing from `crc` (0 to start): Crc32c(Crc32c(0, a), b) == Crc32c(0, a + b).
uint32_t Crc32c(uint32_t crc, const void* data, std::size_t n) noexcept;

/// The table-driven form, whatever the CPU (tests compare the two).
uint32_t Crc32cPortable(uint32_t crc, const void* data, std::size_t n) noexcept;

/// True when Crc32c uses the CPU's instruction.
bool Crc32cAccelerated() noexcept;

/// LevelDB stores a masked CRC (so a CRC of data that embeds CRCs stays well spread):
/// util/crc32c.h's Mask and Unmask.
constexpr uint32_t Crc32cMask(uint32_t crc) noexcept { return ((crc >> 15) | (crc << 17)) + 0xa282ead8u; }
constexpr uint32_t Crc32cUnmask(uint32_t masked) noexcept
{
    const uint32_t rot = masked - 0xa282ead8u;
    return (rot >> 17) | (rot << 15);
}

} // namespace ibdkit

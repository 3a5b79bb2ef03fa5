// CRC-32C: the reflected polynomial 0x82F63B78, initial value and final xor 0xFFFFFFFF.
#include "common/crc32c.h"

#include "common/cpu_features.h"

#include <array>
#include <cstring>

#if defined(__x86_64__)
#include <cpuid.h>
#include <nmmintrin.h>
#elif defined(__aarch64__) && defined(__linux__)
#include <arm_acle.h>
#include <asm/hwcap.h>
#include <sys/auxv.h>
#endif

namespace ibdkit {
namespace {

using Tables = std::array<std::array<uint32_t, 256>, 8>;

constexpr Tables MakeTables()
{
    Tables t{};
    for (uint32_t i = 0; i < 256; ++i) {
        uint32_t c = i;
        for (int k = 0; k < 8; ++k) c = (c & 1) ? (c >> 1) ^ 0x82F63B78u : c >> 1;
        t[0][i] = c;
    }
    // t[k][i]: the CRC of byte i followed by k zero bytes, so eight bytes fold in one step.
    for (uint32_t i = 0; i < 256; ++i) {
        for (std::size_t k = 1; k < 8; ++k) t[k][i] = (t[k - 1][i] >> 8) ^ t[0][t[k - 1][i] & 0xFF];
    }
    return t;
}

constexpr Tables TABLES = MakeTables();

uint64_t Load64(const unsigned char* p) noexcept
{
    uint64_t v;
    std::memcpy(&v, p, 8);
    return v; // little-endian hosts only: the folding below reads the low byte first
}

uint32_t PortableRaw(uint32_t c, const unsigned char* p, std::size_t n) noexcept
{
    if constexpr (__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__) {
        for (; n >= 8; n -= 8, p += 8) {
            const uint64_t v = Load64(p) ^ c;
            c = TABLES[7][v & 0xFF] ^ TABLES[6][(v >> 8) & 0xFF] ^ TABLES[5][(v >> 16) & 0xFF] ^
                TABLES[4][(v >> 24) & 0xFF] ^ TABLES[3][(v >> 32) & 0xFF] ^ TABLES[2][(v >> 40) & 0xFF] ^
                TABLES[1][(v >> 48) & 0xFF] ^ TABLES[0][v >> 56];
        }
    }
    for (; n > 0; --n, ++p) c = TABLES[0][(c ^ *p) & 0xFF] ^ (c >> 8);
    return c;
}

#if defined(__x86_64__) || (defined(__aarch64__) && defined(__linux__))
// The crc32 instruction takes three cycles before its result can feed the next one but starts one
// every cycle, so one chain over a buffer runs at a third of its speed. Long inputs are done in
// groups of three stretches, one chain each, joined by the CRC's linearity:
// raw(c, A‖B) = raw(raw(c, A), zeros(|B|)) ^ raw(0, B), where advancing a register over a fixed
// number of zero bytes is a linear map of its 32 bits, applied as four table lookups. Stretches of
// 256 bytes, then of 32 for what is left (a 16 KiB table block with its trailer: 21 long groups,
// two short ones, 69 bytes on one chain).
using ShiftTables = std::array<std::array<uint32_t, 256>, 4>;

/// The map "advance the register over `stretch` zero bytes": the image of each byte value at each
/// of the register's four byte positions.
constexpr ShiftTables MakeShiftTables(std::size_t stretch)
{
    std::array<uint32_t, 32> bit{}; // image of each single bit
    for (std::size_t j = 0; j < 32; ++j) {
        uint32_t c = uint32_t(1) << j;
        for (std::size_t k = 0; k < stretch; ++k) c = TABLES[0][c & 0xFF] ^ (c >> 8);
        bit[j] = c;
    }
    ShiftTables t{};
    for (std::size_t pos = 0; pos < 4; ++pos) {
        for (uint32_t b = 0; b < 256; ++b) {
            uint32_t image = 0;
            for (std::size_t j = 0; j < 8; ++j) {
                if (b & (1u << j)) image ^= bit[8 * pos + j];
            }
            t[pos][b] = image;
        }
    }
    return t;
}

template <std::size_t STRETCH>
struct Stretch {
    static constexpr ShiftTables SHIFT = MakeShiftTables(STRETCH);
    static constexpr uint32_t Shift(uint32_t c) noexcept
    {
        return SHIFT[0][c & 0xFF] ^ SHIFT[1][(c >> 8) & 0xFF] ^ SHIFT[2][(c >> 16) & 0xFF] ^ SHIFT[3][c >> 24];
    }
#if defined(__x86_64__)
    /// Folds groups of 3 * STRETCH bytes while `n` holds one.
    __attribute__((target("sse4.2"))) static uint32_t Groups(uint32_t c, const unsigned char*& p, std::size_t& n) noexcept
    {
        for (; n >= 3 * STRETCH; n -= 3 * STRETCH, p += 3 * STRETCH) {
            uint64_t a = c, b = 0, d = 0;
            for (std::size_t i = 0; i < STRETCH; i += 8) {
                a = _mm_crc32_u64(a, Load64(p + i));
                b = _mm_crc32_u64(b, Load64(p + STRETCH + i));
                d = _mm_crc32_u64(d, Load64(p + 2 * STRETCH + i));
            }
            c = Shift(Shift(uint32_t(a)) ^ uint32_t(b)) ^ uint32_t(d);
        }
        return c;
    }
#else
    /// The same three chains with ARMv8's crc32cx (latency 2-3 cycles, one a cycle on A72/A76).
    __attribute__((target("+crc"))) static uint32_t Groups(uint32_t c, const unsigned char*& p, std::size_t& n) noexcept
    {
        for (; n >= 3 * STRETCH; n -= 3 * STRETCH, p += 3 * STRETCH) {
            uint32_t a = c, b = 0, d = 0;
            for (std::size_t i = 0; i < STRETCH; i += 8) {
                a = __crc32cd(a, Load64(p + i));
                b = __crc32cd(b, Load64(p + STRETCH + i));
                d = __crc32cd(d, Load64(p + 2 * STRETCH + i));
            }
            c = Shift(Shift(a) ^ b) ^ d;
        }
        return c;
    }
#endif
};
#endif

#if defined(__x86_64__)

__attribute__((target("sse4.2"))) uint32_t Sse42Raw(uint32_t c, const unsigned char* p, std::size_t n) noexcept
{
    c = Stretch<256>::Groups(c, p, n);
    c = Stretch<32>::Groups(c, p, n);
    uint64_t c64 = c;
    for (; n >= 8; n -= 8, p += 8) c64 = _mm_crc32_u64(c64, Load64(p));
    c = uint32_t(c64);
    for (; n > 0; --n, ++p) c = _mm_crc32_u8(c, *p);
    return c;
}

bool HasSse42() noexcept
{
    unsigned a = 0, b = 0, c = 0, d = 0;
    return __get_cpuid(1, &a, &b, &c, &d) && (c & (1u << 20));
}
#elif defined(__aarch64__) && defined(__linux__)
// ARMv8's optional CRC32 extension (every ARMv8.1 core, and the Cortex-A53/A72/A76 of Raspberry
// Pi 3, 4 and 5): crc32cx folds eight bytes like SSE 4.2's crc32, in the same three chains.
__attribute__((target("+crc"))) uint32_t ArmRaw(uint32_t c, const unsigned char* p, std::size_t n) noexcept
{
    c = Stretch<256>::Groups(c, p, n);
    c = Stretch<32>::Groups(c, p, n);
    for (; n >= 8; n -= 8, p += 8) c = __crc32cd(c, Load64(p));
    for (; n > 0; --n, ++p) c = __crc32cb(c, *p);
    return c;
}
#endif

using RawFn = uint32_t (*)(uint32_t, const unsigned char*, std::size_t) noexcept;

RawFn Choose() noexcept
{
    if (CpuFeaturesDisabled()) return PortableRaw;
#if defined(__x86_64__)
    if (HasSse42()) return Sse42Raw;
#elif defined(__aarch64__) && defined(__linux__)
    if (getauxval(AT_HWCAP) & HWCAP_CRC32) return ArmRaw;
#endif
    return PortableRaw;
}

/// Chosen on first use (a namespace-scope pointer could be read by another file's static initialiser
/// before it is set).
RawFn Raw() noexcept
{
    static const RawFn fn = Choose();
    return fn;
}

} // namespace

uint32_t Crc32c(uint32_t crc, const void* data, std::size_t n) noexcept
{
    return ~Raw()(~crc, static_cast<const unsigned char*>(data), n);
}

uint32_t Crc32cPortable(uint32_t crc, const void* data, std::size_t n) noexcept
{
    return ~PortableRaw(~crc, static_cast<const unsigned char*>(data), n);
}

bool Crc32cAccelerated() noexcept { return Raw() != PortableRaw; }

} // namespace ibdkit

// CRC-32C: the reflected polynomial 0x82F63B78, initial value and final xor 0xFFFFFFFF.
#include "common/crc32c.h"

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

#if defined(__x86_64__)
__attribute__((target("sse4.2"))) uint32_t Sse42Raw(uint32_t c, const unsigned char* p, std::size_t n) noexcept
{
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
// Pi 3, 4 and 5): crc32cx folds eight bytes like SSE 4.2's crc32.
__attribute__((target("+crc"))) uint32_t ArmRaw(uint32_t c, const unsigned char* p, std::size_t n) noexcept
{
    for (; n >= 8; n -= 8, p += 8) c = __crc32cd(c, Load64(p));
    for (; n > 0; --n, ++p) c = __crc32cb(c, *p);
    return c;
}
#endif

using RawFn = uint32_t (*)(uint32_t, const unsigned char*, std::size_t) noexcept;

RawFn Choose() noexcept
{
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

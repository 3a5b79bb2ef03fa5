// RIPEMD-160 and SHA-1 (include/ibdkit/crypto/ripemd160.h): one 64-byte block at a time, written
// from the algorithms' specifications. Both share the Merkle–Damgård buffering below; only the
// byte order of words and of the length differs (RIPEMD little-endian, SHA-1 big-endian).
#include "crypto/ripemd160.h"

#include <ibdkit/crypto/sha256.h>

#include <cstring>

namespace ibdkit {

namespace {

inline uint32_t Rol(uint32_t v, unsigned c) noexcept { return (v << c) | (v >> (32 - c)); }
inline uint32_t LoadLe(const uint8_t* p) noexcept
{
    return uint32_t(p[0]) | uint32_t(p[1]) << 8 | uint32_t(p[2]) << 16 | uint32_t(p[3]) << 24;
}
inline uint32_t LoadBe(const uint8_t* p) noexcept
{
    return uint32_t(p[3]) | uint32_t(p[2]) << 8 | uint32_t(p[1]) << 16 | uint32_t(p[0]) << 24;
}

// ---- RIPEMD-160 --------------------------------------------------------------------------------

// Message word order, rotation amounts and constants of the two lines, per round of 16 steps.
constexpr uint8_t RMD_WORD_L[80] = {
    0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15,
    7, 4, 13, 1, 10, 6, 15, 3, 12, 0, 9, 5, 2, 14, 11, 8,
    3, 10, 14, 4, 9, 15, 8, 1, 2, 7, 0, 6, 13, 11, 5, 12,
    1, 9, 11, 10, 0, 8, 12, 4, 13, 3, 7, 15, 14, 5, 6, 2,
    4, 0, 5, 9, 7, 12, 2, 10, 14, 1, 3, 8, 11, 6, 15, 13};
constexpr uint8_t RMD_WORD_R[80] = {
    5, 14, 7, 0, 9, 2, 11, 4, 13, 6, 15, 8, 1, 10, 3, 12,
    6, 11, 3, 7, 0, 13, 5, 10, 14, 15, 8, 12, 4, 9, 1, 2,
    15, 5, 1, 3, 7, 14, 6, 9, 11, 8, 12, 2, 10, 0, 4, 13,
    8, 6, 4, 1, 3, 11, 15, 0, 5, 12, 2, 13, 9, 7, 10, 14,
    12, 15, 10, 4, 1, 5, 8, 7, 6, 2, 13, 14, 0, 3, 9, 11};
constexpr uint8_t RMD_ROT_L[80] = {
    11, 14, 15, 12, 5, 8, 7, 9, 11, 13, 14, 15, 6, 7, 9, 8,
    7, 6, 8, 13, 11, 9, 7, 15, 7, 12, 15, 9, 11, 7, 13, 12,
    11, 13, 6, 7, 14, 9, 13, 15, 14, 8, 13, 6, 5, 12, 7, 5,
    11, 12, 14, 15, 14, 15, 9, 8, 9, 14, 5, 6, 8, 6, 5, 12,
    9, 15, 5, 11, 6, 8, 13, 12, 5, 12, 13, 14, 11, 8, 5, 6};
constexpr uint8_t RMD_ROT_R[80] = {
    8, 9, 9, 11, 13, 15, 15, 5, 7, 7, 8, 11, 14, 14, 12, 6,
    9, 13, 15, 7, 12, 8, 9, 11, 7, 7, 12, 7, 6, 15, 13, 11,
    9, 7, 15, 11, 8, 6, 6, 14, 12, 13, 5, 14, 13, 13, 7, 5,
    15, 5, 8, 11, 14, 14, 6, 14, 6, 9, 12, 9, 12, 5, 15, 8,
    8, 5, 12, 9, 12, 5, 14, 6, 8, 13, 6, 5, 15, 13, 11, 11};
constexpr uint32_t RMD_K_L[5] = {0x00000000, 0x5A827999, 0x6ED9EBA1, 0x8F1BBCDC, 0xA953FD4E};
constexpr uint32_t RMD_K_R[5] = {0x50A28BE6, 0x5C4DD124, 0x6D703EF3, 0x7A6D76E9, 0x00000000};

// The five boolean functions; the left line uses them in order 0..4, the right line 4..0.
inline uint32_t RmdF(unsigned i, uint32_t x, uint32_t y, uint32_t z) noexcept
{
    switch (i) {
    case 0: return x ^ y ^ z;
    case 1: return (x & y) | (~x & z);
    case 2: return (x | ~y) ^ z;
    case 3: return (x & z) | (y & ~z);
    default: return x ^ (y | ~z);
    }
}

void RmdBlock(uint32_t s[5], const uint8_t* block) noexcept
{
    uint32_t x[16];
    for (int i = 0; i < 16; ++i) x[i] = LoadLe(block + 4 * i);
    uint32_t al = s[0], bl = s[1], cl = s[2], dl = s[3], el = s[4];
    uint32_t ar = al, br = bl, cr = cl, dr = dl, er = el;
    for (unsigned j = 0; j < 80; ++j) {
        const unsigned round = j / 16;
        uint32_t t = Rol(al + RmdF(round, bl, cl, dl) + x[RMD_WORD_L[j]] + RMD_K_L[round], RMD_ROT_L[j]) + el;
        al = el;
        el = dl;
        dl = Rol(cl, 10);
        cl = bl;
        bl = t;
        t = Rol(ar + RmdF(4 - round, br, cr, dr) + x[RMD_WORD_R[j]] + RMD_K_R[round], RMD_ROT_R[j]) + er;
        ar = er;
        er = dr;
        dr = Rol(cr, 10);
        cr = br;
        br = t;
    }
    const uint32_t t = s[1] + cl + dr;
    s[1] = s[2] + dl + er;
    s[2] = s[3] + el + ar;
    s[3] = s[4] + al + br;
    s[4] = s[0] + bl + cr;
    s[0] = t;
}

// ---- SHA-1 -------------------------------------------------------------------------------------

void Sha1Block(uint32_t s[5], const uint8_t* block) noexcept
{
    uint32_t w[80];
    for (int i = 0; i < 16; ++i) w[i] = LoadBe(block + 4 * i);
    for (int i = 16; i < 80; ++i) w[i] = Rol(w[i - 3] ^ w[i - 8] ^ w[i - 14] ^ w[i - 16], 1);
    uint32_t a = s[0], b = s[1], c = s[2], d = s[3], e = s[4];
    for (int i = 0; i < 80; ++i) {
        uint32_t f, k;
        if (i < 20) {
            f = (b & c) | (~b & d);
            k = 0x5A827999;
        } else if (i < 40) {
            f = b ^ c ^ d;
            k = 0x6ED9EBA1;
        } else if (i < 60) {
            f = (b & c) | (b & d) | (c & d);
            k = 0x8F1BBCDC;
        } else {
            f = b ^ c ^ d;
            k = 0xCA62C1D6;
        }
        const uint32_t t = Rol(a, 5) + f + e + k + w[i];
        e = d;
        d = c;
        c = Rol(b, 30);
        b = a;
        a = t;
    }
    s[0] += a;
    s[1] += b;
    s[2] += c;
    s[3] += d;
    s[4] += e;
}

// Buffers input into 64-byte blocks for `compress`.
template <typename F>
void Absorb(uint32_t state[5], uint8_t buf[64], uint64_t& bytes, std::span<const uint8_t> data, F compress) noexcept
{
    std::size_t fill = std::size_t(bytes % 64);
    bytes += data.size();
    std::size_t i = 0;
    if (fill) {
        const std::size_t take = std::min<std::size_t>(64 - fill, data.size());
        std::memcpy(buf + fill, data.data(), take);
        i = take;
        if (fill + take < 64) return;
        compress(state, buf);
    }
    for (; i + 64 <= data.size(); i += 64) compress(state, data.data() + i);
    if (i < data.size()) std::memcpy(buf, data.data() + i, data.size() - i);
}

// Pads (0x80, zeros, the bit length in 8 bytes of the given byte order) and compresses the rest.
template <typename F>
void Pad(uint32_t state[5], uint8_t buf[64], uint64_t bytes, bool big_endian, F compress) noexcept
{
    std::size_t fill = std::size_t(bytes % 64);
    buf[fill++] = 0x80;
    if (fill > 56) {
        std::memset(buf + fill, 0, 64 - fill);
        compress(state, buf);
        fill = 0;
    }
    std::memset(buf + fill, 0, 56 - fill);
    const uint64_t bits = bytes * 8;
    for (int i = 0; i < 8; ++i) buf[56 + i] = uint8_t(bits >> (big_endian ? 8 * (7 - i) : 8 * i));
    compress(state, buf);
}

} // namespace

Ripemd160& Ripemd160::Reset() noexcept
{
    m_state[0] = 0x67452301;
    m_state[1] = 0xEFCDAB89;
    m_state[2] = 0x98BADCFE;
    m_state[3] = 0x10325476;
    m_state[4] = 0xC3D2E1F0;
    m_bytes = 0;
    return *this;
}

Ripemd160& Ripemd160::Write(std::span<const uint8_t> data) noexcept
{
    Absorb(m_state, m_buf, m_bytes, data, RmdBlock);
    return *this;
}

void Ripemd160::Finalize(uint8_t out[OUTPUT_SIZE]) noexcept
{
    Pad(m_state, m_buf, m_bytes, false, RmdBlock);
    for (int i = 0; i < 5; ++i) {
        for (int j = 0; j < 4; ++j) out[4 * i + j] = uint8_t(m_state[i] >> (8 * j));
    }
}

Sha1& Sha1::Reset() noexcept
{
    m_state[0] = 0x67452301;
    m_state[1] = 0xEFCDAB89;
    m_state[2] = 0x98BADCFE;
    m_state[3] = 0x10325476;
    m_state[4] = 0xC3D2E1F0;
    m_bytes = 0;
    return *this;
}

Sha1& Sha1::Write(std::span<const uint8_t> data) noexcept
{
    Absorb(m_state, m_buf, m_bytes, data, Sha1Block);
    return *this;
}

void Sha1::Finalize(uint8_t out[OUTPUT_SIZE]) noexcept
{
    Pad(m_state, m_buf, m_bytes, true, Sha1Block);
    for (int i = 0; i < 5; ++i) {
        for (int j = 0; j < 4; ++j) out[4 * i + j] = uint8_t(m_state[i] >> (8 * (3 - j)));
    }
}

void Hash160(std::span<const uint8_t> data, uint8_t out[20]) noexcept
{
    uint8_t sha[32];
    Sha256().Write(data).Finalize(sha);
    Ripemd160().Write(std::span<const uint8_t>(sha, 32)).Finalize(out);
}

} // namespace ibdkit

// Portable SHA-256 back-end: plain C++, any CPU. The reference the SIMD back-ends are tested against.
#include "crypto/sha256_internal.h"

namespace ibdkit::sha256_detail::portable {
namespace {

inline uint32_t ReadBE32(const uint8_t* p)
{
    return uint32_t(p[0]) << 24 | uint32_t(p[1]) << 16 | uint32_t(p[2]) << 8 | uint32_t(p[3]);
}
inline void WriteBE32(uint8_t* p, uint32_t x)
{
    p[0] = uint8_t(x >> 24);
    p[1] = uint8_t(x >> 16);
    p[2] = uint8_t(x >> 8);
    p[3] = uint8_t(x);
}

inline uint32_t Ch(uint32_t x, uint32_t y, uint32_t z) { return z ^ (x & (y ^ z)); }
inline uint32_t Maj(uint32_t x, uint32_t y, uint32_t z) { return (x & y) | (z & (x | y)); }
inline uint32_t BigSigma0(uint32_t x) { return RotR(x, 2) ^ RotR(x, 13) ^ RotR(x, 22); }
inline uint32_t BigSigma1(uint32_t x) { return RotR(x, 6) ^ RotR(x, 11) ^ RotR(x, 25); }

// One round; the caller rotates the roles of the eight working variables.
inline void Round(uint32_t a, uint32_t b, uint32_t c, uint32_t& d, uint32_t e, uint32_t f, uint32_t g,
                  uint32_t& h, uint32_t wk)
{
    const uint32_t t1 = h + BigSigma1(e) + Ch(e, f, g) + wk;
    const uint32_t t2 = BigSigma0(a) + Maj(a, b, c);
    d += t1;
    h = t1 + t2;
}

// 64 rounds on s[8] (feed-forward included). wk(t) yields W[t] + K[t].
template <typename WK>
inline void Rounds(uint32_t* s, WK&& wk)
{
    uint32_t a = s[0], b = s[1], c = s[2], d = s[3], e = s[4], f = s[5], g = s[6], h = s[7];
    for (int t = 0; t < 64; t += 8) {
        Round(a, b, c, d, e, f, g, h, wk(t + 0));
        Round(h, a, b, c, d, e, f, g, wk(t + 1));
        Round(g, h, a, b, c, d, e, f, wk(t + 2));
        Round(f, g, h, a, b, c, d, e, wk(t + 3));
        Round(e, f, g, h, a, b, c, d, wk(t + 4));
        Round(d, e, f, g, h, a, b, c, wk(t + 5));
        Round(c, d, e, f, g, h, a, b, wk(t + 6));
        Round(b, c, d, e, f, g, h, a, wk(t + 7));
    }
    s[0] += a, s[1] += b, s[2] += c, s[3] += d, s[4] += e, s[5] += f, s[6] += g, s[7] += h;
}

// Compresses one block given as 16 message words (w is used as the rolling schedule).
inline void CompressWords(uint32_t* s, uint32_t* w)
{
    Rounds(s, [w](int t) {
        if (t >= 16) {
            w[t & 15] += SmallSigma1(w[(t - 2) & 15]) + w[(t - 7) & 15] + SmallSigma0(w[(t - 15) & 15]);
        }
        return w[t & 15] + K[t];
    });
}

inline void D64One(uint8_t* out, const uint8_t* in)
{
    uint32_t w[16];
    for (int i = 0; i < 16; ++i) w[i] = ReadBE32(in + 4 * i);
    uint32_t s[8];
    for (int i = 0; i < 8; ++i) s[i] = IV[i];
    CompressWords(s, w);
    Rounds(s, [](int t) { return PAD64_WK[t]; });
    for (int i = 0; i < 8; ++i) w[i] = s[i];
    for (int i = 0; i < 8; ++i) w[8 + i] = PAD32_TAIL[i];
    for (int i = 0; i < 8; ++i) s[i] = IV[i];
    CompressWords(s, w);
    for (int i = 0; i < 8; ++i) WriteBE32(out + 4 * i, s[i]);
}

} // namespace

void Transform(uint32_t* state, const uint8_t* chunk, std::size_t blocks) noexcept
{
    for (; blocks; --blocks, chunk += 64) {
        uint32_t w[16];
        for (int i = 0; i < 16; ++i) w[i] = ReadBE32(chunk + 4 * i);
        CompressWords(state, w);
    }
}

void D64(uint8_t* out, const uint8_t* in, std::size_t blocks) noexcept
{
    for (; blocks; --blocks, in += 64, out += 32) D64One(out, in);
}

void StepX1(uint32_t* state, const uint8_t* const* blocks, std::size_t n) noexcept { Transform(state, blocks[0], n); }

} // namespace ibdkit::sha256_detail::portable

// AVX-512 back-end: SHA256d of 16 independent 64-byte inputs at once, one input per 32-bit lane.
//
// The rounds of sha256_x86_lanes.h, as the AVX2 back-end's, with twice the lanes, native rotates
// (vprord) and three-input logic (vpternlogd) for Ch, Maj and the three-way XORs of the sigma
// functions. Only AVX-512F is required; loads and stores go through AVX2 8x8 transposes, one per
// half.
#include "crypto/sha256_internal.h"

#if IBDKIT_SHA256_X86

#if defined(__GNUC__) && !defined(__clang__)
// GCC 12's avx512fintrin.h fills "don't care" operands with a self-initialized variable
// (_mm512_undefined_epi32), which -Wuninitialized reports inside _mm512_ror_epi32 and friends.
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
#include <immintrin.h>

#include <utility>

#define IBDKIT_AVX512_FN __attribute__((target("avx512f,avx2")))
#define IBDKIT_LANES_INLINE __attribute__((target("avx512f,avx2"), always_inline)) inline

namespace ibdkit::sha256_detail::avx512 {
namespace {

using V = __m512i;
using H = __m256i;

IBDKIT_LANES_INLINE V Set1(uint32_t x) { return _mm512_set1_epi32(int(x)); }
IBDKIT_LANES_INLINE V Add(V x, V y) { return _mm512_add_epi32(x, y); }
// vpternlogd truth tables: bit (a<<2 | b<<1 | c) of the immediate is f(a, b, c).
IBDKIT_LANES_INLINE V Xor3(V x, V y, V z) { return _mm512_ternarylogic_epi32(x, y, z, 0x96); }
IBDKIT_LANES_INLINE V Ch(V e, V f, V g) { return _mm512_ternarylogic_epi32(e, f, g, 0xCA); }
IBDKIT_LANES_INLINE V Maj(V a, V b, V c) { return _mm512_ternarylogic_epi32(a, b, c, 0xE8); }
IBDKIT_LANES_INLINE V BigSigma0(V x) { return Xor3(_mm512_ror_epi32(x, 2), _mm512_ror_epi32(x, 13), _mm512_ror_epi32(x, 22)); }
IBDKIT_LANES_INLINE V BigSigma1(V x) { return Xor3(_mm512_ror_epi32(x, 6), _mm512_ror_epi32(x, 11), _mm512_ror_epi32(x, 25)); }
IBDKIT_LANES_INLINE V SmallSigma0(V x) { return Xor3(_mm512_ror_epi32(x, 7), _mm512_ror_epi32(x, 18), _mm512_srli_epi32(x, 3)); }
IBDKIT_LANES_INLINE V SmallSigma1(V x) { return Xor3(_mm512_ror_epi32(x, 17), _mm512_ror_epi32(x, 19), _mm512_srli_epi32(x, 10)); }

#include "crypto/sha256_x86_lanes.h"

IBDKIT_LANES_INLINE V Join(H lo, H hi) { return _mm512_inserti64x4(_mm512_castsi256_si512(lo), hi, 1); }

// The 16 words of 16 blocks (lanes 0-7 at lo[j] + offset, 8-15 at hi[j] + offset) into st.w.
IBDKIT_LANES_INLINE void LoadWords16(State& st, const uint8_t* const* lo, const uint8_t* const* hi, std::size_t offset)
{
    for (int half = 0; half < 2; ++half) {
        H l[8], h[8];
        LoadWords8(l, lo, offset, half);
        LoadWords8(h, hi, offset, half);
        IBDKIT_UNROLL for (int i = 0; i < 8; ++i) st.w[8 * half + i] = Join(l[i], h[i]);
    }
}

} // namespace

IBDKIT_AVX512_FN void D64x16(uint8_t* out, const uint8_t* in) noexcept
{
    const uint8_t* inputs[16];
    IBDKIT_UNROLL for (int j = 0; j < 16; ++j) inputs[j] = in + 64 * j;
    State st;
    LoadWords16(st, inputs, inputs + 8, 0);
    Double64(st);
    H lo[8], hi[8];
    IBDKIT_UNROLL for (int i = 0; i < 8; ++i) {
        lo[i] = ByteSwap(_mm512_castsi512_si256(st.s[i]));
        hi[i] = ByteSwap(_mm512_extracti64x4_epi64(st.s[i], 1));
    }
    Transpose8(lo);
    Transpose8(hi);
    IBDKIT_UNROLL for (int j = 0; j < 8; ++j) {
        _mm256_storeu_si256(reinterpret_cast<H*>(out + 32 * j), lo[j]);
        _mm256_storeu_si256(reinterpret_cast<H*>(out + 256 + 32 * j), hi[j]);
    }
}

IBDKIT_AVX512_FN void StepX16(uint32_t* state, const uint8_t* const* blocks, std::size_t n) noexcept
{
    for (std::size_t b = 0; b < n; ++b) {
        State st;
        LoadWords16(st, blocks, blocks + 8, 64 * b);
        IBDKIT_UNROLL for (int i = 0; i < 8; ++i) st.s[i] = _mm512_load_si512(state + 16 * i);
        Compress(st);
        // Feed-forward from memory: keeping the old state in registers would spill the schedule.
        IBDKIT_UNROLL for (int i = 0; i < 8; ++i) _mm512_store_si512(state + 16 * i, Add(st.s[i], _mm512_load_si512(state + 16 * i)));
    }
}

} // namespace ibdkit::sha256_detail::avx512

#endif // IBDKIT_SHA256_X86

// AVX2 back-end: SHA256d of 8 independent 64-byte inputs at once, one input per 32-bit lane.
//
// Used for merkle trees, where thousands of independent 64-byte inputs wait. Inputs are loaded
// with two 8x8 word transposes (no scalar gathers) and digests are stored the same way. The rounds
// are those of sha256_x86_lanes.h, here over 256-bit vectors.
#include "crypto/sha256_internal.h"

#if IBDKIT_SHA256_X86

#include <immintrin.h>

#include <utility>

#define IBDKIT_AVX2_FN __attribute__((target("avx2")))
#define IBDKIT_LANES_INLINE __attribute__((target("avx2"), always_inline)) inline

namespace ibdkit::sha256_detail::avx2 {
namespace {

using V = __m256i;

IBDKIT_LANES_INLINE V Set1(uint32_t x) { return _mm256_set1_epi32(int(x)); }
IBDKIT_LANES_INLINE V Add(V x, V y) { return _mm256_add_epi32(x, y); }
IBDKIT_LANES_INLINE V Xor(V x, V y) { return _mm256_xor_si256(x, y); }
IBDKIT_LANES_INLINE V And(V x, V y) { return _mm256_and_si256(x, y); }
IBDKIT_LANES_INLINE V Or(V x, V y) { return _mm256_or_si256(x, y); }
template <int R>
IBDKIT_LANES_INLINE V Ror(V x)
{
    return _mm256_or_si256(_mm256_srli_epi32(x, R), _mm256_slli_epi32(x, 32 - R));
}
IBDKIT_LANES_INLINE V Ch(V e, V f, V g) { return Xor(g, And(e, Xor(f, g))); }
IBDKIT_LANES_INLINE V Maj(V a, V b, V c) { return Or(And(a, b), And(c, Or(a, b))); }
IBDKIT_LANES_INLINE V BigSigma0(V x) { return Xor(Xor(Ror<2>(x), Ror<13>(x)), Ror<22>(x)); }
IBDKIT_LANES_INLINE V BigSigma1(V x) { return Xor(Xor(Ror<6>(x), Ror<11>(x)), Ror<25>(x)); }
IBDKIT_LANES_INLINE V SmallSigma0(V x) { return Xor(Xor(Ror<7>(x), Ror<18>(x)), _mm256_srli_epi32(x, 3)); }
IBDKIT_LANES_INLINE V SmallSigma1(V x) { return Xor(Xor(Ror<17>(x), Ror<19>(x)), _mm256_srli_epi32(x, 10)); }

#include "crypto/sha256_x86_lanes.h"

} // namespace

IBDKIT_AVX2_FN void D64x8(uint8_t* out, const uint8_t* in) noexcept
{
    const uint8_t* inputs[8];
    IBDKIT_UNROLL for (int j = 0; j < 8; ++j) inputs[j] = in + 64 * j;
    State st;
    for (int half = 0; half < 2; ++half) {
        V w[8];
        LoadWords8(w, inputs, 0, half);
        IBDKIT_UNROLL for (int i = 0; i < 8; ++i) st.w[8 * half + i] = w[i];
    }
    Double64(st);
    V r[8];
    IBDKIT_UNROLL for (int i = 0; i < 8; ++i) r[i] = ByteSwap(st.s[i]);
    Transpose8(r);
    IBDKIT_UNROLL for (int j = 0; j < 8; ++j) _mm256_storeu_si256(reinterpret_cast<V*>(out + 32 * j), r[j]);
}

IBDKIT_AVX2_FN void StepX8(uint32_t* state, const uint8_t* const* blocks, std::size_t n) noexcept
{
    for (std::size_t b = 0; b < n; ++b) {
        State st;
        for (int half = 0; half < 2; ++half) {
            V w[8];
            LoadWords8(w, blocks, 64 * b, half);
            IBDKIT_UNROLL for (int i = 0; i < 8; ++i) st.w[8 * half + i] = w[i];
        }
        V* sv = reinterpret_cast<V*>(state);
        IBDKIT_UNROLL for (int i = 0; i < 8; ++i) st.s[i] = _mm256_load_si256(sv + i);
        Compress(st);
        IBDKIT_UNROLL for (int i = 0; i < 8; ++i) _mm256_store_si256(sv + i, Add(st.s[i], _mm256_load_si256(sv + i)));
    }
}

} // namespace ibdkit::sha256_detail::avx2

#endif // IBDKIT_SHA256_X86

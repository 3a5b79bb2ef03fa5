// AVX2 back-end: SHA256d of 8 independent 64-byte inputs at once, one input per 32-bit lane.
//
// Used for merkle trees, where thousands of independent 64-byte inputs wait. Inputs are loaded
// with two 8x8 word transposes (no scalar gathers) and digests are stored the same way.
#include "crypto/sha256_internal.h"

#if IBDKIT_SHA256_X86

#include <immintrin.h>

#include <utility>

#define IBDKIT_AVX2_FN __attribute__((target("avx2")))
#define IBDKIT_AVX2_INLINE __attribute__((target("avx2"), always_inline)) inline
#define IBDKIT_UNROLL _Pragma("GCC unroll 16")

namespace ibdkit::sha256_detail::avx2 {
namespace {

using V = __m256i;

IBDKIT_AVX2_INLINE V Set1(uint32_t x) { return _mm256_set1_epi32(int(x)); }
IBDKIT_AVX2_INLINE V Add(V x, V y) { return _mm256_add_epi32(x, y); }
IBDKIT_AVX2_INLINE V Xor(V x, V y) { return _mm256_xor_si256(x, y); }
IBDKIT_AVX2_INLINE V And(V x, V y) { return _mm256_and_si256(x, y); }
IBDKIT_AVX2_INLINE V Or(V x, V y) { return _mm256_or_si256(x, y); }
template <int R>
IBDKIT_AVX2_INLINE V Ror(V x)
{
    return _mm256_or_si256(_mm256_srli_epi32(x, R), _mm256_slli_epi32(x, 32 - R));
}
IBDKIT_AVX2_INLINE V Ch(V e, V f, V g) { return Xor(g, And(e, Xor(f, g))); }
IBDKIT_AVX2_INLINE V Maj(V a, V b, V c) { return Or(And(a, b), And(c, Or(a, b))); }
IBDKIT_AVX2_INLINE V BigSigma0(V x) { return Xor(Xor(Ror<2>(x), Ror<13>(x)), Ror<22>(x)); }
IBDKIT_AVX2_INLINE V BigSigma1(V x) { return Xor(Xor(Ror<6>(x), Ror<11>(x)), Ror<25>(x)); }
IBDKIT_AVX2_INLINE V SmallSigma0(V x) { return Xor(Xor(Ror<7>(x), Ror<18>(x)), _mm256_srli_epi32(x, 3)); }
IBDKIT_AVX2_INLINE V SmallSigma1(V x) { return Xor(Xor(Ror<17>(x), Ror<19>(x)), _mm256_srli_epi32(x, 10)); }

IBDKIT_AVX2_INLINE V ByteSwap(V x)
{
    const V mask = _mm256_set_epi8(12, 13, 14, 15, 8, 9, 10, 11, 4, 5, 6, 7, 0, 1, 2, 3,
                                   12, 13, 14, 15, 8, 9, 10, 11, 4, 5, 6, 7, 0, 1, 2, 3);
    return _mm256_shuffle_epi8(x, mask);
}

// Transposes an 8x8 matrix of 32-bit words held as 8 row vectors.
IBDKIT_AVX2_INLINE void Transpose8(V (&r)[8])
{
    const V t0 = _mm256_unpacklo_epi32(r[0], r[1]), t1 = _mm256_unpackhi_epi32(r[0], r[1]);
    const V t2 = _mm256_unpacklo_epi32(r[2], r[3]), t3 = _mm256_unpackhi_epi32(r[2], r[3]);
    const V t4 = _mm256_unpacklo_epi32(r[4], r[5]), t5 = _mm256_unpackhi_epi32(r[4], r[5]);
    const V t6 = _mm256_unpacklo_epi32(r[6], r[7]), t7 = _mm256_unpackhi_epi32(r[6], r[7]);
    const V u0 = _mm256_unpacklo_epi64(t0, t2), u1 = _mm256_unpackhi_epi64(t0, t2);
    const V u2 = _mm256_unpacklo_epi64(t1, t3), u3 = _mm256_unpackhi_epi64(t1, t3);
    const V u4 = _mm256_unpacklo_epi64(t4, t6), u5 = _mm256_unpackhi_epi64(t4, t6);
    const V u6 = _mm256_unpacklo_epi64(t5, t7), u7 = _mm256_unpackhi_epi64(t5, t7);
    r[0] = _mm256_permute2x128_si256(u0, u4, 0x20);
    r[1] = _mm256_permute2x128_si256(u1, u5, 0x20);
    r[2] = _mm256_permute2x128_si256(u2, u6, 0x20);
    r[3] = _mm256_permute2x128_si256(u3, u7, 0x20);
    r[4] = _mm256_permute2x128_si256(u0, u4, 0x31);
    r[5] = _mm256_permute2x128_si256(u1, u5, 0x31);
    r[6] = _mm256_permute2x128_si256(u2, u6, 0x31);
    r[7] = _mm256_permute2x128_si256(u3, u7, 0x31);
}

// Words [8*half, 8*half+8) of the 8 inputs, one word index per vector, one input per lane.
IBDKIT_AVX2_INLINE void LoadWords(V* w, const uint8_t* in, int half)
{
    V r[8];
    IBDKIT_UNROLL for (int j = 0; j < 8; ++j) r[j] = _mm256_loadu_si256(reinterpret_cast<const V*>(in + 64 * j + 32 * half));
    Transpose8(r);
    IBDKIT_UNROLL for (int i = 0; i < 8; ++i) w[i] = ByteSwap(r[i]);
}

struct State {
    V s[8]; // working variables; round T uses s[(0 - T) & 7] as a, s[(1 - T) & 7] as b, …
    V w[16];
};

template <int T>
IBDKIT_AVX2_INLINE void Round(State& st, V wk)
{
    V* s = st.s;
    V& a = s[(8 - T % 8) % 8];
    V& b = s[(9 - T % 8) % 8];
    V& c = s[(10 - T % 8) % 8];
    V& d = s[(11 - T % 8) % 8];
    V& e = s[(12 - T % 8) % 8];
    V& f = s[(13 - T % 8) % 8];
    V& g = s[(14 - T % 8) % 8];
    V& h = s[(15 - T % 8) % 8];
    const V t1 = Add(Add(h, BigSigma1(e)), Add(Ch(e, f, g), wk));
    const V t2 = Add(BigSigma0(a), Maj(a, b, c));
    d = Add(d, t1);
    h = Add(t1, t2);
}

// Round T with message expansion from st.w.
template <int T>
IBDKIT_AVX2_INLINE void MsgRound(State& st)
{
    V* w = st.w;
    if constexpr (T >= 16) {
        w[T & 15] = Add(Add(w[T & 15], SmallSigma1(w[(T - 2) & 15])), Add(w[(T - 7) & 15], SmallSigma0(w[(T - 15) & 15])));
    }
    Round<T>(st, Add(w[T & 15], Set1(K[T])));
}

template <int... T>
IBDKIT_AVX2_INLINE void MsgRounds(State& st, std::integer_sequence<int, T...>)
{
    (MsgRound<T>(st), ...);
}

template <int... T>
IBDKIT_AVX2_INLINE void ConstRounds(State& st, std::integer_sequence<int, T...>)
{
    (Round<T>(st, Set1(PAD64_WK[T])), ...);
}

IBDKIT_AVX2_INLINE void SetIv(State& st)
{
    IBDKIT_UNROLL for (int i = 0; i < 8; ++i) st.s[i] = Set1(IV[i]);
}

} // namespace

IBDKIT_AVX2_FN void D64x8(uint8_t* out, const uint8_t* in) noexcept
{
    State st;
    LoadWords(st.w, in, 0);
    LoadWords(st.w + 8, in, 1);
    // Block 1: the input.
    SetIv(st);
    MsgRounds(st, std::make_integer_sequence<int, 64>{});
    V mid[8];
    IBDKIT_UNROLL for (int i = 0; i < 8; ++i) mid[i] = st.s[i] = Add(st.s[i], Set1(IV[i]));
    // Block 2: padding only, constant schedule.
    ConstRounds(st, std::make_integer_sequence<int, 64>{});
    // Block 3: the first digest plus its padding.
    IBDKIT_UNROLL for (int i = 0; i < 8; ++i) st.w[i] = Add(st.s[i], mid[i]);
    IBDKIT_UNROLL for (int i = 0; i < 8; ++i) st.w[8 + i] = Set1(PAD32_TAIL[i]);
    SetIv(st);
    MsgRounds(st, std::make_integer_sequence<int, 64>{});
    V r[8];
    IBDKIT_UNROLL for (int i = 0; i < 8; ++i) r[i] = ByteSwap(Add(st.s[i], Set1(IV[i])));
    Transpose8(r);
    IBDKIT_UNROLL for (int j = 0; j < 8; ++j) _mm256_storeu_si256(reinterpret_cast<V*>(out + 32 * j), r[j]);
}

IBDKIT_AVX2_FN void StepX8(uint32_t* state, const uint8_t* const* blocks, std::size_t n) noexcept
{
    for (std::size_t b = 0; b < n; ++b) {
        State st;
        for (int half = 0; half < 2; ++half) {
            V r[8];
            IBDKIT_UNROLL for (int j = 0; j < 8; ++j) r[j] = _mm256_loadu_si256(reinterpret_cast<const V*>(blocks[j] + 64 * b + 32 * half));
            Transpose8(r);
            IBDKIT_UNROLL for (int i = 0; i < 8; ++i) st.w[8 * half + i] = ByteSwap(r[i]);
        }
        V* sv = reinterpret_cast<V*>(state);
        IBDKIT_UNROLL for (int i = 0; i < 8; ++i) st.s[i] = _mm256_load_si256(sv + i);
        MsgRounds(st, std::make_integer_sequence<int, 64>{});
        IBDKIT_UNROLL for (int i = 0; i < 8; ++i) _mm256_store_si256(sv + i, Add(st.s[i], _mm256_load_si256(sv + i)));
    }
}

} // namespace ibdkit::sha256_detail::avx2

#endif // IBDKIT_SHA256_X86

// AVX-512 back-end: SHA256d of 16 independent 64-byte inputs at once, one input per 32-bit lane.
//
// Same structure as the AVX2 back-end, with twice the lanes, native rotates (vprord) and three-input
// logic (vpternlogd) for Ch, Maj and the three-way XORs of the sigma functions. Only AVX-512F is
// required; loads and stores go through AVX2 8x8 transposes, one per half.
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
#define IBDKIT_AVX512_INLINE __attribute__((target("avx512f,avx2"), always_inline)) inline
#define IBDKIT_UNROLL _Pragma("GCC unroll 16")

namespace ibdkit::sha256_detail::avx512 {
namespace {

using V = __m512i;
using H = __m256i;

IBDKIT_AVX512_INLINE V Set1(uint32_t x) { return _mm512_set1_epi32(int(x)); }
IBDKIT_AVX512_INLINE V Add(V x, V y) { return _mm512_add_epi32(x, y); }
// vpternlogd truth tables: bit (a<<2 | b<<1 | c) of the immediate is f(a, b, c).
IBDKIT_AVX512_INLINE V Xor3(V x, V y, V z) { return _mm512_ternarylogic_epi32(x, y, z, 0x96); }
IBDKIT_AVX512_INLINE V Ch(V e, V f, V g) { return _mm512_ternarylogic_epi32(e, f, g, 0xCA); }
IBDKIT_AVX512_INLINE V Maj(V a, V b, V c) { return _mm512_ternarylogic_epi32(a, b, c, 0xE8); }
IBDKIT_AVX512_INLINE V BigSigma0(V x) { return Xor3(_mm512_ror_epi32(x, 2), _mm512_ror_epi32(x, 13), _mm512_ror_epi32(x, 22)); }
IBDKIT_AVX512_INLINE V BigSigma1(V x) { return Xor3(_mm512_ror_epi32(x, 6), _mm512_ror_epi32(x, 11), _mm512_ror_epi32(x, 25)); }
IBDKIT_AVX512_INLINE V SmallSigma0(V x) { return Xor3(_mm512_ror_epi32(x, 7), _mm512_ror_epi32(x, 18), _mm512_srli_epi32(x, 3)); }
IBDKIT_AVX512_INLINE V SmallSigma1(V x) { return Xor3(_mm512_ror_epi32(x, 17), _mm512_ror_epi32(x, 19), _mm512_srli_epi32(x, 10)); }

IBDKIT_AVX512_INLINE H ByteSwap(H x)
{
    const H mask = _mm256_set_epi8(12, 13, 14, 15, 8, 9, 10, 11, 4, 5, 6, 7, 0, 1, 2, 3,
                                   12, 13, 14, 15, 8, 9, 10, 11, 4, 5, 6, 7, 0, 1, 2, 3);
    return _mm256_shuffle_epi8(x, mask);
}

IBDKIT_AVX512_INLINE void Transpose8(H (&r)[8])
{
    const H t0 = _mm256_unpacklo_epi32(r[0], r[1]), t1 = _mm256_unpackhi_epi32(r[0], r[1]);
    const H t2 = _mm256_unpacklo_epi32(r[2], r[3]), t3 = _mm256_unpackhi_epi32(r[2], r[3]);
    const H t4 = _mm256_unpacklo_epi32(r[4], r[5]), t5 = _mm256_unpackhi_epi32(r[4], r[5]);
    const H t6 = _mm256_unpacklo_epi32(r[6], r[7]), t7 = _mm256_unpackhi_epi32(r[6], r[7]);
    const H u0 = _mm256_unpacklo_epi64(t0, t2), u1 = _mm256_unpackhi_epi64(t0, t2);
    const H u2 = _mm256_unpacklo_epi64(t1, t3), u3 = _mm256_unpackhi_epi64(t1, t3);
    const H u4 = _mm256_unpacklo_epi64(t4, t6), u5 = _mm256_unpackhi_epi64(t4, t6);
    const H u6 = _mm256_unpacklo_epi64(t5, t7), u7 = _mm256_unpackhi_epi64(t5, t7);
    r[0] = _mm256_permute2x128_si256(u0, u4, 0x20);
    r[1] = _mm256_permute2x128_si256(u1, u5, 0x20);
    r[2] = _mm256_permute2x128_si256(u2, u6, 0x20);
    r[3] = _mm256_permute2x128_si256(u3, u7, 0x20);
    r[4] = _mm256_permute2x128_si256(u0, u4, 0x31);
    r[5] = _mm256_permute2x128_si256(u1, u5, 0x31);
    r[6] = _mm256_permute2x128_si256(u2, u6, 0x31);
    r[7] = _mm256_permute2x128_si256(u3, u7, 0x31);
}

// Words [8*half, 8*half+8) of 8 inputs starting at `in`, one word index per vector.
IBDKIT_AVX512_INLINE void LoadWords8(H (&w)[8], const uint8_t* in, int half)
{
    IBDKIT_UNROLL for (int j = 0; j < 8; ++j) w[j] = _mm256_loadu_si256(reinterpret_cast<const H*>(in + 64 * j + 32 * half));
    Transpose8(w);
    IBDKIT_UNROLL for (int i = 0; i < 8; ++i) w[i] = ByteSwap(w[i]);
}

IBDKIT_AVX512_INLINE V Join(H lo, H hi) { return _mm512_inserti64x4(_mm512_castsi256_si512(lo), hi, 1); }

struct State {
    V s[8]; // working variables; round T uses s[(0 - T) & 7] as a, s[(1 - T) & 7] as b, …
    V w[16];
};

template <int T>
IBDKIT_AVX512_INLINE void Round(State& st, V wk)
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

template <int T>
IBDKIT_AVX512_INLINE void MsgRound(State& st)
{
    V* w = st.w;
    if constexpr (T >= 16) {
        w[T & 15] = Add(Add(w[T & 15], SmallSigma1(w[(T - 2) & 15])), Add(w[(T - 7) & 15], SmallSigma0(w[(T - 15) & 15])));
    }
    Round<T>(st, Add(w[T & 15], Set1(K[T])));
}

template <int... T>
IBDKIT_AVX512_INLINE void MsgRounds(State& st, std::integer_sequence<int, T...>)
{
    (MsgRound<T>(st), ...);
}

template <int... T>
IBDKIT_AVX512_INLINE void ConstRounds(State& st, std::integer_sequence<int, T...>)
{
    (Round<T>(st, Set1(PAD64_WK[T])), ...);
}

IBDKIT_AVX512_INLINE void SetIv(State& st)
{
    IBDKIT_UNROLL for (int i = 0; i < 8; ++i) st.s[i] = Set1(IV[i]);
}

} // namespace

IBDKIT_AVX512_FN void D64x16(uint8_t* out, const uint8_t* in) noexcept
{
    State st;
    for (int half = 0; half < 2; ++half) {
        H lo[8], hi[8];
        LoadWords8(lo, in, half);
        LoadWords8(hi, in + 512, half);
        IBDKIT_UNROLL for (int i = 0; i < 8; ++i) st.w[8 * half + i] = Join(lo[i], hi[i]);
    }
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
    H lo[8], hi[8];
    IBDKIT_UNROLL for (int i = 0; i < 8; ++i) {
        const V v = Add(st.s[i], Set1(IV[i]));
        lo[i] = ByteSwap(_mm512_castsi512_si256(v));
        hi[i] = ByteSwap(_mm512_extracti64x4_epi64(v, 1));
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
        for (int half = 0; half < 2; ++half) {
            H lo[8], hi[8];
            IBDKIT_UNROLL for (int j = 0; j < 8; ++j) {
                lo[j] = _mm256_loadu_si256(reinterpret_cast<const H*>(blocks[j] + 64 * b + 32 * half));
                hi[j] = _mm256_loadu_si256(reinterpret_cast<const H*>(blocks[8 + j] + 64 * b + 32 * half));
            }
            Transpose8(lo);
            Transpose8(hi);
            IBDKIT_UNROLL for (int i = 0; i < 8; ++i) st.w[8 * half + i] = Join(ByteSwap(lo[i]), ByteSwap(hi[i]));
        }
        IBDKIT_UNROLL for (int i = 0; i < 8; ++i) st.s[i] = _mm512_load_si512(state + 16 * i);
        MsgRounds(st, std::make_integer_sequence<int, 64>{});
        // Feed-forward from memory: keeping the old state in registers would spill the schedule.
        IBDKIT_UNROLL for (int i = 0; i < 8; ++i) _mm512_store_si512(state + 16 * i, Add(st.s[i], _mm512_load_si512(state + 16 * i)));
    }
}

} // namespace ibdkit::sha256_detail::avx512

#endif // IBDKIT_SHA256_X86

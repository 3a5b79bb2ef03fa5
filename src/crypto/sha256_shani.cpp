// SHA-NI back-end: the x86 SHA extensions (sha256rnds2 / sha256msg1 / sha256msg2).
//
// Compiled with per-function target attributes, so the binary still runs on CPUs without them;
// sha256.cpp only calls in here after CPUID reported SHA, SSE4.1 and SSSE3.
//
// Register layout used by sha256rnds2: one register holds (A,B,E,F) and the other (C,D,G,H), lane 3
// first; one instruction does two rounds, so a "quad round" is two instructions on the two halves
// of a W+K vector. The message schedule is four registers, each holding W[4j..4j+3].
#include "crypto/sha256_internal.h"

#if IBDKIT_SHA256_X86

#include <immintrin.h>

#include <utility>

#define IBDKIT_SHANI_FN __attribute__((target("sha,sse4.1,ssse3")))
#define IBDKIT_SHANI_INLINE __attribute__((target("sha,sse4.1,ssse3"), always_inline)) inline
// Lane loops must be unrolled so that every array index is a constant and the arrays live in registers.
#define IBDKIT_UNROLL _Pragma("GCC unroll 16")

namespace ibdkit::sha256_detail::shani {
namespace {

IBDKIT_SHANI_INLINE __m128i ByteSwapMask() { return _mm_set_epi8(12, 13, 14, 15, 8, 9, 10, 11, 4, 5, 6, 7, 0, 1, 2, 3); }

IBDKIT_SHANI_INLINE __m128i LoadBE(const uint8_t* p)
{
    return _mm_shuffle_epi8(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)), ByteSwapMask());
}
IBDKIT_SHANI_INLINE void StoreBE(uint8_t* p, __m128i v)
{
    _mm_storeu_si128(reinterpret_cast<__m128i*>(p), _mm_shuffle_epi8(v, ByteSwapMask()));
}
IBDKIT_SHANI_INLINE __m128i Load4(const uint32_t* p) { return _mm_load_si128(reinterpret_cast<const __m128i*>(p)); }

// (A,B,C,D),(E,F,G,H) in memory order -> (F,E,B,A),(H,G,D,C) as sha256rnds2 wants them.
IBDKIT_SHANI_INLINE void ToRoundLayout(__m128i& abcd_abef, __m128i& efgh_cdgh)
{
    const __m128i badc = _mm_shuffle_epi32(abcd_abef, 0xB1);
    const __m128i hgfe = _mm_shuffle_epi32(efgh_cdgh, 0x1B);
    abcd_abef = _mm_alignr_epi8(badc, hgfe, 8); // F,E,B,A
    efgh_cdgh = _mm_blend_epi16(hgfe, badc, 0xF0); // H,G,D,C
}
// The inverse of ToRoundLayout.
IBDKIT_SHANI_INLINE void FromRoundLayout(__m128i& abef_abcd, __m128i& cdgh_efgh)
{
    const __m128i abef_rev = _mm_shuffle_epi32(abef_abcd, 0x1B); // A,B,E,F
    const __m128i ghcd = _mm_shuffle_epi32(cdgh_efgh, 0xB1);     // G,H,C,D
    abef_abcd = _mm_blend_epi16(abef_rev, ghcd, 0xF0);           // A,B,C,D
    cdgh_efgh = _mm_alignr_epi8(ghcd, abef_rev, 8);              // E,F,G,H
}

IBDKIT_SHANI_INLINE void QuadRound(__m128i& abef, __m128i& cdgh, __m128i wk)
{
    cdgh = _mm_sha256rnds2_epu32(cdgh, abef, wk);
    abef = _mm_sha256rnds2_epu32(abef, cdgh, _mm_shuffle_epi32(wk, 0x0E));
}

// N independent streams, interleaved step by step so that the CPU overlaps their dependency chains.
template <int N>
struct Lanes {
    __m128i abef[N], cdgh[N];
    __m128i m[N][4]; // rolling message schedule, slot j & 3 holds W[4j..4j+3]
};

// Quad round I (rounds 4I..4I+3) with message expansion; after it, computes W for quad round I+1.
template <int I, int N>
IBDKIT_SHANI_INLINE void MsgStep(Lanes<N>& l)
{
    const __m128i k = Load4(K + 4 * I);
    IBDKIT_UNROLL for (int n = 0; n < N; ++n) QuadRound(l.abef[n], l.cdgh[n], _mm_add_epi32(l.m[n][I & 3], k));
    if constexpr (I >= 3 && I < 15) {
        // W[4(I+1)..] = msg2(msg1(M[I-3], M[I-2]) + (W[4I-3..4I]), M[I])
        IBDKIT_UNROLL for (int n = 0; n < N; ++n) {
            __m128i* m = l.m[n];
            const __m128i t = _mm_add_epi32(_mm_sha256msg1_epu32(m[(I + 1) & 3], m[(I + 2) & 3]),
                                            _mm_alignr_epi8(m[I & 3], m[(I + 3) & 3], 4));
            m[(I + 1) & 3] = _mm_sha256msg2_epu32(t, m[I & 3]);
        }
    }
}

template <int N, int... I>
IBDKIT_SHANI_INLINE void MsgRounds(Lanes<N>& l, std::integer_sequence<int, I...>)
{
    (MsgStep<I, N>(l), ...);
}

// 64 rounds over the loaded message l.m (the caller adds the feed-forward).
template <int N>
IBDKIT_SHANI_INLINE void Compress(Lanes<N>& l)
{
    MsgRounds<N>(l, std::make_integer_sequence<int, 16>{});
}

template <int I, int N>
IBDKIT_SHANI_INLINE void ConstStep(Lanes<N>& l, const uint32_t* wk)
{
    const __m128i v = Load4(wk + 4 * I);
    IBDKIT_UNROLL for (int n = 0; n < N; ++n) QuadRound(l.abef[n], l.cdgh[n], v);
}

template <int N, int... I>
IBDKIT_SHANI_INLINE void ConstRounds(Lanes<N>& l, const uint32_t* wk, std::integer_sequence<int, I...>)
{
    (ConstStep<I, N>(l, wk), ...);
}

IBDKIT_SHANI_INLINE __m128i IvAbef() { return _mm_set_epi32(int(IV[0]), int(IV[1]), int(IV[4]), int(IV[5])); }
IBDKIT_SHANI_INLINE __m128i IvCdgh() { return _mm_set_epi32(int(IV[2]), int(IV[3]), int(IV[6]), int(IV[7])); }

// SHA256d of N 64-byte inputs. All input is read before any output is written (in-place safe).
template <int N>
IBDKIT_SHANI_INLINE void D64N(uint8_t* out, const uint8_t* in)
{
    Lanes<N> l;
    const __m128i iv_abef = IvAbef(), iv_cdgh = IvCdgh();
    // Block 1: the 64 input bytes.
    IBDKIT_UNROLL for (int n = 0; n < N; ++n) {
        IBDKIT_UNROLL for (int j = 0; j < 4; ++j) l.m[n][j] = LoadBE(in + 64 * n + 16 * j);
        l.abef[n] = iv_abef;
        l.cdgh[n] = iv_cdgh;
    }
    Compress<N>(l);
    __m128i save_abef[N], save_cdgh[N];
    IBDKIT_UNROLL for (int n = 0; n < N; ++n) {
        save_abef[n] = l.abef[n] = _mm_add_epi32(l.abef[n], iv_abef);
        save_cdgh[n] = l.cdgh[n] = _mm_add_epi32(l.cdgh[n], iv_cdgh);
    }
    // Block 2: padding only, constant schedule.
    ConstRounds<N>(l, PAD64_WK.data(), std::make_integer_sequence<int, 16>{});
    // Block 3: the 32-byte first digest plus its padding.
    IBDKIT_UNROLL for (int n = 0; n < N; ++n) {
        __m128i abcd = _mm_add_epi32(l.abef[n], save_abef[n]);
        __m128i efgh = _mm_add_epi32(l.cdgh[n], save_cdgh[n]);
        FromRoundLayout(abcd, efgh);
        l.m[n][0] = abcd;
        l.m[n][1] = efgh;
        l.m[n][2] = Load4(PAD32_TAIL);
        l.m[n][3] = Load4(PAD32_TAIL + 4);
        l.abef[n] = iv_abef;
        l.cdgh[n] = iv_cdgh;
    }
    Compress<N>(l);
    IBDKIT_UNROLL for (int n = 0; n < N; ++n) {
        __m128i abcd = _mm_add_epi32(l.abef[n], iv_abef);
        __m128i efgh = _mm_add_epi32(l.cdgh[n], iv_cdgh);
        FromRoundLayout(abcd, efgh);
        StoreBE(out + 32 * n, abcd);
        StoreBE(out + 32 * n + 16, efgh);
    }
}

} // namespace

IBDKIT_SHANI_FN void Transform(uint32_t* state, const uint8_t* chunk, std::size_t blocks) noexcept
{
    Lanes<1> l;
    __m128i abef = _mm_loadu_si128(reinterpret_cast<const __m128i*>(state));
    __m128i cdgh = _mm_loadu_si128(reinterpret_cast<const __m128i*>(state + 4));
    ToRoundLayout(abef, cdgh);
    for (; blocks; --blocks, chunk += 64) {
        IBDKIT_UNROLL for (int j = 0; j < 4; ++j) l.m[0][j] = LoadBE(chunk + 16 * j);
        l.abef[0] = abef;
        l.cdgh[0] = cdgh;
        Compress<1>(l);
        abef = _mm_add_epi32(abef, l.abef[0]);
        cdgh = _mm_add_epi32(cdgh, l.cdgh[0]);
    }
    FromRoundLayout(abef, cdgh);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(state), abef);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(state + 4), cdgh);
}

IBDKIT_SHANI_FN void D64(uint8_t* out, const uint8_t* in, std::size_t blocks) noexcept
{
    for (; blocks >= 2; blocks -= 2, in += 128, out += 64) D64N<2>(out, in);
    if (blocks) D64N<1>(out, in);
}

IBDKIT_SHANI_FN void StepX1(uint32_t* state, const uint8_t* const* blocks, std::size_t n) noexcept
{
    Transform(state, blocks[0], n);
}

// Two independent states (eight FIPS-order words each), n blocks each, interleaved.
IBDKIT_SHANI_FN void StepX2(uint32_t* state, const uint8_t* const* blocks, std::size_t n) noexcept
{
    Lanes<2> l;
    __m128i abef[2], cdgh[2];
    IBDKIT_UNROLL for (int k = 0; k < 2; ++k) {
        abef[k] = _mm_loadu_si128(reinterpret_cast<const __m128i*>(state + 8 * k));
        cdgh[k] = _mm_loadu_si128(reinterpret_cast<const __m128i*>(state + 8 * k + 4));
        ToRoundLayout(abef[k], cdgh[k]);
    }
    for (std::size_t b = 0; b < n; ++b) {
        IBDKIT_UNROLL for (int k = 0; k < 2; ++k) {
            l.abef[k] = abef[k];
            l.cdgh[k] = cdgh[k];
            IBDKIT_UNROLL for (int j = 0; j < 4; ++j) l.m[k][j] = LoadBE(blocks[k] + 64 * b + 16 * j);
        }
        Compress<2>(l);
        IBDKIT_UNROLL for (int k = 0; k < 2; ++k) {
            abef[k] = _mm_add_epi32(abef[k], l.abef[k]);
            cdgh[k] = _mm_add_epi32(cdgh[k], l.cdgh[k]);
        }
    }
    IBDKIT_UNROLL for (int k = 0; k < 2; ++k) {
        FromRoundLayout(abef[k], cdgh[k]);
        _mm_storeu_si128(reinterpret_cast<__m128i*>(state + 8 * k), abef[k]);
        _mm_storeu_si128(reinterpret_cast<__m128i*>(state + 8 * k + 4), cdgh[k]);
    }
}

} // namespace ibdkit::sha256_detail::shani

#endif // IBDKIT_SHA256_X86

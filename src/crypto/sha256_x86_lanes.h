// src/crypto/sha256_x86_lanes.h — the SHA-256 rounds over vectors of 32-bit lanes, one message per
// lane: the one body of the AVX2 (8 lanes) and AVX-512 (16 lanes) back-ends.
//
// A back-end includes it inside its own anonymous namespace, after defining what differs between
// the instruction sets: the macro IBDKIT_LANES_INLINE (its target attribute, always_inline), the
// vector type V and the lane operations Set1, Add, Ch, Maj, BigSigma0, BigSigma1, SmallSigma0 and
// SmallSigma1. Everything here is then compiled for that back-end's instructions only, so the
// binary still starts on a CPU without them. Also here: the 8x8 word transpose and byte swap of
// 256-bit vectors, through which both back-ends load and store (AVX-512 one half at a time).
// It includes nothing itself: <immintrin.h>, <utility> and crypto/sha256_internal.h (K, IV,
// PAD64_WK, PAD32_TAIL) come first, outside the namespace.
#pragma once

#define IBDKIT_UNROLL _Pragma("GCC unroll 16")

IBDKIT_LANES_INLINE __m256i ByteSwap(__m256i x)
{
    const __m256i mask = _mm256_set_epi8(12, 13, 14, 15, 8, 9, 10, 11, 4, 5, 6, 7, 0, 1, 2, 3,
                                         12, 13, 14, 15, 8, 9, 10, 11, 4, 5, 6, 7, 0, 1, 2, 3);
    return _mm256_shuffle_epi8(x, mask);
}

// Transposes an 8x8 matrix of 32-bit words held as 8 row vectors.
IBDKIT_LANES_INLINE void Transpose8(__m256i (&r)[8])
{
    const __m256i t0 = _mm256_unpacklo_epi32(r[0], r[1]), t1 = _mm256_unpackhi_epi32(r[0], r[1]);
    const __m256i t2 = _mm256_unpacklo_epi32(r[2], r[3]), t3 = _mm256_unpackhi_epi32(r[2], r[3]);
    const __m256i t4 = _mm256_unpacklo_epi32(r[4], r[5]), t5 = _mm256_unpackhi_epi32(r[4], r[5]);
    const __m256i t6 = _mm256_unpacklo_epi32(r[6], r[7]), t7 = _mm256_unpackhi_epi32(r[6], r[7]);
    const __m256i u0 = _mm256_unpacklo_epi64(t0, t2), u1 = _mm256_unpackhi_epi64(t0, t2);
    const __m256i u2 = _mm256_unpacklo_epi64(t1, t3), u3 = _mm256_unpackhi_epi64(t1, t3);
    const __m256i u4 = _mm256_unpacklo_epi64(t4, t6), u5 = _mm256_unpackhi_epi64(t4, t6);
    const __m256i u6 = _mm256_unpacklo_epi64(t5, t7), u7 = _mm256_unpackhi_epi64(t5, t7);
    r[0] = _mm256_permute2x128_si256(u0, u4, 0x20);
    r[1] = _mm256_permute2x128_si256(u1, u5, 0x20);
    r[2] = _mm256_permute2x128_si256(u2, u6, 0x20);
    r[3] = _mm256_permute2x128_si256(u3, u7, 0x20);
    r[4] = _mm256_permute2x128_si256(u0, u4, 0x31);
    r[5] = _mm256_permute2x128_si256(u1, u5, 0x31);
    r[6] = _mm256_permute2x128_si256(u2, u6, 0x31);
    r[7] = _mm256_permute2x128_si256(u3, u7, 0x31);
}

// Words [8*half, 8*half+8) of the 8 blocks at in[j] + offset, one word index per vector, one block
// per lane.
IBDKIT_LANES_INLINE void LoadWords8(__m256i (&w)[8], const uint8_t* const* in, std::size_t offset, int half)
{
    IBDKIT_UNROLL for (int j = 0; j < 8; ++j) w[j] = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(in[j] + offset + 32 * half));
    Transpose8(w);
    IBDKIT_UNROLL for (int i = 0; i < 8; ++i) w[i] = ByteSwap(w[i]);
}

struct State {
    V s[8]; // working variables; round T uses s[(0 - T) & 7] as a, s[(1 - T) & 7] as b, …
    V w[16];
};

template <int T>
IBDKIT_LANES_INLINE void Round(State& st, V wk)
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
IBDKIT_LANES_INLINE void MsgRound(State& st)
{
    V* w = st.w;
    if constexpr (T >= 16) {
        w[T & 15] = Add(Add(w[T & 15], SmallSigma1(w[(T - 2) & 15])), Add(w[(T - 7) & 15], SmallSigma0(w[(T - 15) & 15])));
    }
    Round<T>(st, Add(w[T & 15], Set1(K[T])));
}

template <int... T>
IBDKIT_LANES_INLINE void MsgRounds(State& st, std::integer_sequence<int, T...>)
{
    (MsgRound<T>(st), ...);
}

template <int... T>
IBDKIT_LANES_INLINE void ConstRounds(State& st, std::integer_sequence<int, T...>)
{
    (Round<T>(st, Set1(PAD64_WK[T])), ...);
}

// One block's 64 rounds over the message words in st.w.
IBDKIT_LANES_INLINE void Compress(State& st) { MsgRounds(st, std::make_integer_sequence<int, 64>{}); }

IBDKIT_LANES_INLINE void SetIv(State& st)
{
    IBDKIT_UNROLL for (int i = 0; i < 8; ++i) st.s[i] = Set1(IV[i]);
}

// SHA256d of one 64-byte message per lane, its 16 words in st.w: the digest words end in st.s.
IBDKIT_LANES_INLINE void Double64(State& st)
{
    // Block 1: the input.
    SetIv(st);
    Compress(st);
    V mid[8];
    IBDKIT_UNROLL for (int i = 0; i < 8; ++i) mid[i] = st.s[i] = Add(st.s[i], Set1(IV[i]));
    // Block 2: padding only, constant schedule.
    ConstRounds(st, std::make_integer_sequence<int, 64>{});
    // Block 3: the first digest plus its padding.
    IBDKIT_UNROLL for (int i = 0; i < 8; ++i) st.w[i] = Add(st.s[i], mid[i]);
    IBDKIT_UNROLL for (int i = 0; i < 8; ++i) st.w[8 + i] = Set1(PAD32_TAIL[i]);
    SetIv(st);
    Compress(st);
    IBDKIT_UNROLL for (int i = 0; i < 8; ++i) st.s[i] = Add(st.s[i], Set1(IV[i]));
}

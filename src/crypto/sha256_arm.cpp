// ARMv8 SHA-2 back-end: the cryptographic extension's sha256h / sha256h2 / sha256su0 / sha256su1
// (Raspberry Pi 5's Cortex-A76, Graviton, Apple M; not the Pi 4's BCM2711, which lacks them).
//
// Compiled with per-function target attributes, so the binary still runs on ARMv8 CPUs without
// the extension; sha256.cpp only calls in here after getauxval(AT_HWCAP) reported HWCAP_SHA2.
//
// Unlike SHA-NI, the instructions keep the state in FIPS order: one register holds (A,B,C,D) and
// the other (E,F,G,H); sha256h and sha256h2 each do four rounds on one half, so a quad round is
// the pair of them on one W+K vector. The message schedule is four registers, W[4j..4j+3] each.
#include "crypto/sha256_internal.h"

#if IBDKIT_SHA256_ARM

#include <arm_neon.h>

#include <utility>

#if defined(__clang__)
#define IBDKIT_ARM_SHA2_TARGET __attribute__((target("sha2")))
#else
#define IBDKIT_ARM_SHA2_TARGET __attribute__((target("+crypto")))
#endif
#define IBDKIT_ARM_SHA2_FN IBDKIT_ARM_SHA2_TARGET
#define IBDKIT_ARM_SHA2_INLINE IBDKIT_ARM_SHA2_TARGET __attribute__((always_inline)) inline
// Lane loops must be unrolled so that every array index is a constant and the arrays live in registers.
#define IBDKIT_UNROLL _Pragma("GCC unroll 16")

namespace ibdkit::sha256_detail::arm {
namespace {

// Loads and stores go through vld1q_u8 / vst1q_u8: any alignment, bytes reversed per 32-bit word
// (SHA-256 is big-endian, the CPU little-endian).
IBDKIT_ARM_SHA2_INLINE uint32x4_t LoadBE(const uint8_t* p) { return vreinterpretq_u32_u8(vrev32q_u8(vld1q_u8(p))); }
IBDKIT_ARM_SHA2_INLINE void StoreBE(uint8_t* p, uint32x4_t v) { vst1q_u8(p, vrev32q_u8(vreinterpretq_u8_u32(v))); }

// N independent streams, interleaved step by step so that the CPU overlaps their dependency chains.
template <int N>
struct Lanes {
    uint32x4_t abcd[N], efgh[N];
    uint32x4_t m[N][4]; // rolling message schedule, slot j & 3 holds W[4j..4j+3]
};

IBDKIT_ARM_SHA2_INLINE void QuadRound(uint32x4_t& abcd, uint32x4_t& efgh, uint32x4_t wk)
{
    const uint32x4_t abcd_in = abcd;
    abcd = vsha256hq_u32(abcd, efgh, wk);
    efgh = vsha256h2q_u32(efgh, abcd_in, wk);
}

// Quad round I (rounds 4I..4I+3); for I < 12 the slot it used then receives W[4(I+4)..].
template <int I, int N>
IBDKIT_ARM_SHA2_INLINE void MsgStep(Lanes<N>& l)
{
    const uint32x4_t k = vld1q_u32(K + 4 * I);
    IBDKIT_UNROLL for (int n = 0; n < N; ++n) {
        uint32x4_t* m = l.m[n];
        const uint32x4_t wk = vaddq_u32(m[I & 3], k);
        if constexpr (I < 12) m[I & 3] = vsha256su0q_u32(m[I & 3], m[(I + 1) & 3]);
        QuadRound(l.abcd[n], l.efgh[n], wk);
        if constexpr (I < 12) m[I & 3] = vsha256su1q_u32(m[I & 3], m[(I + 2) & 3], m[(I + 3) & 3]);
    }
}

template <int N, int... I>
IBDKIT_ARM_SHA2_INLINE void MsgRounds(Lanes<N>& l, std::integer_sequence<int, I...>)
{
    (MsgStep<I, N>(l), ...);
}

// 64 rounds over the loaded message l.m (the caller adds the feed-forward).
template <int N>
IBDKIT_ARM_SHA2_INLINE void Compress(Lanes<N>& l)
{
    MsgRounds<N>(l, std::make_integer_sequence<int, 16>{});
}

template <int I, int N>
IBDKIT_ARM_SHA2_INLINE void ConstStep(Lanes<N>& l, const uint32_t* wk)
{
    const uint32x4_t v = vld1q_u32(wk + 4 * I);
    IBDKIT_UNROLL for (int n = 0; n < N; ++n) QuadRound(l.abcd[n], l.efgh[n], v);
}

template <int N, int... I>
IBDKIT_ARM_SHA2_INLINE void ConstRounds(Lanes<N>& l, const uint32_t* wk, std::integer_sequence<int, I...>)
{
    (ConstStep<I, N>(l, wk), ...);
}

// SHA256d of N 64-byte inputs. All input is read before any output is written (in-place safe).
template <int N>
IBDKIT_ARM_SHA2_INLINE void D64N(uint8_t* out, const uint8_t* in)
{
    Lanes<N> l;
    const uint32x4_t iv_abcd = vld1q_u32(IV), iv_efgh = vld1q_u32(IV + 4);
    // Block 1: the 64 input bytes.
    IBDKIT_UNROLL for (int n = 0; n < N; ++n) {
        IBDKIT_UNROLL for (int j = 0; j < 4; ++j) l.m[n][j] = LoadBE(in + 64 * n + 16 * j);
        l.abcd[n] = iv_abcd;
        l.efgh[n] = iv_efgh;
    }
    Compress<N>(l);
    uint32x4_t save_abcd[N], save_efgh[N];
    IBDKIT_UNROLL for (int n = 0; n < N; ++n) {
        save_abcd[n] = l.abcd[n] = vaddq_u32(l.abcd[n], iv_abcd);
        save_efgh[n] = l.efgh[n] = vaddq_u32(l.efgh[n], iv_efgh);
    }
    // Block 2: padding only, constant schedule.
    ConstRounds<N>(l, PAD64_WK.data(), std::make_integer_sequence<int, 16>{});
    // Block 3: the 32-byte first digest plus its padding.
    const uint32x4_t tail0 = vld1q_u32(PAD32_TAIL), tail1 = vld1q_u32(PAD32_TAIL + 4);
    IBDKIT_UNROLL for (int n = 0; n < N; ++n) {
        l.m[n][0] = vaddq_u32(l.abcd[n], save_abcd[n]);
        l.m[n][1] = vaddq_u32(l.efgh[n], save_efgh[n]);
        l.m[n][2] = tail0;
        l.m[n][3] = tail1;
        l.abcd[n] = iv_abcd;
        l.efgh[n] = iv_efgh;
    }
    Compress<N>(l);
    IBDKIT_UNROLL for (int n = 0; n < N; ++n) {
        StoreBE(out + 32 * n, vaddq_u32(l.abcd[n], iv_abcd));
        StoreBE(out + 32 * n + 16, vaddq_u32(l.efgh[n], iv_efgh));
    }
}

// n blocks for each of N states (eight FIPS-order words each, s[8 * k ..]), interleaved.
template <int N>
IBDKIT_ARM_SHA2_INLINE void StepN(uint32_t* state, const uint8_t* const* blocks, std::size_t n)
{
    Lanes<N> l;
    uint32x4_t abcd[N], efgh[N];
    IBDKIT_UNROLL for (int k = 0; k < N; ++k) {
        abcd[k] = vld1q_u32(state + 8 * k);
        efgh[k] = vld1q_u32(state + 8 * k + 4);
    }
    for (std::size_t b = 0; b < n; ++b) {
        IBDKIT_UNROLL for (int k = 0; k < N; ++k) {
            l.abcd[k] = abcd[k];
            l.efgh[k] = efgh[k];
            IBDKIT_UNROLL for (int j = 0; j < 4; ++j) l.m[k][j] = LoadBE(blocks[k] + 64 * b + 16 * j);
        }
        Compress<N>(l);
        IBDKIT_UNROLL for (int k = 0; k < N; ++k) {
            abcd[k] = vaddq_u32(abcd[k], l.abcd[k]);
            efgh[k] = vaddq_u32(efgh[k], l.efgh[k]);
        }
    }
    IBDKIT_UNROLL for (int k = 0; k < N; ++k) {
        vst1q_u32(state + 8 * k, abcd[k]);
        vst1q_u32(state + 8 * k + 4, efgh[k]);
    }
}

} // namespace

IBDKIT_ARM_SHA2_FN void Transform(uint32_t* state, const uint8_t* chunk, std::size_t blocks) noexcept
{
    const uint8_t* const lane[1] = {chunk};
    StepN<1>(state, lane, blocks);
}

IBDKIT_ARM_SHA2_FN void D64(uint8_t* out, const uint8_t* in, std::size_t blocks) noexcept
{
    for (; blocks >= 2; blocks -= 2, in += 128, out += 64) D64N<2>(out, in);
    if (blocks) D64N<1>(out, in);
}

IBDKIT_ARM_SHA2_FN void StepX1(uint32_t* state, const uint8_t* const* blocks, std::size_t n) noexcept
{
    StepN<1>(state, blocks, n);
}

IBDKIT_ARM_SHA2_FN void StepX2(uint32_t* state, const uint8_t* const* blocks, std::size_t n) noexcept
{
    StepN<2>(state, blocks, n);
}

} // namespace ibdkit::sha256_detail::arm

#endif // IBDKIT_SHA256_ARM

// src/crypto/sha256_internal.h — private interface between the SHA-256 front end (sha256.cpp) and
// its back-ends (sha256_portable.cpp; x86: sha256_shani.cpp, sha256_avx2.cpp, sha256_avx512.cpp;
// 64-bit ARM: sha256_arm.cpp).
//
// Every back-end works on the same state layout (eight 32-bit words a..h in FIPS 180-4 order), so
// a stream may switch back-end between two blocks and still produce the right digest.
#pragma once

#include <ibdkit/crypto/sha256.h>

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>

namespace ibdkit::sha256_detail {

/// FIPS 180-4 §4.2.2 round constants.
alignas(64) inline constexpr uint32_t K[64] = {
    0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
    0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
    0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
    0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
    0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
    0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
    0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
    0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2,
};

/// FIPS 180-4 §5.3.3 initial hash value.
alignas(32) inline constexpr uint32_t IV[8] = {0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a,
                                               0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19};

constexpr uint32_t RotR(uint32_t x, int n) { return (x >> n) | (x << (32 - n)); }
constexpr uint32_t SmallSigma0(uint32_t x) { return RotR(x, 7) ^ RotR(x, 18) ^ (x >> 3); }
constexpr uint32_t SmallSigma1(uint32_t x) { return RotR(x, 17) ^ RotR(x, 19) ^ (x >> 10); }

/// W[t] + K[t] for a block whose 16 message words are fixed, computed at compile time.
constexpr std::array<uint32_t, 64> ConstantSchedule(std::array<uint32_t, 16> m)
{
    std::array<uint32_t, 64> w{};
    for (int t = 0; t < 16; ++t) w[t] = m[t];
    for (int t = 16; t < 64; ++t) w[t] = SmallSigma1(w[t - 2]) + w[t - 7] + SmallSigma0(w[t - 15]) + w[t - 16];
    for (int t = 0; t < 64; ++t) w[t] += K[t];
    return w;
}

/// The second block of any 64-byte message is padding only (0x80, zeros, bit length 512): its
/// whole schedule is a constant, so SHA256d64 back-ends skip its message expansion.
alignas(64) inline constexpr std::array<uint32_t, 64> PAD64_WK =
    ConstantSchedule({0x80000000, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 512});

/// Words 8..15 of the single block that hashes a 32-byte digest (0x80, zeros, bit length 256).
inline constexpr uint32_t PAD32_TAIL[8] = {0x80000000, 0, 0, 0, 0, 0, 0, 256};

/// Compresses `blocks` consecutive 64-byte blocks into state[8].
using TransformFn = void (*)(uint32_t* state, const uint8_t* chunk, std::size_t blocks) noexcept;
/// SHA256d of `blocks` 64-byte inputs; out may equal in (each group of inputs is read fully before
/// its outputs are written, and output i never lies beyond input i).
using D64Fn = void (*)(uint8_t* out, const uint8_t* in, std::size_t blocks) noexcept;

/// A multi-buffer compression kernel: `n` consecutive 64-byte blocks (lane l's at blocks[l],
/// blocks[l] + 64, …) for each of `lanes` independent states. State layout: lanes <= 2 keep each
/// lane's eight words together (s[8 * lane + i]); wider kernels keep word i of all lanes together
/// (s[lanes * i + lane]), 64-byte aligned.
using LaneStepFn = void (*)(uint32_t* state, const uint8_t* const* blocks, std::size_t n) noexcept;
struct LaneKernel {
    int lanes;
    LaneStepFn step;
    uint32_t& At(uint32_t* s, int lane, int i) const noexcept
    {
        return lanes <= 2 ? s[8 * lane + i] : s[lanes * i + lane];
    }
};
/// Sha256dMany's plan: kernels from widest to narrowest. Stage k hands its messages in flight to
/// stage k+1 once no message waits and fewer than stop_below[k] lanes are busy (a nearly idle wide
/// kernel is slower than a narrow one); the last stage runs to the end.
struct ManyPlan {
    int stages;
    LaneKernel kernel[3];
    int stop_below[3];
};

/// One selectable implementation: a single-stream transform, a SHA256d64 and a multi-buffer plan.
struct Engine {
    const char* name;
    TransformFn transform;
    D64Fn d64;
    ManyPlan many;
};

/// Sha256dMany with an explicit plan (sha256_many.cpp).
void RunMany(const ManyPlan& plan, std::span<const HashJob> jobs) noexcept;
void RunManyPadded(const ManyPlan& plan, std::span<const PaddedHashJob> jobs) noexcept;

struct CpuFeatures {
    bool ssse3{false}, sse41{false}, sha{false}, avx2{false}, avx512f{false}; // x86
    bool arm_sha2{false};                                                       // aarch64
};
/// What the CPU and OS support (x86: CPUID, and XGETBV for the AVX register state; aarch64 Linux:
/// getauxval(AT_HWCAP)); detected once. All false when IBDKIT_DISABLE_CPU_FEATURES is set.
const CpuFeatures& Cpu() noexcept;

/// The engine for a back-end, or nullptr when this CPU cannot run it.
const Engine* EngineFor(Backend b) noexcept;
/// The engine in use (forced, or the automatic choice).
const Engine& ActiveEngine() noexcept;

namespace portable {
void Transform(uint32_t* state, const uint8_t* chunk, std::size_t blocks) noexcept;
void D64(uint8_t* out, const uint8_t* in, std::size_t blocks) noexcept;
void StepX1(uint32_t* state, const uint8_t* const* blocks, std::size_t n) noexcept;
} // namespace portable

#if defined(__x86_64__) || defined(__i386__)
#define IBDKIT_SHA256_X86 1
namespace shani {
void Transform(uint32_t* state, const uint8_t* chunk, std::size_t blocks) noexcept;
/// Two inputs at a time (independent dependency chains hide the sha256rnds2 latency).
void D64(uint8_t* out, const uint8_t* in, std::size_t blocks) noexcept;
void StepX1(uint32_t* state, const uint8_t* const* blocks, std::size_t n) noexcept;
void StepX2(uint32_t* state, const uint8_t* const* blocks, std::size_t n) noexcept;
} // namespace shani
namespace avx2 {
/// Exactly 8 inputs (512 bytes in, 256 bytes out).
void D64x8(uint8_t* out, const uint8_t* in) noexcept;
/// Blocks for 8 lanes (state word-major, 64-byte aligned).
void StepX8(uint32_t* state, const uint8_t* const* blocks, std::size_t n) noexcept;
} // namespace avx2
namespace avx512 {
/// Exactly 16 inputs (1024 bytes in, 512 bytes out).
void D64x16(uint8_t* out, const uint8_t* in) noexcept;
/// Blocks for 16 lanes (state word-major, 64-byte aligned).
void StepX16(uint32_t* state, const uint8_t* const* blocks, std::size_t n) noexcept;
} // namespace avx512
#endif

#if defined(__aarch64__) && defined(__linux__)
#define IBDKIT_SHA256_ARM 1
namespace arm {
/// The ARMv8 SHA-2 instructions (HWCAP_SHA2).
void Transform(uint32_t* state, const uint8_t* chunk, std::size_t blocks) noexcept;
/// Two inputs at a time (independent dependency chains hide the sha256h latency).
void D64(uint8_t* out, const uint8_t* in, std::size_t blocks) noexcept;
void StepX1(uint32_t* state, const uint8_t* const* blocks, std::size_t n) noexcept;
void StepX2(uint32_t* state, const uint8_t* const* blocks, std::size_t n) noexcept;
} // namespace arm
#endif

} // namespace ibdkit::sha256_detail

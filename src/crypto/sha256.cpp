// SHA-256 front end: buffering, padding, and the run-time choice of back-end.
#include <ibdkit/crypto/sha256.h>

#include "crypto/sha256_internal.h"

#include "common/cpu_features.h"

#include <atomic>
#include <cstring>

#if IBDKIT_SHA256_X86
#include <cpuid.h>
#elif IBDKIT_SHA256_ARM
#include <asm/hwcap.h>
#include <sys/auxv.h>
#endif

namespace ibdkit {
namespace sha256_detail {
namespace {

#if IBDKIT_SHA256_X86
CpuFeatures DetectCpu() noexcept
{
    CpuFeatures f;
    unsigned a = 0, b = 0, c = 0, d = 0;
    const unsigned max_leaf = __get_cpuid_max(0, nullptr);
    if (max_leaf < 1) return f;
    __cpuid(1, a, b, c, d);
    f.ssse3 = c & (1u << 9);
    f.sse41 = c & (1u << 19);
    const bool osxsave = c & (1u << 27);
    const bool avx = c & (1u << 28);
    // The OS must save the YMM (and for AVX-512 the opmask/ZMM) registers on context switch, or
    // using them corrupts state silently: check XCR0 through XGETBV, which OSXSAVE makes legal.
    bool ymm_os = false, zmm_os = false;
    if (osxsave) {
        uint32_t xcr0_lo = 0, xcr0_hi = 0;
        __asm__("xgetbv" : "=a"(xcr0_lo), "=d"(xcr0_hi) : "c"(0));
        ymm_os = (xcr0_lo & 0x6) == 0x6;
        zmm_os = (xcr0_lo & 0xe6) == 0xe6;
    }
    if (max_leaf >= 7) {
        __cpuid_count(7, 0, a, b, c, d);
        f.sha = b & (1u << 29);
        f.avx2 = avx && ymm_os && (b & (1u << 5));
        f.avx512f = f.avx2 && zmm_os && (b & (1u << 16));
    }
    return f;
}
#elif IBDKIT_SHA256_ARM
CpuFeatures DetectCpu() noexcept
{
    // The kernel reports what user space may run (the ID registers are trapped): HWCAP_SHA2 is
    // FEAT_SHA256, sha256h/h2/su0/su1.
    CpuFeatures f;
    f.arm_sha2 = getauxval(AT_HWCAP) & HWCAP_SHA2;
    return f;
}
#else
CpuFeatures DetectCpu() noexcept { return {}; }
#endif

constexpr LaneKernel PORTABLE_X1{1, portable::StepX1};
constexpr Engine PORTABLE{"portable", portable::Transform, portable::D64, {1, {PORTABLE_X1}, {0}}};

#if IBDKIT_SHA256_X86
void D64Avx2(uint8_t* out, const uint8_t* in, std::size_t blocks) noexcept
{
    for (; blocks >= 8; blocks -= 8, in += 512, out += 256) avx2::D64x8(out, in);
    portable::D64(out, in, blocks);
}
void D64Avx512(uint8_t* out, const uint8_t* in, std::size_t blocks) noexcept
{
    for (; blocks >= 16; blocks -= 16, in += 1024, out += 512) avx512::D64x16(out, in);
    D64Avx2(out, in, blocks);
}

constexpr LaneKernel SHANI_X1{1, shani::StepX1};
constexpr LaneKernel SHANI_X2{2, shani::StepX2};
constexpr LaneKernel AVX2_X8{8, avx2::StepX8};
constexpr LaneKernel AVX512_X16{16, avx512::StepX16};

// Multi-buffer plans (Sha256dMany). stop_below: hand the messages in flight to the next kernel
// once fewer lanes than this are busy and nothing waits (measured: docs/crypto.md).
constexpr Engine SHANI{"sha-ni", shani::Transform, shani::D64, {2, {SHANI_X2, SHANI_X1}, {2, 0}}};
constexpr Engine AVX2{"avx2", portable::Transform, D64Avx2, {2, {AVX2_X8, PORTABLE_X1}, {3, 0}}};
constexpr Engine AVX512{"avx512", portable::Transform, D64Avx512, {3, {AVX512_X16, AVX2_X8, PORTABLE_X1}, {6, 3, 0}}};

bool HasShaNi(const CpuFeatures& f) { return f.sha && f.sse41 && f.ssse3; }

// Sha256d64 for the automatic choice on CPUs with both AVX-512 and SHA-NI: 16 lanes while at
// least 16 inputs remain, then SHA-NI two at a time (small merkle levels, odd remainders).
void D64Avx512ShaNi(uint8_t* out, const uint8_t* in, std::size_t blocks) noexcept
{
    for (; blocks >= 16; blocks -= 16, in += 1024, out += 512) avx512::D64x16(out, in);
    shani::D64(out, in, blocks);
}
constexpr int AVX512_TO_SHANI = 8;
constexpr Engine SHANI_AVX512{"sha-ni+avx512", shani::Transform, D64Avx512ShaNi,
                              {3, {AVX512_X16, SHANI_X2, SHANI_X1}, {AVX512_TO_SHANI, 2, 0}}};
#endif

#if IBDKIT_SHA256_ARM
constexpr LaneKernel ARM_X1{1, arm::StepX1};
constexpr LaneKernel ARM_X2{2, arm::StepX2};
// The same shape as SHA-NI: two interleaved streams while two messages are busy, then one.
constexpr Engine ARM_SHA2{"arm-sha2", arm::Transform, arm::D64, {2, {ARM_X2, ARM_X1}, {2, 0}}};
#endif

// The automatic choice, ordered by measurement (the figures: docs/crypto.md): single streams on
// SHA-NI when present; Sha256d64 on AVX-512 16-lane, else SHA-NI 2-way (which beats AVX2 8-lane on
// CPUs that have both), else AVX2 8-lane, else portable.
const Engine& AutoEngine() noexcept
{
    static const Engine engine = [] {
#if IBDKIT_SHA256_X86
        const CpuFeatures& f = Cpu();
        if (HasShaNi(f)) return f.avx512f ? SHANI_AVX512 : SHANI;
        if (f.avx512f) return AVX512;
        if (f.avx2) return AVX2;
#elif IBDKIT_SHA256_ARM
        if (Cpu().arm_sha2) return ARM_SHA2;
#endif
        return PORTABLE;
    }();
    return engine;
}

constinit std::atomic<const Engine*> g_active{nullptr};

} // namespace

const CpuFeatures& Cpu() noexcept
{
    static const CpuFeatures features = CpuFeaturesDisabled() ? CpuFeatures{} : DetectCpu();
    return features;
}

const Engine* EngineFor(Backend b) noexcept
{
    switch (b) {
    case Backend::Portable: return &PORTABLE;
#if IBDKIT_SHA256_X86
    case Backend::ShaNi: return HasShaNi(Cpu()) ? &SHANI : nullptr;
    case Backend::Avx2: return Cpu().avx2 ? &AVX2 : nullptr;
    case Backend::Avx512: return Cpu().avx512f ? &AVX512 : nullptr;
#else
    case Backend::ShaNi:
    case Backend::Avx2:
    case Backend::Avx512: return nullptr;
#endif
#if IBDKIT_SHA256_ARM
    case Backend::ArmSha2: return Cpu().arm_sha2 ? &ARM_SHA2 : nullptr;
#else
    case Backend::ArmSha2: return nullptr;
#endif
    }
    return nullptr;
}

const Engine& ActiveEngine() noexcept
{
    const Engine* e = g_active.load(std::memory_order_acquire);
    if (e) return *e;
    const Engine* expected = nullptr;
    const Engine* chosen = &AutoEngine();
    // Another thread may have forced a back-end meanwhile; keep its choice.
    g_active.compare_exchange_strong(expected, chosen, std::memory_order_acq_rel);
    return *g_active.load(std::memory_order_acquire);
}

bool BackendAvailable(Backend b) noexcept { return EngineFor(b) != nullptr; }

bool ForceBackend(Backend b) noexcept
{
    const Engine* e = EngineFor(b);
    if (!e) return false;
    g_active.store(e, std::memory_order_release);
    return true;
}

void ResetBackend() noexcept { g_active.store(&AutoEngine(), std::memory_order_release); }

} // namespace sha256_detail

namespace {
inline void WriteBE32(uint8_t* p, uint32_t x)
{
    p[0] = uint8_t(x >> 24);
    p[1] = uint8_t(x >> 16);
    p[2] = uint8_t(x >> 8);
    p[3] = uint8_t(x);
}
inline void WriteBE64(uint8_t* p, uint64_t x)
{
    WriteBE32(p, uint32_t(x >> 32));
    WriteBE32(p + 4, uint32_t(x));
}
} // namespace

Sha256::Sha256() noexcept { Reset(); }

Sha256& Sha256::Reset() noexcept
{
    std::memcpy(m_state, sha256_detail::IV, sizeof(m_state));
    m_bytes = 0;
    return *this;
}

Sha256& Sha256::Write(const uint8_t* data, std::size_t len) noexcept
{
    if (len == 0) return *this;
    const auto transform = sha256_detail::ActiveEngine().transform;
    std::size_t used = m_bytes % 64;
    m_bytes += len;
    if (used) {
        const std::size_t take = std::min(len, 64 - used);
        std::memcpy(m_buf + used, data, take);
        data += take;
        len -= take;
        if (used + take < 64) return *this;
        transform(m_state, m_buf, 1);
    }
    if (len >= 64) {
        const std::size_t blocks = len / 64;
        transform(m_state, data, blocks);
        data += blocks * 64;
        len -= blocks * 64;
    }
    if (len) std::memcpy(m_buf, data, len);
    return *this;
}

void Sha256::Finalize(uint8_t out[OUTPUT_SIZE]) noexcept
{
    // 0x80, zeros up to 56 mod 64, then the message length in bits, big-endian.
    static constexpr uint8_t PAD[64] = {0x80};
    uint8_t length[8];
    WriteBE64(length, m_bytes << 3);
    Write(PAD, 1 + ((119 - (m_bytes % 64)) % 64));
    Write(length, 8);
    for (int i = 0; i < 8; ++i) WriteBE32(out + 4 * i, m_state[i]);
}

void Sha256d::Finalize(uint8_t out[OUTPUT_SIZE]) noexcept
{
    uint8_t inner[32];
    m_inner.Finalize(inner);
    Sha256().Write(inner, 32).Finalize(out);
}

void Sha256dOf(std::span<const uint8_t> data, uint8_t out[32]) noexcept
{
    if (data.size() == 64) {
        // A merkle pair or any other 64-byte input: the fixed-size path skips the padding work.
        sha256_detail::ActiveEngine().d64(out, data.data(), 1);
        return;
    }
    if (data.size() < 56) {
        // One padded block, then the digest's own block (addresses hash 21 or 34 bytes this way).
        const auto transform = sha256_detail::ActiveEngine().transform;
        uint8_t block[64] = {};
        if (!data.empty()) std::memcpy(block, data.data(), data.size()); // data() may be null
        block[data.size()] = 0x80;
        WriteBE64(block + 56, uint64_t(data.size()) << 3);
        uint32_t state[8];
        std::memcpy(state, sha256_detail::IV, sizeof(state));
        transform(state, block, 1);
        for (int i = 0; i < 8; ++i) WriteBE32(block + 4 * i, state[i]);
        for (int i = 0; i < 8; ++i) WriteBE32(block + 32 + 4 * i, sha256_detail::PAD32_TAIL[i]);
        std::memcpy(state, sha256_detail::IV, sizeof(state));
        transform(state, block, 1);
        for (int i = 0; i < 8; ++i) WriteBE32(out + 4 * i, state[i]);
        return;
    }
    Sha256d().Write(data).Finalize(out);
}

void Sha256d64(uint8_t* out, const uint8_t* in, std::size_t blocks) noexcept
{
    if (blocks) sha256_detail::ActiveEngine().d64(out, in, blocks);
}

std::string_view Sha256Implementation() noexcept { return sha256_detail::ActiveEngine().name; }

} // namespace ibdkit

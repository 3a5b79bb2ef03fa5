// ibdkit/crypto/sha256.h — SHA-256 and double SHA-256 with runtime dispatch.
//
// Back-ends: SHA-NI (x86 SHA extensions), AVX2 8-lane and AVX-512 16-lane (for many 64-byte inputs:
// merkle pairs), the ARMv8 SHA-2 instructions (aarch64), and a portable implementation. The CPU is
// inspected once (CPUID + XGETBV; on aarch64 Linux getauxval(AT_HWCAP)) and the fastest available
// back-end is chosen on first use; the choice is process-wide and thread-safe. The environment
// variable IBDKIT_DISABLE_CPU_FEATURES=1 makes that choice the portable code on any CPU.
// No global -m flags are needed: SIMD code is compiled per function with target attributes.
// Design notes and measurements: docs/crypto.md.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>

namespace ibdkit {

/// Incremental SHA-256 (FIPS 180-4). Write any number of times, then Finalize once; Reset before
/// reusing the object after Finalize.
class Sha256 {
public:
    static constexpr std::size_t OUTPUT_SIZE = 32;
    Sha256() noexcept;
    Sha256& Write(const uint8_t* data, std::size_t len) noexcept;
    Sha256& Write(std::span<const uint8_t> data) noexcept { return Write(data.data(), data.size()); }
    Sha256& Write(std::span<const std::byte> data) noexcept
    {
        return Write(reinterpret_cast<const uint8_t*>(data.data()), data.size());
    }
    void Finalize(uint8_t out[OUTPUT_SIZE]) noexcept;
    Sha256& Reset() noexcept;

private:
    uint32_t m_state[8];
    uint8_t m_buf[64];
    uint64_t m_bytes{0};
};

/// Incremental double SHA-256 (SHA256(SHA256(x))), Bitcoin's hash for txids, block hashes and
/// checksums.
class Sha256d {
public:
    static constexpr std::size_t OUTPUT_SIZE = 32;
    Sha256d& Write(std::span<const uint8_t> data) noexcept { m_inner.Write(data); return *this; }
    Sha256d& Write(std::span<const std::byte> data) noexcept { m_inner.Write(data); return *this; }
    void Finalize(uint8_t out[OUTPUT_SIZE]) noexcept;
    Sha256d& Reset() noexcept { m_inner.Reset(); return *this; }

private:
    Sha256 m_inner;
};

/// One-shot SHA256d of a byte span into out (32 bytes). A 64-byte input takes the Sha256d64 path.
void Sha256dOf(std::span<const uint8_t> data, uint8_t out[32]) noexcept;

/// SHA256d of `blocks` 64-byte inputs at `in` (each the concatenation of two 32-byte hashes),
/// writing 32 bytes per input to `out`. The merkle-tree primitive; uses multi-lane SIMD when
/// available. `out` may equal `in` (in-place halving).
void Sha256d64(uint8_t* out, const uint8_t* in, std::size_t blocks) noexcept;

/// One message for Sha256dMany: the concatenation of up to three byte ranges (unused ranges have
/// size 0), and where its 32-byte SHA256d goes. A transaction's txid is three ranges of its
/// serialization (version | inputs..outputs | lock time) when it has a witness, one otherwise.
struct HashJob {
    const uint8_t* data[3]{nullptr, nullptr, nullptr};
    uint32_t size[3]{0, 0, 0};
    uint8_t* out{nullptr};

    HashJob() = default;
    HashJob(std::span<const uint8_t> whole, uint8_t* dest) noexcept
        : data{whole.data(), nullptr, nullptr}, size{uint32_t(whole.size()), 0, 0}, out(dest) {}
    HashJob(std::span<const uint8_t> a, std::span<const uint8_t> b, std::span<const uint8_t> c, uint8_t* dest) noexcept
        : data{a.data(), b.data(), c.data()}, size{uint32_t(a.size()), uint32_t(b.size()), uint32_t(c.size())}, out(dest) {}
    uint64_t TotalSize() const noexcept { return uint64_t(size[0]) + size[1] + size[2]; }
};

/// SHA256d of many independent messages at once (multi-buffer): each SIMD lane hashes one message
/// and takes the next as soon as its message ends (longest first), then the second SHA-256 runs
/// over all 32-byte digests as one fixed-size batch. Writes 32 bytes to each job's `out`, which
/// must not overlap any job's input. Same result as Sha256d().Write(range 0).Write(range 1)
/// .Write(range 2).Finalize(out) on every back-end; each range must be shorter than 4 GiB.
void Sha256dMany(std::span<const HashJob> jobs) noexcept;

/// A message already laid out with its SHA-256 padding (see WriteSha256Padding): `blocks` whole
/// 64-byte blocks at `data`, and where its 32-byte SHA256d goes. A lane reads it straight through,
/// with no assembly of straddling or padding blocks.
struct PaddedHashJob {
    const uint8_t* data{nullptr};
    uint32_t blocks{0};
    uint8_t* out{nullptr};
};

/// Bytes of SHA-256 padding after a `len`-byte message (9 to 72: 0x80, zeros, the 64-bit
/// big-endian bit length), so that the message ends on a 64-byte boundary.
constexpr std::size_t Sha256PaddingSize(uint64_t len) noexcept
{
    return std::size_t(64 - (len + 8) % 64) + 8;
}
/// Writes the Sha256PaddingSize(len) padding bytes for a `len`-byte message to `dst`.
void WriteSha256Padding(uint8_t* dst, uint64_t len) noexcept;

/// Sha256dMany over pre-padded messages: the same lanes and result, less scheduling per message.
/// A padded message has at least one block; a job with `blocks == 0` is skipped (`out` untouched).
void Sha256dManyPadded(std::span<const PaddedHashJob> jobs) noexcept;

/// Name of the back-end in use ("sha-ni", "avx2", "avx512", "arm-sha2", "portable"; the automatic choice may
/// combine two, e.g. "sha-ni+avx512" = SHA-NI for streams and AVX-512 for Sha256d64).
std::string_view Sha256Implementation() noexcept;

namespace sha256_detail {
/// Back-ends that exist on this CPU, for tests that make every back-end agree.
/// Forcing Avx2 or Avx512 selects them for Sha256d64 (groups of 8 / 16 inputs; the remainder
/// and single streams use the portable code, so each back-end is tested on its own).
/// ArmSha2 is the ARMv8 SHA-2 instructions (aarch64 Linux with HWCAP_SHA2) for everything.
enum class Backend { Portable, ShaNi, Avx2, Avx512, ArmSha2 };
bool BackendAvailable(Backend b) noexcept;
/// Forces a back-end for the whole process (for tests and benchmarks); returns false and changes
/// nothing if it is unavailable. Safe to call while other threads hash: every back-end shares one
/// state layout, so a stream may switch back-end between blocks.
bool ForceBackend(Backend b) noexcept;
/// Returns to automatic selection.
void ResetBackend() noexcept;
} // namespace sha256_detail

} // namespace ibdkit

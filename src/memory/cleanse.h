// src/memory/cleanse.h — zeroing that the compiler cannot remove.
//
// Two implementations, both measured in `ibdkit bench --filter Cleanse` (docs/benchmarks.md):
//  - CleanseCoreStyle: what Bitcoin Core's memory_cleanse does: memset, then an empty asm statement
//    that takes the pointer as input and clobbers "memory". Kept to reproduce Core's allocators.
//  - Cleanse: ibdkit's choice, glibc's explicit_bzero — an out-of-line call the optimiser cannot
//    see into, so the stores cannot be elided, and no "memory" clobber is inlined into the caller.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

namespace ibdkit {

namespace detail {
/// Bytes zeroed by this thread through any Cleanse function but CleanseSecret (a plain add: no
/// atomic cost).
extern thread_local uint64_t g_cleansed_bytes;
} // namespace detail

/// Bytes this thread has cleansed so far (for "bytes cleansed" statistics).
inline uint64_t CleansedBytes() noexcept { return detail::g_cleansed_bytes; }

/// Zeroes [p, p+n). Never elided. p may be null when n == 0.
void Cleanse(void* p, std::size_t n) noexcept;

/// Zeroes [p, p+n) as Cleanse does, without counting it: for secrets that are no buffer's (a
/// hash state that saw a salt), so that "bytes cleansed" stays what the buffer policy zeroed.
void CleanseSecret(void* p, std::size_t n) noexcept;

/// Core's memory_cleanse: memset + asm("" : : "r"(p) : "memory"). Never elided.
void CleanseCoreStyle(void* p, std::size_t n) noexcept;

/// Core's compiler barrier alone (the seed PR's diagnostic variant): no stores at all.
void CompilerBarrier(void* p) noexcept;

/// Inline form for a few bytes (inline buffers, keys): memset + the same escape as Core, no call.
inline void CleanseSmall(void* p, std::size_t n) noexcept
{
    if (n == 0) return;
    detail::g_cleansed_bytes += n;
    __builtin_memset(p, 0, n);
    __asm__ __volatile__("" : : "r"(p) : "memory");
}

template <typename T, std::size_t N>
void Cleanse(std::span<T, N> s) noexcept
{
    Cleanse(s.data(), s.size_bytes());
}

} // namespace ibdkit

#include "memory/cleanse.h"

#include <cstring>
#include <string.h> // explicit_bzero (glibc >= 2.25)

namespace ibdkit {

thread_local uint64_t detail::g_cleansed_bytes = 0;

void Cleanse(void* p, std::size_t n) noexcept
{
    if (n == 0) return;
    detail::g_cleansed_bytes += n;
    explicit_bzero(p, n);
}

void CleanseSecret(void* p, std::size_t n) noexcept
{
    if (n != 0) explicit_bzero(p, n);
}

void CleanseCoreStyle(void* p, std::size_t n) noexcept
{
    if (n == 0) return;
    detail::g_cleansed_bytes += n;
    std::memset(p, 0, n);
    // Same barrier as Core's support/cleanse.cpp: the pointer escapes into an asm statement that
    // may read any memory, so the memset above is observable and cannot be removed.
    __asm__ __volatile__("" : : "r"(p) : "memory");
}

void CompilerBarrier(void* p) noexcept
{
    __asm__ __volatile__("" : : "r"(p) : "memory");
}

} // namespace ibdkit

#include <ibdkit/memory/cleanse.h>

#include <cstring>
#include <string.h> // explicit_bzero (glibc >= 2.25)

namespace ibdkit {

void Cleanse(void* p, std::size_t n) noexcept
{
    if (n == 0) return;
    explicit_bzero(p, n);
}

void CleanseCoreStyle(void* p, std::size_t n) noexcept
{
    if (n == 0) return;
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

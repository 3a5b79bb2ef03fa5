// src/memory/locked_pool.h — a pool of locked memory for secrets, and SecureAllocator.
//
// In the manner of Bitcoin Core's LockedPool: page-aligned anonymous mmap arenas, mlock'ed and
// marked MADV_DONTDUMP, carved into chunks by best fit, with free chunks coalescing with their
// neighbours. Every chunk is cleansed when it is freed.
//
// Unlike Core, a failed mlock (RLIMIT_MEMLOCK, missing CAP_IPC_LOCK) is reported, not hidden: the
// pool keeps working with unlocked memory, counts locked vs total bytes in LockedPoolStats, and
// sends one warning through the log hook.
#pragma once

#include <cstddef>
#include <functional>
#include <memory>
#include <string_view>

namespace ibdkit {

struct LockedPoolStats {
    std::size_t used{0};         ///< bytes in live chunks
    std::size_t free{0};         ///< bytes in free chunks
    std::size_t total{0};        ///< bytes in all arenas
    std::size_t locked{0};       ///< bytes in arenas whose mlock succeeded
    std::size_t chunks_used{0};
    std::size_t chunks_free{0};
    std::size_t arenas{0};
    std::size_t lock_failures{0}; ///< arenas whose mlock failed
};

/// Allocates and frees memory from locked arenas. Thread-safe.
class LockedPool {
public:
    /// Arena size for ordinary chunks (Core uses the same 256 KiB).
    static constexpr std::size_t ARENA_SIZE = 256 * 1024;
    /// Alignment of every chunk.
    static constexpr std::size_t ARENA_ALIGN = 16;

    using LogHook = std::function<void(std::string_view)>;

    LockedPool();
    ~LockedPool();
    LockedPool(const LockedPool&) = delete;
    LockedPool& operator=(const LockedPool&) = delete;

    /// Returns a chunk of at least `size` bytes (aligned to ARENA_ALIGN), or nullptr if no
    /// arena could be mapped. size == 0 returns nullptr. Chunks larger than ARENA_SIZE get a
    /// dedicated arena, which is unmapped when freed.
    void* alloc(std::size_t size);
    /// Cleanses and frees a chunk from alloc(). p == nullptr is a no-op. Freeing a pointer the
    /// pool did not hand out aborts (programmer error).
    void free(void* p) noexcept;

    LockedPoolStats stats() const;

    /// The process-wide pool used by SecureAllocator.
    static LockedPool& Instance();
    /// Where the one-time "could not lock memory" warning goes (default: stderr).
    static void SetLogHook(LogHook hook);

private:
    struct Impl;
    std::unique_ptr<Impl> m_impl;
};

/// Allocator over LockedPool::Instance(): the `secure` policy.
template <typename T>
class SecureAllocator {
public:
    using value_type = T;
    using propagate_on_container_move_assignment = std::true_type;
    using is_always_equal = std::true_type;
    template <typename U>
    struct rebind {
        using other = SecureAllocator<U>;
    };
    static_assert(alignof(T) <= LockedPool::ARENA_ALIGN);

    SecureAllocator() noexcept = default;
    template <typename U>
    SecureAllocator(const SecureAllocator<U>&) noexcept {}

    T* allocate(std::size_t n)
    {
        if (n > std::size_t(-1) / sizeof(T)) throw std::bad_array_new_length();
        void* p = LockedPool::Instance().alloc(n * sizeof(T));
        if (p == nullptr) throw std::bad_alloc();
        return static_cast<T*>(p);
    }
    void deallocate(T* p, std::size_t) noexcept { LockedPool::Instance().free(p); }

    template <typename U>
    friend bool operator==(const SecureAllocator&, const SecureAllocator<U>&) noexcept { return true; }
};

} // namespace ibdkit

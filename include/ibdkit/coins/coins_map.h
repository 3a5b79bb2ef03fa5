// ibdkit/coins/coins_map.h — the cache's map of outpoints to entries with Core's FRESH/DIRTY flags
// (coins.h: CCoinsCacheEntry, CCoinsMap).
#pragma once

#include <ibdkit/coins/coin.h>
#include <ibdkit/primitives/transaction.h>

#include <cstddef>
#include <array>
#include <cstdint>
#include <functional>
#include <new>
#include <type_traits>
#include <vector>
#include <random>
#include <unordered_map>

namespace ibdkit {

/// A cache entry. DIRTY: differs from the parent view. FRESH: the parent has no unspent coin here
/// (so a FRESH entry that gets spent can simply be dropped).
struct CoinsCacheEntry {
    enum Flags : uint8_t { DIRTY = 1 << 0, FRESH = 1 << 1 };
    Coin coin;
    uint8_t flags{0};

    CoinsCacheEntry() = default;
    explicit CoinsCacheEntry(Coin c) : coin(std::move(c)) {}
    bool IsDirty() const noexcept { return flags & DIRTY; }
    bool IsFresh() const noexcept { return flags & FRESH; }
};

/// Outpoint hasher with a per-process random salt, so txids ground by an attacker do not collide
/// in the table (Core uses salted SipHash; a salted multiply-xorshift is enough for a table).
class SaltedOutPointHasher {
public:
    SaltedOutPointHasher() : m_k0(Salt()), m_k1(Salt() | 1) {}
    std::size_t operator()(const OutPoint& o) const noexcept
    {
        uint64_t h = o.hash.ToUint256().GetUint64(0) ^ m_k0;
        h ^= o.hash.ToUint256().GetUint64(2) + (uint64_t(o.n) << 32);
        h *= m_k1;
        h ^= h >> 29;
        h *= 0xbf58476d1ce4e5b9ULL;
        h ^= h >> 32;
        return std::size_t(h);
    }

private:
    static uint64_t Salt()
    {
        static std::random_device rd;
        return (uint64_t(rd()) << 32) | rd();
    }
    uint64_t m_k0, m_k1;
};

/// A pool of small fixed-size blocks for the map's nodes (Core's PoolResource idea): allocating
/// and freeing millions of entries costs a free-list push/pop instead of malloc/free. Chunks come
/// straight from the kernel (anonymous mmap) and go back to it when the pool is destroyed, so an
/// emptied cache really returns its memory instead of leaving it to the allocator's fragments.
/// Not thread-safe (neither is the cache).
class NodePool {
public:
    static constexpr std::size_t MAX_BLOCK = 256;
    static constexpr std::size_t ALIGN = 16;
    static constexpr std::size_t CHUNK = 1 << 20;

    NodePool() = default;
    NodePool(const NodePool&) = delete;
    NodePool& operator=(const NodePool&) = delete;
    ~NodePool()
    {
        for (void* c : m_chunks) FreeChunk(c);
    }

    void* Allocate(std::size_t bytes)
    {
        const std::size_t cls = Class(bytes);
        const std::size_t size = cls * ALIGN;
        m_live += size;
        if (void* p = m_free[cls]) {
            m_free[cls] = *static_cast<void**>(p);
            return p;
        }
        if (std::size_t(m_end - m_cur) < size) {
            m_chunks.reserve(m_chunks.size() + 1);
            m_cur = static_cast<char*>(NewChunk());
            m_end = m_cur + CHUNK;
            m_chunks.push_back(m_cur);
        }
        void* p = m_cur;
        m_cur += size;
        return p;
    }
    void Deallocate(void* p, std::size_t bytes) noexcept
    {
        const std::size_t cls = Class(bytes);
        m_live -= cls * ALIGN;
        *static_cast<void**>(p) = m_free[cls];
        m_free[cls] = p;
    }
    /// Bytes held from the system (whole chunks): the high-water mark of LiveBytes(), rounded up.
    std::size_t Usage() const noexcept { return m_chunks.size() * CHUNK; }
    /// Bytes of the blocks handed out and not freed. Freed blocks are reused before a new chunk
    /// is taken, so Usage() grows only while LiveBytes() reaches a new high.
    std::size_t LiveBytes() const noexcept { return m_live; }
    /// What a block of `bytes` really takes.
    static constexpr std::size_t BlockBytes(std::size_t bytes) noexcept { return Class(bytes) * ALIGN; }

private:
    static constexpr std::size_t Class(std::size_t bytes) noexcept { return (bytes + ALIGN - 1) / ALIGN; }
    /// A CHUNK-sized, ALIGN-aligned region from the kernel; throws std::bad_alloc.
    static void* NewChunk();
    static void FreeChunk(void* chunk) noexcept;
    std::array<void*, MAX_BLOCK / ALIGN + 1> m_free{};
    std::vector<void*> m_chunks;
    char* m_cur{nullptr};
    char* m_end{nullptr};
    std::size_t m_live{0};
};

/// Allocator over a NodePool for single small objects (the map's nodes); anything else (the bucket
/// array) and a null pool go to operator new.
template <typename T>
struct PoolAllocator {
    using value_type = T;
    using propagate_on_container_move_assignment = std::true_type;
    using propagate_on_container_swap = std::true_type;
    using propagate_on_container_copy_assignment = std::true_type;

    NodePool* pool{nullptr};
    PoolAllocator() noexcept = default;
    explicit PoolAllocator(NodePool* p) noexcept : pool(p) {}
    template <typename U>
    PoolAllocator(const PoolAllocator<U>& o) noexcept : pool(o.pool) {}

    static constexpr bool Pooled(std::size_t n) noexcept
    {
        return sizeof(T) <= NodePool::MAX_BLOCK && alignof(T) <= NodePool::ALIGN && n == 1;
    }
    T* allocate(std::size_t n)
    {
        if (pool && Pooled(n)) return static_cast<T*>(pool->Allocate(sizeof(T)));
        return static_cast<T*>(::operator new(n * sizeof(T), std::align_val_t(alignof(T))));
    }
    void deallocate(T* p, std::size_t n) noexcept
    {
        if (pool && Pooled(n)) {
            pool->Deallocate(p, sizeof(T));
        } else {
            ::operator delete(p, std::align_val_t(alignof(T)));
        }
    }
    template <typename U>
    friend bool operator==(const PoolAllocator& a, const PoolAllocator<U>& b) noexcept { return a.pool == b.pool; }
};

using CoinsMap = std::unordered_map<OutPoint, CoinsCacheEntry, SaltedOutPointHasher, std::equal_to<OutPoint>,
                                    PoolAllocator<std::pair<const OutPoint, CoinsCacheEntry>>>;

} // namespace ibdkit

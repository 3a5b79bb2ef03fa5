// ibdkit/coins/coins_map.h — the cache's map of outpoints to entries with Core's FRESH/DIRTY flags
// (coins.h: CCoinsCacheEntry, CCoinsMap).
//
// Core keeps its cache in a std::unordered_map: a lookup walks a bucket's chain of nodes, comparing
// whole 36-byte keys, two or three cache misses per coin. CoinsMap is an open-addressing table of
// 8-byte slots (32 bits of the key's salted hash + a 32-bit node number) probed linearly; a node is
// touched only when its 32 hash bits match. Nodes live in slabs taken straight from the kernel
// and never move, so a reference to an entry stays valid until that entry is erased, whatever is
// inserted meanwhile (iterators too: see `iterator`). A cleared map returns its memory.
#pragma once

#include <ibdkit/coins/coin.h>
#include <ibdkit/primitives/transaction.h>

#include <cstddef>
#include <cstdint>
#include <iterator>
#include <memory>
#include <new>
#include <random>
#include <tuple>
#include <utility>
#include <vector>

namespace ibdkit {

/// A cache entry. DIRTY: differs from the parent view. FRESH: the parent has no unspent coin here
/// (so a FRESH entry that gets spent can simply be dropped).
///
/// `coin` may share its tail padding with `flags` ([[no_unique_address]]: a Coin is 53 bytes of
/// data in 56), so an entry is 56 bytes and a map node, with its 36-byte outpoint, 96 — 8 bytes a
/// coin less than a plain member gave (docs/chainstate.md, *What a coin costs*).
struct CoinsCacheEntry {
    enum Flags : uint8_t { DIRTY = 1 << 0, FRESH = 1 << 1 };
    [[no_unique_address]] Coin coin;
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

/// Outpoint → cache entry. Not thread-safe.
class CoinsMap {
public:
    using key_type = OutPoint;
    using mapped_type = CoinsCacheEntry;
    using value_type = std::pair<const OutPoint, CoinsCacheEntry>;

    template <bool Const>
    class Iter {
    public:
        using iterator_category = std::forward_iterator_tag;
        using value_type = CoinsMap::value_type;
        using difference_type = std::ptrdiff_t;
        using pointer = std::conditional_t<Const, const value_type*, value_type*>;
        using reference = std::conditional_t<Const, const value_type&, value_type&>;

        Iter() = default;
        template <bool C = Const, typename = std::enable_if_t<C>>
        Iter(const Iter<false>& o) : m_map(o.m_map), m_slot(o.m_slot), m_node(o.m_node) {}
        reference operator*() const noexcept { return *m_node; }
        pointer operator->() const noexcept { return m_node; }
        Iter& operator++() noexcept
        {
            *this = m_map->template IterFrom<Const>(m_slot + 1);
            return *this;
        }
        friend bool operator==(const Iter& a, const Iter& b) noexcept { return a.m_node == b.m_node; }

    private:
        friend class CoinsMap;
        using Map = std::conditional_t<Const, const CoinsMap, CoinsMap>;
        Iter(Map* map, std::size_t slot, pointer node) : m_map(map), m_slot(slot), m_node(node) {}
        Map* m_map{nullptr};
        std::size_t m_slot{0}; ///< where the entry was found; re-checked before use (entries move between slots)
        pointer m_node{nullptr};
        template <bool>
        friend class Iter;
    };
    /// Valid (for dereferencing and erase) until its entry is erased: inserting, even when the
    /// table grows, never moves an entry's node. ++ after inserts may skip or repeat entries.
    using iterator = Iter<false>;
    using const_iterator = Iter<true>;

    CoinsMap() = default;
    CoinsMap(const CoinsMap&) = delete;
    CoinsMap& operator=(const CoinsMap&) = delete;
    CoinsMap(CoinsMap&& o) noexcept { swap(o); }
    CoinsMap& operator=(CoinsMap&& o) noexcept
    {
        CoinsMap tmp(std::move(o));
        swap(tmp);
        return *this;
    }
    ~CoinsMap() { clear(); }

    void swap(CoinsMap& o) noexcept
    {
        using std::swap;
        swap(m_slots, o.m_slots);
        swap(m_mask, o.m_mask);
        swap(m_shift, o.m_shift);
        swap(m_size, o.m_size);
        swap(m_hasher, o.m_hasher);
        swap(m_slabs, o.m_slabs);
        swap(m_free, o.m_free);
        swap(m_nodes_made, o.m_nodes_made);
    }

    std::size_t size() const noexcept { return m_size; }
    bool empty() const noexcept { return m_size == 0; }
    /// Number of slots (0 before the first insert).
    std::size_t bucket_count() const noexcept { return m_slots ? m_mask + 1 : 0; }
    /// Bytes the map holds from the system: its slot table and its node slabs.
    std::size_t MemoryUsage() const noexcept { return bucket_count() * sizeof(uint64_t) + m_slabs.size() * SLAB_BYTES; }
    /// Bytes of the nodes in use (≤ the slabs, which keep the high-water mark for reuse).
    std::size_t NodeBytes() const noexcept { return m_size * NODE_BYTES; }
    static constexpr std::size_t NODE_BYTES = (sizeof(value_type) + alignof(value_type) - 1) / alignof(value_type) * alignof(value_type);

    iterator begin() noexcept { return IterFrom<false>(0); }
    iterator end() noexcept { return {this, bucket_count(), nullptr}; }
    const_iterator begin() const noexcept { return IterFrom<true>(0); }
    const_iterator end() const noexcept { return {this, bucket_count(), nullptr}; }

    iterator find(const OutPoint& key) noexcept
    {
        const std::size_t slot = FindSlot(key, m_hasher(key));
        return slot == NPOS ? end() : iterator{this, slot, Node(m_slots[slot])};
    }
    const_iterator find(const OutPoint& key) const noexcept
    {
        const std::size_t slot = FindSlot(key, m_hasher(key));
        return slot == NPOS ? end() : const_iterator{this, slot, Node(m_slots[slot])};
    }
    bool contains(const OutPoint& key) const noexcept { return FindSlot(key, m_hasher(key)) != NPOS; }

    /// Asks the CPU to start loading the slot where `key`'s probe begins, so that a lookup of
    /// `key` issued a little later does not wait for memory. Only a hint: no effect on the map.
    void PrefetchSlot(const OutPoint& key) const noexcept
    {
        if (m_slots) __builtin_prefetch(&m_slots[Home(m_hasher(key))]);
    }
    /// Asks the CPU to start loading the node of an entry (every line it spans: up to three).
    static void PrefetchEntry(const value_type* entry) noexcept
    {
        const char* node = reinterpret_cast<const char*>(entry);
        __builtin_prefetch(node);
        __builtin_prefetch(node + 64);
        __builtin_prefetch(node + NODE_BYTES - 1);
    }
    /// The same for the node of the first entry on `key`'s probe whose hash bits match (the one a
    /// lookup compares first): reads the slots, so call it once PrefetchSlot(key) had time to land.
    void PrefetchNode(const OutPoint& key) const noexcept
    {
        if (!m_slots) return;
        const uint64_t h = m_hasher(key);
        const uint64_t tag = h & HASH_MASK;
        for (std::size_t slot = Home(h);; slot = (slot + 1) & m_mask) {
            const uint64_t s = m_slots[slot];
            if (s == 0) return;
            if ((s & HASH_MASK) == tag) {
                PrefetchEntry(Node(s));
                return;
            }
        }
    }

    /// Inserts CoinsCacheEntry(args...) at `key` unless an entry is there; (entry, inserted).
    template <typename... Args>
    std::pair<iterator, bool> try_emplace(const OutPoint& key, Args&&... args)
    {
        const uint64_t h = m_hasher(key);
        if (m_slots) {
            const std::size_t found = FindSlot(key, h);
            if (found != NPOS) return {iterator{this, found, Node(m_slots[found])}, false};
        }
        if ((m_size + 1) * 5 > bucket_count() * 4) Grow(); // load ≤ 0.8
        const uint32_t idx = NewNode();
        value_type* node = Node(idx);
        try {
            ::new (static_cast<void*>(node)) value_type(std::piecewise_construct, std::forward_as_tuple(key),
                                                        std::forward_as_tuple(std::forward<Args>(args)...));
        } catch (...) {
            FreeNode(idx);
            throw;
        }
        std::size_t slot = Home(h);
        while (m_slots[slot] != 0) slot = (slot + 1) & m_mask;
        m_slots[slot] = (h & HASH_MASK) | idx;
        ++m_size;
        return {iterator{this, slot, node}, true};
    }
    std::pair<iterator, bool> emplace(const OutPoint& key, CoinsCacheEntry&& entry)
    {
        return try_emplace(key, std::move(entry));
    }

    /// Erases the entry; returns the iterator to continue a walk with (it may meet an entry twice
    /// when the table's wrap-around shifts one back behind the walk, never skips one).
    iterator erase(iterator it) noexcept
    {
        std::size_t slot = it.m_slot;
        const uint64_t s = slot < bucket_count() ? m_slots[slot] : 0;
        if (s == 0 || Node(s) != it.m_node) slot = FindSlot(it.m_node->first, m_hasher(it.m_node->first));
        EraseSlot(slot);
        return IterFrom<false>(slot);
    }
    std::size_t erase(const OutPoint& key) noexcept
    {
        const std::size_t slot = FindSlot(key, m_hasher(key));
        if (slot == NPOS) return 0;
        EraseSlot(slot);
        return 1;
    }

    /// Calls f(value_type&) on every entry, in slot order, which is random memory order for the
    /// nodes: each is asked of the CPU a few slots ahead. f must not insert or erase.
    template <typename F>
    void ForEach(F&& f)
    {
        if (!m_slots) return;
        constexpr std::size_t AHEAD = 16;
        for (std::size_t i = 0; i <= m_mask; ++i) {
            if (i + AHEAD <= m_mask && m_slots[i + AHEAD]) PrefetchEntry(Node(m_slots[i + AHEAD]));
            if (m_slots[i]) f(*Node(m_slots[i]));
        }
    }

    /// Destroys every entry and returns all memory.
    void clear() noexcept
    {
        ForEach([](value_type& kv) { kv.~value_type(); });
        m_slots.reset();
        m_mask = 0;
        m_shift = 64;
        m_size = 0;
        for (void* slab : m_slabs) FreeSlab(slab);
        m_slabs.clear();
        m_slabs.shrink_to_fit();
        m_free = 0;
        m_nodes_made = 0;
    }

private:
    static constexpr std::size_t NPOS = ~std::size_t(0);
    static constexpr std::size_t SLAB_BYTES = std::size_t(1) << 20;
    static constexpr std::size_t NODES_PER_SLAB = SLAB_BYTES / NODE_BYTES;
    static constexpr uint64_t HASH_MASK = ~uint64_t(0xFFFFFFFF); ///< high 32 bits: hash; low 32: node number (1-based)
    static_assert(alignof(value_type) <= 16 && NODE_BYTES <= 128);

    struct FreeDeleter {
        void operator()(uint64_t* p) const noexcept;
    };

    /// A slab of SLAB_BYTES from the kernel (anonymous mmap); throws std::bad_alloc.
    static void* NewSlab();
    static void FreeSlab(void* slab) noexcept;
    /// A zeroed slot table of `n` slots (calloc: untouched pages cost nothing); throws std::bad_alloc.
    static uint64_t* NewSlots(std::size_t n);

    value_type* Node(uint64_t slot_or_idx) const noexcept
    {
        const uint32_t idx = uint32_t(slot_or_idx) - 1;
        return reinterpret_cast<value_type*>(static_cast<char*>(m_slabs[idx / NODES_PER_SLAB]) +
                                             (idx % NODES_PER_SLAB) * NODE_BYTES);
    }
    std::size_t Home(uint64_t h) const noexcept { return std::size_t(h >> m_shift); }

    std::size_t FindSlot(const OutPoint& key, uint64_t h) const noexcept
    {
        if (!m_slots) return NPOS;
        const uint64_t tag = h & HASH_MASK;
        for (std::size_t slot = Home(h);; slot = (slot + 1) & m_mask) {
            const uint64_t s = m_slots[slot];
            if (s == 0) return NPOS;
            if ((s & HASH_MASK) == tag && Node(s)->first == key) return slot;
        }
    }

    template <bool Const>
    Iter<Const> IterFrom(std::size_t slot) const noexcept
    {
        using Map = typename Iter<Const>::Map;
        Map* self = const_cast<Map*>(this);
        const std::size_t n = bucket_count();
        while (slot < n && m_slots[slot] == 0) ++slot;
        if (slot >= n) return {self, n, nullptr};
        return {self, slot, Node(m_slots[slot])};
    }

    void EraseSlot(std::size_t hole) noexcept
    {
        const uint64_t s = m_slots[hole];
        Node(s)->~value_type();
        FreeNode(uint32_t(s));
        --m_size;
        // Backward shift: pull later entries of the probe run into the hole when their home allows.
        for (std::size_t j = hole;;) {
            j = (j + 1) & m_mask;
            const uint64_t t = m_slots[j];
            if (t == 0) break;
            const std::size_t home = Home(t);
            const bool stays = hole <= j ? (hole < home && home <= j) : (hole < home || home <= j);
            if (!stays) {
                m_slots[hole] = t;
                hole = j;
            }
        }
        m_slots[hole] = 0;
    }

    void Grow()
    {
        const std::size_t n = m_slots ? (m_mask + 1) * 2 : 64;
        std::unique_ptr<uint64_t[], FreeDeleter> slots(NewSlots(n));
        unsigned bits = 0;
        while ((std::size_t(1) << bits) < n) ++bits;
        const unsigned shift = 64 - bits;
        if (m_slots) {
            for (std::size_t i = 0; i <= m_mask; ++i) {
                const uint64_t s = m_slots[i];
                if (!s) continue;
                std::size_t slot = std::size_t(s >> shift);
                while (slots[slot] != 0) slot = (slot + 1) & (n - 1);
                slots[slot] = s;
            }
        }
        m_slots = std::move(slots);
        m_mask = n - 1;
        m_shift = shift;
    }

    /// A node number (1-based) for a new entry: a freed one first, else the next of the slabs.
    uint32_t NewNode()
    {
        if (m_free) {
            const uint32_t idx = m_free;
            m_free = *reinterpret_cast<uint32_t*>(Node(idx));
            return idx;
        }
        if (m_nodes_made == m_slabs.size() * NODES_PER_SLAB) {
            if (m_nodes_made + NODES_PER_SLAB >= (uint64_t(1) << 32)) throw std::bad_alloc();
            m_slabs.reserve(m_slabs.size() + 1);
            m_slabs.push_back(NewSlab());
        }
        return uint32_t(++m_nodes_made);
    }
    void FreeNode(uint32_t idx) noexcept
    {
        *reinterpret_cast<uint32_t*>(Node(idx)) = m_free;
        m_free = idx;
    }

    std::unique_ptr<uint64_t[], FreeDeleter> m_slots;
    std::size_t m_mask{0};
    unsigned m_shift{64};
    std::size_t m_size{0};
    SaltedOutPointHasher m_hasher;
    std::vector<void*> m_slabs;
    uint32_t m_free{0};         ///< first free node number (0: none); each free node holds the next
    uint64_t m_nodes_made{0};   ///< node numbers handed out from the slabs so far
};

} // namespace ibdkit

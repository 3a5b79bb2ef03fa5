// src/coins/coins_map.h — the cache's map of outpoints to entries with Core's FRESH/DIRTY flags
// (coins.h: CCoinsCacheEntry, CCoinsMap).
//
// Core keeps its cache in a std::unordered_map: a lookup walks a bucket's chain of nodes, comparing
// whole 36-byte keys, two or three cache misses per coin. CoinsMap is an open-addressing table of
// 8-byte slots (32 bits of the key's salted hash + a 32-bit node number) probed linearly; a node is
// touched only when its 32 hash bits match. Nodes (72 or 88 bytes: CoinsCacheEntry) live in slabs
// taken straight from the kernel and move only when Compact() packs them, so a reference to an
// entry stays valid until that entry is erased, whatever is inserted meanwhile (iterators too: see
// `iterator`). A cleared map returns its memory.
#pragma once

#include "coins/coins_cache_entry.h"
#include "coins/salted_hasher.h"

#include <ibdkit/coins/coin.h>
#include <ibdkit/primitives/transaction.h>

#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <iterator>
#include <memory>
#include <new>
#include <utility>
#include <vector>

namespace ibdkit {

/// A map node: the outpoint and its entry, 72 or 88 bytes.
struct CoinsMapNode {
    const OutPoint first;
    CoinsCacheEntry second;

private:
    friend class CoinsMap;
    CoinsMapNode(const OutPoint& key, bool large) noexcept : first(key), second(large) {}
    ~CoinsMapNode() = default;
};

/// Outpoint → cache entry. Not thread-safe.
class CoinsMap {
public:
    using key_type = OutPoint;
    using mapped_type = CoinsCacheEntry;
    using value_type = CoinsMapNode;

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
    /// Valid (for dereferencing and erase) until its entry is erased or given a coin by Assign:
    /// inserting, even when the table grows, never moves a node. ++ after inserts may skip or
    /// repeat entries.
    using iterator = Iter<false>;
    using const_iterator = Iter<true>;

    /// Node sizes: a small node holds a script of up to 20 bytes (or a template's 20-byte hash, or
    /// a heap pointer), a large one up to 36 (CoinsCacheEntry).
    static constexpr std::size_t SMALL_NODE_BYTES = 72, LARGE_NODE_BYTES = 88;
    /// The node size an entry for `coin` takes.
    static std::size_t NodeBytesFor(const Coin& coin) noexcept { return CoinsCacheEntry::NeedsLarge(coin) ? LARGE_NODE_BYTES : SMALL_NODE_BYTES; }
    /// The node size of an entry in the map.
    static std::size_t NodeBytesOf(const CoinsCacheEntry& e) noexcept { return e.IsLarge() ? LARGE_NODE_BYTES : SMALL_NODE_BYTES; }

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
        swap(m_n, o.m_n);
        swap(m_size_hint, o.m_size_hint);
        swap(m_size, o.m_size);
        swap(m_hasher, o.m_hasher);
        swap(m_pools, o.m_pools);
    }

    /// Nodes come in slabs of 1 MiB; a slot table of a huge page (2 MiB) or more in whole ones.
    static constexpr std::size_t SLAB_BYTES = std::size_t(1) << 20;
    static constexpr std::size_t HUGE_PAGE_BYTES = std::size_t(2) << 20;

    std::size_t size() const noexcept { return m_size; }
    bool empty() const noexcept { return m_size == 0; }
    /// Number of slots (0 before the first insert).
    std::size_t bucket_count() const noexcept { return m_n; }
    /// How many entries the map expects to hold at most (0: no idea): a growing slot table that
    /// would double past what this many entries fill to 0.8 stops there instead, so that a map
    /// whose size a memory budget caps ends near the load limit, not just above half of it.
    void SetSizeHint(std::size_t entries) noexcept { m_size_hint = entries; }
    /// Bytes the map holds from the system: its slot table and its node slabs.
    std::size_t MemoryUsage() const noexcept
    {
        return bucket_count() * sizeof(uint64_t) + (m_pools[0].slabs.size() + m_pools[1].slabs.size()) * SLAB_BYTES;
    }
    /// Bytes of the nodes in use (≤ the slabs, which keep the high-water mark for reuse).
    std::size_t NodeBytes() const noexcept { return m_pools[0].live * SMALL_NODE_BYTES + m_pools[1].live * LARGE_NODE_BYTES; }

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
    /// Asks the CPU to start loading the node of an entry (every line it may span: up to three).
    static void PrefetchEntry(const value_type* entry) noexcept
    {
        const char* node = reinterpret_cast<const char*>(entry);
        __builtin_prefetch(node);
        __builtin_prefetch(node + 64);
        __builtin_prefetch(node + LARGE_NODE_BYTES - 1);
    }
    /// The same for the node of the first entry on `key`'s probe whose hash bits match (the one a
    /// lookup compares first): reads the slots, so call it once PrefetchSlot(key) had time to land.
    void PrefetchNode(const OutPoint& key) const noexcept
    {
        if (!m_slots) return;
        const uint64_t h = m_hasher(key);
        const uint64_t tag = h & HASH_MASK;
        for (std::size_t slot = Home(h);; slot = Next(slot)) {
            const uint64_t s = m_slots[slot];
            if (s == 0) return;
            if ((s & HASH_MASK) == tag) {
                PrefetchEntry(Node(s));
                return;
            }
        }
    }

    /// Inserts an entry for `key` holding `coin` with `flags`, unless an entry is there (then
    /// nothing changes); (entry, inserted). Throws std::bad_alloc.
    std::pair<iterator, bool> try_emplace(const OutPoint& key, const Coin& coin, uint8_t flags = 0)
    {
        const uint64_t h = m_hasher(key);
        if (m_slots) {
            const std::size_t found = FindSlot(key, h);
            if (found != NPOS) return {iterator{this, found, Node(m_slots[found])}, false};
        }
        if ((m_size + 1) * 5 > bucket_count() * 4) Grow(); // load ≤ 0.8
        const uint32_t idx = MakeNode(key, coin, flags);
        std::size_t slot = Home(h);
        while (m_slots[slot] != 0) slot = Next(slot);
        m_slots[slot] = (h & HASH_MASK) | idx;
        ++m_size;
        return {iterator{this, slot, Node(idx)}, true};
    }

    /// Gives an entry another coin, keeping its flags. The entry may move to a node of the other
    /// size: use the iterator returned (`it` is no longer valid). Throws std::bad_alloc, leaving
    /// the entry as it was or spent.
    iterator Assign(iterator it, const Coin& coin)
    {
        value_type* node = it.m_node;
        const CoinsCacheEntry::Kind kind = CoinsCacheEntry::KindOf(coin);
        if (CoinsCacheEntry::NeedsLarge(coin, kind) == node->second.IsLarge()) {
            node->second.Set(coin, kind);
            return it;
        }
        const std::size_t slot = SlotOf(it);
        const uint32_t idx = MakeNode(node->first, coin, node->second.flags);
        const uint64_t old = m_slots[slot];
        m_slots[slot] = (old & HASH_MASK) | idx;
        DestroyNode(uint32_t(old));
        return {this, slot, Node(idx)};
    }

    /// Marks the entry's coin spent and releases its script; the entry and its flags stay.
    void Spend(iterator it) noexcept { it.m_node->second.Clear(); }

    /// Erases the entry; returns the iterator to continue a walk with (it may meet an entry twice
    /// when the table's wrap-around shifts one back behind the walk, never skips one).
    iterator erase(iterator it) noexcept
    {
        const std::size_t slot = SlotOf(it);
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
        for (std::size_t i = 0; i < m_n; ++i) {
            if (i + AHEAD < m_n && m_slots[i + AHEAD]) PrefetchEntry(Node(m_slots[i + AHEAD]));
            if (m_slots[i]) f(*Node(m_slots[i]));
        }
    }

    /// Moves entries so that each node size's slabs hold only the nodes in use (up to a slab more),
    /// and returns the other slabs to the kernel: a map whose entries were erased here and there
    /// (a warm flush drops the spent and the oldest) keeps no more memory than it uses, whatever
    /// the mix of node sizes it held before. Invalidates every iterator and reference.
    void Compact()
    {
        for (const bool large : {false, true}) {
            Pool& pool = m_pools[large];
            const std::size_t per_slab = large ? LARGE_PER_SLAB : SMALL_PER_SLAB;
            const std::size_t bytes = large ? LARGE_NODE_BYTES : SMALL_NODE_BYTES;
            const std::size_t keep = (pool.live + per_slab - 1) / per_slab;
            if (keep >= pool.slabs.size()) continue;
            const uint32_t tag = large ? LARGE_BIT : 0, limit = uint32_t(keep * per_slab); // numbers 1..limit stay
            const auto mine = [&](uint64_t s) { return s != 0 && (uint32_t(s) & LARGE_BIT) == tag; };
            std::vector<bool> used(std::size_t(limit) + 1, false);
            for (std::size_t i = 0; i < m_n; ++i) {
                if (mine(m_slots[i]) && (uint32_t(m_slots[i]) & ~LARGE_BIT) <= limit) used[uint32_t(m_slots[i]) & ~LARGE_BIT] = true;
            }
            uint32_t next = 1;
            for (std::size_t i = 0; i < m_n; ++i) {
                const uint64_t s = m_slots[i];
                if (!mine(s) || (uint32_t(s) & ~LARGE_BIT) <= limit) continue;
                while (used[next]) ++next; // there is room: live ≤ limit
                used[next] = true;
                std::memcpy(static_cast<void*>(Node(tag | next)), static_cast<const void*>(Node(s)), bytes);
                m_slots[i] = (s & HASH_MASK) | tag | next;
            }
            pool.free = 0;
            for (uint32_t n = limit; n >= 1; --n) {
                if (used[n]) continue;
                *reinterpret_cast<uint32_t*>(Node(tag | n)) = pool.free;
                pool.free = tag | n;
            }
            for (std::size_t i = keep; i < pool.slabs.size(); ++i) FreeSlab(pool.slabs[i]);
            pool.slabs.resize(keep);
            pool.made = limit;
        }
    }

    /// Destroys every entry and returns all memory.
    void clear() noexcept
    {
        ForEach([](value_type& kv) { kv.~value_type(); });
        m_slots.reset();
        m_n = 0;
        m_size = 0;
        for (Pool& pool : m_pools) {
            for (void* slab : pool.slabs) FreeSlab(slab);
            pool = Pool{};
        }
    }

private:
    static constexpr std::size_t NPOS = ~std::size_t(0);
    static constexpr uint64_t HASH_MASK = ~uint64_t(0xFFFFFFFF); ///< high 32 bits: hash; low 32: node number
    /// A node number: the top bit says large, the other 31 count from 1 in that size's slabs.
    static constexpr uint32_t LARGE_BIT = uint32_t(1) << 31;
    static constexpr std::size_t SMALL_PER_SLAB = SLAB_BYTES / SMALL_NODE_BYTES, LARGE_PER_SLAB = SLAB_BYTES / LARGE_NODE_BYTES;
    static_assert(sizeof(value_type) == LARGE_NODE_BYTES && alignof(value_type) <= 8, "a node: 36-byte outpoint, 52-byte entry");
    static_assert(SMALL_NODE_BYTES == LARGE_NODE_BYTES - (CoinsCacheEntry::LARGE_SCRIPT - CoinsCacheEntry::SMALL_SCRIPT));

    /// The nodes of one size: slabs, the free list, and how many are in use.
    struct Pool {
        std::vector<void*> slabs;
        uint32_t free{0};       ///< first free node number (0: none); each free node holds the next
        uint64_t made{0};       ///< node numbers handed out from the slabs so far
        std::size_t live{0};    ///< nodes in use
    };

    struct FreeDeleter {
        void operator()(uint64_t* p) const noexcept;
    };

    /// A slab of SLAB_BYTES from the kernel (anonymous mmap); throws std::bad_alloc.
    static void* NewSlab();
    static void FreeSlab(void* slab) noexcept;
    /// A zeroed slot table of `n` slots, its pages already written (huge-page aligned when `n` slots
    /// fill whole huge pages); throws std::bad_alloc.
    static uint64_t* NewSlots(std::size_t n);

    value_type* Node(uint64_t slot_or_idx) const noexcept
    {
        const uint32_t num = uint32_t(slot_or_idx);
        const uint32_t i = (num & ~LARGE_BIT) - 1;
        char* at = (num & LARGE_BIT) ? static_cast<char*>(m_pools[1].slabs[i / LARGE_PER_SLAB]) + (i % LARGE_PER_SLAB) * LARGE_NODE_BYTES
                                     : static_cast<char*>(m_pools[0].slabs[i / SMALL_PER_SLAB]) + (i % SMALL_PER_SLAB) * SMALL_NODE_BYTES;
        return reinterpret_cast<value_type*>(at);
    }
    /// The slot where a probe for hash `h` (or a slot holding it) starts: the top 32 bits scaled to
    /// the table's size, which need not be a power of two.
    std::size_t Home(uint64_t h) const noexcept { return std::size_t(((h >> 32) * m_n) >> 32); }
    std::size_t Next(std::size_t slot) const noexcept { return slot + 1 == m_n ? 0 : slot + 1; }

    std::size_t FindSlot(const OutPoint& key, uint64_t h) const noexcept
    {
        if (!m_slots) return NPOS;
        const uint64_t tag = h & HASH_MASK;
        for (std::size_t slot = Home(h);; slot = Next(slot)) {
            const uint64_t s = m_slots[slot];
            if (s == 0) return NPOS;
            if ((s & HASH_MASK) == tag && Node(s)->first == key) return slot;
        }
    }
    /// The slot of an iterator's entry (where it was found, unless entries shifted since).
    std::size_t SlotOf(const iterator& it) const noexcept
    {
        const std::size_t slot = it.m_slot;
        const uint64_t s = slot < bucket_count() ? m_slots[slot] : 0;
        if (s != 0 && Node(s) == it.m_node) return slot;
        return FindSlot(it.m_node->first, m_hasher(it.m_node->first));
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
        DestroyNode(uint32_t(m_slots[hole]));
        --m_size;
        // Backward shift: pull later entries of the probe run into the hole when their home allows.
        for (std::size_t j = hole;;) {
            j = Next(j);
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

    /// A table twice as large (64 slots to start), or only as large as the size hint needs.
    void Grow()
    {
        std::size_t n = m_n ? m_n * 2 : 64;
        const std::size_t hinted = m_size_hint / 4 * 5 + 64; // the hint's entries at load 0.8
        if (hinted > m_n && hinted < n) n = hinted;
        // A table of a huge page or more fills whole ones (NewSlots).
        constexpr std::size_t HUGE_SLOTS = HUGE_PAGE_BYTES / sizeof(uint64_t);
        if (n >= HUGE_SLOTS) n = (n + HUGE_SLOTS - 1) / HUGE_SLOTS * HUGE_SLOTS;
        if (n >= (std::size_t(1) << 32)) throw std::bad_alloc();
        std::unique_ptr<uint64_t[], FreeDeleter> slots(NewSlots(n));
        std::unique_ptr<uint64_t[], FreeDeleter> old = std::move(m_slots);
        const std::size_t old_n = m_n;
        m_slots = std::move(slots);
        m_n = n;
        for (std::size_t i = 0; i < old_n; ++i) {
            const uint64_t s = old[i];
            if (!s) continue;
            std::size_t slot = Home(s);
            while (m_slots[slot] != 0) slot = Next(slot);
            m_slots[slot] = s;
        }
    }

    /// A node of the size `coin` needs, holding `key`, `coin` and `flags`; its number.
    uint32_t MakeNode(const OutPoint& key, const Coin& coin, uint8_t flags)
    {
        const CoinsCacheEntry::Kind kind = CoinsCacheEntry::KindOf(coin);
        const bool large = CoinsCacheEntry::NeedsLarge(coin, kind);
        const uint32_t idx = NewNode(large);
        value_type* node = ::new (static_cast<void*>(Node(idx))) value_type(key, large);
        try {
            node->second.Set(coin, kind);
        } catch (...) {
            DestroyNode(idx);
            throw;
        }
        node->second.flags = flags;
        return idx;
    }
    void DestroyNode(uint32_t idx) noexcept
    {
        Node(idx)->~value_type();
        Pool& pool = m_pools[idx >> 31];
        *reinterpret_cast<uint32_t*>(Node(idx)) = pool.free;
        pool.free = idx;
        --pool.live;
    }
    /// A node number for a new entry of either size: a freed one first, else the next of the slabs.
    uint32_t NewNode(bool large)
    {
        Pool& pool = m_pools[large];
        const uint32_t tag = large ? LARGE_BIT : 0;
        if (pool.free) {
            const uint32_t idx = pool.free;
            pool.free = *reinterpret_cast<uint32_t*>(Node(idx));
            ++pool.live;
            return idx;
        }
        const std::size_t per_slab = large ? LARGE_PER_SLAB : SMALL_PER_SLAB;
        if (pool.made == pool.slabs.size() * per_slab) {
            if (pool.made + per_slab >= LARGE_BIT) throw std::bad_alloc();
            pool.slabs.reserve(pool.slabs.size() + 1);
            pool.slabs.push_back(NewSlab());
        }
        ++pool.live;
        return tag | uint32_t(++pool.made);
    }

    std::unique_ptr<uint64_t[], FreeDeleter> m_slots;
    std::size_t m_n{0};         ///< slots (0 before the first insert)
    std::size_t m_size_hint{0}; ///< SetSizeHint
    std::size_t m_size{0};
    SaltedOutPointHasher m_hasher;
    std::array<Pool, 2> m_pools; ///< small nodes, large nodes
};

} // namespace ibdkit

// src/memory/byte_buffer.h — a contiguous growable byte buffer that knows which bytes are dirty.
//
// The subset of std::vector<std::byte> that DataStream needs, over any allocator, with two
// differences that make hygiene cheap:
//  - copies are memcpy/memmove for every allocator (libstdc++ 12 keeps those fast paths for
//    std::allocator only and copies element by element through any other allocator);
//  - it tracks the high-water mark of bytes ever written into the current block ("dirty"), and
//    frees through `deallocate_dirty(p, capacity, dirty)` when the allocator has it, so a
//    hygienic allocator cleanses only bytes that could hold data, not the untouched capacity;
//  - optional inline storage of InlineN bytes (small-buffer optimisation): short buffers — P2P
//    headers, chainstate keys and values, a CompactSize written before a payload — need no heap
//    block at all. Inline bytes are cleansed whenever they are abandoned (on growth to the heap and
//    on destruction) when Alloc is hygienic, so the guarantee also covers them.
#pragma once

#include "memory/cleanse.h"

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstring>
#include <memory>
#include <span>
#include <stdexcept>
#include <utility>

namespace ibdkit {

/// True for allocators that promise hygiene (they accept a dirty-prefix hint).
template <typename Alloc>
concept HygienicAllocator = requires(Alloc a, std::byte* p, std::size_t n) { a.deallocate_dirty(p, n, n); };

template <typename Alloc, std::size_t InlineN = 0>
class ByteBuffer {
public:
    using value_type = std::byte;
    using allocator_type = Alloc;
    using size_type = std::size_t;
    using difference_type = std::ptrdiff_t;
    using iterator = std::byte*;
    using const_iterator = const std::byte*;
    using reference = std::byte&;
    using const_reference = const std::byte&;

    static constexpr size_type inline_capacity = InlineN;

    ByteBuffer() noexcept = default;
    explicit ByteBuffer(size_type n) { resize(n); }
    ByteBuffer(const std::byte* first, const std::byte* last) { assign(first, last); }
    ByteBuffer(const ByteBuffer& o) { assign(o.begin(), o.end()); }
    ByteBuffer(ByteBuffer&& o) noexcept { TakeFrom(o); }
    ByteBuffer& operator=(const ByteBuffer& o)
    {
        if (this != &o) assign(o.begin(), o.end());
        return *this;
    }
    ByteBuffer& operator=(ByteBuffer&& o) noexcept
    {
        if (this != &o) {
            Release();
            TakeFrom(o);
        }
        return *this;
    }
    ~ByteBuffer() { Release(); }

    std::byte* data() noexcept { return m_data; }
    const std::byte* data() const noexcept { return m_data; }
    size_type size() const noexcept { return m_size; }
    size_type capacity() const noexcept { return m_cap; }
    /// Bytes of the current block that were ever written (what a hygienic free must cleanse).
    size_type dirty() const noexcept { return m_dirty; }
    /// True while the bytes live in the inline storage.
    bool is_inline() const noexcept { return InlineN > 0 && m_data == InlineData(); }
    bool empty() const noexcept { return m_size == 0; }
    iterator begin() noexcept { return m_data; }
    iterator end() noexcept { return m_data + m_size; }
    const_iterator begin() const noexcept { return m_data; }
    const_iterator end() const noexcept { return m_data + m_size; }
    std::byte& operator[](size_type i) noexcept { return m_data[i]; }
    const std::byte& operator[](size_type i) const noexcept { return m_data[i]; }

    void reserve(size_type n)
    {
        if (n > m_cap) Reallocate(n);
    }

    void clear() noexcept { m_size = 0; }

    /// New bytes are zero, like std::vector's value-initialisation.
    void resize(size_type n)
    {
        if (n > m_size) {
            Grow(n);
            std::memset(m_data + m_size, 0, n - m_size);
            m_dirty = std::max(m_dirty, n);
        }
        m_size = n;
    }

    void assign(const std::byte* first, const std::byte* last)
    {
        const auto n = size_type(last - first);
        m_size = 0;
        if (n > m_cap) Reallocate(n);
        if (n) std::memcpy(m_data, first, n);
        m_size = n;
        m_dirty = std::max(m_dirty, n);
    }

    void push_back(std::byte b)
    {
        Grow(m_size + 1);
        m_data[m_size++] = b;
        m_dirty = std::max(m_dirty, m_size);
    }

    /// Inserts [first, last) before pos. [first, last) must not point into this buffer.
    iterator insert(const_iterator pos, const std::byte* first, const std::byte* last)
    {
        const auto off = size_type(pos - m_data);
        const auto n = size_type(last - first);
        if (n == 0) return m_data + off;
        Grow(m_size + n);
        std::byte* at = m_data + off;
        if (off != m_size) std::memmove(at + n, at, m_size - off);
        std::memcpy(at, first, n);
        m_size += n;
        m_dirty = std::max(m_dirty, m_size);
        return at;
    }

    /// Inserts n copies of value before pos.
    iterator insert(const_iterator pos, size_type n, std::byte value)
    {
        const auto off = size_type(pos - m_data);
        if (n == 0) return m_data + off;
        Grow(m_size + n);
        std::byte* at = m_data + off;
        if (off != m_size) std::memmove(at + n, at, m_size - off);
        std::memset(at, int(value), n);
        m_size += n;
        m_dirty = std::max(m_dirty, m_size);
        return at;
    }

    iterator erase(const_iterator first, const_iterator last) noexcept
    {
        auto* f = const_cast<std::byte*>(first);
        const auto n = size_type(last - first);
        if (n) std::memmove(f, f + n, size_type(end() - f) - n);
        m_size -= n;
        return f;
    }

    void shrink_to_fit()
    {
        if (m_size < m_cap && !is_inline()) Reallocate(m_size);
    }

private:
    std::byte* InlineData() noexcept { return InlineN ? m_inline.data() : nullptr; }
    const std::byte* InlineData() const noexcept { return InlineN ? m_inline.data() : nullptr; }

    void Grow(size_type need)
    {
        if (need <= m_cap) return;
        // Geometric growth, as libstdc++'s vector, so appends are amortised O(1).
        size_type cap = std::max(need, m_cap + m_cap);
        Reallocate(cap);
    }

    // Moves the bytes into a block of capacity `cap` (the inline storage when it fits).
    void Reallocate(size_type cap)
    {
        if (InlineN && cap <= InlineN) {
            if (is_inline()) return;
            std::byte* old = m_data;
            const size_type keep = m_size;
            if (keep) std::memcpy(InlineData(), old, keep);
            ReleaseHeap(old, m_cap, m_dirty);
            m_data = InlineData();
            m_cap = InlineN;
            m_dirty = keep;
            return;
        }
        Alloc a;
        auto* fresh = std::allocator_traits<Alloc>::allocate(a, cap);
        const size_type keep = m_size;
        if (keep) std::memcpy(fresh, m_data, keep);
        Release();
        m_data = fresh;
        m_cap = cap;
        m_size = keep;
        m_dirty = keep;
    }

    void ReleaseHeap(std::byte* p, size_type cap, size_type dirty) noexcept
    {
        Alloc a;
        if constexpr (HygienicAllocator<Alloc>) {
            a.deallocate_dirty(p, cap, dirty);
        } else {
            std::allocator_traits<Alloc>::deallocate(a, p, cap);
        }
    }

    // Gives up the current block: heap blocks go back to the allocator, inline bytes are cleansed
    // in place (when the allocator is hygienic). Leaves the buffer empty on inline storage.
    void Release() noexcept
    {
        if (is_inline()) {
            if constexpr (HygienicAllocator<Alloc>) CleanseSmall(m_data, m_dirty);
        } else if (m_data != nullptr) {
            ReleaseHeap(m_data, m_cap, m_dirty);
        }
        m_data = InlineData();
        m_cap = InlineN;
        m_size = 0;
        m_dirty = 0;
    }

    void TakeFrom(ByteBuffer& o) noexcept
    {
        if (o.is_inline()) {
            // Copy the bytes; the source keeps its dirty mark so its destructor cleanses them.
            if (o.m_size) std::memcpy(InlineData(), o.m_data, o.m_size);
            m_data = InlineData();
            m_cap = InlineN;
            m_size = o.m_size;
            m_dirty = o.m_size;
            o.m_size = 0;
            return;
        }
        m_data = o.m_data;
        m_size = o.m_size;
        m_cap = o.m_cap;
        m_dirty = o.m_dirty;
        o.m_data = o.InlineData();
        o.m_cap = InlineN;
        o.m_size = 0;
        o.m_dirty = 0;
    }

    std::byte* m_data{InlineData()};
    size_type m_size{0};
    size_type m_cap{InlineN};
    size_type m_dirty{0};
    alignas(16) std::array<std::byte, InlineN> m_inline;
};

} // namespace ibdkit

// ibdkit/primitives/script.h — Script: bytes with small-buffer storage.
//
// Most scripts are at most 34 bytes (P2PKH 25, P2SH 23, P2WPKH 22, P2WSH/P2TR 34, P2PK 35), so up
// to INLINE_SIZE bytes live inside the object and need no heap allocation (Core's prevector idea).
//
// A third, internal mode serves decoded transactions: a *borrowed* script points into bytes that
// its transaction keeps alive (the decoded block's own copy of its serialization), so decoding
// copies no script at all. Borrowed scripts are only reachable through const references; copying
// one yields an owning script, and any mutation first makes the bytes its own (copy on write).
#pragma once

#include <ibdkit/encoding/serialize.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <span>
#include <utility>

namespace ibdkit {

namespace detail {
struct TxBuilder;
}

class Script {
public:
    static constexpr uint32_t INLINE_SIZE = 36;
    using value_type = uint8_t;

    Script() noexcept = default;
    explicit Script(std::span<const uint8_t> b) { assign(b.data(), b.size()); }
    Script(const uint8_t* p, std::size_t n) { assign(p, n); }
    Script(const Script& o) { assign(o.data(), o.size()); }
    Script(Script&& o) noexcept { MoveFrom(o); }
    Script& operator=(const Script& o)
    {
        if (this != &o) assign(o.data(), o.size());
        return *this;
    }
    Script& operator=(Script&& o) noexcept
    {
        if (this != &o) {
            FreeHeap();
            MoveFrom(o);
        }
        return *this;
    }
    ~Script() { FreeHeap(); }

    uint8_t* data()
    {
        MakeOwned();
        return Ptr();
    }
    const uint8_t* data() const noexcept { return Ptr(); }
    std::size_t size() const noexcept { return m_size; }
    bool empty() const noexcept { return m_size == 0; }
    const uint8_t* begin() const noexcept { return data(); }
    const uint8_t* end() const noexcept { return data() + m_size; }
    uint8_t* begin() { return data(); }
    uint8_t* end() { return data() + m_size; }
    uint8_t operator[](std::size_t i) const noexcept { return data()[i]; }
    std::span<const uint8_t> span() const noexcept { return {data(), m_size}; }
    bool is_inline() const noexcept { return m_cap <= INLINE_SIZE; }
    /// Points into bytes owned elsewhere (a decoded transaction's storage).
    bool is_borrowed() const noexcept { return m_cap == BORROWED; }

    void clear() noexcept
    {
        if (is_borrowed()) m_cap = INLINE_SIZE; // drop the reference; nothing to free
        m_size = 0;
    }
    void assign(const uint8_t* p, std::size_t n)
    {
        if (is_borrowed()) clear();
        resize_uninit(n);
        if (n) std::memcpy(Ptr(), p, n);
    }
    /// Sets the size; new bytes are unspecified (the caller writes them).
    void resize_uninit(std::size_t n)
    {
        MakeOwned();
        if (n > m_cap) {
            uint8_t* fresh = new uint8_t[n];
            std::memcpy(fresh, Ptr(), m_size);
            FreeHeap();
            m_u.heap.ptr = fresh;
            m_cap = uint32_t(n);
        }
        m_size = uint32_t(n);
    }
    void push_back(uint8_t b)
    {
        MakeOwned();
        if (m_size == m_cap) {
            const std::size_t n = m_size;
            Reserve(std::max<std::size_t>(n * 2, INLINE_SIZE + 1));
        }
        Ptr()[m_size++] = b;
    }
    void append(std::span<const uint8_t> b)
    {
        MakeOwned();
        const std::size_t old = m_size;
        if (old + b.size() > m_cap) Reserve(std::max<std::size_t>(old + b.size(), old * 2));
        if (!b.empty()) std::memcpy(Ptr() + old, b.data(), b.size());
        m_size = uint32_t(old + b.size());
    }

    friend bool operator==(const Script& a, const Script& b) noexcept
    {
        return a.m_size == b.m_size && (a.m_size == 0 || std::memcmp(a.data(), b.data(), a.m_size) == 0);
    }
    friend auto operator<=>(const Script& a, const Script& b) noexcept
    {
        return std::lexicographical_compare_three_way(a.begin(), a.end(), b.begin(), b.end());
    }

    /// CompactSize length + bytes; reads are bounded by MAX_SIZE and grow only as bytes arrive.
    template <WriteStream S>
    friend void Serialize(S& s, const Script& sc)
    {
        WriteCompactSize(s, sc.size());
        s.write(MakeByteSpan(sc.span()));
    }
    template <ReadStream S>
    friend void Unserialize(S& s, Script& sc)
    {
        const uint64_t n = ReadCompactSize(s);
        sc.clear();
        std::size_t done = 0;
        while (done < n) {
            const std::size_t batch = std::size_t(std::min<uint64_t>(n - done, MAX_VECTOR_ALLOCATE));
            sc.resize_uninit(done + batch);
            s.read(std::span<std::byte>(reinterpret_cast<std::byte*>(sc.data()) + done, batch));
            done += batch;
        }
    }

private:
    friend struct detail::TxBuilder;
    static constexpr uint32_t BORROWED = 0xffffffff;

    uint8_t* Ptr() noexcept { return is_inline() ? m_u.inl : m_u.heap.ptr; }
    const uint8_t* Ptr() const noexcept { return is_inline() ? m_u.inl : m_u.heap.ptr; }
    /// Copy on write: a borrowed script takes its own copy of the bytes.
    void MakeOwned()
    {
        if (!is_borrowed()) [[likely]] return;
        const uint8_t* p = m_u.heap.ptr;
        const std::size_t n = m_size;
        m_size = 0;
        m_cap = INLINE_SIZE;
        resize_uninit(n);
        if (n) std::memcpy(Ptr(), p, n);
    }
    void Reserve(std::size_t n)
    {
        const std::size_t keep = m_size;
        resize_uninit(n);
        m_size = uint32_t(keep);
    }
    void FreeHeap() noexcept
    {
        if (!is_inline() && !is_borrowed()) delete[] m_u.heap.ptr;
        m_cap = INLINE_SIZE;
    }
    void MoveFrom(Script& o) noexcept
    {
        m_size = o.m_size;
        m_cap = o.m_cap;
        if (o.is_inline()) {
            std::memcpy(m_u.inl, o.m_u.inl, o.m_size);
        } else {
            m_u.heap.ptr = o.m_u.heap.ptr; // owned heap moves; a borrowed pointer stays borrowed
        }
        o.m_size = 0;
        o.m_cap = INLINE_SIZE;
    }

    union U {
        uint8_t inl[INLINE_SIZE];
        struct {
            uint8_t* ptr;
        } heap;
    } m_u;
    uint32_t m_size{0};
    uint32_t m_cap{INLINE_SIZE};
};

} // namespace ibdkit

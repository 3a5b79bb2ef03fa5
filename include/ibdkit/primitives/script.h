// ibdkit/primitives/script.h — Script: bytes with small-buffer storage.
//
// Most scripts are at most 34 bytes (P2PKH 25, P2SH 23, P2WPKH 22, P2WSH/P2TR 34, P2PK 35), so up
// to INLINE_SIZE bytes live inside the object and need no heap allocation (Core's prevector idea).
//
// A third, internal mode serves decoded transactions: a *borrowed* script points into bytes that
// its transaction keeps alive (the decoded block's own copy of its serialization), so decoding
// copies no script at all. Borrowed scripts are only reachable through const references; copying
// one yields an owning script, and any mutation first makes the bytes its own (copy on write).
//
// Threads: the const members only read, so several threads may read one Script at once; a non-const
// call (non-const data() too: it copies borrowed bytes) needs the script to itself. A method that
// grows the script throws std::length_error past 1 GiB (resize_uninit).
#pragma once

#include <ibdkit/encoding/serialize.h>

#include <algorithm>
#include <compare>
#include <cstdint>
#include <cstring>
#include <span>
#include <stdexcept>
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
    /// Copies the bytes (the script owns them).
    explicit Script(std::span<const uint8_t> b) { assign(b.data(), b.size()); }
    Script(const uint8_t* p, std::size_t n) { assign(p, n); }
    /// A copy owns its bytes, even of a borrowed script; a move takes the other's bytes (or its
    /// reference, when borrowed) and leaves it empty.
    Script(const Script& o) { assign(o.data(), o.size()); }
    Script(Script&& o) noexcept { MoveFrom(o); }
    Script& operator=(const Script& o)
    {
        if (this != &o) assign(o.data(), o.size());
        return *this;
    }
    /// As the move constructor.
    Script& operator=(Script&& o) noexcept
    {
        if (this != &o) {
            FreeHeap();
            MoveFrom(o);
        }
        return *this;
    }
    ~Script() { FreeHeap(); }

    /// Mutable bytes: a borrowed script first takes its own copy (copy on write).
    uint8_t* data()
    {
        MakeOwned();
        return Ptr();
    }
    /// The bytes, read-only, as a container (valid until the script changes or dies; a
    /// borrowed script's, while the storage it points into lives). The mutable begin/end copy a
    /// borrowed script first, as data() does; operator[] does not check `i`.
    const uint8_t* data() const noexcept { return Ptr(); }
    std::size_t size() const noexcept { return Size(); }
    bool empty() const noexcept { return Size() == 0; }
    const uint8_t* begin() const noexcept { return data(); }
    const uint8_t* end() const noexcept { return data() + Size(); }
    uint8_t* begin() { return data(); }
    uint8_t* end() { return data() + Size(); }
    uint8_t operator[](std::size_t i) const noexcept { return data()[i]; }
    std::span<const uint8_t> span() const noexcept { return {data(), Size()}; }
    /// Whether the bytes are stored inside the object (up to INLINE_SIZE, no allocation).
    bool is_inline() const noexcept { return Mode() == INLINE; }
    /// Points into bytes owned elsewhere (a decoded transaction's storage).
    bool is_borrowed() const noexcept { return Mode() == BORROWED; }

    /// Makes it empty (a borrowed script lets go of its reference; owned bytes stay allocated).
    void clear() noexcept
    {
        if (is_borrowed()) m_word = INLINE; // drop the reference; nothing to free
        SetSize(0);
    }
    /// Copies `n` bytes from `p`, which must not point into this script's own bytes.
    void assign(const uint8_t* p, std::size_t n)
    {
        if (is_borrowed()) clear();
        resize_uninit(n);
        if (n) std::memcpy(Ptr(), p, n);
    }
    /// Sets the size; new bytes are unspecified (the caller writes them). Throws
    /// std::length_error beyond MAX_BYTES.
    void resize_uninit(std::size_t n)
    {
        MakeOwned();
        if (n > Capacity()) {
            if (n > MAX_BYTES) throw std::length_error("script larger than 1 GiB");
            uint8_t* fresh = new uint8_t[n];
            std::memcpy(fresh, Ptr(), Size());
            FreeHeap();
            SetHeap(fresh, uint32_t(n));
        }
        SetSize(n);
    }
    /// Appends one byte, growing the allocation by doubling (a borrowed script copies first).
    void push_back(uint8_t b)
    {
        MakeOwned();
        const std::size_t n = Size();
        if (n == Capacity()) Reserve(std::max<std::size_t>(n * 2, INLINE_SIZE + 1));
        Ptr()[n] = b;
        SetSize(n + 1);
    }
    /// Appends `b`, which must not point into this script's own bytes (a reallocation frees them).
    void append(std::span<const uint8_t> b)
    {
        MakeOwned();
        const std::size_t old = Size();
        if (old + b.size() > Capacity()) Reserve(std::max<std::size_t>(old + b.size(), old * 2));
        if (!b.empty()) std::memcpy(Ptr() + old, b.data(), b.size());
        SetSize(old + b.size());
    }

    friend bool operator==(const Script& a, const Script& b) noexcept
    {
        return a.Size() == b.Size() && (a.Size() == 0 || std::memcmp(a.data(), b.data(), a.Size()) == 0);
    }
    /// Lexicographic over the bytes, shorter first on a common prefix (as std::vector's).
    /// (memcmp rather than std::lexicographical_compare_three_way, which libc++ 14 lacks.)
    friend std::strong_ordering operator<=>(const Script& a, const Script& b) noexcept
    {
        const std::size_t common = std::min(a.Size(), b.Size());
        const int c = common == 0 ? 0 : std::memcmp(a.data(), b.data(), common);
        if (c != 0) return c < 0 ? std::strong_ordering::less : std::strong_ordering::greater;
        return a.Size() <=> b.Size();
    }

    /// CompactSize length + bytes; reads are bounded by MAX_SIZE and grow only as bytes arrive.
    template <WriteStream S>
    friend void Serialize(S& s, const Script& sc)
    {
        WriteCompactSize(s, sc.size());
        s.write(MakeByteSpan(sc.span()));
    }
    /// Throws DecodeError: EndOfData, NonCanonicalCompactSize, SizeTooLarge (a length above MAX_SIZE).
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
    // Storage, 40 bytes and 4-byte aligned, so that a TxOut is 48 bytes and a cache node 104
    // (src/coins/coins_map.h): m_buf holds the bytes inline, or a heap pointer (bytes 0-7) and the
    // heap capacity (bytes 8-11); m_word holds the mode (top two bits) and the size.
    static constexpr uint32_t INLINE = 0, HEAP = 1u << 30, BORROWED = 2u << 30, MODE_MASK = 3u << 30;
    static constexpr std::size_t MAX_BYTES = (std::size_t(1) << 30) - 1;

    uint32_t Mode() const noexcept { return m_word & MODE_MASK; }
    std::size_t Size() const noexcept { return m_word & ~MODE_MASK; }
    void SetSize(std::size_t n) noexcept { m_word = Mode() | uint32_t(n); }
    uint8_t* HeapPtr() const noexcept
    {
        uint8_t* p;
        std::memcpy(&p, m_buf, sizeof p);
        return p;
    }
    /// Points at `p` in `mode` (HEAP: owned, with `cap` bytes; BORROWED: not owned); size 0.
    void SetPointer(uint8_t* p, uint32_t mode, uint32_t cap) noexcept
    {
        std::memcpy(m_buf, &p, sizeof p);
        std::memcpy(m_buf + sizeof p, &cap, sizeof cap);
        m_word = mode;
    }
    void SetHeap(uint8_t* p, uint32_t cap) noexcept { SetPointer(p, HEAP, cap); }
    std::size_t Capacity() const noexcept
    {
        if (Mode() == INLINE) return INLINE_SIZE;
        uint32_t cap;
        std::memcpy(&cap, m_buf + sizeof(uint8_t*), sizeof cap);
        return cap;
    }

    uint8_t* Ptr() noexcept { return is_inline() ? m_buf : HeapPtr(); }
    const uint8_t* Ptr() const noexcept { return is_inline() ? m_buf : HeapPtr(); }
    /// Copy on write: a borrowed script takes its own copy of the bytes.
    void MakeOwned()
    {
        if (!is_borrowed()) [[likely]] return;
        const uint8_t* p = HeapPtr();
        const std::size_t n = Size();
        m_word = INLINE;
        resize_uninit(n);
        if (n) std::memcpy(Ptr(), p, n);
    }
    void Reserve(std::size_t n)
    {
        const std::size_t keep = Size();
        resize_uninit(n);
        SetSize(keep);
    }
    void FreeHeap() noexcept
    {
        if (Mode() == HEAP) delete[] HeapPtr();
        m_word = INLINE;
    }
    void MoveFrom(Script& o) noexcept
    {
        std::memcpy(m_buf, o.m_buf, o.is_inline() ? o.Size() : sizeof(uint8_t*) + sizeof(uint32_t));
        m_word = o.m_word; // owned heap moves; a borrowed pointer stays borrowed
        o.m_word = INLINE;
    }

    uint8_t m_buf[INLINE_SIZE];
    uint32_t m_word{INLINE};
};
static_assert(sizeof(Script) == 40 && alignof(Script) == 4);

} // namespace ibdkit

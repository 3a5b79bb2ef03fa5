// cleansing_byte_vector.h — a byte vector that zeroes its storage before giving it back, and copies
// with memcpy. Written for Bitcoin Core's DataStream (src/streams.h): one header, the standard
// library only, MIT licence like the rest of ibdkit.
//
// Core keeps DataStream's bytes in std::vector<std::byte, zero_after_free_allocator<std::byte>> so
// that no P2P message or database record survives in freed heap memory. The guarantee is worth
// keeping; the way it is kept is slow under libstdc++: std::vector uses memcpy/memmove to copy,
// insert and grow only with std::allocator, and with any other allocator constructs element by
// element through allocator_traits::construct. libc++ takes the memcpy path for any allocator that
// has no construct() member, so there the allocator costs only its memset.
//
// CleansingByteVector keeps the guarantee inside the container instead of the allocator:
//
//   Every block this vector obtains from its allocator is zero over its whole capacity at the
//   moment it is handed back: on destruction, on growth (insert, push_back, resize, reserve,
//   assign), on shrink_to_fit, on copy assignment into a block too small, on move assignment
//   (the target's old block), and after swap (each block leaves with the vector that owns it).
//
// The whole capacity is zeroed, not only [0, size()): clear(), erase() and a smaller resize() keep
// the block, so bytes beyond size() may still hold data until the block is released. Blocks never
// leave except through Release(), which zeroes first. Copies, inserts and growth are memcpy and
// memmove under every standard library, and the vector never calls allocator_traits::construct.
//
// Adopting it in Core is one line in DataStream (`using vector_type = CleansingByteVector;`), plus
// a memusage::DynamicUsage overload (MallocUsage(v.capacity())); Core would point Cleanse() at
// memory_cleanse (support/cleanse.h). The members are the subset of std::vector<std::byte> that
// DataStream and its users need, with std::vector's names and contracts except where a comment
// says otherwise.
#ifndef CLEANSING_BYTE_VECTOR_H
#define CLEANSING_BYTE_VECTOR_H

#include <algorithm>
#include <compare>
#include <cstddef>
#include <cstring>
#include <initializer_list>
#include <iterator>
#include <limits>
#include <memory>
#include <stdexcept>
#include <type_traits>
#include <utility>

namespace cleansing_detail {

/// Zeroes [ptr, ptr + len) in a way the optimiser cannot drop: the stores are followed by an
/// empty asm statement that takes the pointer and clobbers memory (Core's memory_cleanse does the
/// same), or, elsewhere, memset is called through a volatile function pointer.
inline void Cleanse(void* ptr, std::size_t len) noexcept
{
    if (len == 0) return;
#if defined(__GNUC__) || defined(__clang__)
    std::memset(ptr, 0, len);
    __asm__ __volatile__("" : : "r"(ptr) : "memory");
#else
    void* (*volatile const memset_v)(void*, int, std::size_t) = &std::memset;
    memset_v(ptr, 0, len);
#endif
}

/// Element types whose values are copied into the vector as single bytes.
template <typename T>
inline constexpr bool IS_BYTE_LIKE = std::is_same_v<std::remove_cv_t<T>, std::byte> ||
                                     std::is_same_v<std::remove_cv_t<T>, unsigned char> ||
                                     std::is_same_v<std::remove_cv_t<T>, char> ||
                                     std::is_same_v<std::remove_cv_t<T>, signed char>;

} // namespace cleansing_detail

/// A std::vector<std::byte> look-alike over Alloc (a stateless allocator of std::byte) that zeroes
/// every block before deallocating it. Alloc is used for allocate() and deallocate() only.
template <typename Alloc = std::allocator<std::byte>>
class BasicCleansingByteVector
{
    using Traits = std::allocator_traits<Alloc>;
    static_assert(std::is_same_v<typename Traits::value_type, std::byte>, "Alloc must allocate std::byte");
    static_assert(Traits::is_always_equal::value, "Alloc must be stateless: blocks move between vectors freely");

public:
    using value_type = std::byte;
    using allocator_type = Alloc;
    using size_type = std::size_t;
    using difference_type = std::ptrdiff_t;
    using reference = std::byte&;
    using const_reference = const std::byte&;
    using pointer = std::byte*;
    using const_pointer = const std::byte*;
    using iterator = std::byte*;
    using const_iterator = const std::byte*;
    using reverse_iterator = std::reverse_iterator<iterator>;
    using const_reverse_iterator = std::reverse_iterator<const_iterator>;

    BasicCleansingByteVector() noexcept = default;
    /// n zero bytes.
    explicit BasicCleansingByteVector(size_type n) { resize(n); }
    BasicCleansingByteVector(size_type n, std::byte value) { resize(n, value); }
    /// A copy of [first, last); the iterators' values must be byte-like (std::byte, char types).
    template <typename InputIt, typename = std::enable_if_t<!std::is_integral_v<InputIt>>>
    BasicCleansingByteVector(InputIt first, InputIt last) { assign(first, last); }
    BasicCleansingByteVector(std::initializer_list<std::byte> il) { assign(il.begin(), il.end()); }

    /// The copy gets a block of exactly other.size() bytes (as std::vector's copy does).
    BasicCleansingByteVector(const BasicCleansingByteVector& other) { assign(other.begin(), other.end()); }
    BasicCleansingByteVector(BasicCleansingByteVector&& other) noexcept
        : m_data{std::exchange(other.m_data, nullptr)},
          m_size{std::exchange(other.m_size, 0)},
          m_capacity{std::exchange(other.m_capacity, 0)} {}

    /// Reuses this block when it is large enough (its bytes beyond the new size stay in it, to be
    /// zeroed on release); otherwise the old block is zeroed and released after the copy.
    BasicCleansingByteVector& operator=(const BasicCleansingByteVector& other)
    {
        if (this != &other) assign(other.begin(), other.end());
        return *this;
    }
    /// This vector's block is zeroed and released; other's block is taken over, other is empty.
    BasicCleansingByteVector& operator=(BasicCleansingByteVector&& other) noexcept
    {
        if (this != &other) {
            Release();
            m_data = std::exchange(other.m_data, nullptr);
            m_size = std::exchange(other.m_size, 0);
            m_capacity = std::exchange(other.m_capacity, 0);
        }
        return *this;
    }
    BasicCleansingByteVector& operator=(std::initializer_list<std::byte> il)
    {
        assign(il.begin(), il.end());
        return *this;
    }
    ~BasicCleansingByteVector() { Release(); }

    allocator_type get_allocator() const noexcept { return allocator_type{}; }

    /// Replaces the contents with [first, last) (which must not point into this vector).
    template <typename InputIt, typename = std::enable_if_t<!std::is_integral_v<InputIt>>>
    void assign(InputIt first, InputIt last)
    {
        if constexpr (IsForward<InputIt>()) {
            const auto n = static_cast<size_type>(std::distance(first, last));
            if (n > m_capacity) {
                Alloc alloc;
                std::byte* fresh = Traits::allocate(alloc, n);
                CopyRange(fresh, first, last, n);
                Release();
                m_data = fresh;
                m_size = n;
                m_capacity = n;
                return;
            }
        }
        m_size = 0;
        insert(end(), first, last);
    }
    void assign(size_type n, std::byte value)
    {
        m_size = 0;
        resize(n, value);
    }

    // ---- access ----
    std::byte* data() noexcept { return m_data; }
    const std::byte* data() const noexcept { return m_data; }
    size_type size() const noexcept { return m_size; }
    size_type capacity() const noexcept { return m_capacity; }
    bool empty() const noexcept { return m_size == 0; }
    static constexpr size_type max_size() noexcept { return size_type(std::numeric_limits<difference_type>::max()); }
    std::byte& operator[](size_type pos) noexcept { return m_data[pos]; }
    const std::byte& operator[](size_type pos) const noexcept { return m_data[pos]; }
    std::byte& at(size_type pos)
    {
        if (pos >= m_size) throw std::out_of_range("BasicCleansingByteVector::at");
        return m_data[pos];
    }
    const std::byte& at(size_type pos) const
    {
        if (pos >= m_size) throw std::out_of_range("BasicCleansingByteVector::at");
        return m_data[pos];
    }
    std::byte& front() noexcept { return m_data[0]; }
    const std::byte& front() const noexcept { return m_data[0]; }
    std::byte& back() noexcept { return m_data[m_size - 1]; }
    const std::byte& back() const noexcept { return m_data[m_size - 1]; }

    iterator begin() noexcept { return m_data; }
    iterator end() noexcept { return m_data + m_size; }
    const_iterator begin() const noexcept { return m_data; }
    const_iterator end() const noexcept { return m_data + m_size; }
    const_iterator cbegin() const noexcept { return begin(); }
    const_iterator cend() const noexcept { return end(); }
    reverse_iterator rbegin() noexcept { return reverse_iterator(end()); }
    reverse_iterator rend() noexcept { return reverse_iterator(begin()); }
    const_reverse_iterator rbegin() const noexcept { return const_reverse_iterator(end()); }
    const_reverse_iterator rend() const noexcept { return const_reverse_iterator(begin()); }

    // ---- capacity ----
    /// Moves the bytes into a block of exactly n bytes when n > capacity(); the old block is zeroed
    /// and released.
    void reserve(size_type n)
    {
        if (n > max_size()) throw std::length_error("BasicCleansingByteVector::reserve");
        if (n > m_capacity) Reallocate(n);
    }
    /// Moves the bytes into a block of exactly size() bytes (none if empty); the old one is zeroed
    /// and released. Unlike std::vector's, this request is always honoured.
    void shrink_to_fit()
    {
        if (m_size == m_capacity) return;
        if (m_size == 0) {
            Release();
        } else {
            Reallocate(m_size);
        }
    }

    // ---- modifiers ----
    /// Keeps the block: bytes beyond size() are zeroed when it is released.
    void clear() noexcept { m_size = 0; }
    /// New bytes are `value` (zero by default); a smaller n keeps the block, like clear().
    void resize(size_type n, std::byte value = std::byte{0})
    {
        if (n > m_size) {
            Grow(n);
            std::memset(m_data + m_size, std::to_integer<int>(value), n - m_size);
        }
        m_size = n;
    }
    void push_back(std::byte value)
    {
        Grow(m_size + 1);
        m_data[m_size++] = value;
    }
    void pop_back() noexcept { --m_size; }

    iterator insert(const_iterator pos, std::byte value) { return insert(pos, size_type{1}, value); }
    iterator insert(const_iterator pos, size_type n, std::byte value)
    {
        std::byte* at = OpenGap(pos, n);
        if (n != 0) std::memset(at, std::to_integer<int>(value), n);
        m_size += n;
        return at;
    }
    /// Inserts [first, last) before pos; the range must not point into this vector (as for
    /// std::vector). Contiguous ranges of byte-like values are copied with one memcpy.
    template <typename InputIt, typename = std::enable_if_t<!std::is_integral_v<InputIt>>>
    iterator insert(const_iterator pos, InputIt first, InputIt last)
    {
        using Value = typename std::iterator_traits<InputIt>::value_type;
        static_assert(cleansing_detail::IS_BYTE_LIKE<Value>, "insert copies byte-like values only");
        if constexpr (IsForward<InputIt>()) {
            const auto n = static_cast<size_type>(std::distance(first, last));
            std::byte* at = OpenGap(pos, n);
            CopyRange(at, first, last, n);
            m_size += n;
            return at;
        } else {
            // A single-pass range: append, then rotate into place.
            const auto offset = static_cast<size_type>(pos - m_data);
            const size_type old_size = m_size;
            for (; first != last; ++first) push_back(static_cast<std::byte>(*first));
            std::rotate(m_data + offset, m_data + old_size, m_data + m_size);
            return m_data + offset;
        }
    }
    iterator insert(const_iterator pos, std::initializer_list<std::byte> il) { return insert(pos, il.begin(), il.end()); }

    /// Moves the bytes after the range down (memmove); the block is kept.
    iterator erase(const_iterator first, const_iterator last) noexcept
    {
        std::byte* f = m_data + (first - m_data);
        const auto n = static_cast<size_type>(last - first);
        const difference_type tail = end() - last;
        if (n != 0 && tail > 0) std::memmove(f, f + n, static_cast<size_type>(tail));
        m_size -= n;
        return f;
    }
    iterator erase(const_iterator pos) noexcept { return erase(pos, pos + 1); }

    /// Exchanges the blocks; nothing is released, so nothing needs zeroing.
    void swap(BasicCleansingByteVector& other) noexcept
    {
        std::swap(m_data, other.m_data);
        std::swap(m_size, other.m_size);
        std::swap(m_capacity, other.m_capacity);
    }
    friend void swap(BasicCleansingByteVector& a, BasicCleansingByteVector& b) noexcept { a.swap(b); }

    friend bool operator==(const BasicCleansingByteVector& a, const BasicCleansingByteVector& b) noexcept
    {
        return a.m_size == b.m_size && (a.m_size == 0 || std::memcmp(a.m_data, b.m_data, a.m_size) == 0);
    }
    friend std::strong_ordering operator<=>(const BasicCleansingByteVector& a, const BasicCleansingByteVector& b) noexcept
    {
        const size_type common = std::min(a.m_size, b.m_size);
        const int c = common == 0 ? 0 : std::memcmp(a.m_data, b.m_data, common);
        if (c != 0) return c < 0 ? std::strong_ordering::less : std::strong_ordering::greater;
        return a.m_size <=> b.m_size;
    }

private:
    template <typename It>
    static constexpr bool IsForward()
    {
        return std::is_base_of_v<std::forward_iterator_tag, typename std::iterator_traits<It>::iterator_category>;
    }

    /// Copies the n values of the forward range [first, last) to out: one memcpy when the range
    /// is contiguous.
    template <typename It>
    static void CopyRange(std::byte* out, It first, It last, size_type n)
    {
        if constexpr (std::is_pointer_v<It> || std::contiguous_iterator<It>) {
            if (n != 0) std::memcpy(out, std::to_address(first), n);
        } else {
            for (; first != last; ++first) *out++ = static_cast<std::byte>(*first);
        }
    }

    /// Zeroes the whole block and gives it back; the vector is left empty with no block.
    void Release() noexcept
    {
        if (m_data != nullptr) {
            cleansing_detail::Cleanse(m_data, m_capacity);
            Alloc alloc;
            Traits::deallocate(alloc, m_data, m_capacity);
        }
        m_data = nullptr;
        m_size = 0;
        m_capacity = 0;
    }

    /// Moves the bytes into a new block of `capacity` bytes (>= size()), then releases the old.
    void Reallocate(size_type capacity)
    {
        Alloc alloc;
        std::byte* fresh = Traits::allocate(alloc, capacity);
        const size_type keep = m_size;
        if (keep != 0) std::memcpy(fresh, m_data, keep);
        Release();
        m_data = fresh;
        m_size = keep;
        m_capacity = capacity;
    }

    /// The capacity to grow to for `need` bytes: at least double, as libstdc++ and libc++ grow,
    /// so that appending is amortised O(1).
    size_type GrownCapacity(size_type need) const
    {
        if (need > max_size()) throw std::length_error("BasicCleansingByteVector: too large");
        return m_capacity > max_size() / 2 ? max_size() : std::max(need, 2 * m_capacity);
    }

    void Grow(size_type need)
    {
        if (need > m_capacity) Reallocate(GrownCapacity(need));
    }

    /// Makes room for n bytes before pos and returns where they go; size() is not changed. When
    /// the block must grow, the bytes before and after the gap are copied once into the new block.
    std::byte* OpenGap(const_iterator pos, size_type n)
    {
        const auto offset = static_cast<size_type>(pos - m_data);
        if (n == 0) return m_data + offset;
        if (n > max_size() - m_size) throw std::length_error("BasicCleansingByteVector: too large");
        const size_type tail = m_size - offset;
        if (m_size + n <= m_capacity) {
            if (tail != 0) std::memmove(m_data + offset + n, m_data + offset, tail);
            return m_data + offset;
        }
        const size_type capacity = GrownCapacity(m_size + n);
        Alloc alloc;
        std::byte* fresh = Traits::allocate(alloc, capacity);
        if (offset != 0) std::memcpy(fresh, m_data, offset);
        if (tail != 0) std::memcpy(fresh + offset + n, m_data + offset, tail);
        const size_type keep = m_size;
        Release();
        m_data = fresh;
        m_size = keep;
        m_capacity = capacity;
        return m_data + offset;
    }

    std::byte* m_data{nullptr};
    size_type m_size{0};
    size_type m_capacity{0};
};

/// What DataStream would hold: the vector over std::allocator (operator new and delete).
using CleansingByteVector = BasicCleansingByteVector<>;

#endif // CLEANSING_BYTE_VECTOR_H

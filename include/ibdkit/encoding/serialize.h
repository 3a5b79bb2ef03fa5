// ibdkit/encoding/serialize.h — Bitcoin's serialization: integers, CompactSize, VARINT,
// containers, and one definition per type for both directions.
//
// Formats: docs/formats.md §1.
//
// A stream is anything with `write(std::span<const std::byte>)` (a WriteStream) or
// `read(std::span<std::byte>)` (a ReadStream); reads past the end throw DecodeError(EndOfData).
// Decoders throw DecodeError with a specific Errc on malformed input; public entry points convert
// that into Result<T>.
//
// A type opts in with ONE static member template used for both directions:
//
//     struct OutPoint {
//         Txid hash; uint32_t n;
//         template <typename Op, typename Self> static void SerOps(Op& op, Self& self) { op(self.hash, self.n); }
//     };
//
// `Self` is `const OutPoint` when writing and `OutPoint` when reading; `Op::is_read` tells which.
#pragma once

#include <ibdkit/error.h>
#include <ibdkit/encoding/endian.h>
#include <ibdkit/span.h>

#include <array>
#include <concepts>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <span>
#include <string>
#include <type_traits>
#include <vector>

namespace ibdkit {

/// Largest CompactSize value accepted where a length drives an allocation (Core's MAX_SIZE).
inline constexpr uint64_t MAX_SIZE = 0x02000000;
/// Vectors are grown in batches of at most this many bytes while data really arrives.
inline constexpr std::size_t MAX_VECTOR_ALLOCATE = 5'000'000;

template <typename S>
concept WriteStream = requires(S& s, std::span<const std::byte> b) { s.write(b); };
template <typename S>
concept ReadStream = requires(S& s, std::span<std::byte> b) { s.read(b); };

// ---- integers -------------------------------------------------------------------------------

template <typename T>
concept SerInt = std::integral<T> && !std::same_as<T, bool> && !std::same_as<T, char> && sizeof(T) <= 8;

template <WriteStream S, SerInt T>
void Serialize(S& s, T v)
{
    using U = std::make_unsigned_t<T>;
    std::array<std::byte, sizeof(T)> b;
    StoreLE<U>(b.data(), static_cast<U>(v));
    s.write(b);
}
template <ReadStream S, SerInt T>
void Unserialize(S& s, T& v)
{
    using U = std::make_unsigned_t<T>;
    std::array<std::byte, sizeof(T)> b;
    s.read(b);
    v = static_cast<T>(LoadLE<U>(b.data()));
}
template <WriteStream S>
void Serialize(S& s, bool v)
{
    Serialize(s, uint8_t{v});
}
template <ReadStream S>
void Unserialize(S& s, bool& v)
{
    uint8_t b;
    Unserialize(s, b);
    v = b != 0;
}
template <WriteStream S>
void Serialize(S& s, std::byte v)
{
    s.write(std::span<const std::byte>(&v, 1));
}
template <ReadStream S>
void Unserialize(S& s, std::byte& v)
{
    s.read(std::span<std::byte>(&v, 1));
}

// ---- CompactSize ----------------------------------------------------------------------------

/// Bytes the CompactSize encoding of n takes: 1, 3, 5 or 9.
constexpr unsigned GetSizeOfCompactSize(uint64_t n) noexcept
{
    return n < 253 ? 1 : n <= 0xffff ? 3 : n <= 0xffffffff ? 5 : 9;
}

template <WriteStream S>
void WriteCompactSize(S& s, uint64_t n)
{
    std::array<std::byte, 9> b;
    std::size_t len;
    if (n < 253) {
        b[0] = std::byte(n);
        len = 1;
    } else if (n <= 0xffff) {
        b[0] = std::byte{253};
        WriteLE16(&b[1], uint16_t(n));
        len = 3;
    } else if (n <= 0xffffffff) {
        b[0] = std::byte{254};
        WriteLE32(&b[1], uint32_t(n));
        len = 5;
    } else {
        b[0] = std::byte{255};
        WriteLE64(&b[1], n);
        len = 9;
    }
    s.write(std::span<const std::byte>(b.data(), len));
}

/// Reads a canonical CompactSize. With range_check (the default, and required wherever the value
/// drives an allocation), values above MAX_SIZE throw SizeTooLarge.
template <ReadStream S>
uint64_t ReadCompactSize(S& s, bool range_check = true)
{
    uint8_t first;
    Unserialize(s, first);
    uint64_t n;
    if (first < 253) {
        n = first;
    } else if (first == 253) {
        uint16_t v;
        Unserialize(s, v);
        n = v;
        if (n < 253) throw DecodeError(Errc::NonCanonicalCompactSize, "non-canonical ReadCompactSize()");
    } else if (first == 254) {
        uint32_t v;
        Unserialize(s, v);
        n = v;
        if (n < 0x10000u) throw DecodeError(Errc::NonCanonicalCompactSize, "non-canonical ReadCompactSize()");
    } else {
        uint64_t v;
        Unserialize(s, v);
        n = v;
        if (n < 0x100000000ULL) throw DecodeError(Errc::NonCanonicalCompactSize, "non-canonical ReadCompactSize()");
    }
    if (range_check && n > MAX_SIZE) throw DecodeError(Errc::SizeTooLarge, "ReadCompactSize(): size too large");
    return n;
}

// ---- VARINT (database and undo formats; unsigned only) ----------------------------------------

template <std::unsigned_integral I>
constexpr unsigned GetSizeOfVarInt(I n) noexcept
{
    unsigned len = 0;
    while (true) {
        ++len;
        if (n <= 0x7f) break;
        n = I((n >> 7) - 1);
    }
    return len;
}

template <WriteStream S, std::unsigned_integral I>
void WriteVarInt(S& s, I n)
{
    std::array<std::byte, (sizeof(I) * 8 + 6) / 7> tmp;
    std::size_t len = 0;
    while (true) {
        tmp[len] = std::byte((n & 0x7f) | (len ? 0x80 : 0x00));
        if (n <= 0x7f) break;
        n = I((n >> 7) - 1);
        ++len;
    }
    // Most significant group first.
    for (std::size_t i = 0; i <= len / 2; ++i) std::swap(tmp[i], tmp[len - i]);
    s.write(std::span<const std::byte>(tmp.data(), len + 1));
}

/// Reads a VARINT into I; a value that does not fit throws VarIntOverflow.
template <std::unsigned_integral I, ReadStream S>
I ReadVarInt(S& s)
{
    I n = 0;
    while (true) {
        uint8_t b;
        Unserialize(s, b);
        if (n > (std::numeric_limits<I>::max() >> 7)) throw DecodeError(Errc::VarIntOverflow, "ReadVarInt(): size too large");
        n = I((n << 7) | (b & 0x7f));
        if (b & 0x80) {
            if (n == std::numeric_limits<I>::max()) throw DecodeError(Errc::VarIntOverflow, "ReadVarInt(): size too large");
            ++n;
        } else {
            return n;
        }
    }
}

/// `stream << VarInt(x)` / `stream >> VarInt(x)`.
template <std::unsigned_integral I>
struct VarIntRef {
    I& v;
};
template <std::unsigned_integral I>
VarIntRef<I> VarInt(I& v) { return {v}; }
template <std::unsigned_integral I>
VarIntRef<const I> VarInt(const I& v) { return {v}; }
template <WriteStream S, typename I>
void Serialize(S& s, const VarIntRef<I>& r) { WriteVarInt(s, std::remove_const_t<I>(r.v)); }
template <ReadStream S, typename I>
void Unserialize(S& s, const VarIntRef<I>& r) { r.v = ReadVarInt<I>(s); }

/// `stream << CompactSizeValue(x)`: a bare CompactSize (range-checked on read).
struct CompactSizeRef {
    uint64_t& v;
};
inline CompactSizeRef CompactSizeValue(uint64_t& v) { return {v}; }
template <WriteStream S>
void Serialize(S& s, const CompactSizeRef& r) { WriteCompactSize(s, r.v); }
template <ReadStream S>
void Unserialize(S& s, const CompactSizeRef& r) { r.v = ReadCompactSize(s); }

// ---- one definition per type for both directions ------------------------------------------------

template <typename S>
struct WriteOp {
    static constexpr bool is_read = false;
    S& s;
    template <typename... Args>
    void operator()(const Args&... args) { (Serialize(s, args), ...); }
};
template <typename S>
struct ReadOp {
    static constexpr bool is_read = true;
    S& s;
    template <typename... Args>
    void operator()(Args&&... args) { (Unserialize(s, std::forward<Args>(args)), ...); }
};

namespace detail {
struct ProbeStream {
    void write(std::span<const std::byte>) {}
    void read(std::span<std::byte>) {}
};
} // namespace detail

template <typename T>
concept HasSerOps = requires(WriteOp<detail::ProbeStream>& w, const T& t) { T::SerOps(w, t); };

template <WriteStream S, HasSerOps T>
void Serialize(S& s, const T& obj)
{
    WriteOp<S> op{s};
    T::SerOps(op, obj);
}
template <ReadStream S, HasSerOps T>
void Unserialize(S& s, T& obj)
{
    ReadOp<S> op{s};
    T::SerOps(op, obj);
}

// ---- byte arrays, strings, vectors --------------------------------------------------------------

template <typename T>
concept ByteLike = std::same_as<T, std::byte> || std::same_as<T, uint8_t> || std::same_as<T, char> ||
                   std::same_as<T, int8_t>;

template <WriteStream S, ByteLike B, std::size_t N>
void Serialize(S& s, const std::array<B, N>& a) { s.write(MakeByteSpan(a)); }
template <ReadStream S, ByteLike B, std::size_t N>
void Unserialize(S& s, std::array<B, N>& a) { s.read(MakeWritableByteSpan(a)); }

/// Raw bytes, no length prefix (Core's span serialization).
template <WriteStream S, ByteLike B, std::size_t N>
void Serialize(S& s, std::span<B, N> sp) { s.write(MakeByteSpan(sp)); }
template <ReadStream S, ByteLike B, std::size_t N>
    requires(!std::is_const_v<B>)
void Unserialize(S& s, std::span<B, N> sp) { s.read(MakeWritableByteSpan(sp)); }

/// Reads `count` elements' worth of raw bytes into a byte container, growing it in batches of at
/// most MAX_VECTOR_ALLOCATE while bytes really arrive: a lying count costs at most one batch.
template <ReadStream S, typename Vec>
void ReadBytesBounded(S& s, Vec& v, uint64_t count)
{
    v.clear();
    std::size_t done = 0;
    while (done < count) {
        const std::size_t batch = std::size_t(std::min<uint64_t>(count - done, MAX_VECTOR_ALLOCATE));
        v.resize(done + batch);
        s.read(MakeWritableByteSpan(std::span(v.data() + done, batch)));
        done += batch;
    }
}

template <WriteStream S, typename Tr, typename A>
void Serialize(S& s, const std::basic_string<char, Tr, A>& str)
{
    WriteCompactSize(s, str.size());
    s.write(MakeByteSpan(str));
}
template <ReadStream S, typename Tr, typename A>
void Unserialize(S& s, std::basic_string<char, Tr, A>& str)
{
    ReadBytesBounded(s, str, ReadCompactSize(s));
}

template <WriteStream S, typename T, typename A>
void Serialize(S& s, const std::vector<T, A>& v)
{
    WriteCompactSize(s, v.size());
    if constexpr (ByteLike<T>) {
        s.write(MakeByteSpan(v));
    } else {
        for (const T& e : v) Serialize(s, e);
    }
}
/// Reads `count` elements with `read(s, element)` into `v`, reserving in batches of at most
/// MAX_VECTOR_ALLOCATE bytes, each element really read before the next batch: a lying count costs
/// at most one batch. For element formats other than the type's own Serialize (e.g. undo coins).
template <ReadStream S, typename T, typename A, typename ReadElem>
void UnserializeVectorWith(S& s, std::vector<T, A>& v, uint64_t count, ReadElem&& read)
{
    v.clear();
    const std::size_t per_batch = std::max<std::size_t>(1, MAX_VECTOR_ALLOCATE / sizeof(T));
    while (v.size() < count) {
        v.reserve(std::size_t(std::min<uint64_t>(count, v.size() + per_batch)));
        const std::size_t stop = std::size_t(std::min<uint64_t>(count, v.size() + per_batch));
        while (v.size() < stop) {
            v.emplace_back();
            read(s, v.back());
        }
    }
}

template <ReadStream S, typename T, typename A>
void Unserialize(S& s, std::vector<T, A>& v)
{
    const uint64_t count = ReadCompactSize(s);
    if constexpr (ByteLike<T>) {
        ReadBytesBounded(s, v, count);
    } else {
        UnserializeVectorWith(s, v, count, [](S& st, T& e) { Unserialize(st, e); });
    }
}

// ---- typed serialization parameters ----------------------------------------------------------------

/// `stream << WithParams(TX_WITH_WITNESS, tx)`: calls Serialize(s, obj, params).
template <typename P, typename T>
struct ParamsRef {
    const P& params;
    T& obj;
};
template <typename P, typename T>
ParamsRef<P, T> WithParams(const P& params, T& obj) { return {params, obj}; }
template <WriteStream S, typename P, typename T>
void Serialize(S& s, const ParamsRef<P, T>& r) { Serialize(s, std::as_const(r.obj), r.params); }
template <ReadStream S, typename P, typename T>
void Unserialize(S& s, const ParamsRef<P, T>& r) { Unserialize(s, r.obj, r.params); }

// ---- size computation -------------------------------------------------------------------------------

/// A stream that only counts bytes: computed size without encoding.
class SizeComputer {
public:
    void write(std::span<const std::byte> b) noexcept { m_size += b.size(); }
    void seek(std::size_t n) noexcept { m_size += n; }
    std::size_t size() const noexcept { return m_size; }
    template <typename T>
    SizeComputer& operator<<(const T& obj) { Serialize(*this, obj); return *this; }

private:
    std::size_t m_size{0};
};

template <typename T, typename... P>
std::size_t GetSerializeSize(const T& obj, const P&... params)
{
    SizeComputer s;
    Serialize(s, obj, params...);
    return s.size();
}

} // namespace ibdkit

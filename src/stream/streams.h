// src/stream/streams.h — DataStream<Policy>, the zero-copy SpanReader, and VectorWriter.
//
// DataStream has Bitcoin Core's semantics (streams.h): writes append; reads consume from a read
// position; when everything has been read the buffer is cleared; a read past the end throws
// DecodeError(EndOfData), never undefined behaviour. Its bytes live in Policy::Buffer, so the
// buffer-memory policy (memory/policy.h) decides what happens to them when they are freed.
#pragma once

#include <ibdkit/encoding/serialize.h>
#include <ibdkit/error.h>
#include <ibdkit/stream/obfuscation.h>

#include "memory/policy.h"

#include <algorithm>
#include <cstddef>
#include <cstring>
#include <span>
#include <string>

namespace ibdkit {

template <typename Policy = DefaultPolicy>
class DataStream {
public:
    using policy_type = Policy;
    using vector_type = typename Policy::Buffer;
    using size_type = std::size_t;
    using value_type = std::byte;

    DataStream() = default;
    /// Copies sp into a new buffer (one allocation).
    explicit DataStream(std::span<const std::byte> sp) : m_vch(sp.data(), sp.data() + sp.size()) {}
    explicit DataStream(std::span<const uint8_t> sp) : DataStream(std::as_bytes(sp)) {}

    // ---- unread bytes ----
    std::byte* data() noexcept { return m_vch.data() + m_read_pos; }
    const std::byte* data() const noexcept { return m_vch.data() + m_read_pos; }
    std::byte* begin() noexcept { return data(); }
    std::byte* end() noexcept { return m_vch.data() + m_vch.size(); }
    const std::byte* begin() const noexcept { return data(); }
    const std::byte* end() const noexcept { return m_vch.data() + m_vch.size(); }
    size_type size() const noexcept { return m_vch.size() - m_read_pos; }
    bool empty() const noexcept { return m_vch.size() == m_read_pos; }
    std::byte& operator[](size_type i) noexcept { return m_vch[m_read_pos + i]; }
    const std::byte& operator[](size_type i) const noexcept { return m_vch[m_read_pos + i]; }
    std::span<const std::byte> span() const noexcept { return {data(), size()}; }
    std::string str() const { return std::string(reinterpret_cast<const char*>(data()), size()); }

    size_type capacity() const noexcept { return m_vch.capacity(); }
    void reserve(size_type n) { m_vch.reserve(m_read_pos + n); }
    /// Resizes the unread part; new bytes are zero.
    void resize(size_type n) { m_vch.resize(m_read_pos + n); }
    void clear() noexcept
    {
        m_vch.clear();
        m_read_pos = 0;
    }
    /// Discards bytes already read, moving the unread ones to the front.
    void Compact()
    {
        m_vch.erase(m_vch.begin(), m_vch.begin() + m_read_pos);
        m_read_pos = 0;
    }
    /// Moves the read position back by n bytes. Returns false (and does nothing) if fewer than n
    /// bytes have been read since the buffer was last cleared or compacted.
    bool Rewind(size_type n) noexcept
    {
        if (n > m_read_pos) return false;
        m_read_pos -= n;
        return true;
    }
    /// XORs the unread bytes with key, key[0] applying at key_offset (0 = first unread byte).
    void Xor(const ObfuscationKey& key, size_type key_offset = 0) noexcept
    {
        XorBytes(std::span<std::byte>(data(), size()), key, key_offset);
    }

    // ---- stream interface ----
    void write(std::span<const std::byte> src)
    {
        // As Core: an insert at the end, through the policy's container.
        m_vch.insert(m_vch.end(), src.data(), src.data() + src.size());
    }
    void read(std::span<std::byte> dst)
    {
        if (dst.empty()) return;
        if (dst.size() > size()) throw DecodeError(Errc::EndOfData, "DataStream::read(): end of data");
        std::memcpy(dst.data(), data(), dst.size());
        Consume(dst.size());
    }
    void ignore(size_type n)
    {
        if (n > size()) throw DecodeError(Errc::EndOfData, "DataStream::ignore(): end of data");
        Consume(n);
    }

    template <typename T>
    DataStream& operator<<(const T& obj)
    {
        Serialize(*this, obj);
        return *this;
    }
    template <typename T>
    DataStream& operator>>(T&& obj)
    {
        Unserialize(*this, obj);
        return *this;
    }

    /// The underlying container (for tests and hygiene accounting).
    const vector_type& buffer() const noexcept { return m_vch; }

private:
    void Consume(size_type n) noexcept
    {
        m_read_pos += n;
        if (m_read_pos == m_vch.size()) { // everything read: reset, as Core does
            m_read_pos = 0;
            m_vch.clear();
        }
    }

    vector_type m_vch;
    size_type m_read_pos{0};
};

/// Reads from a borrowed span without copying it. The span must outlive the reader.
class SpanReader {
public:
    explicit SpanReader(std::span<const std::byte> data) noexcept : m_data(data) {}
    explicit SpanReader(std::span<const uint8_t> data) noexcept : m_data(std::as_bytes(data)) {}

    std::size_t size() const noexcept { return m_data.size(); }
    bool empty() const noexcept { return m_data.empty(); }
    /// The bytes not yet read.
    std::span<const std::byte> remaining() const noexcept { return m_data; }
    const std::byte* position() const noexcept { return m_data.data(); }

    void read(std::span<std::byte> dst)
    {
        if (dst.size() > m_data.size()) throw DecodeError(Errc::EndOfData, "SpanReader::read(): end of data");
        if (!dst.empty()) std::memcpy(dst.data(), m_data.data(), dst.size());
        m_data = m_data.subspan(dst.size());
    }
    /// The next n bytes, without copying; throws EndOfData if fewer remain.
    std::span<const std::byte> ReadSpan(std::size_t n)
    {
        if (n > m_data.size()) throw DecodeError(Errc::EndOfData, "SpanReader::ReadSpan(): end of data");
        auto out = m_data.first(n);
        m_data = m_data.subspan(n);
        return out;
    }
    void ignore(std::size_t n) { (void)ReadSpan(n); }

    template <typename T>
    SpanReader& operator>>(T&& obj)
    {
        Unserialize(*this, obj);
        return *this;
    }

private:
    std::span<const std::byte> m_data;
};

/// Writes into an existing byte vector starting at `pos`, overwriting then appending (Core's
/// VectorWriter).
template <typename Vec>
class VectorWriter {
public:
    VectorWriter(Vec& vec, std::size_t pos) : m_vec(vec), m_pos(pos)
    {
        if (m_pos > m_vec.size()) m_vec.resize(m_pos);
    }
    void write(std::span<const std::byte> src)
    {
        const std::size_t overwrite = std::min(src.size(), m_vec.size() - m_pos);
        if (overwrite) std::memcpy(reinterpret_cast<std::byte*>(m_vec.data()) + m_pos, src.data(), overwrite);
        if (overwrite < src.size()) {
            const std::size_t old = m_vec.size();
            m_vec.resize(old + src.size() - overwrite);
            std::memcpy(reinterpret_cast<std::byte*>(m_vec.data()) + old, src.data() + overwrite, src.size() - overwrite);
        }
        m_pos += src.size();
    }
    template <typename T>
    VectorWriter& operator<<(const T& obj)
    {
        Serialize(*this, obj);
        return *this;
    }

private:
    Vec& m_vec;
    std::size_t m_pos;
};

/// Serializes obj (with optional params) into a new byte vector.
template <typename Vec = std::vector<uint8_t>, typename T, typename... P>
Vec SerializeToVector(const T& obj, const P&... params)
{
    Vec out;
    out.reserve(GetSerializeSize(obj, params...));
    VectorWriter<Vec> w(out, 0);
    Serialize(w, obj, params...);
    return out;
}

/// Decodes a T from exactly the bytes of `data`: leftover bytes are Errc::TrailingData.
template <typename T, typename... P>
Result<T> DecodeExact(std::span<const std::byte> data, const P&... params)
{
    return CatchDecode([&]() -> T {
        SpanReader r(data);
        T obj;
        Unserialize(r, obj, params...);
        if (!r.empty()) throw DecodeError(Errc::TrailingData, "trailing bytes after object");
        return obj;
    });
}

} // namespace ibdkit

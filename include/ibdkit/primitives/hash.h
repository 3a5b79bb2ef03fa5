// ibdkit/primitives/hash.h — 256-bit hashes and the distinct id types built on them.
//
// Bytes are kept in internal order (as hashed and serialized); ToHex() shows Core's
// byte-reversed display form.
//
// Everything here works on values only: every function is thread-safe, and none throws except
// Unserialize, which throws what the stream's read throws (DecodeError(EndOfData) past the end).
#pragma once

#include <array>
#include <compare>
#include <cstdint>
#include <cstring>
#include <optional>
#include <span>
#include <string>
#include <string_view>

namespace ibdkit {

/// 32 bytes in internal order.
class uint256 {
public:
    static constexpr std::size_t SIZE = 32;
    constexpr uint256() noexcept = default;
    /// A copy of 32 bytes, taken in internal order as they are.
    explicit uint256(std::span<const uint8_t, 32> b) noexcept { std::memcpy(m_data.data(), b.data(), 32); }

    /// The 32 bytes in internal order, as a container: pointers into this value, valid while it is.
    uint8_t* data() noexcept { return m_data.data(); }
    const uint8_t* data() const noexcept { return m_data.data(); }
    static constexpr std::size_t size() noexcept { return SIZE; }
    uint8_t* begin() noexcept { return m_data.data(); }
    uint8_t* end() noexcept { return m_data.data() + SIZE; }
    const uint8_t* begin() const noexcept { return m_data.data(); }
    const uint8_t* end() const noexcept { return m_data.data() + SIZE; }
    std::span<const uint8_t, 32> span() const noexcept { return std::span<const uint8_t, 32>(m_data); }

    /// Whether all 32 bytes are zero (Core's null hash), and making them so.
    bool IsNull() const noexcept
    {
        return (GetUint64(0) | GetUint64(1) | GetUint64(2) | GetUint64(3)) == 0;
    }
    /// Sets all 32 bytes to zero.
    void SetNull() noexcept { m_data.fill(0); }
    /// Little-endian 64-bit word i (0..3, unchecked), e.g. for hashing into a table.
    uint64_t GetUint64(int i) const noexcept
    {
        uint64_t v;
        std::memcpy(&v, m_data.data() + 8 * i, 8);
        return v;
    }

    /// Reversed hex (Core's display form).
    std::string ToHex() const;
    /// Hex in internal byte order.
    std::string ToInternalHex() const;
    /// Parses Core's display form (exactly 64 hex digits of either case, byte-reversed, no 0x
    /// prefix). nullopt if malformed.
    static std::optional<uint256> FromHex(std::string_view hex);

    friend auto operator<=>(const uint256& a, const uint256& b) noexcept
    {
        return std::memcmp(a.m_data.data(), b.m_data.data(), SIZE) <=> 0;
    }
    friend bool operator==(const uint256& a, const uint256& b) noexcept
    {
        // Four word compares, inlined: equality is hot (merkle mutation, duplicate inputs).
        return ((a.GetUint64(0) ^ b.GetUint64(0)) | (a.GetUint64(1) ^ b.GetUint64(1)) |
                (a.GetUint64(2) ^ b.GetUint64(2)) | (a.GetUint64(3) ^ b.GetUint64(3))) == 0;
    }

    // Any stream with write/read of byte spans (encoding/serialize.h), without needing that header.
    template <typename S>
    friend void Serialize(S& s, const uint256& h) { s.write(std::as_bytes(std::span(h.m_data))); }
    template <typename S>
    friend void Unserialize(S& s, uint256& h) { s.read(std::as_writable_bytes(std::span(h.m_data))); }

private:
    std::array<uint8_t, SIZE> m_data{};
};

/// A uint256 with a distinct type per meaning (Txid vs Wtxid vs BlockHash never mix).
template <typename Tag>
class TaggedHash {
public:
    constexpr TaggedHash() noexcept = default;
    /// The hash `h` taken to mean this tag's kind: the one explicit step between kinds.
    explicit constexpr TaggedHash(const uint256& h) noexcept : m_hash(h) {}
    /// The bytes without the tag, read-only or to fill in place.
    const uint256& ToUint256() const noexcept { return m_hash; }
    uint256& AsUint256() noexcept { return m_hash; }
    /// As uint256's data, IsNull, SetNull and ToHex (Core's display form, byte-reversed).
    const uint8_t* data() const noexcept { return m_hash.data(); }
    bool IsNull() const noexcept { return m_hash.IsNull(); }
    void SetNull() noexcept { m_hash.SetNull(); }
    std::string ToHex() const { return m_hash.ToHex(); }
    /// As uint256::FromHex.
    static std::optional<TaggedHash> FromHex(std::string_view hex)
    {
        auto h = uint256::FromHex(hex);
        if (!h) return std::nullopt;
        return TaggedHash(*h);
    }
    friend auto operator<=>(const TaggedHash&, const TaggedHash&) noexcept = default;
    friend bool operator==(const TaggedHash&, const TaggedHash&) noexcept = default;
    template <typename S>
    friend void Serialize(S& s, const TaggedHash& h) { Serialize(s, h.m_hash); }
    template <typename S>
    friend void Unserialize(S& s, TaggedHash& h) { Unserialize(s, h.m_hash); }

private:
    uint256 m_hash;
};

struct TxidTag;
struct WtxidTag;
struct BlockHashTag;
using Txid = TaggedHash<TxidTag>;
using Wtxid = TaggedHash<WtxidTag>;
using BlockHash = TaggedHash<BlockHashTag>;

/// SHA256d of bytes as a uint256 (internal order).
uint256 HashSha256d(std::span<const uint8_t> data) noexcept;
inline uint256 HashSha256d(std::span<const std::byte> data) noexcept
{
    return HashSha256d(std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(data.data()), data.size()));
}

/// std::hash-compatible hasher for tagged hashes and uint256 (takes a 64-bit word; hashes are
/// uniformly distributed except where an attacker grinds them — use SaltedHasher there).
struct Uint256Hasher {
    /// The second little-endian word of the hash (never throws).
    std::size_t operator()(const uint256& h) const noexcept { return std::size_t(h.GetUint64(1)); }
    template <typename Tag>
    std::size_t operator()(const TaggedHash<Tag>& h) const noexcept { return std::size_t(h.ToUint256().GetUint64(1)); }
};

} // namespace ibdkit

// src/coins/coins_cache_entry.h — one entry of the UTXO cache (private to src/coins/): Core's
// FRESH/DIRTY flags and the coin held compactly inside a CoinsMap node (coins_map.h), with the
// script as a 20-byte hash for the common templates, inline bytes, or a heap buffer.
#pragma once

#include <ibdkit/coins/coin.h>
#include <ibdkit/primitives/transaction.h>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <new>

namespace ibdkit {

/// Bytes malloc really uses for an allocation of `alloc` bytes (Core's memusage::MallocUsage).
constexpr std::size_t MallocUsage(std::size_t alloc) noexcept
{
    return alloc == 0 ? 0 : ((alloc + 31) >> 4) << 4;
}

/// A cache entry: Core's flags and the coin, held compactly. DIRTY: differs from the parent view.
/// FRESH: the parent has no unspent coin here (so a FRESH entry that gets spent can simply be
/// dropped).
///
/// An entry lives only inside a CoinsMap node, after its 36-byte outpoint, and nodes come in two
/// sizes (docs/chainstate.md, *What a coin costs*): 72 bytes for a coin whose script is P2PKH,
/// P2SH or P2WPKH (held as its 20-byte hash), a raw script of up to 20 bytes, or a longer script
/// on the heap; 88 bytes for a raw script of 21 to 36 bytes (P2WSH, P2TR, compressed P2PK). A
/// small node has only 20 of the 36 script bytes declared below: an entry is never copied, and
/// its bytes are only read as far as its kind says.
class CoinsCacheEntry {
public:
    enum Flags : uint8_t { DIRTY = 1 << 0, FRESH = 1 << 1 };
    /// Script bytes a small and a large node hold inline.
    static constexpr std::size_t SMALL_SCRIPT = 20, LARGE_SCRIPT = 36;

    CoinsCacheEntry(const CoinsCacheEntry&) = delete;
    CoinsCacheEntry& operator=(const CoinsCacheEntry&) = delete;

    bool IsDirty() const noexcept { return flags & DIRTY; }
    bool IsFresh() const noexcept { return flags & FRESH; }
    bool IsSpent() const noexcept { return m_kind == SPENT; }
    uint32_t Height() const noexcept { return m_code >> 1; }
    bool IsCoinBase() const noexcept { return m_code & 1; }
    Amount Value() const noexcept
    {
        Amount v;
        std::memcpy(&v, m_value, sizeof v);
        return v;
    }
    /// The coin (a spent coin for a spent entry).
    Coin GetCoin() const
    {
        Coin c;
        CopyTo(c);
        return c;
    }
    /// Writes the coin into `out`, reusing its script's storage.
    void CopyTo(Coin& out) const
    {
        if (IsSpent()) {
            out.Clear();
            return;
        }
        out.height = Height();
        out.coinbase = IsCoinBase();
        out.out.value = Value();
        uint8_t buf[25];
        const std::span<const uint8_t> script = ScriptBytes(buf);
        out.out.script_pubkey.assign(script.data(), script.size());
    }
    /// Heap bytes the entry owns (a script longer than its node holds), as malloc counts them.
    std::size_t HeapUsage() const noexcept { return m_kind == HEAP ? MallocUsage(HeapSize()) : 0; }
    /// Whether the entry sits in a large node.
    bool IsLarge() const noexcept { return m_large; }
    /// Whether `coin` needs a large node.
    static bool NeedsLarge(const Coin& coin) noexcept { return NeedsLarge(coin, KindOf(coin)); }

    /// Core's chainstate value (as `Coin`'s Serialize). A spent entry is a programmer error.
    template <WriteStream S>
    friend void Serialize(S& s, const CoinsCacheEntry& e)
    {
        WriteVarInt(s, e.m_code);
        WriteVarInt(s, CompressAmount(uint64_t(e.Value())));
        switch (e.m_kind) {
        case P2PKH:
        case P2SH: {
            uint8_t c[21];
            c[0] = e.m_kind == P2PKH ? 0x00 : 0x01;
            std::memcpy(c + 1, e.m_script, 20);
            s.write(MakeByteSpan(std::span<const uint8_t>(c)));
            return;
        }
        default: {
            uint8_t buf[25];
            WriteCompressedScript(s, e.ScriptBytes(buf));
            return;
        }
        }
    }

private:
    friend class CoinsMap;
    friend struct CoinsMapNode;
    enum Kind : uint8_t { SPENT, RAW, P2PKH, P2SH, P2WPKH, HEAP };

    /// Only CoinsMap makes entries, in nodes of the right size; the script bytes stay untouched.
    explicit CoinsCacheEntry(bool large) noexcept : m_large(large)
    {
        const Amount spent = -1;
        std::memcpy(m_value, &spent, sizeof m_value);
    }
    ~CoinsCacheEntry() { FreeHeap(); }

    static Kind KindOf(const Coin& coin) noexcept
    {
        if (coin.IsSpent()) return SPENT;
        const Script& sc = coin.out.script_pubkey;
        const std::size_t n = sc.size();
        const uint8_t* p = sc.data();
        if (n == 25 && p[0] == 0x76 && p[1] == 0xa9 && p[2] == 20 && p[23] == 0x88 && p[24] == 0xac) return P2PKH;
        if (n == 23 && p[0] == 0xa9 && p[1] == 20 && p[22] == 0x87) return P2SH;
        if (n == 22 && p[0] == 0x00 && p[1] == 20) return P2WPKH;
        return n <= LARGE_SCRIPT ? RAW : HEAP;
    }

    static bool NeedsLarge(const Coin& coin, Kind kind) noexcept { return kind == RAW && coin.out.script_pubkey.size() > SMALL_SCRIPT; }

    /// Sets the coin, of kind KindOf(coin); the node must be large when NeedsLarge(coin). Throws
    /// std::bad_alloc (for a heap script) leaving the entry spent.
    void Set(const Coin& coin, Kind kind)
    {
        FreeHeap();
        if (kind == SPENT) {
            Clear();
            return;
        }
        const Script& sc = coin.out.script_pubkey;
        const uint8_t* p = sc.data();
        switch (kind) {
        case P2PKH: std::memcpy(m_script, p + 3, 20); break;
        case P2SH:
        case P2WPKH: std::memcpy(m_script, p + 2, 20); break;
        case RAW:
            m_len = uint8_t(sc.size());
            if (sc.size()) std::memcpy(m_script, p, sc.size());
            break;
        default: {
            const uint32_t n = uint32_t(sc.size());
            uint8_t* heap = new uint8_t[n];
            std::memcpy(heap, p, n);
            std::memcpy(m_script, &heap, sizeof heap);
            std::memcpy(m_script + sizeof heap, &n, sizeof n);
            break;
        }
        }
        m_kind = kind;
        m_code = (coin.height << 1) | uint32_t(coin.coinbase);
        std::memcpy(m_value, &coin.out.value, sizeof m_value);
    }
    /// Marks the entry spent and releases its script (Core's Coin::Clear).
    void Clear() noexcept
    {
        FreeHeap();
        m_kind = SPENT;
        m_code = 0;
        const Amount spent = -1;
        std::memcpy(m_value, &spent, sizeof m_value);
    }

    uint8_t* HeapPtr() const noexcept
    {
        uint8_t* p;
        std::memcpy(&p, m_script, sizeof p);
        return p;
    }
    uint32_t HeapSize() const noexcept
    {
        uint32_t n;
        std::memcpy(&n, m_script + sizeof(uint8_t*), sizeof n);
        return n;
    }
    void FreeHeap() noexcept
    {
        if (m_kind == HEAP) delete[] HeapPtr();
        m_kind = SPENT;
    }
    /// The script's bytes: in the node, on the heap, or rebuilt in `buf` from a template's hash.
    std::span<const uint8_t> ScriptBytes(uint8_t (&buf)[25]) const noexcept
    {
        switch (m_kind) {
        case P2PKH:
            buf[0] = 0x76, buf[1] = 0xa9, buf[2] = 20, buf[23] = 0x88, buf[24] = 0xac;
            std::memcpy(buf + 3, m_script, 20);
            return {buf, 25};
        case P2SH:
            buf[0] = 0xa9, buf[1] = 20, buf[22] = 0x87;
            std::memcpy(buf + 2, m_script, 20);
            return {buf, 23};
        case P2WPKH:
            buf[0] = 0x00, buf[1] = 20;
            std::memcpy(buf + 2, m_script, 20);
            return {buf, 22};
        case RAW: return {m_script, m_len};
        case HEAP: return {HeapPtr(), HeapSize()};
        default: return {};
        }
    }

    uint32_t m_code{0}; ///< height · 2 + coinbase, as the chainstate's value begins
    uint8_t m_value[8]; ///< the amount (-1: spent), unaligned: the entry follows a 36-byte key

public:
    uint8_t flags{0};

private:
    uint8_t m_kind{SPENT};
    uint8_t m_len{0};             ///< RAW: the script's size
    bool m_large;                 ///< the node is large
    uint8_t m_script[LARGE_SCRIPT]; ///< the script bytes (SMALL_SCRIPT in a small node); HEAP: pointer, size
};

} // namespace ibdkit

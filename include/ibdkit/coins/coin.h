// ibdkit/coins/coin.h — Coin: an unspent output with the height and coinbase flag of the
// transaction that created it, serialized exactly as Bitcoin Core's chainstate (coins.h).
//
// Value format (before obfuscation): VARINT(height·2 + coinbase) | VARINT(CompressAmount(value)) |
// compressed script (coins/compressor.h; docs/formats.md §5).
#pragma once

#include <ibdkit/coins/compressor.h>
#include <ibdkit/encoding/serialize.h>
#include <ibdkit/primitives/transaction.h>

#include <cstddef>
#include <cstdint>

namespace ibdkit {

struct Coin {
    TxOut out;             ///< value -1 (TxOut::IsNull) means spent
    uint32_t height{0};    ///< height of the block that created the output (31 bits)
    bool coinbase{false};  ///< created by a coinbase transaction

    Coin() = default;
    /// The unspent output `o`, created at height `h`, by a coinbase if `cb`.
    Coin(TxOut o, uint32_t h, bool cb) : out(std::move(o)), height(h), coinbase(cb) {}

    /// Whether it is spent (its output is TxOut's null).
    bool IsSpent() const noexcept { return out.IsNull(); }
    /// Marks the coin spent and releases its script (Core's Coin::Clear).
    void Clear() noexcept
    {
        out.value = -1;
        out.script_pubkey = Script();
        height = 0;
        coinbase = false;
    }
    /// Heap bytes owned by the coin (the script when it does not fit inline).
    std::size_t DynamicMemoryUsage() const noexcept
    {
        return out.script_pubkey.is_inline() ? 0 : out.script_pubkey.size();
    }
    friend bool operator==(const Coin& a, const Coin& b) noexcept
    {
        return a.height == b.height && a.coinbase == b.coinbase && a.out == b.out;
    }

    /// Serializing a spent coin is a programmer error (Core asserts; not checked here).
    /// Throws only what the stream throws.
    template <WriteStream S>
    friend void Serialize(S& s, const Coin& c)
    {
        const uint32_t code = (c.height << 1) | uint32_t(c.coinbase);
        WriteVarInt(s, code);
        Serialize(s, TxOutCompressionRef<const TxOut>{c.out});
    }
    /// Throws DecodeError: EndOfData, VarIntOverflow, Corrupt (a compressed key not on the curve).
    template <ReadStream S>
    friend void Unserialize(S& s, Coin& c)
    {
        const uint32_t code = ReadVarInt<uint32_t>(s);
        c.height = code >> 1;
        c.coinbase = (code & 1) != 0;
        Unserialize(s, TxOutCompressionRef<TxOut>{c.out});
    }
};

} // namespace ibdkit

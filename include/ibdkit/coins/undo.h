// ibdkit/coins/undo.h — a block's undo data: the coins its transactions spent, in Bitcoin Core's
// undo format (undo.h: TxInUndoFormatter, CTxUndo, CBlockUndo), so that a block can be disconnected.
//
// Format (docs/formats.md §6, docs/undo.md): CompactSize count of non-coinbase
// transactions; per transaction a CompactSize count of spent coins, in input order; per coin
// VARINT(height·2 + coinbase), then — when height > 0 — a VARINT written as a single 00 (a legacy
// transaction version, any value accepted on read), then the compressed output (coins/compressor.h).
// Counts read from untrusted bytes never size an allocation beyond what the bytes really hold.
#pragma once

#include <ibdkit/coins/coin.h>
#include <ibdkit/encoding/serialize.h>
#include <ibdkit/error.h>

#include <cstdint>
#include <span>
#include <vector>

namespace ibdkit {

/// Core's TxInUndoFormatter: one spent coin.
template <WriteStream S>
void SerializeTxInUndo(S& s, const Coin& coin)
{
    WriteVarInt(s, uint32_t(coin.height * uint32_t{2} + uint32_t(coin.coinbase)));
    if (coin.height > 0) WriteVarInt(s, uint32_t{0}); // legacy version dummy
    Serialize(s, TxOutCompressionRef<const TxOut>{coin.out});
}
template <ReadStream S>
void UnserializeTxInUndo(S& s, Coin& coin)
{
    const uint32_t code = ReadVarInt<uint32_t>(s);
    coin.height = code >> 1;
    coin.coinbase = (code & 1) != 0;
    if (coin.height > 0) (void)ReadVarInt<uint32_t>(s); // legacy version dummy
    Unserialize(s, TxOutCompressionRef<TxOut>{coin.out});
}

/// Undo data of one non-coinbase transaction (Core's CTxUndo): the coins its inputs spent.
struct TxUndo {
    std::vector<Coin> prevout;

    friend bool operator==(const TxUndo&, const TxUndo&) = default;

    template <WriteStream S>
    friend void Serialize(S& s, const TxUndo& u)
    {
        WriteCompactSize(s, u.prevout.size());
        for (const Coin& c : u.prevout) SerializeTxInUndo(s, c);
    }
    template <ReadStream S>
    friend void Unserialize(S& s, TxUndo& u)
    {
        UnserializeVectorWith(s, u.prevout, ReadCompactSize(s), [](S& st, Coin& c) { UnserializeTxInUndo(st, c); });
    }
};

/// Undo data of a block (Core's CBlockUndo): one TxUndo per transaction but the coinbase, in block
/// order.
struct BlockUndo {
    std::vector<TxUndo> vtxundo;

    friend bool operator==(const BlockUndo&, const BlockUndo&) = default;

    template <typename Op, typename Self>
    static void SerOps(Op& op, Self& self) { op(self.vtxundo); }

    /// Spent coins over all transactions.
    uint64_t CoinCount() const noexcept
    {
        uint64_t n = 0;
        for (const auto& t : vtxundo) n += t.prevout.size();
        return n;
    }
};

/// The serialized undo bytes (what a rev-file record carries between its size and its checksum).
std::vector<uint8_t> SerializeBlockUndo(const BlockUndo& undo);
/// Decodes undo bytes exactly: a malformed field is its Errc (EndOfData, VarIntOverflow,
/// SizeTooLarge, NonCanonicalCompactSize, Corrupt for an invalid compressed key), leftover bytes
/// TrailingData.
Result<BlockUndo> DecodeBlockUndo(std::span<const uint8_t> bytes);

} // namespace ibdkit

// ibdkit/primitives/block.h — block header and block (the owning data model).
//
// Wire format: an 80-byte header (version i32 | prev block hash | merkle root | time u32 | bits u32
// | nonce u32), a CompactSize transaction count, the transactions (with witness). Block hash =
// SHA256d(header). For a zero-copy reading of the same bytes see primitives/block_view.h; both
// share one parser and agree on every input.
//
// Every function here reads only its arguments: thread-safe. A decoded Block owns a copy of its
// bytes (shared by its transactions): the input need not outlive it.
#pragma once

#include <ibdkit/encoding/serialize.h>
#include <ibdkit/error.h>
#include <ibdkit/primitives/hash.h>
#include <ibdkit/primitives/transaction.h>

#include <cstdint>
#include <span>
#include <vector>

namespace ibdkit {

struct BlockHeader {
    static constexpr std::size_t SIZE = 80;
    int32_t version{0};
    BlockHash hash_prev_block;
    uint256 hash_merkle_root;
    uint32_t time{0};
    uint32_t bits{0};
    uint32_t nonce{0};

    /// SHA256d of the 80 serialized bytes.
    BlockHash GetHash() const noexcept;
    /// The header's time, widened as Core's GetBlockTime does.
    int64_t GetBlockTime() const noexcept { return int64_t(time); }
    /// Whether it is Core's null header (bits 0: a placeholder, never a mined header).
    bool IsNull() const noexcept { return bits == 0; }

    friend bool operator==(const BlockHeader&, const BlockHeader&) = default;
    /// The fields in serialization order, for encoding/serialize.h's Serialize and Unserialize.
    template <typename Op, typename Self>
    static void SerOps(Op& op, Self& self)
    {
        op(self.version, self.hash_prev_block, self.hash_merkle_root, self.time, self.bits, self.nonce);
    }
};

/// Decodes a header from exactly 80 bytes (no I/O: cannot fail).
BlockHeader HeaderFromBytes(std::span<const uint8_t, 80> bytes) noexcept;
/// The 80 serialized bytes.
std::array<uint8_t, 80> HeaderToBytes(const BlockHeader& h) noexcept;

/// A block: header + transactions. Checked blocks are a different type (consensus/check.h).
struct Block : BlockHeader {
    std::vector<Transaction> vtx;

    /// The block's header, as the base it is.
    const BlockHeader& header() const noexcept { return *this; }
};

/// Serialized size without witness data (GetSerializeSize(TX_NO_WITNESS(block))).
std::size_t GetBlockStrippedSize(const Block& block) noexcept;
/// Serialized size with witness data.
std::size_t GetBlockTotalSize(const Block& block) noexcept;
/// BIP141 weight: stripped size × 3 + total size.
std::size_t GetBlockWeight(const Block& block) noexcept;

/// A block as Core writes it (header, CompactSize count, transactions), its transactions with or
/// without witness as `params` says; the second form with witness, as blocks are stored and sent.
template <WriteStream S>
void Serialize(S& s, const Block& b, TxParams params)
{
    Serialize(s, b.header());
    WriteCompactSize(s, b.vtx.size());
    for (const Transaction& tx : b.vtx) Serialize(s, tx, params);
}
template <WriteStream S>
void Serialize(S& s, const Block& b)
{
    Serialize(s, b, TX_WITH_WITNESS);
}

/// Decodes one block from the front of `bytes` (more bytes may follow); *consumed receives its
/// length. Throws DecodeError with the same codes as BlockView::Parse on the same bytes.
Block UnserializeBlockFrom(std::span<const uint8_t> bytes, std::size_t* consumed);

/// Decodes exactly one block serialized with witness (trailing bytes are Errc::TrailingData).
/// Every txid and wtxid is hashed straight from `bytes`. Returns errors, never throws them.
Result<Block> DecodeBlock(std::span<const uint8_t> bytes);
inline Result<Block> DecodeBlock(std::span<const std::byte> bytes)
{
    return DecodeBlock(std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size()));
}

/// Encodes a block (with witness unless told otherwise).
std::vector<uint8_t> EncodeBlock(const Block& block, TxParams params = TX_WITH_WITNESS);

/// Stream decoding (SpanReader, DataStream); blocks always decode with witness allowed. Throws
/// DecodeError as UnserializeBlockFrom.
template <ReadStream S>
void Unserialize(S& s, Block& b)
{
    std::size_t used = 0;
    b = UnserializeBlockFrom(detail::UnreadBytes(s), &used);
    s.ignore(used);
}

} // namespace ibdkit

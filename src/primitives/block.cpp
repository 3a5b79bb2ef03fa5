#include <ibdkit/primitives/block.h>

#include "primitives/tx_builder.h"
#include "primitives/tx_parser.h"

#include <ibdkit/crypto/sha256.h>
#include <ibdkit/stream/streams.h>

#include <algorithm>

namespace ibdkit {

BlockHeader HeaderFromBytes(std::span<const uint8_t, 80> b) noexcept
{
    BlockHeader h;
    h.version = int32_t(LoadLE<uint32_t>(b.data()));
    std::memcpy(h.hash_prev_block.AsUint256().data(), b.data() + 4, 32);
    std::memcpy(h.hash_merkle_root.data(), b.data() + 36, 32);
    h.time = LoadLE<uint32_t>(b.data() + 68);
    h.bits = LoadLE<uint32_t>(b.data() + 72);
    h.nonce = LoadLE<uint32_t>(b.data() + 76);
    return h;
}

std::array<uint8_t, 80> HeaderToBytes(const BlockHeader& h) noexcept
{
    std::array<uint8_t, 80> b;
    StoreLE<uint32_t>(b.data(), uint32_t(h.version));
    std::memcpy(b.data() + 4, h.hash_prev_block.data(), 32);
    std::memcpy(b.data() + 36, h.hash_merkle_root.data(), 32);
    StoreLE<uint32_t>(b.data() + 68, h.time);
    StoreLE<uint32_t>(b.data() + 72, h.bits);
    StoreLE<uint32_t>(b.data() + 76, h.nonce);
    return b;
}

BlockHash BlockHeader::GetHash() const noexcept
{
    const auto bytes = HeaderToBytes(*this);
    BlockHash h;
    Sha256dOf(bytes, h.AsUint256().data());
    return h;
}

std::size_t GetBlockStrippedSize(const Block& block) noexcept
{
    std::size_t n = BlockHeader::SIZE + GetSizeOfCompactSize(block.vtx.size());
    for (const Transaction& tx : block.vtx) n += tx.GetStrippedSize();
    return n;
}

std::size_t GetBlockTotalSize(const Block& block) noexcept
{
    std::size_t n = BlockHeader::SIZE + GetSizeOfCompactSize(block.vtx.size());
    for (const Transaction& tx : block.vtx) n += tx.GetTotalSize();
    return n;
}

std::size_t GetBlockWeight(const Block& block) noexcept
{
    return GetBlockStrippedSize(block) * 3 + GetBlockTotalSize(block);
}

Block UnserializeBlockFrom(std::span<const uint8_t> bytes, std::size_t* consumed)
{
    // First pass: validate, find the end, count inputs and outputs (nothing allocated yet).
    detail::ByteCursor c{bytes.data(), bytes.data() + bytes.size()};
    detail::IoCounts counts;
    std::size_t n_tx = 0;
    detail::ParseBlock(
        c, [&](uint64_t n, std::size_t) { n_tx = std::size_t(n); },
        [&](detail::ByteCursor& cur) {
            detail::NullTxSink sink;
            counts.Add(detail::ParseTx(cur, true, sink));
        });
    const std::size_t size = std::size_t(c.p - bytes.data());
    // Second pass over one copy of the block: build every transaction into shared storage and
    // collect where its id bytes lie; then hash all txids and wtxids in one multi-buffer batch.
    auto st = detail::TxBuilder::NewStorage(bytes.data(), size, counts, true);
    Block block;
    block.vtx.resize(n_tx); // n_tx transactions were just parsed: bounded by the input size
    std::vector<HashJob> jobs;
    jobs.reserve(n_tx + n_tx / 2);
    detail::ByteCursor copy{st->bytes.get(), st->bytes.get() + size};
    std::size_t i = 0;
    detail::ParseBlock(
        copy, [](uint64_t, std::size_t) {},
        [&](detail::ByteCursor& cur) {
            const TxLayout l = detail::TxBuilder::Build(cur, true, *st, block.vtx[i++]);
            detail::TxBuilder::AddIdJobs(l, jobs);
        });
    detail::TxBuilder::Attach(block.vtx, st);
    detail::TxBuilder::HashIds(block.vtx, jobs);
    static_cast<BlockHeader&>(block) = HeaderFromBytes(std::span<const uint8_t, 80>(bytes.data(), 80));
    if (consumed) *consumed = size;
    return block;
}

Result<Block> DecodeBlock(std::span<const uint8_t> bytes)
{
    return CatchDecode([&]() -> Block {
        std::size_t used = 0;
        Block b = UnserializeBlockFrom(bytes, &used);
        if (used != bytes.size()) throw DecodeError(Errc::TrailingData, "trailing bytes after block");
        return b;
    });
}

std::vector<uint8_t> EncodeBlock(const Block& block, TxParams params)
{
    return SerializeToVector(block, params);
}

} // namespace ibdkit

#include <ibdkit/primitives/block.h>

#include "primitives/tx_builder.h"
#include "primitives/tx_parser.h"

#include <ibdkit/crypto/sha256.h>
#include <ibdkit/primitives/consensus_constants.h>

#include "stream/streams.h"

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

namespace {

/// Doubles vtx's capacity; the jobs' `out` (ids of transactions in vtx) follow it. Growth is
/// rare (the first reservation holds ~35,000 transactions, more than a real block has) and amortised.
void GrowKeepingJobs(std::vector<Transaction>& vtx, std::vector<PaddedHashJob>& jobs)
{
    const auto old_base = reinterpret_cast<std::uintptr_t>(vtx.data());
    vtx.reserve(std::max<std::size_t>(16, vtx.capacity() * 2));
    const auto new_base = reinterpret_cast<std::uintptr_t>(vtx.data());
    for (PaddedHashJob& j : jobs) j.out = reinterpret_cast<uint8_t*>(reinterpret_cast<std::uintptr_t>(j.out) - old_base + new_base);
}

} // namespace

Block UnserializeBlockFrom(std::span<const uint8_t> bytes, std::size_t* consumed)
{
    // Every transaction is validated, copied (with its id messages padded) into storage shared
    // by the block, and built from that copy; then every txid and wtxid is hashed in one
    // multi-buffer batch. Storage comes recycled: its chunks from earlier blocks usually fit.
    detail::ByteCursor c{bytes.data(), bytes.data() + bytes.size()};
    std::shared_ptr<detail::TxStorage> st = detail::TxBuilder::NewStorage(true);
    Block block;
    std::vector<PaddedHashJob> jobs;
    std::size_t hint = 0;
    detail::ParseBlock(
        c,
        [&](uint64_t n, std::size_t remaining) {
            // The smallest transaction is 10 bytes, and a count reserves at most one batch of
            // MAX_VECTOR_ALLOCATE bytes: a lying count commits little before the bytes run out.
            const std::size_t bound = detail::BoundedCount<Transaction>(n, remaining / 10);
            block.vtx.reserve(bound + 1);
            jobs.reserve(detail::BoundedCount<PaddedHashJob>(bound + bound / 2, SIZE_MAX));
            // Room for the copies and their padding; `remaining` may run past this block (a stream).
            const std::size_t copy = std::min<std::size_t>(remaining, MAX_BLOCK_SERIALIZED_SIZE);
            hint = copy + copy / 8;
        },
        [&](detail::ByteCursor& cur) {
            if (block.vtx.size() == block.vtx.capacity()) GrowKeepingJobs(block.vtx, jobs);
            detail::TxBuilder::Append(cur, true, *st, hint, block.vtx.emplace_back(), &jobs);
        });
    Sha256dManyPadded(jobs);
    detail::TxBuilder::CopyTxidsToWtxids(block.vtx);
    detail::TxBuilder::Attach(block.vtx, st);
    static_cast<BlockHeader&>(block) = HeaderFromBytes(std::span<const uint8_t, 80>(bytes.data(), 80));
    if (consumed) *consumed = std::size_t(c.p - bytes.data());
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

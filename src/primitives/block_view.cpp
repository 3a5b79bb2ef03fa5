#include <ibdkit/primitives/block_view.h>

#include "primitives/tx_builder.h"
#include "primitives/tx_parser.h"

#include <ibdkit/crypto/sha256.h>

namespace ibdkit {

ScriptWitness WitnessView::ToOwned() const
{
    ScriptWitness w;
    w.stack.reserve(size());
    for (ByteSpan item : *this) w.stack.emplace_back(item.begin(), item.end());
    return w;
}

Result<TxView> TxView::Parse(ByteSpan bytes, TxParams params)
{
    return CatchDecode([&]() -> TxView {
        const TxLayout l = detail::ParseTxLayout(bytes.data(), bytes.data() + bytes.size(), params.allow_witness);
        if (l.end != bytes.data() + bytes.size()) throw DecodeError(Errc::TrailingData, "trailing bytes after transaction");
        return TxView(l);
    });
}

Txid TxView::ComputeTxid() const noexcept { return detail::ComputeTxid(m_l); }

Wtxid TxView::ComputeWtxid() const noexcept
{
    if (!m_l.has_witness) return Wtxid(detail::ComputeTxid(m_l).ToUint256());
    return detail::ComputeWtxid(m_l, Txid());
}

Transaction TxView::ToOwned() const
{
    return detail::TxBuilder::DecodeOne(m_l.begin, m_l.end, m_l.witness_allowed, nullptr);
}

BlockView BlockView::ParseOrThrow(ByteSpan bytes)
{
    detail::ByteCursor c{bytes.data(), bytes.data() + bytes.size()};
    BlockView v;
    v.m_first_tx = detail::ParseBlock(
        c, [&](uint64_t n, std::size_t) { v.m_tx_count = std::size_t(n); },
        [&](detail::ByteCursor& cur) {
            detail::NullTxSink sink;
            (void)detail::ParseTx(cur, true, sink);
        });
    if (c.p != bytes.data() + bytes.size()) throw DecodeError(Errc::TrailingData, "trailing bytes after block");
    v.m_bytes = bytes;
    return v;
}

Result<BlockView> BlockView::Parse(ByteSpan bytes)
{
    return CatchDecode([&] { return ParseOrThrow(bytes); });
}

BlockHash BlockView::ComputeHash() const noexcept
{
    BlockHash h;
    Sha256dOf(header_bytes(), h.AsUint256().data());
    return h;
}

Block BlockView::ToOwned() const
{
    return UnserializeBlockFrom(m_bytes, nullptr);
}

BlockTxIds BlockView::ComputeTxIds() const
{
    BlockTxIds ids;
    ids.txids.resize(m_tx_count);
    ids.wtxids.resize(m_tx_count);
    std::vector<HashJob> jobs;
    jobs.reserve(m_tx_count + m_tx_count / 2);
    std::vector<uint8_t> witness(m_tx_count);
    std::size_t i = 0;
    for (TxView tx : txs()) {
        const std::size_t first = jobs.size();
        detail::TxBuilder::AddIdJobs(tx.layout(), jobs);
        jobs[first].out = ids.txids[i].AsUint256().data();
        if (tx.HasWitness()) jobs[first + 1].out = ids.wtxids[i].AsUint256().data();
        witness[i] = tx.HasWitness();
        ++i;
    }
    Sha256dMany(jobs);
    for (i = 0; i < m_tx_count; ++i) {
        if (!witness[i]) ids.wtxids[i] = Wtxid(ids.txids[i].ToUint256());
    }
    return ids;
}

} // namespace ibdkit

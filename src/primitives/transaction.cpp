#include <ibdkit/primitives/transaction.h>

#include "primitives/tx_builder.h"
#include "primitives/tx_parser.h"

#include <ibdkit/crypto/sha256.h>
#include <ibdkit/stream/streams.h>

#include <algorithm>

namespace ibdkit {

namespace detail {

void ThrowEndOfData() { throw DecodeError(Errc::EndOfData, "end of data"); }
void ThrowNonCanonical() { throw DecodeError(Errc::NonCanonicalCompactSize, "non-canonical ReadCompactSize()"); }
void ThrowSizeTooLarge() { throw DecodeError(Errc::SizeTooLarge, "ReadCompactSize(): size too large"); }
void ThrowSuperfluousWitness() { throw DecodeError(Errc::SuperfluousWitness, "Superfluous witness record"); }
void ThrowUnknownOptionalData() { throw DecodeError(Errc::UnknownOptionalData, "Unknown transaction optional data"); }

Txid ComputeTxid(const TxLayout& l) noexcept
{
    Txid id;
    if (!l.has_witness) {
        Sha256dOf(std::span<const uint8_t>(l.begin, l.end), id.AsUint256().data());
    } else {
        Sha256d h;
        h.Write(std::span<const uint8_t>(l.begin, 4));
        h.Write(std::span<const uint8_t>(l.vin_count, l.wit));
        h.Write(std::span<const uint8_t>(l.lock, l.end));
        h.Finalize(id.AsUint256().data());
    }
    return id;
}

Wtxid ComputeWtxid(const TxLayout& l, const Txid& txid) noexcept
{
    if (!l.has_witness) return Wtxid(txid.ToUint256());
    Wtxid id;
    Sha256dOf(std::span<const uint8_t>(l.begin, l.end), id.AsUint256().data());
    return id;
}

TxLayout ParseTxLayout(const uint8_t* p, const uint8_t* end, bool allow_witness)
{
    ByteCursor c{p, end};
    NullTxSink sink;
    return ParseTx(c, allow_witness, sink);
}

void TxBuilder::Decode(ByteCursor& c, bool allow_witness, Transaction& tx)
{
    Finish(DecodeUnhashed(c, allow_witness, tx), tx);
}

TxLayout TxBuilder::DecodeUnhashed(ByteCursor& c, bool allow_witness, Transaction& tx)
{
    OwnedTxSink sink{tx.m_vin, tx.m_vout};
    const TxLayout l = ParseTx(c, allow_witness, sink);
    SetFields(l, tx);
    return l;
}

void TxBuilder::SetFields(const TxLayout& l, Transaction& tx) noexcept
{
    tx.m_version = LoadLE<uint32_t>(l.begin);
    tx.m_lock_time = LoadLE<uint32_t>(l.lock);
    tx.m_has_witness = l.has_witness;
    tx.m_total_size = uint32_t(l.end - l.begin);
    tx.m_stripped_size = uint32_t(4 + (l.wit - l.vin_count) + (l.end - l.lock));
}

void TxBuilder::Finish(const TxLayout& l, Transaction& tx) noexcept
{
    SetFields(l, tx);
    tx.m_hash = ComputeTxid(l);
    tx.m_witness_hash = ComputeWtxid(l, tx.m_hash);
}

void TxBuilder::AddIdJobs(const TxLayout& l, std::vector<HashJob>& jobs)
{
    if (!l.has_witness) {
        jobs.emplace_back(std::span<const uint8_t>(l.begin, l.end), nullptr);
    } else {
        jobs.emplace_back(std::span<const uint8_t>(l.begin, 4), std::span<const uint8_t>(l.vin_count, l.wit),
                          std::span<const uint8_t>(l.lock, l.end), nullptr);
        jobs.emplace_back(std::span<const uint8_t>(l.begin, l.end), nullptr);
    }
}

void TxBuilder::HashIds(std::span<Transaction> txs, std::span<HashJob> jobs) noexcept
{
    std::size_t j = 0;
    for (Transaction& tx : txs) {
        jobs[j++].out = tx.m_hash.AsUint256().data();
        if (tx.m_has_witness) jobs[j++].out = tx.m_witness_hash.AsUint256().data();
    }
    Sha256dMany(jobs);
    for (Transaction& tx : txs) {
        if (!tx.m_has_witness) tx.m_witness_hash = Wtxid(tx.m_hash.ToUint256());
    }
}

} // namespace detail

// ---- MutableTransaction / Transaction ---------------------------------------------------------

Txid MutableTransaction::GetHash() const
{
    const auto bytes = SerializeToVector(*this, TX_NO_WITNESS);
    return Txid(HashSha256d(std::span<const uint8_t>(bytes)));
}

Transaction::Transaction() = default;

Transaction::Transaction(const MutableTransaction& mtx)
    : m_version(mtx.version), m_lock_time(mtx.lock_time), m_vin(mtx.vin), m_vout(mtx.vout)
{
    ComputeIdsBySerializing();
}

Transaction::Transaction(MutableTransaction&& mtx)
    : m_version(mtx.version), m_lock_time(mtx.lock_time), m_vin(std::move(mtx.vin)), m_vout(std::move(mtx.vout))
{
    ComputeIdsBySerializing();
}

void Transaction::ComputeIdsBySerializing()
{
    m_has_witness = std::any_of(m_vin.begin(), m_vin.end(), [](const TxIn& in) { return !in.witness.IsNull(); });
    const auto stripped = SerializeToVector(*this, TX_NO_WITNESS);
    m_stripped_size = uint32_t(stripped.size());
    m_hash = Txid(HashSha256d(std::span<const uint8_t>(stripped)));
    if (m_has_witness) {
        const auto full = SerializeToVector(*this, TX_WITH_WITNESS);
        m_total_size = uint32_t(full.size());
        m_witness_hash = Wtxid(HashSha256d(std::span<const uint8_t>(full)));
    } else {
        m_total_size = m_stripped_size;
        m_witness_hash = Wtxid(m_hash.ToUint256());
    }
}

Amount Transaction::GetValueOut() const noexcept
{
    uint64_t total = 0;
    for (const TxOut& out : m_vout) total += uint64_t(out.value);
    return Amount(total);
}

MutableTransaction Transaction::ToMutable() const
{
    MutableTransaction m;
    m.version = m_version;
    m.vin = m_vin;
    m.vout = m_vout;
    m.lock_time = m_lock_time;
    return m;
}

// ---- decoding entry points --------------------------------------------------------------------

Transaction UnserializeTransactionFrom(std::span<const uint8_t> bytes, TxParams params, std::size_t* consumed)
{
    detail::ByteCursor c{bytes.data(), bytes.data() + bytes.size()};
    Transaction tx;
    detail::TxBuilder::Decode(c, params.allow_witness, tx);
    if (consumed) *consumed = std::size_t(c.p - bytes.data());
    return tx;
}

Result<Transaction> DecodeTransaction(std::span<const uint8_t> bytes, TxParams params)
{
    return CatchDecode([&]() -> Transaction {
        std::size_t used = 0;
        Transaction tx = UnserializeTransactionFrom(bytes, params, &used);
        if (used != bytes.size()) throw DecodeError(Errc::TrailingData, "trailing bytes after transaction");
        return tx;
    });
}

std::vector<uint8_t> EncodeTransaction(const Transaction& tx, TxParams params)
{
    return SerializeToVector(tx, params);
}

} // namespace ibdkit

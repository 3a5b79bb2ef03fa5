#include <ibdkit/primitives/transaction.h>

#include "primitives/tx_builder.h"
#include "primitives/tx_parser.h"

#include <ibdkit/crypto/sha256.h>

#include "stream/streams.h"

#include <algorithm>
#include <mutex>

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

namespace {

/// Idle block storage kept for reuse: at most MAX_ENTRIES, each at most MAX_FOOTPRINT bytes.
class StoragePool {
public:
    static constexpr std::size_t MAX_ENTRIES = 4;
    static constexpr std::size_t MAX_FOOTPRINT = MAX_POOLED_FOOTPRINT;

    StoragePool() { m_idle.reserve(MAX_ENTRIES); }

    std::unique_ptr<TxStorage> Take()
    {
        {
            std::lock_guard lock(m_mutex);
            if (!m_idle.empty()) {
                std::unique_ptr<TxStorage> st = std::move(m_idle.back());
                m_idle.pop_back();
                return st;
            }
        }
        return std::make_unique<TxStorage>();
    }

    void Give(std::unique_ptr<TxStorage> st) noexcept
    {
        st->Reset();
        if (st->Footprint() > MAX_FOOTPRINT) return;
        std::lock_guard lock(m_mutex);
        if (m_idle.size() < MAX_ENTRIES) m_idle.push_back(std::move(st)); // within the reserve: no throw
    }

    StoragePoolSnapshot Inspect()
    {
        std::lock_guard lock(m_mutex);
        StoragePoolSnapshot snap;
        snap.idle = m_idle.size();
        for (const auto& st : m_idle) {
            const std::size_t walked = st->FootprintByWalking();
            snap.largest_footprint = std::max(snap.largest_footprint, walked);
            snap.footprints_exact &= walked == st->Footprint();
        }
        return snap;
    }

private:
    std::mutex m_mutex;
    std::vector<std::unique_ptr<TxStorage>> m_idle;
};

StoragePool& Pool()
{
    // Never destroyed: transactions in static objects may release storage during exit.
    static StoragePool* pool = new StoragePool;
    return *pool;
}

} // namespace

StoragePoolSnapshot InspectStoragePool() { return Pool().Inspect(); }

std::shared_ptr<TxStorage> TxBuilder::NewStorage(bool recycled)
{
    if (!recycled) return std::make_shared<TxStorage>();
    return std::shared_ptr<TxStorage>(Pool().Take().release(), [](TxStorage* s) { Pool().Give(std::unique_ptr<TxStorage>(s)); });
}

namespace {

/// Appends a job field by field (no temporary: reading one back right after the copy's stores
/// stalled on store forwarding).
inline void AddJob(std::vector<PaddedHashJob>& jobs, const uint8_t* data, uint32_t blocks, uint8_t* out)
{
    PaddedHashJob& j = jobs.emplace_back();
    j.data = data;
    j.blocks = blocks;
    j.out = out;
}

/// Pads the `n`-byte message at `msg` as SHA-256 does (the padding goes after it); returns the
/// message's block count.
uint32_t PadInPlace(uint8_t* msg, std::size_t n) noexcept
{
    WriteSha256Padding(msg + n, n);
    return uint32_t((n + Sha256PaddingSize(n)) / 64);
}

} // namespace

TxLayout TxBuilder::Append(ByteCursor& src, bool allow_witness, TxStorage& st, std::size_t hint, Transaction& tx,
                           std::vector<PaddedHashJob>* jobs)
{
    // One parse, in the input: validates, measures, and builds the inputs and outputs with
    // scripts borrowing from the input for now (nothing is copied for bytes that fail).
    const std::size_t first_in = st.n_in, first_out = st.n_out;
    OwnedTxSink sink{st, first_in};
    const TxLayout in = ParseTx(src, allow_witness, sink);
    const std::size_t size = std::size_t(in.end - in.begin);
    const std::size_t stripped = 4 + std::size_t(in.wit - in.vin_count) + 4;
    std::size_t need = size;
    if (jobs) {
        need += Sha256PaddingSize(size);
        if (in.has_witness) need += stripped + Sha256PaddingSize(stripped);
    }
    uint8_t* dst = st.Take(need, hint);

    // The copy: the serialization (padded: the wtxid message, or the txid one without witness),
    // then for a segwit transaction its stripped serialization (the txid message), padded.
    std::memcpy(dst, in.begin, size);
    if (jobs) {
        const uint32_t full_blocks = PadInPlace(dst, size);
        if (!in.has_witness) {
            AddJob(*jobs, dst, full_blocks, tx.m_hash.AsUint256().data());
        } else {
            uint8_t* s = dst + 64 * std::size_t(full_blocks);
            std::memcpy(s, in.begin, 4);
            std::memcpy(s + 4, in.vin_count, std::size_t(in.wit - in.vin_count));
            std::memcpy(s + stripped - 4, in.lock, 4);
            AddJob(*jobs, s, PadInPlace(s, stripped), tx.m_hash.AsUint256().data());
            AddJob(*jobs, dst, full_blocks, tx.m_witness_hash.AsUint256().data());
        }
    }

    // The scripts now borrow from the copy.
    for (std::size_t i = first_in; i < st.n_in; ++i) {
        Rebase(st.vin[i].script_sig, in.begin, dst);
        if (!in.has_witness) ClearWitness(st, st.vin[i]); // a reused input's old stack
    }
    for (std::size_t i = first_out; i < st.n_out; ++i) Rebase(st.vout[i].script_pubkey, in.begin, dst);
    SetFields(in, tx);
    return in;
}

void TxBuilder::Attach(std::span<Transaction> txs, const std::shared_ptr<TxStorage>& st) noexcept
{
    const TxIn* in = st->vin.data();
    const TxOut* out = st->vout.data();
    for (Transaction& tx : txs) {
        tx.m_storage = st;
        tx.m_vin = in;
        tx.m_vout = out;
        in += tx.m_n_in;
        out += tx.m_n_out;
    }
}

void TxBuilder::SetFields(const TxLayout& l, Transaction& tx) noexcept
{
    tx.m_n_in = l.n_in;
    tx.m_n_out = l.n_out;
    tx.m_version = LoadLE<uint32_t>(l.begin);
    tx.m_lock_time = LoadLE<uint32_t>(l.lock);
    tx.m_has_witness = l.has_witness;
    tx.m_total_size = uint32_t(l.end - l.begin);
    tx.m_stripped_size = uint32_t(4 + (l.wit - l.vin_count) + (l.end - l.lock));
}

void TxBuilder::HashOne(const TxLayout& l, Transaction& tx) noexcept
{
    tx.m_hash = ComputeTxid(l);
    tx.m_witness_hash = ComputeWtxid(l, tx.m_hash);
}

Transaction TxBuilder::DecodeOne(const uint8_t* p, const uint8_t* end, bool allow_witness, std::size_t* consumed)
{
    ByteCursor c{p, end};
    auto st = NewStorage(false);
    Transaction tx;
    const TxLayout l = Append(c, allow_witness, *st, 0, tx, nullptr); // sized exactly, after validating
    Attach(std::span<Transaction>(&tx, 1), st);
    HashOne(l, tx);
    if (consumed) *consumed = std::size_t(c.p - p);
    return tx;
}

void TxBuilder::CopyTxidsToWtxids(std::span<Transaction> txs) noexcept
{
    for (Transaction& tx : txs) {
        if (!tx.m_has_witness) tx.m_witness_hash = Wtxid(tx.m_hash.ToUint256());
    }
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

} // namespace detail

// ---- MutableTransaction / Transaction ---------------------------------------------------------

Txid MutableTransaction::GetHash() const
{
    const auto bytes = SerializeToVector(*this, TX_NO_WITNESS);
    return Txid(HashSha256d(std::span<const uint8_t>(bytes)));
}

Transaction::Transaction() = default;

Transaction::Transaction(const MutableTransaction& mtx)
{
    AdoptOwned(MutableTransaction(mtx));
}

Transaction::Transaction(MutableTransaction&& mtx)
{
    AdoptOwned(std::move(mtx));
}

void Transaction::AdoptOwned(MutableTransaction&& mtx)
{
    auto st = std::make_shared<detail::TxStorage>();
    st->vin = std::move(mtx.vin);
    st->vout = std::move(mtx.vout);
    st->n_in = st->vin.size();
    st->n_out = st->vout.size();
    m_vin = st->vin.data();
    m_vout = st->vout.data();
    m_n_in = uint32_t(st->vin.size());
    m_n_out = uint32_t(st->vout.size());
    m_storage = std::move(st);
    m_version = mtx.version;
    m_lock_time = mtx.lock_time;
    ComputeIdsBySerializing();
}

void Transaction::ComputeIdsBySerializing()
{
    m_has_witness = std::any_of(vin().begin(), vin().end(), [](const TxIn& in) { return !in.witness.IsNull(); });
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
    for (const TxOut& out : vout()) total += uint64_t(out.value);
    return Amount(total);
}

MutableTransaction Transaction::ToMutable() const
{
    MutableTransaction m;
    m.version = m_version;
    m.vin.assign(vin().begin(), vin().end());
    m.vout.assign(vout().begin(), vout().end());
    m.lock_time = m_lock_time;
    return m;
}

// ---- decoding entry points --------------------------------------------------------------------

Transaction UnserializeTransactionFrom(std::span<const uint8_t> bytes, TxParams params, std::size_t* consumed)
{
    return detail::TxBuilder::DecodeOne(bytes.data(), bytes.data() + bytes.size(), params.allow_witness, consumed);
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

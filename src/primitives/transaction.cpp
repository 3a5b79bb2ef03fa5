#include <ibdkit/primitives/transaction.h>

#include "primitives/tx_builder.h"
#include "primitives/tx_parser.h"

#include <ibdkit/crypto/sha256.h>
#include <ibdkit/stream/streams.h>

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
    static constexpr std::size_t MAX_FOOTPRINT = std::size_t(64) << 20;

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
        st->vin.clear(); // destroys witness stacks; borrowed scripts own nothing
        st->vout.clear();
        if (st->Footprint() > MAX_FOOTPRINT) return;
        std::lock_guard lock(m_mutex);
        if (m_idle.size() < MAX_ENTRIES) m_idle.push_back(std::move(st)); // within the reserve: no throw
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

std::shared_ptr<TxStorage> TxBuilder::NewStorage(const uint8_t* p, std::size_t n, const IoCounts& counts, bool recycled)
{
    std::shared_ptr<TxStorage> st;
    if (recycled) {
        st = std::shared_ptr<TxStorage>(Pool().Take().release(), [](TxStorage* s) { Pool().Give(std::unique_ptr<TxStorage>(s)); });
    } else {
        st = std::make_shared<TxStorage>();
    }
    if (st->bytes_capacity < n) {
        st->bytes = std::make_unique_for_overwrite<uint8_t[]>(n);
        st->bytes_capacity = n;
    }
    if (n) std::memcpy(st->bytes.get(), p, n);
    st->vin.reserve(counts.n_in);
    st->vout.reserve(counts.n_out);
    return st;
}

TxLayout TxBuilder::Build(ByteCursor& c, bool allow_witness, TxStorage& st, Transaction& tx)
{
    OwnedTxSink sink{st, st.vin.size()};
    const TxLayout l = ParseTx(c, allow_witness, sink);
    SetFields(l, tx);
    return l;
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
    // First pass: validate and measure; nothing is allocated for bytes that do not decode.
    const TxLayout first = ParseTxLayout(p, end, allow_witness);
    IoCounts counts;
    counts.Add(first);
    const std::size_t size = std::size_t(first.end - p);
    auto st = NewStorage(p, size, counts, false);
    ByteCursor c{st->bytes.get(), st->bytes.get() + size};
    Transaction tx;
    const TxLayout l = Build(c, allow_witness, *st, tx);
    Attach(std::span<Transaction>(&tx, 1), st);
    HashOne(l, tx);
    if (consumed) *consumed = size;
    return tx;
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

// ibdkit/primitives/transaction.h — outpoints, inputs, outputs, transactions (with segwit).
//
// Wire format: docs/formats.md §2.
//
// Two transaction types, as in Core:
//  - MutableTransaction: plain fields, for building and editing; no cached ids.
//  - Transaction: immutable; its txid, wtxid and serialized sizes are computed once — at decode
//    straight from the input bytes (no re-serialization), or from a MutableTransaction.
//    Its inputs and outputs live in shared, immutable storage (copying a Transaction is cheap and
//    shares it, like Core's CTransactionRef). A decoded block keeps one copy of its serialization
//    plus one array of inputs and one of outputs for all its transactions; scripts point into
//    that copy, so decoding a block allocates a handful of times instead of once per script.
//
// Decoding is exactly as lenient as Core's (the witness flag rules, the zero-input ambiguity);
// semantic rules live in consensus/tx_check.h. Encoding a decoded transaction reproduces its bytes.
//
// Threads: a Transaction is immutable, so any number of threads may read one at once, and copies
// sharing its storage may be used and destroyed on different threads. A decoded transaction owns a
// copy of its bytes: the input need not outlive it. Encoding throws only what the stream throws.
#pragma once

#include <ibdkit/encoding/serialize.h>
#include <ibdkit/error.h>
#include <ibdkit/primitives/amount.h>
#include <ibdkit/primitives/hash.h>
#include <ibdkit/primitives/script.h>

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

namespace ibdkit {

/// A reference to an output: txid + output index.
struct OutPoint {
    static constexpr uint32_t NULL_INDEX = 0xffffffff;
    Txid hash;
    uint32_t n{NULL_INDEX};

    /// Whether it is the null outpoint a coinbase input spends (null txid, index 0xffffffff).
    bool IsNull() const noexcept { return n == NULL_INDEX && hash.IsNull(); }
    friend auto operator<=>(const OutPoint&, const OutPoint&) noexcept = default;
    friend bool operator==(const OutPoint& a, const OutPoint& b) noexcept { return a.n == b.n && a.hash == b.hash; }
    /// The fields in serialization order, for encoding/serialize.h's Serialize and Unserialize.
    template <typename Op, typename Self>
    static void SerOps(Op& op, Self& self) { op(self.hash, self.n); }
};

/// std::hash-compatible hasher of outpoints, unsalted: for tables whose keys an attacker cannot
/// choose (outpoints of blocks go through a salted one; src/coins/salted_hasher.h).
struct OutPointHasher {
    /// A word of the txid mixed with the index (never throws).
    std::size_t operator()(const OutPoint& o) const noexcept
    {
        return std::size_t(o.hash.ToUint256().GetUint64(0) ^ (uint64_t(o.n) * 0x9E3779B97F4A7C15ULL));
    }
};

/// An output: amount + locking script.
struct TxOut {
    Amount value{-1};
    Script script_pubkey;

    /// Whether it is Core's null output (value -1: a spent coin's marker, never a real output).
    bool IsNull() const noexcept { return value == -1; }
    friend bool operator==(const TxOut&, const TxOut&) = default;
    /// The fields in serialization order, for encoding/serialize.h's Serialize and Unserialize.
    template <typename Op, typename Self>
    static void SerOps(Op& op, Self& self) { op(self.value, self.script_pubkey); }
};

/// An input's witness: a stack of byte strings (Core's CScriptWitness).
struct ScriptWitness {
    std::vector<std::vector<uint8_t>> stack;

    /// Whether the stack is empty (no witness).
    bool IsNull() const noexcept { return stack.empty(); }
    friend bool operator==(const ScriptWitness&, const ScriptWitness&) = default;
};

/// An input: the output it spends, the unlocking script, the sequence number and the witness.
struct TxIn {
    static constexpr uint32_t SEQUENCE_FINAL = 0xffffffff;
    OutPoint prevout;
    uint32_t sequence{SEQUENCE_FINAL}; // next to the 36-byte outpoint: no padding (112 bytes in all)
    Script script_sig;
    ScriptWitness witness;

    friend bool operator==(const TxIn&, const TxIn&) = default;
};

/// Typed serialization parameter: with or without the segwit extension (Core's TransactionSerParams).
struct TxParams {
    bool allow_witness;
};
inline constexpr TxParams TX_WITH_WITNESS{true};
inline constexpr TxParams TX_NO_WITNESS{false};

/// A transaction under construction: plain fields, ids computed on request.
struct MutableTransaction {
    uint32_t version{2};
    std::vector<TxIn> vin;
    std::vector<TxOut> vout;
    uint32_t lock_time{0};

    /// Whether any input has a witness stack (and so serializes with the segwit extension).
    bool HasWitness() const noexcept
    {
        for (const TxIn& in : vin) {
            if (!in.witness.IsNull()) return true;
        }
        return false;
    }
    /// Serializes (without witness) and hashes: O(size).
    Txid GetHash() const;
};

namespace detail {
struct TxBuilder;
}

/// An immutable transaction with its ids and sizes computed once.
class Transaction {
public:
    /// A placeholder (no inputs, no outputs, version 2) with null ids and sizes — a target to
    /// decode into; build real transactions from a MutableTransaction or by decoding.
    Transaction();
    /// Copies (or takes) the inputs and outputs and computes the ids by serializing: O(size).
    explicit Transaction(const MutableTransaction& mtx);
    explicit Transaction(MutableTransaction&& mtx);

    /// The version, as serialized (the lock time: lock_time()).
    uint32_t version() const noexcept { return m_version; }
    /// Views of the shared storage: valid while this transaction, or a copy of it, lives.
    std::span<const TxIn> vin() const noexcept { return {m_vin, m_n_in}; }
    std::span<const TxOut> vout() const noexcept { return {m_vout, m_n_out}; }
    uint32_t lock_time() const noexcept { return m_lock_time; }

    /// The txid: SHA256d of the serialization without witness.
    const Txid& GetHash() const noexcept { return m_hash; }
    /// The wtxid: SHA256d of the full serialization (equal to the txid without witness data).
    const Wtxid& GetWitnessHash() const noexcept { return m_witness_hash; }
    bool HasWitness() const noexcept { return m_has_witness; }
    /// One input spending the null outpoint.
    bool IsCoinBase() const noexcept { return m_n_in == 1 && m_vin[0].prevout.IsNull(); }

    /// Serialized size with witness (Core's GetTotalSize()).
    std::size_t GetTotalSize() const noexcept { return m_total_size; }
    /// Serialized size without witness (GetSerializeSize(TX_NO_WITNESS(tx))).
    std::size_t GetStrippedSize() const noexcept { return m_stripped_size; }
    /// Sum of output values; may exceed MAX_MONEY or overflow for invalid transactions — only
    /// meaningful after CheckTransaction (wraps around like unsigned arithmetic otherwise).
    Amount GetValueOut() const noexcept;

    /// A deep copy: its scripts own their bytes.
    MutableTransaction ToMutable() const;

    friend bool operator==(const Transaction& a, const Transaction& b) noexcept
    {
        return a.m_witness_hash == b.m_witness_hash && a.m_hash == b.m_hash;
    }

private:
    friend struct detail::TxBuilder;
    void AdoptOwned(MutableTransaction&& mtx);
    void ComputeIdsBySerializing();

    /// Keeps alive what m_vin and m_vout (and their borrowed scripts) point into.
    std::shared_ptr<const void> m_storage;
    const TxIn* m_vin{nullptr};
    const TxOut* m_vout{nullptr};
    uint32_t m_n_in{0};
    uint32_t m_n_out{0};
    uint32_t m_version{2};
    uint32_t m_lock_time{0};
    Txid m_hash;
    Wtxid m_witness_hash;
    uint32_t m_total_size{0};
    uint32_t m_stripped_size{0};
    bool m_has_witness{false};
};

/// BIP141 weight: stripped size × 3 + total size.
inline std::size_t GetTransactionWeight(const Transaction& tx) noexcept
{
    return tx.GetStrippedSize() * 3 + tx.GetTotalSize();
}

// ---- serialization ----------------------------------------------------------------------------

/// A witness stack as Core writes it: a CompactSize count, then each item as a byte vector.
template <WriteStream S>
void Serialize(S& s, const ScriptWitness& w)
{
    Serialize(s, w.stack);
}

/// An input without its witness (Core's CTxIn): prevout, scriptSig, sequence.
template <WriteStream S>
void Serialize(S& s, const TxIn& in)
{
    Serialize(s, in.prevout);
    Serialize(s, in.script_sig);
    Serialize(s, in.sequence);
}

namespace detail {
/// The one transaction writer behind both Serialize overloads below (Core's SerializeTransaction).
template <WriteStream S>
void SerializeTransaction(S& s, TxParams params, uint32_t version, std::span<const TxIn> vin,
                          std::span<const TxOut> vout, uint32_t lock_time, bool has_witness)
{
    Serialize(s, version);
    const bool with_witness = params.allow_witness && has_witness;
    if (with_witness) {
        const std::byte marker[2]{std::byte{0}, std::byte{1}};
        s.write(marker);
    }
    WriteCompactSize(s, vin.size());
    for (const TxIn& in : vin) Serialize(s, in);
    WriteCompactSize(s, vout.size());
    for (const TxOut& out : vout) Serialize(s, out);
    if (with_witness) {
        for (const TxIn& in : vin) Serialize(s, in.witness);
    }
    Serialize(s, lock_time);
}
} // namespace detail

/// Core's transaction encoding: the marker/flag and witness stacks only when allowed and present.
template <WriteStream S>
void Serialize(S& s, const MutableTransaction& tx, TxParams params)
{
    detail::SerializeTransaction(s, params, tx.version, tx.vin, tx.vout, tx.lock_time, tx.HasWitness());
}
template <WriteStream S>
void Serialize(S& s, const Transaction& tx, TxParams params)
{
    detail::SerializeTransaction(s, params, tx.version(), tx.vin(), tx.vout(), tx.lock_time(), tx.HasWitness());
}

/// Decodes one transaction from the front of `bytes` (more bytes may follow); *consumed receives
/// its length. Throws DecodeError: EndOfData, NonCanonicalCompactSize, SizeTooLarge,
/// SuperfluousWitness ("Superfluous witness record"), UnknownOptionalData ("Unknown transaction
/// optional data"). txid and wtxid are hashed from `bytes` directly.
Transaction UnserializeTransactionFrom(std::span<const uint8_t> bytes, TxParams params, std::size_t* consumed);

/// Decodes exactly one transaction (trailing bytes are Errc::TrailingData). Returns the codes above
/// as errors instead of throwing them.
Result<Transaction> DecodeTransaction(std::span<const uint8_t> bytes, TxParams params = TX_WITH_WITNESS);

/// Encodes a transaction into a new vector.
std::vector<uint8_t> EncodeTransaction(const Transaction& tx, TxParams params = TX_WITH_WITNESS);

namespace detail {
/// Streams whose unread bytes are contiguous in memory: SpanReader (remaining()) or DataStream (span()).
template <typename S>
std::span<const uint8_t> UnreadBytes(S& s)
{
    if constexpr (requires { s.remaining(); }) {
        auto r = s.remaining();
        return {reinterpret_cast<const uint8_t*>(r.data()), r.size()};
    } else {
        static_assert(requires { s.span(); }, "transactions decode from SpanReader or DataStream");
        auto r = s.span();
        return {reinterpret_cast<const uint8_t*>(r.data()), r.size()};
    }
}
} // namespace detail

/// Stream decoding (SpanReader, DataStream): the same parser as every other entry point; throws
/// DecodeError as UnserializeTransactionFrom.
template <ReadStream S>
void Unserialize(S& s, Transaction& tx, TxParams params)
{
    std::size_t used = 0;
    tx = UnserializeTransactionFrom(detail::UnreadBytes(s), params, &used);
    s.ignore(used);
}
template <ReadStream S>
void Unserialize(S& s, MutableTransaction& tx, TxParams params)
{
    Transaction t;
    Unserialize(s, t, params);
    tx = t.ToMutable();
}

} // namespace ibdkit

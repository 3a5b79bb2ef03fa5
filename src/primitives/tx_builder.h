// The owning front end of the transaction parser: decoded transactions and their shared storage.
//
// Decoding runs the parser twice over the same bytes. The first pass (no sink) validates and
// finds the end and the input/output totals; then the bytes are copied once into a TxStorage,
// and the second pass fills that storage's input and output arrays, scripts borrowing from the
// copy. So a block decodes with a few allocations (the copy, the two arrays, witness stacks),
// not one per script and two per transaction, and nothing is allocated for input that fails.
#pragma once

#include "primitives/tx_parser.h"

#include <ibdkit/crypto/sha256.h>
#include <ibdkit/primitives/transaction.h>

#include <algorithm>
#include <cstring>
#include <memory>
#include <span>
#include <vector>

namespace ibdkit::detail {

/// What decoded transactions point into: a copy of their serialization (scripts borrow from it)
/// and the inputs and outputs of all of them, in order. Immutable once built.
struct TxStorage {
    std::unique_ptr<uint8_t[]> bytes;
    std::size_t bytes_capacity{0};
    std::vector<TxIn> vin;
    std::vector<TxOut> vout;

    /// Heap bytes held (the byte copy and both arrays' capacity).
    std::size_t Footprint() const noexcept
    {
        return bytes_capacity + vin.capacity() * sizeof(TxIn) + vout.capacity() * sizeof(TxOut);
    }
};

/// Input/output totals of a first pass.
struct IoCounts {
    std::size_t n_in{0};
    std::size_t n_out{0};
    void Add(const TxLayout& l) noexcept
    {
        n_in += l.n_in;
        n_out += l.n_out;
    }
};

/// Friend of Transaction and Script: fills transactions from the parser.
struct TxBuilder {
    /// Storage holding a copy of [p, p + n), its arrays reserved for `counts` (validated counts:
    /// each input and output took bytes of the input, so this is bounded by the input size).
    /// Recycled storage (blocks) comes from a small process-wide pool and returns to it when its
    /// last transaction is gone: decoding block after block then reuses the same memory instead
    /// of a fresh megabyte-sized allocation each time, which glibc would map (or trim) and the
    /// kernel fault in page by page.
    static std::shared_ptr<TxStorage> NewStorage(const uint8_t* p, std::size_t n, const IoCounts& counts, bool recycled);
    /// Second pass over bytes inside `st.bytes`: appends the inputs and outputs, sets the fields
    /// (not the ids, not the storage pointers: see Attach).
    static TxLayout Build(ByteCursor& c, bool allow_witness, TxStorage& st, Transaction& tx);
    /// Points `txs` (built in order into `st`) at their inputs and outputs and shares `st`.
    static void Attach(std::span<Transaction> txs, const std::shared_ptr<TxStorage>& st) noexcept;
    /// Version, lock time, counts, witness flag and sizes from a layout.
    static void SetFields(const TxLayout& l, Transaction& tx) noexcept;
    /// The ids hashed one message at a time.
    static void HashOne(const TxLayout& l, Transaction& tx) noexcept;
    /// Appends the Sha256dMany jobs for a transaction's ids (txid; and wtxid when it has a
    /// witness), with `out` unset: see HashIds.
    static void AddIdJobs(const TxLayout& l, std::vector<HashJob>& jobs);
    /// Sets `out` of the jobs AddIdJobs appended for `txs` (in order), hashes them all in one
    /// batch, and copies the txid into the wtxid of transactions without witness.
    static void HashIds(std::span<Transaction> txs, std::span<HashJob> jobs) noexcept;
    /// Decodes one transaction from the front of [p, end) into storage of its own, ids hashed.
    static Transaction DecodeOne(const uint8_t* p, const uint8_t* end, bool allow_witness, std::size_t* consumed);
    /// A script borrowing [p, p + n) from a TxStorage's bytes.
    static Script BorrowScript(const uint8_t* p, std::size_t n) noexcept { return Script::Borrow(p, n); }
};

/// Builds inputs and outputs into a TxStorage whose arrays are already reserved (second pass).
struct OwnedTxSink {
    TxStorage& st;
    std::size_t first_in; // this transaction's first input in st.vin

    void Inputs(uint64_t, std::size_t) {}
    void Input(const uint8_t* prevout, const uint8_t* script, std::size_t len, uint32_t seq)
    {
        TxIn& in = st.vin.emplace_back();
        std::memcpy(in.prevout.hash.AsUint256().data(), prevout, 32);
        in.prevout.n = LoadLE<uint32_t>(prevout + 32);
        in.script_sig = TxBuilder::BorrowScript(script, len);
        in.sequence = seq;
    }
    void Outputs(uint64_t, std::size_t) {}
    void Output(int64_t value, const uint8_t* script, std::size_t len)
    {
        TxOut& out = st.vout.emplace_back();
        out.value = value;
        out.script_pubkey = TxBuilder::BorrowScript(script, len);
    }
    void WitnessStack(std::size_t i, uint64_t items, std::size_t remaining)
    {
        st.vin[first_in + i].witness.stack.reserve(std::size_t(std::min<uint64_t>(items, remaining)));
    }
    void WitnessItem(std::size_t i, const uint8_t* p, std::size_t len)
    {
        st.vin[first_in + i].witness.stack.emplace_back(p, p + len);
    }
};

} // namespace ibdkit::detail

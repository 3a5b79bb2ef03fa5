// The owning front end of the transaction parser: a sink that builds TxIn/TxOut objects.
#pragma once

#include "primitives/tx_parser.h"

#include <ibdkit/crypto/sha256.h>
#include <ibdkit/primitives/transaction.h>

#include <algorithm>
#include <cstring>
#include <span>
#include <vector>

namespace ibdkit::detail {

/// Builds inputs and outputs. Reservations are bounded by the bytes still available (an input
/// takes at least 41 bytes, an output 9, a witness item 1), never by a count alone.
struct OwnedTxSink {
    std::vector<TxIn>& vin;
    std::vector<TxOut>& vout;

    void Inputs(uint64_t n, std::size_t remaining)
    {
        vin.reserve(std::size_t(std::min<uint64_t>(n, remaining / 41)));
    }
    void Input(const uint8_t* prevout, const uint8_t* script, std::size_t len, uint32_t seq)
    {
        TxIn& in = vin.emplace_back();
        std::memcpy(in.prevout.hash.AsUint256().data(), prevout, 32);
        in.prevout.n = LoadLE<uint32_t>(prevout + 32);
        in.script_sig.assign(script, len);
        in.sequence = seq;
    }
    void Outputs(uint64_t n, std::size_t remaining)
    {
        vout.reserve(std::size_t(std::min<uint64_t>(n, remaining / 9)));
    }
    void Output(int64_t value, const uint8_t* script, std::size_t len)
    {
        TxOut& out = vout.emplace_back();
        out.value = value;
        out.script_pubkey.assign(script, len);
    }
    void WitnessStack(std::size_t i, uint64_t items, std::size_t remaining)
    {
        vin[i].witness.stack.reserve(std::size_t(std::min<uint64_t>(items, remaining)));
    }
    void WitnessItem(std::size_t i, const uint8_t* p, std::size_t len)
    {
        vin[i].witness.stack.emplace_back(p, p + len);
    }
};

/// Friend of Transaction: fills one from the parser.
struct TxBuilder {
    /// Parses one transaction into `tx` and hashes its ids (single message).
    static void Decode(ByteCursor& c, bool allow_witness, Transaction& tx);
    /// Parses one transaction into `tx` without hashing; the caller hashes the returned layout.
    static TxLayout DecodeUnhashed(ByteCursor& c, bool allow_witness, Transaction& tx);
    /// Version, lock time, witness flag and sizes from a layout (inputs/outputs already filled).
    static void SetFields(const TxLayout& l, Transaction& tx) noexcept;
    /// SetFields, then the ids hashed one message at a time.
    static void Finish(const TxLayout& l, Transaction& tx) noexcept;
    /// Appends the Sha256dMany jobs for a transaction's ids (txid; and wtxid when it has a
    /// witness), with `out` unset: see PointJobsAt.
    static void AddIdJobs(const TxLayout& l, std::vector<HashJob>& jobs);
    /// Sets `out` of the jobs AddIdJobs appended for `txs` (in order), hashes them all in one
    /// batch, and copies the txid into the wtxid of transactions without witness.
    static void HashIds(std::span<Transaction> txs, std::span<HashJob> jobs) noexcept;
    static std::vector<TxIn>& Vin(Transaction& tx) noexcept { return tx.m_vin; }
    static std::vector<TxOut>& Vout(Transaction& tx) noexcept { return tx.m_vout; }
};

} // namespace ibdkit::detail

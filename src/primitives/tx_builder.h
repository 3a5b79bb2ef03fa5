// The owning front end of the transaction parser: decoded transactions and their shared storage.
//
// Transactions decode into a TxStorage shared by all transactions of a block: byte chunks with
// a copy of each transaction's serialization, followed by its SHA-256 padding (and, for a segwit
// transaction, its stripped serialization, padded too), plus one array of inputs and one of
// outputs for them all. Scripts borrow from the copy; every txid and wtxid message lies in the
// buffer as whole 64-byte blocks, ready for the multi-buffer hasher (Sha256dManyPadded).
//
// Each transaction is parsed once, in the input, building its inputs and outputs with scripts
// pointing into the input; once it parsed, it is copied and those scripts are moved to the copy
// (nothing is copied for bytes that fail). A block therefore decodes with a handful of
// allocations, not one per script and two per transaction; block storage is recycled through a
// small pool, so decoding block after block allocates none of those large buffers again.
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

/// What decoded transactions point into. Immutable once its transactions are attached.
struct TxStorage {
    /// Byte chunks, filled in order; a chunk never moves, so the scripts and jobs of earlier
    /// transactions keep pointing into it while later ones are appended.
    struct Chunk {
        std::unique_ptr<uint8_t[]> bytes;
        std::size_t capacity{0};
    };
    std::vector<Chunk> chunks;
    std::size_t chunk{0}; ///< the chunk being filled
    std::size_t used{0};  ///< bytes used in it
    /// Inputs and outputs; the first n_in / n_out are in use, the rest are kept from earlier
    /// blocks for reuse (with their witness stacks' capacity).
    std::vector<TxIn> vin;
    std::vector<TxOut> vout;
    std::size_t n_in{0};
    std::size_t n_out{0};
    /// Heap bytes the witness stacks of `vin` hold: each stack's capacity in items and each
    /// item's capacity, kept exact as stacks and items grow, shrink and are destroyed (elements
    /// are reused from block to block, so this capacity outlives the block that grew it).
    std::size_t witness_capacity{0};

    /// `need` contiguous bytes after those handed out before: the rest of the current chunk, a
    /// later (recycled) chunk, or a new one of at least `hint` bytes.
    uint8_t* Take(std::size_t need, std::size_t hint)
    {
        for (; chunk < chunks.size(); ++chunk, used = 0) {
            Chunk& c = chunks[chunk];
            if (c.capacity - used >= need) {
                uint8_t* p = c.bytes.get() + used;
                used += need;
                return p;
            }
        }
        const std::size_t cap = std::max({need, hint, chunks.empty() ? 0 : chunks.back().capacity});
        chunks.push_back(Chunk{std::unique_ptr<uint8_t[]>(new uint8_t[cap]), cap});
        used = need;
        return chunks.back().bytes.get();
    }
    /// Empty again, keeping its memory (nothing is destroyed: the elements are reused).
    void Reset() noexcept
    {
        n_in = n_out = 0;
        chunk = 0;
        used = 0;
    }
    /// Heap bytes held: chunks, both arrays' capacity, and the witness stacks' capacity.
    std::size_t Footprint() const noexcept
    {
        std::size_t n = vin.capacity() * sizeof(TxIn) + vout.capacity() * sizeof(TxOut) + witness_capacity;
        for (const Chunk& c : chunks) n += c.capacity;
        return n;
    }
    /// Footprint() computed by walking every element (tests: the two must agree).
    std::size_t FootprintByWalking() const noexcept
    {
        std::size_t n = vin.capacity() * sizeof(TxIn) + vout.capacity() * sizeof(TxOut);
        for (const TxIn& in : vin) {
            n += in.witness.stack.capacity() * sizeof(std::vector<uint8_t>);
            for (const std::vector<uint8_t>& item : in.witness.stack) n += item.capacity();
        }
        for (const Chunk& c : chunks) n += c.capacity;
        return n;
    }
};

/// The block storage pool's idle entries (tests): how many, the largest footprint (walked), and
/// whether every entry's Footprint() agrees with its walk.
struct StoragePoolSnapshot {
    std::size_t idle{0};
    std::size_t largest_footprint{0};
    bool footprints_exact{true};
};
StoragePoolSnapshot InspectStoragePool();
/// The most bytes an idle storage may hold and stay in the pool.
inline constexpr std::size_t MAX_POOLED_FOOTPRINT = std::size_t(64) << 20;

/// Friend of Transaction and Script: fills transactions from the parser.
struct TxBuilder {
    /// Empty storage. Recycled storage (blocks) comes from a small process-wide pool and returns
    /// to it when its last transaction is gone.
    static std::shared_ptr<TxStorage> NewStorage(bool recycled);
    /// Parses one transaction at `src` (advancing it), copies it into `st` (a new chunk holds at
    /// least `hint` bytes) and builds its inputs, outputs and fields into `tx` (not its ids; not
    /// its storage pointers: see Attach). With `jobs`, lays out its id messages padded and
    /// appends their jobs, `out` pointing at tx's txid, then wtxid when it has a witness.
    /// Returns the layout in `src`'s bytes.
    static TxLayout Append(ByteCursor& src, bool allow_witness, TxStorage& st, std::size_t hint, Transaction& tx,
                           std::vector<PaddedHashJob>* jobs);
    /// After the jobs of `txs` were hashed: the wtxid of transactions without witness.
    static void CopyTxidsToWtxids(std::span<Transaction> txs) noexcept;
    /// Points `txs` (appended in order to `st`) at their inputs and outputs and shares `st`.
    static void Attach(std::span<Transaction> txs, const std::shared_ptr<TxStorage>& st) noexcept;
    /// Version, lock time, counts, witness flag and sizes from a layout.
    static void SetFields(const TxLayout& l, Transaction& tx) noexcept;
    /// The ids hashed one message at a time.
    static void HashOne(const TxLayout& l, Transaction& tx) noexcept;
    /// Appends the Sha256dMany jobs for a transaction's ids where its bytes lie (txid; and wtxid
    /// when it has a witness), with `out` unset (BlockView::ComputeTxIds).
    static void AddIdJobs(const TxLayout& l, std::vector<HashJob>& jobs);
    /// The storage a decoded transaction points into (tests).
    static const TxStorage* StorageOf(const Transaction& tx) noexcept { return static_cast<const TxStorage*>(tx.m_storage.get()); }
    /// Decodes one transaction from the front of [p, end) into storage of its own, ids hashed.
    static Transaction DecodeOne(const uint8_t* p, const uint8_t* end, bool allow_witness, std::size_t* consumed);
    /// Makes `s` borrow [p, p + n) (TxStorage elements, reused from block to block, only ever
    /// borrow: there is nothing to free, but an owning script is freed all the same).
    static void SetBorrowed(Script& s, const uint8_t* p, std::size_t n) noexcept
    {
        s.FreeHeap();
        s.SetPointer(const_cast<uint8_t*>(p), Script::BORROWED, 0);
        s.SetSize(n);
    }
    /// A script borrowing from bytes at `from` now borrows the same bytes copied to `to`.
    static void Rebase(Script& s, const uint8_t* from, const uint8_t* to) noexcept
    {
        const std::size_t n = s.Size();
        s.SetPointer(const_cast<uint8_t*>(to) + (s.HeapPtr() - from), Script::BORROWED, 0);
        s.SetSize(n);
    }
};

/// The next element of a recycled array: an old one is reused (assigned over, keeping e.g. a
/// witness stack's capacity), else a new one is appended. `used` counts the elements in use.
template <typename T>
T& NextElement(std::vector<T>& v, std::size_t& used)
{
    if (used < v.size()) return v[used++];
    ++used;
    return v.emplace_back();
}

/// Core's MAX_VECTOR_ALLOCATE: the most bytes a count read from the input reserves at once;
/// vectors grow in batches of this size as their elements arrive.
inline constexpr std::size_t MAX_VECTOR_ALLOCATE = 5'000'000;

/// A count read from the input, bounded by `fit` (what the bytes left could hold) and by one
/// batch of MAX_VECTOR_ALLOCATE bytes of T: what may be reserved before the elements arrive.
template <typename T>
std::size_t BoundedCount(uint64_t n, std::size_t fit) noexcept
{
    return std::size_t(std::min<uint64_t>({n, uint64_t(fit), uint64_t(MAX_VECTOR_ALLOCATE / sizeof(T))}));
}

/// Room for `n` more elements after `used`, growing geometrically. `n` is a count read from the
/// input: callers bound it by the bytes left (an input takes at least 41, an output 9).
template <typename T>
void ReserveMore(std::vector<T>& v, std::size_t used, std::size_t n)
{
    if (v.capacity() < used + n) v.reserve(std::max(used + n, v.capacity() * 2));
}

/// Builds inputs and outputs into a TxStorage; scripts borrow from the parsed bytes (TxBuilder
/// moves them to the copy). Runs during the parse: counts are bounded by the bytes left.
struct OwnedTxSink {
    TxStorage& st;
    std::size_t first_in; // this transaction's first input in st.vin
    std::vector<std::vector<uint8_t>>* stack{nullptr};
    std::size_t item{0};

    void Inputs(uint64_t n, std::size_t remaining)
    {
        ReserveMore(st.vin, st.n_in, BoundedCount<TxIn>(n, remaining / 41));
    }
    void Input(const uint8_t* prevout, const uint8_t* script, std::size_t len, uint32_t seq)
    {
        TxIn& in = NextElement(st.vin, st.n_in);
        std::memcpy(in.prevout.hash.AsUint256().data(), prevout, 32);
        in.prevout.n = LoadLE<uint32_t>(prevout + 32);
        TxBuilder::SetBorrowed(in.script_sig, script, len);
        in.sequence = seq;
    }
    void Outputs(uint64_t n, std::size_t remaining)
    {
        ReserveMore(st.vout, st.n_out, BoundedCount<TxOut>(n, remaining / 9));
    }
    void Output(int64_t value, const uint8_t* script, std::size_t len)
    {
        TxOut& out = NextElement(st.vout, st.n_out);
        out.value = value;
        TxBuilder::SetBorrowed(out.script_pubkey, script, len);
    }
    std::size_t items{0}; // the count the current stack announced

    void WitnessStack(std::size_t i, uint64_t n, std::size_t remaining)
    {
        // Each item takes at least one byte, and the stack grows in batches as items arrive:
        // a lying count commits at most one batch (Core's MAX_VECTOR_ALLOCATE), not its count.
        stack = &st.vin[first_in + i].witness.stack;
        items = std::size_t(std::min<uint64_t>(n, remaining));
        ResizeStack(BoundedCount<std::vector<uint8_t>>(n, remaining));
        item = 0;
    }
    void WitnessItem(std::size_t, const uint8_t* p, std::size_t len)
    {
        if (item == stack->size()) ResizeStack(std::min(items, item + WITNESS_BATCH)); // the next batch
        std::vector<uint8_t>& v = (*stack)[item++];
        const std::size_t before = v.capacity();
        v.assign(p, p + len); // reuses the item's capacity from earlier blocks
        st.witness_capacity += v.capacity() - before;
    }

    static constexpr std::size_t WITNESS_BATCH = MAX_VECTOR_ALLOCATE / sizeof(std::vector<uint8_t>);

private:
    /// Resizes the current stack, keeping st.witness_capacity exact.
    void ResizeStack(std::size_t n)
    {
        std::vector<std::vector<uint8_t>>& s = *stack;
        for (std::size_t k = n; k < s.size(); ++k) st.witness_capacity -= s[k].capacity(); // destroyed
        const std::size_t before = s.capacity();
        s.resize(n);
        st.witness_capacity += (s.capacity() - before) * sizeof(std::vector<uint8_t>);
    }
};

/// Clears a reused input's witness stack (a transaction without witness), keeping
/// st.witness_capacity exact.
inline void ClearWitness(TxStorage& st, TxIn& in) noexcept
{
    for (const std::vector<uint8_t>& item : in.witness.stack) st.witness_capacity -= item.capacity();
    in.witness.stack.clear();
}

} // namespace ibdkit::detail

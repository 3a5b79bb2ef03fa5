// ibdkit/primitives/block_view.h — zero-copy views of serialized blocks and transactions.
//
// BlockView::Parse walks a serialized block once with the same parser as DecodeBlock (so both
// accept exactly the same inputs and fail with the same Errc) and allocates nothing. Afterwards
// iteration cannot fail: transactions, inputs, outputs, scripts and witness items are spans into
// the caller's buffer, which must outlive the views. Meant for scanners and indexers that need a
// few fields of every transaction without building the data model.
//
// Views are plain values over const bytes: any number of threads may read them at once. The bytes
// must not change after Parse. A range (txs(), inputs(), outputs()) points into the view it came
// from as well: keep that view alive while iterating (not a temporary in the range-for).
//
//     auto view = BlockView::Parse(bytes);            // Result<BlockView>
//     for (TxView tx : view->txs())
//         for (OutputView out : tx.outputs()) Use(out.value, out.script_pubkey);
//
// The iterators' steps (reading an input, an output or a witness item, and moving to the next) are
// defined here so that a walk inlines them; parsing, hashing and ToOwned are in
// src/primitives/block_view.cpp.
#pragma once

#include <ibdkit/encoding/endian.h>
#include <ibdkit/error.h>
#include <ibdkit/primitives/amount.h>
#include <ibdkit/primitives/block.h>
#include <ibdkit/primitives/hash.h>
#include <ibdkit/primitives/transaction.h>

#include <cstdint>
#include <cstring>
#include <iterator>
#include <span>
#include <vector>

namespace ibdkit {

using ByteSpan = std::span<const uint8_t>;

/// Where the parts of one serialized transaction lie (pointers into the caller's buffer).
/// Stripped (no-witness) serialization = [begin, begin+4) ++ [vin_count, wit) ++ [lock, end).
struct TxLayout {
    const uint8_t* begin{nullptr};
    const uint8_t* vin_count{nullptr}; ///< the input count used by the stripped serialization
    const uint8_t* vin{nullptr};       ///< first input
    const uint8_t* vout{nullptr};      ///< first output
    const uint8_t* wit{nullptr};       ///< first witness stack (= end of outputs)
    const uint8_t* lock{nullptr};      ///< lock time
    const uint8_t* end{nullptr};
    uint32_t n_in{0};
    uint32_t n_out{0};
    bool has_witness{false};
    bool witness_allowed{true}; ///< how it was parsed (re-parsing the same bytes the same way)
};

namespace detail {
/// Parses one transaction at [p, end) with Core's rules; throws DecodeError. The one parser.
TxLayout ParseTxLayout(const uint8_t* p, const uint8_t* end, bool allow_witness);
/// CompactSize from bytes already validated by the parser.
inline uint64_t ReadCompactSizeUnchecked(const uint8_t*& p) noexcept
{
    const uint8_t first = *p++;
    if (first < 253) return first;
    uint64_t v;
    if (first == 253) {
        v = LoadLE<uint16_t>(p);
        p += 2;
    } else if (first == 254) {
        v = LoadLE<uint32_t>(p);
        p += 4;
    } else {
        v = LoadLE<uint64_t>(p);
        p += 8;
    }
    return v;
}
inline const uint8_t* SkipWitnessStack(const uint8_t* p) noexcept
{
    uint64_t n = ReadCompactSizeUnchecked(p);
    while (n--) {
        const uint64_t len = ReadCompactSizeUnchecked(p);
        p += len;
    }
    return p;
}
} // namespace detail

/// One witness stack: its items as spans.
class WitnessView {
public:
    WitnessView() = default;
    /// p points at the stack's item count (or is null for "no witness").
    explicit WitnessView(const uint8_t* p) noexcept : m_p(p) {}

    /// The number of items on the stack (0 without a witness), and whether it is 0.
    std::size_t size() const noexcept
    {
        if (!m_p) return 0;
        const uint8_t* p = m_p;
        return std::size_t(detail::ReadCompactSizeUnchecked(p));
    }
    /// Whether there is no item (or no witness).
    bool empty() const noexcept { return size() == 0; }

    class iterator {
    public:
        using value_type = ByteSpan;
        using difference_type = std::ptrdiff_t;
        iterator() = default;
        iterator(const uint8_t* p, std::size_t left) noexcept : m_p(p), m_left(left) {}
        ByteSpan operator*() const noexcept
        {
            const uint8_t* p = m_p;
            const uint64_t len = detail::ReadCompactSizeUnchecked(p);
            return {p, std::size_t(len)};
        }
        iterator& operator++() noexcept
        {
            const uint64_t len = detail::ReadCompactSizeUnchecked(m_p);
            m_p += len;
            --m_left;
            return *this;
        }
        iterator operator++(int) noexcept
        {
            iterator t = *this;
            ++*this;
            return t;
        }
        bool operator==(std::default_sentinel_t) const noexcept { return m_left == 0; }
        bool operator==(const iterator& o) const noexcept { return m_left == o.m_left; }

    private:
        const uint8_t* m_p{nullptr};
        std::size_t m_left{0};
    };
    /// The items, first to last, each a span into the block's bytes (a range-for's bounds).
    iterator begin() const noexcept
    {
        if (!m_p) return {};
        const uint8_t* p = m_p;
        const std::size_t n = std::size_t(detail::ReadCompactSizeUnchecked(p));
        return {p, n};
    }
    /// The end of the items: begin() compares equal to it after the last one.
    std::default_sentinel_t end() const noexcept { return {}; }
    /// Copies the stack into the owning model (independent of the buffer).
    ScriptWitness ToOwned() const;

private:
    const uint8_t* m_p{nullptr};
};

/// One input, as spans into the buffer.
struct InputView {
    const uint8_t* prevout_bytes{nullptr}; ///< 36 bytes: txid (internal order) + LE32 index
    ByteSpan script_sig;
    uint32_t sequence{0};
    WitnessView witness;

    /// The outpoint it spends: the txid (internal order), the index, both as one OutPoint.
    Txid prevout_hash() const noexcept { return Txid(uint256(std::span<const uint8_t, 32>(prevout_bytes, 32))); }
    uint32_t prevout_n() const noexcept { return LoadLE<uint32_t>(prevout_bytes + 32); }
    OutPoint prevout() const noexcept { return OutPoint{prevout_hash(), prevout_n()}; }
    /// Whether it spends the null outpoint (a coinbase's input).
    bool IsNullPrevout() const noexcept
    {
        static constexpr uint8_t NULL_PREVOUT[36] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
                                                     0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 0xff, 0xff};
        return std::memcmp(prevout_bytes, NULL_PREVOUT, 36) == 0;
    }
};

/// One output, as spans into the buffer.
struct OutputView {
    Amount value{0};
    ByteSpan script_pubkey;
};

/// Range over a transaction's inputs (each with its witness stack).
class InputRange {
public:
    class iterator {
    public:
        using value_type = InputView;
        using difference_type = std::ptrdiff_t;
        iterator() = default;
        iterator(const uint8_t* p, const uint8_t* w, std::size_t left) noexcept : m_p(p), m_w(w), m_left(left) {}
        InputView operator*() const noexcept
        {
            InputView v;
            const uint8_t* p = m_p;
            v.prevout_bytes = p;
            p += 36;
            const uint64_t len = detail::ReadCompactSizeUnchecked(p);
            v.script_sig = {p, std::size_t(len)};
            v.sequence = LoadLE<uint32_t>(p + len);
            v.witness = WitnessView(m_w);
            return v;
        }
        iterator& operator++() noexcept
        {
            m_p += 36;
            const uint64_t len = detail::ReadCompactSizeUnchecked(m_p);
            m_p += len + 4;
            if (m_w) m_w = detail::SkipWitnessStack(m_w);
            --m_left;
            return *this;
        }
        iterator operator++(int) noexcept
        {
            iterator t = *this;
            ++*this;
            return t;
        }
        bool operator==(std::default_sentinel_t) const noexcept { return m_left == 0; }
        bool operator==(const iterator& o) const noexcept { return m_left == o.m_left; }

    private:
        const uint8_t* m_p{nullptr};
        const uint8_t* m_w{nullptr};
        std::size_t m_left{0};
    };
    /// The inputs of the transaction laid out in `l`, which must outlive the range.
    InputRange(const TxLayout& l) noexcept : m_l(&l) {}
    /// A range-for's bounds, and the number of inputs.
    iterator begin() const noexcept { return {m_l->vin, m_l->has_witness ? m_l->wit : nullptr, m_l->n_in}; }
    std::default_sentinel_t end() const noexcept { return {}; }
    std::size_t size() const noexcept { return m_l->n_in; }

private:
    const TxLayout* m_l;
};

/// Range over a transaction's outputs.
class OutputRange {
public:
    class iterator {
    public:
        using value_type = OutputView;
        using difference_type = std::ptrdiff_t;
        iterator() = default;
        iterator(const uint8_t* p, std::size_t left) noexcept : m_p(p), m_left(left) {}
        OutputView operator*() const noexcept
        {
            OutputView v;
            const uint8_t* p = m_p;
            v.value = Amount(LoadLE<uint64_t>(p));
            p += 8;
            const uint64_t len = detail::ReadCompactSizeUnchecked(p);
            v.script_pubkey = {p, std::size_t(len)};
            return v;
        }
        iterator& operator++() noexcept
        {
            m_p += 8;
            const uint64_t len = detail::ReadCompactSizeUnchecked(m_p);
            m_p += len;
            --m_left;
            return *this;
        }
        iterator operator++(int) noexcept
        {
            iterator t = *this;
            ++*this;
            return t;
        }
        bool operator==(std::default_sentinel_t) const noexcept { return m_left == 0; }
        bool operator==(const iterator& o) const noexcept { return m_left == o.m_left; }

    private:
        const uint8_t* m_p{nullptr};
        std::size_t m_left{0};
    };
    /// The outputs of the transaction laid out in `l`, which must outlive the range.
    OutputRange(const TxLayout& l) noexcept : m_l(&l) {}
    /// A range-for's bounds, and the number of outputs.
    iterator begin() const noexcept { return {m_l->vout, m_l->n_out}; }
    std::default_sentinel_t end() const noexcept { return {}; }
    std::size_t size() const noexcept { return m_l->n_out; }

private:
    const TxLayout* m_l;
};

/// A view of one serialized transaction.
class TxView {
public:
    TxView() = default;
    /// A view of the transaction `l` describes: a layout ParseTxLayout made (the view trusts it).
    explicit TxView(const TxLayout& l) noexcept : m_l(l) {}

    /// Parses exactly one transaction (trailing bytes are Errc::TrailingData); same rules and
    /// errors as DecodeTransaction. The view borrows `bytes`.
    static Result<TxView> Parse(ByteSpan bytes, TxParams params = TX_WITH_WITNESS);

    /// The transaction's serialized bytes (with its witness, if any) and where its parts lie.
    ByteSpan bytes() const noexcept { return {m_l.begin, std::size_t(m_l.end - m_l.begin)}; }
    const TxLayout& layout() const noexcept { return m_l; }
    /// Fields read from the bytes on each call: the version, the lock time, and whether it was
    /// serialized with the segwit extension.
    uint32_t version() const noexcept { return LoadLE<uint32_t>(m_l.begin); }
    uint32_t lock_time() const noexcept { return LoadLE<uint32_t>(m_l.lock); }
    bool HasWitness() const noexcept { return m_l.has_witness; }
    /// Both ranges point at this TxView's layout: it must outlive them.
    InputRange inputs() const noexcept { return InputRange(m_l); }
    OutputRange outputs() const noexcept { return OutputRange(m_l); }
    bool IsCoinBase() const noexcept { return m_l.n_in == 1 && (*inputs().begin()).IsNullPrevout(); }

    /// Its serialized size with the witness and without it (Core's GetTotalSize and the
    /// TX_NO_WITNESS size), from the layout alone.
    std::size_t GetTotalSize() const noexcept { return std::size_t(m_l.end - m_l.begin); }
    std::size_t GetStrippedSize() const noexcept
    {
        return 4 + std::size_t(m_l.wit - m_l.vin_count) + std::size_t(m_l.end - m_l.lock);
    }
    /// SHA256d over the no-witness byte ranges, straight from the buffer.
    Txid ComputeTxid() const noexcept;
    /// SHA256d over all bytes (the txid when there is no witness).
    Wtxid ComputeWtxid() const noexcept;
    /// Builds the owning model (copies scripts and witnesses; hashes the buffer). The result does
    /// not borrow the buffer.
    Transaction ToOwned() const;

private:
    TxLayout m_l;
};

/// Every txid and wtxid of a block, in transaction order.
struct BlockTxIds {
    std::vector<Txid> txids;
    std::vector<Wtxid> wtxids;
};

/// A view of one serialized block, checked structurally by Parse.
class BlockView {
public:
    /// Walks the whole block (header, count, every transaction with witness allowed); trailing
    /// bytes are Errc::TrailingData. Same rules and errors as DecodeBlock. The view borrows
    /// `bytes`, which must outlive it.
    static Result<BlockView> Parse(ByteSpan bytes);
    static Result<BlockView> Parse(std::span<const std::byte> bytes)
    {
        return Parse(ByteSpan(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size()));
    }
    /// As Parse, but throws DecodeError (for callers already inside a decoder).
    static BlockView ParseOrThrow(ByteSpan bytes);

    /// The whole block's bytes (the span Parse was given), its first 80 and their size.
    ByteSpan bytes() const noexcept { return m_bytes; }
    std::span<const uint8_t, 80> header_bytes() const noexcept { return std::span<const uint8_t, 80>(m_bytes.data(), 80); }
    std::size_t GetTotalSize() const noexcept { return m_bytes.size(); }
    /// The header decoded from header_bytes(), and its hash (SHA256d of those bytes, on each call).
    BlockHeader header() const noexcept { return HeaderFromBytes(header_bytes()); }
    BlockHash ComputeHash() const noexcept;
    /// The number of transactions the block says it holds (Parse checked every one).
    std::size_t tx_count() const noexcept { return m_tx_count; }

    class TxIterator {
    public:
        using value_type = TxView;
        using difference_type = std::ptrdiff_t;
        TxIterator() = default;
        TxIterator(const uint8_t* p, const uint8_t* end, std::size_t left) : m_end(end), m_left(left)
        {
            if (m_left) m_cur = detail::ParseTxLayout(p, end, true);
        }
        TxView operator*() const noexcept { return TxView(m_cur); }
        TxIterator& operator++()
        {
            if (--m_left) m_cur = detail::ParseTxLayout(m_cur.end, m_end, true);
            return *this;
        }
        TxIterator operator++(int)
        {
            TxIterator t = *this;
            ++*this;
            return t;
        }
        bool operator==(std::default_sentinel_t) const noexcept { return m_left == 0; }
        bool operator==(const TxIterator& o) const noexcept { return m_left == o.m_left; }

    private:
        TxLayout m_cur;
        const uint8_t* m_end{nullptr};
        std::size_t m_left{0};
    };
    struct TxRange {
        const BlockView* v;
        TxIterator begin() const { return TxIterator(v->m_first_tx, v->m_bytes.data() + v->m_bytes.size(), v->m_tx_count); }
        std::default_sentinel_t end() const noexcept { return {}; }
        std::size_t size() const noexcept { return v->m_tx_count; }
    };
    /// Points at this BlockView, which must outlive the range. Each step re-parses one transaction
    /// (no allocation); it cannot fail on the bytes Parse accepted.
    TxRange txs() const noexcept { return TxRange{this}; }

    /// Every txid and wtxid, hashed straight from the buffer as one multi-buffer batch
    /// (Sha256dMany: SIMD lanes over all transactions at once), far faster than calling
    /// TxView::ComputeTxid/ComputeWtxid transaction by transaction.
    BlockTxIds ComputeTxIds() const;

    /// Builds the owning model from the view (same result as DecodeBlock on the same bytes); the
    /// block does not borrow the buffer.
    Block ToOwned() const;

private:
    ByteSpan m_bytes;
    const uint8_t* m_first_tx{nullptr};
    std::size_t m_tx_count{0};
};

} // namespace ibdkit

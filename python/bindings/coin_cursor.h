// A pull cursor over the coins of a chainstate (key order), and what is built from it without a
// Python object per coin: counts (stats with hash_type="none") and Arrow column buffers.
#pragma once

#include <ibdkit/coins/coin.h>
#include <ibdkit/coins/coins_db.h>
#include <ibdkit/error.h>
#include <ibdkit/utxo/address.h>
#include <ibdkit/utxo/stats.h>

#include <nanobind/nanobind.h>

#include <cstdint>
#include <cstdlib>
#include <memory>
#include <string>

namespace ibdkit::py {

class CoinCursor {
public:
    virtual ~CoinCursor() = default;
    /// The next coin; false at the end or on a malformed record / LevelDB failure (then
    /// ThrowIfFailed raises it).
    virtual bool Next(OutPoint& op, Coin& coin) = 0;
    void ThrowIfFailed() const;
    /// A cursor over the chainstate's coins (CoinsDB::NewCursor, its buffer policy).
    static std::unique_ptr<CoinCursor> Make(const CoinsDB& db);

protected:
    std::optional<Error> m_error;
};

/// Walks every remaining coin: txouts, transactions (txids), bogosize, total amount, max height.
void CountCoins(CoinCursor& cur, UtxoStats& stats);

/// A column buffer: malloc'd and not zero-filled (sized ahead, grown with realloc, trimmed at the
/// end); Python takes the allocation over (Release) and frees it with std::free.
class ColumnBuffer {
public:
    ColumnBuffer() = default;
    ColumnBuffer(const ColumnBuffer&) = delete;
    ColumnBuffer& operator=(const ColumnBuffer&) = delete;
    ~ColumnBuffer() { std::free(m_p); }
    /// Room for `n` more bytes; returns where to write them.
    [[gnu::always_inline]] char* Take(std::size_t n)
    {
        if (m_size + n > m_cap) [[unlikely]] Grow(m_size + n);
        char* p = m_p + m_size;
        m_size += n;
        return p;
    }
    /// Gives back the unused tail of the last Take.
    void Unused(std::size_t n) { m_size -= n; }
    /// Capacity for at least `n` bytes in all (zero-filled only when asked).
    void Reserve(std::size_t n, bool zero = false);
    /// Trims the allocation to the written bytes (a batch may be kept long).
    void Trim();
    char* data() { return m_p; }
    std::size_t size() const { return m_size; }
    /// Hands the allocation to the caller (free it with std::free); the buffer becomes empty.
    char* Release()
    {
        char* p = m_p;
        m_p = nullptr;
        m_size = m_cap = 0;
        return p;
    }

private:
    [[gnu::noinline]] void Grow(std::size_t need);
    char* m_p{nullptr};
    std::size_t m_size{0}, m_cap{0};
};

/// Arrow buffers of one batch (layouts of the Arrow columnar format: int32 offsets, LSB bitmaps).
struct ArrowColumns {
    std::size_t rows{0};
    ColumnBuffer txid_offsets, txid_data; // utf8, hex in display order
    ColumnBuffer vout, height;            // uint32
    ColumnBuffer coinbase_bits;           // bool
    ColumnBuffer value;                   // int64, satoshis
    ColumnBuffer type_offsets, type_data; // utf8
    ColumnBuffer addr_valid, addr_offsets, addr_data; // utf8, nullable
    std::size_t addr_nulls{0};
    ColumnBuffer script_offsets, script_data; // binary (or utf8 hex)
};

/// Python iterators over any cursor (chainstate.cpp): Coin objects, and the column buffers of
/// Arrow batches (python/ibdkit/_arrow.py). `owner` keeps what the cursor reads alive.
nanobind::object CoinIterator(nanobind::object owner, std::unique_ptr<CoinCursor> cur, AddressNetwork net);
nanobind::object BatchIterator(nanobind::object owner, std::unique_ptr<CoinCursor> cur, AddressNetwork net,
                               std::size_t batch_size, bool script_hex);

/// Appends up to `max_rows` coins to empty columns.
void FillBatch(CoinCursor& cur, AddressNetwork net, std::size_t max_rows, bool script_hex, ArrowColumns& cols);

} // namespace ibdkit::py

// A pull cursor over the coins of a chainstate (key order), and what is built from it without a
// Python object per coin: counts (stats with hash_type="none") and Arrow column buffers.
#pragma once

#include <ibdkit/coins/address.h>
#include <ibdkit/coins/coin.h>
#include <ibdkit/coins/coins_db.h>
#include <ibdkit/coins/stats.h>
#include <ibdkit/error.h>

#include <cstdint>
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
    /// A cursor whose value buffer uses the database's buffer policy.
    static std::unique_ptr<CoinCursor> Make(const CoinsDB& db);

protected:
    std::optional<Error> m_error;
};

/// Walks every remaining coin: txouts, transactions (txids), bogosize, total amount, max height.
void CountCoins(CoinCursor& cur, UtxoStats& stats);

/// Arrow buffers of one batch (layouts of the Arrow columnar format: int32 offsets, LSB bitmaps).
struct ArrowColumns {
    std::size_t rows{0};
    std::string txid_offsets, txid_data; // utf8, hex in display order
    std::string vout, height;            // uint32
    std::string coinbase_bits;           // bool
    std::string amount;                  // int64
    std::string type_offsets, type_data; // utf8
    std::string addr_valid, addr_offsets, addr_data; // utf8, nullable
    std::size_t addr_nulls{0};
    std::string script_offsets, script_data; // binary (or utf8 hex)
};

/// Appends up to `max_rows` coins to empty columns.
void FillBatch(CoinCursor& cur, AddressNetwork net, std::size_t max_rows, bool script_hex, ArrowColumns& cols);

} // namespace ibdkit::py

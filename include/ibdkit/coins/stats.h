// ibdkit/coins/stats.h — UTXO set statistics like Core's `gettxoutsetinfo` (kernel/coinstats.cpp).
//
// hash_serialized_3: coins are walked in database key order grouped by txid and, within a txid,
// by ascending output index (the database orders VARINT indexes differently: 0x7f < 0x80 0x00 but a
// 3-byte VARINT can sort before a 2-byte one). For each coin the stream receives
//   txid (32) | n u32 | u32(height·2 + coinbase) | value i64 | CompactSize script length | script
// and the result is SHA256d, shown byte-reversed. The empty set hashes to
// 56944c5d3f98413ef45cf54545538103cc9f298e0575820ad3591376e2e0f65d.
//
// Height: Core's chainstate stores only the best block hash; Core looks the height up in its block
// index. ibdkit reports the highest coin height found (equal to the tip height whenever the tip's
// coinbase has an unspent, spendable output — always true on mainnet and regtest) unless the
// caller supplies the height.
#pragma once

#include <ibdkit/coins/coin.h>
#include <ibdkit/coins/coins_db.h>
#include <ibdkit/error.h>
#include <ibdkit/primitives/amount.h>
#include <ibdkit/primitives/hash.h>

#include <cstdint>
#include <functional>
#include <optional>
#include <string>

namespace ibdkit {

struct UtxoStats {
    uint32_t height{0};
    bool height_from_coins{true}; ///< height is the max coin height (not supplied by the caller)
    BlockHash best_block;
    std::optional<ReplayRange> interrupted_flush; ///< H present: the database needs a replay
    uint64_t txouts{0};
    uint64_t transactions{0};
    uint64_t bogosize{0};
    Amount total_amount{0};
    uint256 hash_serialized; ///< internal byte order; ToHex() gives Core's display form
};

/// Core's GetBogoSize: 32 + 4 + 4 + 8 + 2 + script size.
inline uint64_t GetBogoSize(const Script& s) noexcept { return 50 + s.size(); }

/// Incremental hash_serialized_3 / stats over coins given in database order (one txid's outputs
/// contiguous). Feed coins with Add(), then Finish().
class UtxoStatsBuilder {
public:
    UtxoStatsBuilder();
    ~UtxoStatsBuilder();
    void Add(const OutPoint& outpoint, const Coin& coin);
    /// Fills the counters and the hash into stats.
    void Finish(UtxoStats& stats);

private:
    struct Impl;
    std::unique_ptr<Impl> m_impl;
};

/// Progress callback: coins seen so far and the fraction of the key space walked (0..1).
using StatsProgress = std::function<void(uint64_t coins, double fraction)>;

/// Computes the statistics of the whole chainstate. Errors: a malformed record (Errc::Corrupt or
/// the decoder's code), LevelDB failures (Errc::Corrupt with LevelDB's message).
Result<UtxoStats> ComputeUtxoStats(const CoinsDB& db, std::optional<uint32_t> height = std::nullopt,
                                   const StatsProgress& progress = {});

/// Decimal BTC with 8 decimals ("29950.00000000"), as Core's ValueFromAmount prints.
std::string FormatMoney(Amount sat);

} // namespace ibdkit

// ibdkit/utxo/stats.h — UTXO set statistics like Core's `gettxoutsetinfo` (kernel/coinstats.cpp).
//
// hash_serialized_3: coins are walked in database key order grouped by txid and, within a txid,
// by ascending output index (the database orders VARINT indexes differently: 0x7f < 0x80 0x00 but a
// 3-byte VARINT can sort before a 2-byte one). For each coin the stream receives
//   txid (32) | n u32 | u32(height·2 + coinbase) | value i64 | CompactSize script length | script
// and the result is SHA256d, shown byte-reversed. The empty set hashes to
// 56944c5d3f98413ef45cf54545538103cc9f298e0575820ad3591376e2e0f65d.
//
// muhash: the same per-coin bytes, each inserted into a MuHash3072 (crypto/muhash.h); the empty set
// is dd5ad2a105c2d29495f577245c357409002329b9f4d6182c0af3dc2f462555c8. Either hash, both or none
// are computed (Core's hash_type; `none` skips the hashing work).
//
// Script types: every coin is classified by Solver (primitives/script_ops.h); the breakdown's
// counts and amounts add up to txouts and total_amount (checked by Finish).
//
// Height: Core's chainstate stores only the best block hash; Core looks the height up in its block
// index. ibdkit reports the highest coin height found (equal to the tip height whenever the tip's
// coinbase has an unspent, spendable output — always true on mainnet and regtest) unless the
// caller supplies the height.
//
// ScriptTypeLabel, GetBogoSize, AppendTxOutSer and FormatMoney are pure and thread-safe.
#pragma once

#include <ibdkit/coins/coin.h>
#include <ibdkit/coins/coins_db.h>
#include <ibdkit/error.h>
#include <ibdkit/primitives/amount.h>
#include <ibdkit/primitives/hash.h>
#include <ibdkit/primitives/script_ops.h>
#include <ibdkit/utxo/utxo_stats.h>

#include <array>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace ibdkit {

static_assert(TXOUT_TYPE_COUNT == std::size_t(TxoutType::WITNESS_UNKNOWN) + 1, "one breakdown slot per TxoutType");

/// Short label of a script type in the breakdown: "P2PK", "P2PKH", "P2SH", "P2WPKH", "P2WSH",
/// "P2TR", "P2A", "witness_unknown" (other witness versions), "bare_multisig", "nulldata",
/// "nonstandard".
std::string_view ScriptTypeLabel(TxoutType t) noexcept;

/// The breakdown's display order: P2PK, P2PKH, P2SH, P2WPKH, P2WSH, P2TR, P2A, other witness
/// versions, bare multisig, nulldata, non-standard.
inline constexpr std::array<TxoutType, TXOUT_TYPE_COUNT> SCRIPT_TYPE_ORDER{
    TxoutType::PUBKEY, TxoutType::PUBKEYHASH, TxoutType::SCRIPTHASH, TxoutType::WITNESS_V0_KEYHASH,
    TxoutType::WITNESS_V0_SCRIPTHASH, TxoutType::WITNESS_V1_TAPROOT, TxoutType::ANCHOR, TxoutType::WITNESS_UNKNOWN,
    TxoutType::MULTISIG, TxoutType::NULL_DATA, TxoutType::NONSTANDARD};

/// Core's GetBogoSize: 32 + 4 + 4 + 8 + 2 + script size.
inline uint64_t GetBogoSize(const Script& s) noexcept { return 50 + s.size(); }

/// Incremental hash_serialized_3 / stats over coins given in database order (one txid's outputs
/// contiguous). Feed coins with Add(), then Finish() once: the builder is spent afterwards. One
/// thread at a time.
class UtxoStatsBuilder {
public:
    /// A builder of the hashes `hashes` asks for (hash_serialized_3 alone by default).
    explicit UtxoStatsBuilder(UtxoHashTypes hashes = {});
    ~UtxoStatsBuilder();
    /// Adds one unspent coin, in database order (not checked: coins out of order give another hash).
    void Add(const OutPoint& outpoint, const Coin& coin);
    /// Same, for a caller that already classified the script (type must be Solver(script)).
    void Add(const OutPoint& outpoint, const Coin& coin, TxoutType type);
    /// Fills the counters, the breakdown and the hashes into stats. Asserts that the breakdown
    /// adds up to the totals.
    void Finish(UtxoStats& stats);

private:
    struct Impl;
    std::unique_ptr<Impl> m_impl;
};

/// Progress callback: coins seen so far and the fraction of the key space walked (0..1).
using StatsProgress = std::function<void(uint64_t coins, double fraction)>;

/// Computes the statistics of the whole chainstate. Errors: a malformed record (Errc::Corrupt or
/// the decoder's code), LevelDB failures while walking the coins (Errc::Corrupt with LevelDB's
/// message), and reading the best-block or head-blocks record (Errc::Io or Errc::Corrupt).
/// Only reads `db` (no other thread may write it meanwhile); `progress` runs on the calling thread.
Result<UtxoStats> ComputeUtxoStats(const CoinsDB& db, std::optional<uint32_t> height = std::nullopt,
                                   const StatsProgress& progress = {});
Result<UtxoStats> ComputeUtxoStats(const CoinsDB& db, UtxoHashTypes hashes, std::optional<uint32_t> height,
                                   const StatsProgress& progress = {});

/// Appends a coin's hash_serialized_3 / MuHash bytes (txid | n | code | value | script) to `out`.
void AppendTxOutSer(std::vector<uint8_t>& out, const Txid& txid, uint32_t n, const Coin& coin);

/// Decimal BTC with 8 decimals ("29950.00000000"), as Core's ValueFromAmount prints.
std::string FormatMoney(Amount sat);

} // namespace ibdkit

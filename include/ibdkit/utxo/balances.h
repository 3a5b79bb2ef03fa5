// ibdkit/utxo/balances.h — balances per output script: one row per distinct script_pubkey of the
// UTXO set with its number of coins and their value, largest value first.
//
// Memory stays bounded at any set size (mainnet holds ~60 M distinct scripts): the walk appends
// (script, value) records to a buffer of `memory_bytes`, which is sorted by script, folded (equal
// scripts add up) and spilled to a run file whenever it fills; the runs are merged folding equal
// scripts, then ordered by value (descending; equal values by script bytes, so the output is
// deterministic) by a second external sort, or by a heap of N rows for a small `top`. Run files
// live in `tmp_dir`, unlinked as soon as they are created (src/common/external_sort.h).
//
// The totals reconcile with gettxoutsetinfo: the coins of all rows add up to `txouts` and their
// values to `total_amount` of the same walk (UtxoStats); any difference is Errc::Corrupt, returned
// before a single row is handed on. With `top`, only the N largest rows are handed on; the totals
// are still those of every script.
//
// Balances at a past height: build a chainstate at that height with `replay --stop-height` and
// compute them there (docs/utxo-export.md).
#pragma once

#include <ibdkit/coins/coins_db.h>
#include <ibdkit/error.h>
#include <ibdkit/primitives/amount.h>
#include <ibdkit/tabular/table.h>
#include <ibdkit/utxo/address.h>
#include <ibdkit/utxo/stats.h>

#include <cstdint>
#include <filesystem>
#include <functional>
#include <optional>
#include <span>
#include <string_view>

namespace ibdkit {

struct BalancesOptions {
    /// Memory for each sort's buffer and its merge's read buffers.
    std::size_t memory_bytes{64u << 20};
    /// Directory for the sorts' run files (empty: the system's temporary directory); refused inside
    /// a Core data directory (common/write_guard.h).
    std::filesystem::path tmp_dir;
    /// Hand on only the N largest rows.
    std::optional<uint64_t> top;
};

/// One distinct script's row. `script` is valid only during the callback.
struct BalanceRow {
    std::span<const uint8_t> script;
    uint64_t coins{0};
    Amount value{0};
};

struct BalancesResult {
    UtxoStats stats;       ///< the walk's counts: txouts, total_amount, by type (no set hash)
    uint64_t scripts{0};   ///< distinct scripts
    uint64_t coins{0};     ///< Σ coins over all scripts (== stats.txouts)
    Amount value{0};       ///< Σ value over all scripts (== stats.total_amount)
    uint64_t rows{0};      ///< rows handed on (scripts, or at most top)
    uint64_t runs{0};      ///< run files written by both sorts
};

/// Phase ("walk", "merge", "order"), items done, fraction of the phase (0..1, negative: unknown).
using BalancesProgress = std::function<void(std::string_view phase, uint64_t done, double fraction)>;
/// Receives rows in order; returns false to stop.
using BalanceSink = std::function<bool(const BalanceRow&)>;

/// Computes the balances of `db` and hands the rows to `sink` in order. Errors: a tmp_dir that is
/// not an existing folder ibdkit may write, or lies in a Core data directory (Errc::Refused, before
/// anything is read), a malformed record
/// or a LevelDB failure (as ComputeUtxoStats), a chainstate with an interrupted flush (Errc::Corrupt:
/// replay it first), a run file that cannot be written or read back (Errc::Corrupt), totals that do
/// not reconcile (Errc::Corrupt), LevelDB's failure reading the best-block or head-blocks record
/// (Errc::Io or Errc::Corrupt). Only reads `db`; `sink` and `progress` run on the calling thread, and a sink
/// that returns false ends the rows early (not an error).
Result<BalancesResult> ComputeBalances(const CoinsDB& db, const BalancesOptions& options, const BalanceSink& sink,
                                       const BalancesProgress& progress = {});

/// The table's columns: script_pubkey (Blob), address (Text, null where the script has none),
/// script_type (Text, Core's TxoutType name), coins (Int), value (Int, satoshis). Static storage.
std::span<const Column> BalanceColumns() noexcept;

/// ComputeBalances written to `out` (CSV, JSON lines or SQLite table `balances`) with addresses for
/// `net`. The file appears under its name only when complete (TableWriter). Errors: those of
/// ComputeBalances and of the writer (TableWriter::Create, Finish); throws as ComputeBalances.
Result<BalancesResult> WriteBalances(const CoinsDB& db, TableFormat format, const std::filesystem::path& out,
                                     AddressNetwork net, const BalancesOptions& options,
                                     const BalancesProgress& progress = {});

} // namespace ibdkit

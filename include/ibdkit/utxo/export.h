// ibdkit/utxo/export.h — UTXO set exports that check themselves: CSV, JSON lines, SQLite.
//
// One row per coin in the chainstate's key order: txid (Core's display hex), vout, height,
// coinbase, amount (satoshis), script type (Core's TxoutType name, from Solver), address for the
// network (base58/bech32/bech32m; empty or NULL where the script has none), script (hex; a BLOB
// in SQLite). Schemas: docs/utxo-export.md.
//
// Streamed: memory stays bounded whatever the set's size. Two threads write: the calling thread walks
// the chainstate, decodes and hashes; a second one formats and writes (or inserts) the rows, fed
// a few recycled batches of 4,096 coins at a time. After writing, the export re-reads its
// own file and recomputes coin count, total amount and hash_serialized_3 from the rows; any
// difference from the chainstate walk is an error (Errc::Corrupt), as is a row that does not parse.
// SQLite's types stay in src/coins/. (On a single-core machine the calling thread does both.)
#pragma once

#include <ibdkit/coins/coins_db.h>
#include <ibdkit/error.h>
#include <ibdkit/utxo/address.h>
#include <ibdkit/utxo/stats.h>

#include <cstdint>
#include <filesystem>
#include <functional>
#include <string_view>

namespace ibdkit {

enum class ExportFormat { Csv, Jsonl, Sqlite };

/// CSV header line (without the newline).
inline constexpr std::string_view CSV_HEADER = "txid,vout,height,coinbase,value,script_type,address,script_pubkey";

struct ExportResult {
    UtxoStats chainstate_stats; ///< computed during the write walk
    UtxoStats file_stats;       ///< recomputed from the file's rows
    uint64_t bytes{0};
    double write_seconds{0};      ///< wall time of the write walk
    double verify_seconds{0};     ///< wall time of the re-read check
    double write_cpu_seconds{0};  ///< CPU time of the process, both threads (honest on a shared machine)
    double verify_cpu_seconds{0}; ///< CPU time of the process (the check runs on the calling thread)
};

/// Phase ("write" or "verify"), coins done, fraction of the phase (0..1).
using ExportProgress = std::function<void(std::string_view phase, uint64_t coins, double fraction)>;

/// Exports every coin of `db` to `out` (an existing file is replaced), then verifies it. `out` appears
/// only once verified; after an error it is as it was. Errors: `out` refused by the write guard
/// (Errc::Refused: its folder missing, a directory, inside a Core data directory), a file that
/// cannot be written (Errc::InvalidValue), a malformed record, a LevelDB or SQLite failure, a
/// verification that fails (Errc::Corrupt), LevelDB's failure reading the best block (Errc::Io or
/// Errc::Corrupt). Only reads `db`; `progress` runs on the calling thread.
Result<ExportResult> ExportUtxoSet(const CoinsDB& db, ExportFormat format, const std::filesystem::path& out,
                                   AddressNetwork net, const ExportProgress& progress = {});

/// Re-reads an export and computes the statistics of its rows (hash_serialized_3, count, amount).
/// Errors: a text file that cannot be opened (Errc::InvalidValue), an SQLite failure, a row that does
/// not parse or a failed read (Errc::Corrupt). Only reads `file`; `progress` on the calling thread.
Result<UtxoStats> ComputeExportStats(ExportFormat format, const std::filesystem::path& file,
                                     const ExportProgress& progress = {});

} // namespace ibdkit

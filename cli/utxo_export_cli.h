// cli/utxo_export_cli.h — writing a UTXO export from a chainstate, for every command that offers
// one: `utxo dump`, `utxo snapshot`, and `--height H --dump FORMAT --out FILE` on `replay` and
// `sync` (the UTXO set at a past height). The exports verify themselves (src/utxo/export.cpp,
// src/utxo/snapshot.cpp) and run/classic_run.h writes them; this file only reports.
#pragma once

#include "commands.h"
#include "progress.h"

#include <ibdkit/chain/params.h>
#include <ibdkit/coins/coins_db.h>
#include <ibdkit/engine/engine.h>
#include <ibdkit/run/classic_run.h>
#include <ibdkit/utxo/address.h>

#include <cstdio>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>

namespace ibdkit::cli {

/// Export formats of `utxo dump` plus "snapshot" (Core's dumptxoutset file): run::EXPORT_FORMAT_NAMES.
inline constexpr const char* EXPORT_FORMATS_HELP = "csv, jsonl, sqlite (schemas: docs/utxo-export.md) or snapshot (Core's dumptxoutset format)";

/// ExportChainstate's progress on `bar` (the line it held before ends): the phase, coins done and
/// seconds since its first report.
ExportProgress ExportProgressPrinter(std::shared_ptr<ProgressLine> bar);

/// The summary of an export of `format` to `out` to `summary` (null: none, as under -q; with
/// `json`: as JSON on stdout).
void PrintUtxoExport(const run::ChainstateExport& r, const std::string& format, const std::filesystem::path& out,
                     std::FILE* summary, bool json);

/// Writes `format` ("csv", "jsonl", "sqlite" or "snapshot") of `db` to `out`, re-reads and checks it
/// (run::ExportChainstate), and prints the summary (PrintUtxoExport). Addresses use `net`; the
/// snapshot's metadata `params`. Throws std::runtime_error when the export or its check fails.
void WriteUtxoExport(const CoinsDB& db, const std::string& format, const std::filesystem::path& out,
                     const ChainParams& params, AddressNetwork net, bool progress, std::FILE* summary, bool json = false);

/// `--height H --dump FORMAT --out FILE` of the block-connecting commands (`replay`, `sync`); the
/// run stops at H and the driver writes the export (run/classic_run.h).
class HeightExport {
public:
    /// Adds --height, --dump and --out to `cmd`.
    void AddOptions(CLI::App* cmd);
    bool Enabled() const noexcept { return m_height >= 0; }
    /// The export asked for (nullopt: none), its arguments checked before the run (UsageError): a
    /// --out ibdkit may not write, a --stop-height in `o` other than H.
    std::optional<run::HeightExport> Request(const EngineOptions& o) const;
    /// After the run: the export's summary on stderr (also under -q: it is the command's result),
    /// or, when the run did not end cleanly and wrote none, a note saying so.
    void Report(const run::RunOutputsResult& written) const;

private:
    int m_height{-1};
    std::string m_format, m_out;
};

} // namespace ibdkit::cli

// cli/utxo_export_cli.h — writing a UTXO export from a chainstate, for every command that offers
// one: `utxo dump`, `utxo snapshot`, and `--height H --dump FORMAT --out FILE` on `replay` and
// `sync` (the UTXO set at a past height). The exports verify themselves (src/utxo/export.cpp,
// src/utxo/snapshot.cpp); this file only chooses, reports and cleans up.
#pragma once

#include "commands.h"

#include <ibdkit/chain/params.h>
#include <ibdkit/coins/coins_db.h>
#include <ibdkit/engine/engine.h>
#include <ibdkit/utxo/address.h>

#include <cstdio>
#include <filesystem>
#include <optional>
#include <string>

namespace ibdkit::cli {

/// Export formats of `utxo dump` plus "snapshot" (Core's dumptxoutset file).
inline constexpr const char* EXPORT_FORMATS_HELP = "csv, jsonl, sqlite (schemas: docs/utxo-export.md) or snapshot (Core's dumptxoutset format)";

/// Writes `format` ("csv", "jsonl", "sqlite" or "snapshot") of `db` to `out`, re-reads and checks it,
/// and prints the summary to `summary` (null: none, as under -q; with `json`: as JSON on stdout). Addresses use `net`; the
/// snapshot's metadata `params`. Throws std::runtime_error when the export or its check fails.
void WriteUtxoExport(const CoinsDB& db, const std::string& format, const std::filesystem::path& out,
                     const ChainParams& params, AddressNetwork net, bool progress, std::FILE* summary, bool json = false);

/// `--height H --dump FORMAT --out FILE` of the block-connecting commands (`replay`, `sync`).
class HeightExport {
public:
    HeightExport() = default;
    HeightExport(const HeightExport&) = delete;
    HeightExport& operator=(const HeightExport&) = delete;

    /// Adds --height, --dump and --out to `cmd`.
    void AddOptions(CLI::App* cmd);
    bool Enabled() const noexcept { return m_height >= 0; }
    /// Before the run: checks the options, stops the run at H (a --stop-height must agree) and, without
    /// --chainstate, points it at a new temporary chainstate (removed afterwards).
    void Prepare(EngineOptions& o);
    /// After the run: the chainstate must stand exactly at H; writes and verifies the export (summary
    /// on stderr). Throws std::runtime_error otherwise. Does nothing but say so when the run already
    /// failed (ExitCode() non-zero: rejected block, interrupt, peer failure).
    void Finish(const EngineResult& r, bool progress);

private:
    int m_height{-1};
    std::string m_format, m_out;
    std::filesystem::path m_chainstate;
    std::optional<TemporaryDir> m_temporary; ///< the chainstate when none was named
    PolicyId m_policy{PolicyId::Hardened};
};

} // namespace ibdkit::cli

// One export path for `utxo dump`, `utxo snapshot` and the `--height` exports of `replay`/`sync`.
#include "utxo_export_cli.h"
#include "json_output.h"

#include <ibdkit/utxo/export.h>
#include <ibdkit/utxo/snapshot.h>
#include <ibdkit/utxo/stats.h>

#include "progress.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <memory>
#include <stdexcept>
#include <system_error>
#include <vector>

namespace ibdkit::cli {

namespace fs = std::filesystem;

namespace {

std::string CoinsText(uint64_t coins, double secs)
{
    char t[96];
    std::snprintf(t, sizeof t, "%llu coins  %.1f s", (unsigned long long)coins, secs);
    return t;
}

} // namespace

ExportProgress ExportProgressPrinter(std::shared_ptr<ProgressLine> bar)
{
    using Clock = std::chrono::steady_clock;
    return [bar = std::move(bar), start = Clock::time_point{}, phase = std::string()](std::string_view p, uint64_t n, double frac) mutable {
        if (start == Clock::time_point{}) start = Clock::now();
        if (p != phase) {
            bar->Done();
            phase = p;
        }
        const double secs = std::chrono::duration<double>(Clock::now() - start).count();
        bar->Update(frac, phase + ": " + CoinsText(n, secs));
    };
}

void PrintUtxoExport(const run::ChainstateExport& e, const std::string& format, const fs::path& out, std::FILE* summary, bool json)
{
    if (e.snapshot) {
        const SnapshotWriteResult& r = *e.snapshot;
        if (json) {
            const nlohmann::json j{{"snapshot", out.string()}, {"base_blockhash", r.metadata.base_blockhash.ToHex()},
                                   {"coins_written", r.metadata.coins_count}, {"bytes", r.bytes},
                                   {"txoutset_hash", r.chainstate_stats.hash_serialized.ToHex()}, {"verified_coins", r.file_stats.txouts}};
            PrintJsonResult(j);
            return;
        }
        if (!summary) return;
        std::fprintf(summary,
                     "snapshot           %s\nbase_blockhash     %s\ncoins_written      %llu\nbytes              %llu\n"
                     "txoutset_hash      %s\nverified           re-read %llu coins, %s BTC, hash_serialized_3 equal to the chainstate's\n",
                     out.c_str(), r.metadata.base_blockhash.ToHex().c_str(), (unsigned long long)r.metadata.coins_count,
                     (unsigned long long)r.bytes, r.chainstate_stats.hash_serialized.ToHex().c_str(),
                     (unsigned long long)r.file_stats.txouts, FormatMoney(r.file_stats.total_amount).c_str());
        return;
    }
    const ExportResult& r = *e.dump;
    const UtxoStats& s = r.chainstate_stats;
    if (json) {
        const nlohmann::json j{{"out", out.string()}, {"format", format}, {"coins", s.txouts}, {"bytes", r.bytes},
                               {"write_seconds", r.write_seconds}, {"verify_seconds", r.verify_seconds},
                               {"verified_coins", r.file_stats.txouts},
                               {"hash_serialized_3", r.file_stats.hash_serialized.ToHex()}};
        PrintJsonResult(j);
        return;
    }
    if (!summary) return;
    std::fprintf(summary,
                 "wrote %s: %llu coins, %llu bytes in %.2f s (%.0f coins/s; CPU %.2f s, %.0f coins/s); verified in "
                 "%.2f s (CPU %.2f s): %llu coins, %s BTC, hash_serialized_3 %s equal to the chainstate's\n",
                 out.c_str(), (unsigned long long)s.txouts, (unsigned long long)r.bytes, r.write_seconds,
                 double(s.txouts) / std::max(r.write_seconds, 1e-9), r.write_cpu_seconds,
                 double(s.txouts) / std::max(r.write_cpu_seconds, 1e-9), r.verify_seconds, r.verify_cpu_seconds,
                 (unsigned long long)r.file_stats.txouts, FormatMoney(r.file_stats.total_amount).c_str(),
                 r.file_stats.hash_serialized.ToHex().c_str());
}

void WriteUtxoExport(const CoinsDB& db, const std::string& format, const fs::path& out, const ChainParams& params,
                     AddressNetwork net, bool progress, std::FILE* summary, bool json)
{
    auto bar = std::make_shared<ProgressLine>(progress && ::isatty(STDERR_FILENO));
    auto r = run::ExportChainstate(db, format, out, params, net, ExportProgressPrinter(bar));
    bar->Done();
    if (!r) throw std::runtime_error(r.error().message);
    PrintUtxoExport(*r, format, out, summary, json);
}

void HeightExport::AddOptions(CLI::App* cmd)
{
    auto* h = cmd->add_option("--height", m_height,
                              "Export the UTXO set as it stood at this height: stop there (into a temporary chainstate\n"
                              "unless --chainstate is given) and write --dump FORMAT to --out, verified as `utxo dump` does")
                  ->check(IntegerIn(0, MAX_HEIGHT));
    auto* d = cmd->add_option("--dump", m_format, std::string("With --height: ") + EXPORT_FORMATS_HELP)
                  ->check(CLI::IsMember(std::vector<std::string>(std::begin(run::EXPORT_FORMAT_NAMES), std::end(run::EXPORT_FORMAT_NAMES))));
    auto* o = cmd->add_option("--out", m_out, "With --height: the export file (replaced; its folder must exist; re-read and checked afterwards)");
    h->needs(d)->needs(o);
    d->needs(h);
    o->needs(h);
}

std::optional<run::HeightExport> HeightExport::Request(const EngineOptions& o) const
{
    if (!Enabled()) return std::nullopt;
    CheckOutput(m_out);
    if (o.stop_height && *o.stop_height != m_height) {
        throw UsageError("--height " + std::to_string(m_height) + " stops the run there; drop --stop-height");
    }
    return run::HeightExport{.height = m_height, .format = m_format, .out = m_out};
}

void HeightExport::Report(const run::RunOutputsResult& written) const
{
    if (!Enabled()) return;
    if (!written.exported) {
        PrintNote("--height " + std::to_string(m_height) + ": the run did not end cleanly; nothing exported");
        return;
    }
    PrintUtxoExport(*written.exported, m_format, m_out, stderr, false);
}

} // namespace ibdkit::cli

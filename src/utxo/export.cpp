// UTXO set exports (include/ibdkit/utxo/export.h): CSV, JSON lines, SQLite, each re-read and
// checked against the chainstate walk that produced it. The formats: export_text.cpp and
// export_sqlite.cpp.
#include "utxo/export_internal.h"
#include <ibdkit/common/atomic_file.h>
#include <ibdkit/common/write_guard.h>

#include <cstring>
#include <string>

namespace ibdkit {

namespace export_detail {

Result<uint64_t> WalkInto(const CoinsDB& db, CoinPipe& pipe, UtxoStatsBuilder& builder, const ExportProgress& progress)
{
    uint64_t n = 0;
    return db.ForEachCoin([&](const OutPoint& op, const Coin& c) {
        CoinRow& row = pipe.Next();
        row.type = Solver(c.out.script_pubkey.span());
        builder.Add(op, c, row.type);
        row.op = op;
        row.coin = c;
        if (!pipe.Commit()) return false;
        if (progress && (++n & 0xffff) == 0) progress("write", n, Fraction(op.hash));
        return true;
    });
}

} // namespace export_detail

namespace fs = std::filesystem;
using export_detail::Clock;
using export_detail::ProcessCpuSeconds;
using export_detail::SqliteStats;
using export_detail::TextStats;
using export_detail::WriteSqlite;
using export_detail::WriteText;

Result<UtxoStats> ComputeExportStats(ExportFormat format, const fs::path& file, const ExportProgress& progress)
{
    if (format == ExportFormat::Sqlite) return SqliteStats(file, progress);
    return TextStats(format, file, progress);
}

Result<ExportResult> ExportUtxoSet(const CoinsDB& db, ExportFormat format, const fs::path& out, AddressNetwork net,
                                   const ExportProgress& progress)
{
    if (auto refused = CheckOutputFile(out)) return *refused;
    ExportResult res;
    auto best = db.GetBestBlock();
    if (!best) return best.error();
    res.chainstate_stats.best_block = *best;
    UtxoStatsBuilder builder;
    const auto t0 = Clock::now();
    const double c0 = ProcessCpuSeconds();
    // Written, re-read and checked under a temporary name; `out` appears only once it has passed.
    AtomicFile file(out);
    const fs::path& temp = file.Temp();
    if (format == ExportFormat::Sqlite) {
        auto w = WriteSqlite(db, temp, net, builder, progress, res.chainstate_stats);
        if (!w) return w.error();
        res.bytes = *w;
    } else {
        auto w = WriteText(db, format, temp, net, builder, progress, res.chainstate_stats);
        if (!w) return w.error();
        res.bytes = *w;
    }
    const auto t1 = Clock::now();
    const double c1 = ProcessCpuSeconds();
    auto back = ComputeExportStats(format, temp, progress);
    if (!back) return Error{back.error().code, "verifying " + out.string() + ": " + back.error().message};
    res.file_stats = *back;
    res.write_seconds = std::chrono::duration<double>(t1 - t0).count();
    res.verify_seconds = std::chrono::duration<double>(Clock::now() - t1).count();
    res.write_cpu_seconds = c1 - c0;
    res.verify_cpu_seconds = ProcessCpuSeconds() - c1;
    const UtxoStats& a = res.chainstate_stats;
    const UtxoStats& b = res.file_stats;
    if (a.txouts != b.txouts || a.total_amount != b.total_amount || a.hash_serialized != b.hash_serialized) {
        return Error{Errc::Corrupt, out.string() + " does not match the chainstate: coins " + std::to_string(b.txouts) +
                                        " vs " + std::to_string(a.txouts) + ", amount " + FormatMoney(b.total_amount) +
                                        " vs " + FormatMoney(a.total_amount) + ", hash_serialized_3 " +
                                        b.hash_serialized.ToHex() + " vs " + a.hash_serialized.ToHex()};
    }
    if (auto e = file.Commit()) return *e;
    if (progress) progress("verify", b.txouts, 1.0);
    return res;
}

} // namespace ibdkit

// src/utxo/export_internal.h (internal) — what the UTXO exports' formats share (export.cpp: the
// walk and the check; export_text.cpp: CSV and JSON lines; export_sqlite.cpp: SQLite).
#pragma once

#include <ibdkit/encoding/hex.h>
#include <ibdkit/utxo/export.h>

#include <ibdkit/primitives/script_ops.h>
#include <ibdkit/threads.h>

#include "common/buffered_writer.h"
#include "common/handoff.h"

#include <unistd.h>

#include <array>
#include <charconv>
#include <chrono>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <functional>
#include <string_view>
#include <system_error>
#include <vector>

namespace ibdkit::export_detail {

namespace fs = std::filesystem;

using Clock = std::chrono::steady_clock;

inline double ProcessCpuSeconds()
{
    timespec ts{};
    ::clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return double(ts.tv_sec) + double(ts.tv_nsec) * 1e-9;
}

inline double Fraction(const Txid& t) { return (t.data()[0] * 256.0 + t.data()[1]) / 65536.0; }

/// One coin on its way from one stage of an export to the next.
struct CoinRow {
    OutPoint op;
    Coin coin;
    TxoutType type{TxoutType::NONSTANDARD};
};

/// The export's two threads (common/handoff.h): the caller produces coins in order, the second
/// thread consumes them in batches of 4,096 in the same order. The rows' Coins keep their script
/// capacity from batch to batch.
class CoinPipe {
public:
    /// Returns false to stop the export (the producer sees it at its next Commit).
    using Consume = std::function<bool(const CoinRow*, std::size_t)>;

    explicit CoinPipe(Consume consume)
        : m_handoff(
              4,
              [c = std::move(consume)](Batch& b) {
                  const bool ok = c(b.rows.data(), b.n);
                  b.n = 0;
                  return ok;
              },
              UsableCores() > 1)
    {
    }

    /// The next row to fill; Commit() hands it on. False once the consumer has stopped.
    CoinRow& Next() noexcept { return m_handoff.Current().rows[m_handoff.Current().n]; }
    bool Commit() { return ++m_handoff.Current().n < BATCH || m_handoff.Hand(); }
    /// Hands on what is left and waits for the consumer; false if it stopped early.
    bool Finish()
    {
        const bool handed = m_handoff.Current().n == 0 || m_handoff.Hand();
        return m_handoff.Finish() && handed;
    }

private:
    static constexpr std::size_t BATCH = 4096;
    struct Batch {
        std::vector<CoinRow> rows = std::vector<CoinRow>(BATCH);
        std::size_t n{0};
    };
    Handoff<Batch> m_handoff;
};
/// The write phase's first stage: walks the chainstate, classifies each script, feeds the
/// statistics builder and hands the coin to the writer. Stops when the writer has stopped.
Result<uint64_t> WalkInto(const CoinsDB& db, CoinPipe& pipe, UtxoStatsBuilder& builder, const ExportProgress& progress);

/// The txid of a row, in its display (reversed) hex.
inline bool ParseTxid(std::string_view s, Txid& t)
{
    auto h = Txid::FromHex(s);
    if (h) t = *h;
    return h.has_value();
}

template <typename I>
inline bool ParseNum(std::string_view s, I& v)
{
    auto r = std::from_chars(s.data(), s.data() + s.size(), v);
    return r.ec == std::errc() && r.ptr == s.data() + s.size() && !s.empty();
}

/// Writes the coins of `db` to `out` as CSV or JSON lines (text) or SQLite, feeding `builder`
/// and finishing `chain_stats` from it. Returns the bytes written.
Result<uint64_t> WriteText(const CoinsDB& db, ExportFormat format, const fs::path& out, AddressNetwork net,
                           UtxoStatsBuilder& builder, const ExportProgress& progress, UtxoStats& chain_stats);
Result<uint64_t> WriteSqlite(const CoinsDB& db, const fs::path& out, AddressNetwork net, UtxoStatsBuilder& builder,
                             const ExportProgress& progress, UtxoStats& chain_stats);
/// The statistics of an export's file, read back row by row.
Result<UtxoStats> TextStats(ExportFormat f, const fs::path& file, const ExportProgress& progress);
Result<UtxoStats> SqliteStats(const fs::path& file, const ExportProgress& progress);

} // namespace ibdkit::export_detail

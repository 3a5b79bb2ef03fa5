// UTXO set exports to SQLite (include/ibdkit/utxo/export.h): one table, written in one transaction
// and read back row by row.
#include "utxo/export_internal.h"

#include <sqlite3.h>

#include <cstring>
#include <memory>
#include <string>

namespace ibdkit::export_detail {

namespace {

struct DbCloser {
    void operator()(sqlite3* db) const noexcept { sqlite3_close(db); }
};
struct StmtCloser {
    void operator()(sqlite3_stmt* s) const noexcept { sqlite3_finalize(s); }
};
using DbPtr = std::unique_ptr<sqlite3, DbCloser>;
using StmtPtr = std::unique_ptr<sqlite3_stmt, StmtCloser>;

constexpr const char* UTXO_SQL_SCHEMA =
    "CREATE TABLE utxo ("
    " txid TEXT NOT NULL,"      // Core's display hex
    " vout INTEGER NOT NULL,"
    " height INTEGER NOT NULL,"
    " coinbase INTEGER NOT NULL," // 0 or 1
    " value INTEGER NOT NULL,"    // satoshis
    " script_type TEXT NOT NULL," // Core's TxoutType name
    " address TEXT,"              // NULL where the script has no address
    " script_pubkey BLOB NOT NULL);"
    "CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);";

Error SqlError(sqlite3* db, const std::string& what)
{
    return Error{Errc::Corrupt, what + ": " + (db ? sqlite3_errmsg(db) : "out of memory")};
}

Result<DbPtr> OpenSqlite(const fs::path& p, int flags)
{
    sqlite3* raw = nullptr;
    const int rc = sqlite3_open_v2(p.c_str(), &raw, flags, nullptr);
    DbPtr db(raw);
    if (rc != SQLITE_OK) return SqlError(raw, "cannot open " + p.string());
    return db;
}

bool Exec(sqlite3* db, const char* sql) { return sqlite3_exec(db, sql, nullptr, nullptr, nullptr) == SQLITE_OK; }

} // namespace

Result<UtxoStats> SqliteStats(const fs::path& file, const ExportProgress& progress)
{
    auto db = OpenSqlite(file, SQLITE_OPEN_READONLY);
    if (!db) return db.error();
    sqlite3_stmt* raw = nullptr;
    if (sqlite3_prepare_v2(db->get(), "SELECT txid, vout, height, coinbase, value, script_type, script_pubkey FROM utxo ORDER BY rowid",
                           -1, &raw, nullptr) != SQLITE_OK) {
        return SqlError(db->get(), "reading " + file.string());
    }
    StmtPtr st(raw);
    UtxoStatsBuilder builder;
    UtxoStats stats;
    OutPoint op;
    Coin coin;
    uint64_t rows = 0;
    int rc;
    while ((rc = sqlite3_step(st.get())) == SQLITE_ROW) {
        ++rows;
        const auto* txid = reinterpret_cast<const char*>(sqlite3_column_text(st.get(), 0));
        const int64_t vout = sqlite3_column_int64(st.get(), 1), height = sqlite3_column_int64(st.get(), 2),
                      cb = sqlite3_column_int64(st.get(), 3);
        const auto* type = reinterpret_cast<const char*>(sqlite3_column_text(st.get(), 5));
        const void* blob = sqlite3_column_blob(st.get(), 6);
        const int blob_len = sqlite3_column_bytes(st.get(), 6);
        if (!txid || !ParseTxid(txid, op.hash) || vout < 0 || vout > 0xffffffffLL || height < 0 ||
            height > 0x7fffffffLL || (cb != 0 && cb != 1) || !type) {
            return Error{Errc::Corrupt, file.string() + ": row " + std::to_string(rows) + " does not parse"};
        }
        op.n = uint32_t(vout);
        coin.height = uint32_t(height);
        coin.coinbase = cb == 1;
        coin.out.value = sqlite3_column_int64(st.get(), 4);
        coin.out.script_pubkey = Script(static_cast<const uint8_t*>(blob), std::size_t(blob_len));
        const TxoutType tt = Solver(coin.out.script_pubkey.span());
        if (std::string_view(type) != GetTxnOutputType(tt)) {
            return Error{Errc::Corrupt, file.string() + ": row " + std::to_string(rows) + " has the wrong type"};
        }
        builder.Add(op, coin, tt);
        if (progress && (rows & 0xffff) == 0) progress("verify", rows, Fraction(op.hash));
    }
    if (rc != SQLITE_DONE) return SqlError(db->get(), "reading " + file.string());
    builder.Finish(stats);
    return stats;
}

Result<uint64_t> WriteSqlite(const CoinsDB& db, const fs::path& out, AddressNetwork net, UtxoStatsBuilder& builder,
                             const ExportProgress& progress, UtxoStats& chain_stats)
{
    auto sdb = OpenSqlite(out, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE); // `out`: a fresh temporary (AtomicFile)
    if (!sdb) return sdb.error();
    sqlite3* s = sdb->get();
    if (!Exec(s, "PRAGMA journal_mode=OFF; PRAGMA synchronous=OFF; PRAGMA cache_size=-16384;") ||
        !Exec(s, UTXO_SQL_SCHEMA) || !Exec(s, "BEGIN")) {
        return SqlError(s, "creating " + out.string());
    }
    sqlite3_stmt* raw = nullptr;
    if (sqlite3_prepare_v2(s, "INSERT INTO utxo VALUES (?,?,?,?,?,?,?,?)", -1, &raw, nullptr) != SQLITE_OK) {
        return SqlError(s, "preparing the insert");
    }
    StmtPtr ins(raw);
    std::array<char, 64> txid;
    char addr[MAX_ADDRESS_LENGTH];
    std::optional<Error> failure;
    // This thread walks, decodes and hashes; the pipe's thread inserts.
    CoinPipe pipe([&](const CoinRow* batch, std::size_t count) {
        for (std::size_t i = 0; i < count; ++i) {
            const OutPoint& op = batch[i].op;
            const Coin& c = batch[i].coin;
            const Script& sc = c.out.script_pubkey;
            const std::string_view type = GetTxnOutputType(batch[i].type);
            const std::size_t addr_len = EncodeAddressInto(sc, batch[i].type, net, addr);
            for (std::size_t k = 0; k < 32; ++k) std::memcpy(txid.data() + 2 * k, HEX_PAIRS[op.hash.data()[31 - k]].data(), 2);
            sqlite3_bind_text(ins.get(), 1, txid.data(), 64, SQLITE_TRANSIENT);
            sqlite3_bind_int64(ins.get(), 2, op.n);
            sqlite3_bind_int64(ins.get(), 3, c.height);
            sqlite3_bind_int64(ins.get(), 4, c.coinbase ? 1 : 0);
            sqlite3_bind_int64(ins.get(), 5, c.out.value);
            sqlite3_bind_text(ins.get(), 6, type.data(), int(type.size()), SQLITE_STATIC);
            if (addr_len) sqlite3_bind_text(ins.get(), 7, addr, int(addr_len), SQLITE_TRANSIENT);
            else sqlite3_bind_null(ins.get(), 7);
            sqlite3_bind_blob(ins.get(), 8, sc.data(), int(sc.size()), SQLITE_TRANSIENT);
            if (sqlite3_step(ins.get()) != SQLITE_DONE) {
                failure = SqlError(s, "inserting into " + out.string());
                return false;
            }
            sqlite3_reset(ins.get());
        }
        return true;
    });
    auto r = WalkInto(db, pipe, builder, progress);
    (void)pipe.Finish(); // a failed insert is in `failure`
    if (!r) return r.error();
    if (failure) return *failure;
    builder.Finish(chain_stats);
    sqlite3_stmt* mraw = nullptr;
    if (sqlite3_prepare_v2(s, "INSERT INTO meta VALUES (?,?)", -1, &mraw, nullptr) != SQLITE_OK) {
        return SqlError(s, "preparing meta");
    }
    StmtPtr meta(mraw);
    const std::pair<std::string, std::string> kv[] = {
        {"bestblock", chain_stats.best_block.ToHex()},
        {"txouts", std::to_string(chain_stats.txouts)},
        {"total_amount_sat", std::to_string(chain_stats.total_amount)},
        {"hash_serialized_3", chain_stats.hash_serialized.ToHex()},
        {"format", "ibdkit utxo dump 2"},
    };
    for (const auto& [k, v] : kv) {
        sqlite3_bind_text(meta.get(), 1, k.data(), int(k.size()), SQLITE_TRANSIENT);
        sqlite3_bind_text(meta.get(), 2, v.data(), int(v.size()), SQLITE_TRANSIENT);
        if (sqlite3_step(meta.get()) != SQLITE_DONE) return SqlError(s, "writing meta");
        sqlite3_reset(meta.get());
    }
    ins.reset();
    meta.reset();
    if (!Exec(s, "COMMIT")) return SqlError(s, "committing " + out.string());
    sdb->reset();
    std::error_code ec;
    return uint64_t(fs::file_size(out, ec));
}

} // namespace ibdkit::export_detail

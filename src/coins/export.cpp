// UTXO set exports (include/ibdkit/coins/export.h): CSV, JSON lines, SQLite, each re-read and
// checked against the chainstate walk that produced it.
#include <ibdkit/coins/export.h>

#include <ibdkit/primitives/script_ops.h>

#include <sqlite3.h>

#include <array>
#include <charconv>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <memory>
#include <optional>
#include <string>
#include <system_error>
#include <vector>

namespace ibdkit {

namespace fs = std::filesystem;

namespace {

using Clock = std::chrono::steady_clock;

constexpr char HEX[] = "0123456789abcdef";

double ThreadCpuSeconds()
{
    timespec ts{};
    ::clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return double(ts.tv_sec) + double(ts.tv_nsec) * 1e-9;
}

double Fraction(const Txid& t) { return (t.data()[0] * 256.0 + t.data()[1]) / 65536.0; }

/// Appends to a byte buffer; the caller drains it to the file.
struct Out {
    std::vector<char> buf;
    void Put(std::string_view s) { buf.insert(buf.end(), s.begin(), s.end()); }
    void Put(char c) { buf.push_back(c); }
    template <typename I>
    void Num(I v)
    {
        char tmp[24];
        auto r = std::to_chars(tmp, tmp + sizeof(tmp), v);
        buf.insert(buf.end(), tmp, r.ptr);
    }
    void Hex(const uint8_t* p, std::size_t n, bool reversed = false)
    {
        const std::size_t off = buf.size();
        buf.resize(off + 2 * n);
        char* o = buf.data() + off;
        for (std::size_t i = 0; i < n; ++i) {
            const uint8_t b = reversed ? p[n - 1 - i] : p[i];
            o[2 * i] = HEX[b >> 4];
            o[2 * i + 1] = HEX[b & 15];
        }
    }
};

/// Hex digit values (lower case only, as written); -1 for anything else.
constexpr std::array<int8_t, 256> HEX_VALUE = [] {
    std::array<int8_t, 256> t{};
    for (auto& v : t) v = -1;
    for (int i = 0; i < 10; ++i) t[std::size_t('0' + i)] = int8_t(i);
    for (int i = 0; i < 6; ++i) t[std::size_t('a' + i)] = int8_t(10 + i);
    return t;
}();

inline int HexVal(char c) { return HEX_VALUE[uint8_t(c)]; }

bool ParseHexInto(std::string_view s, std::vector<uint8_t>& out)
{
    if (s.size() % 2) return false;
    out.resize(s.size() / 2);
    int bad = 0;
    for (std::size_t i = 0; i < out.size(); ++i) {
        const int hi = HexVal(s[2 * i]), lo = HexVal(s[2 * i + 1]);
        bad |= hi | lo; // negative if any digit is not hex
        out[i] = uint8_t(hi << 4 | lo);
    }
    return bad >= 0;
}

bool ParseTxid(std::string_view s, Txid& t)
{
    if (s.size() != 64) return false;
    std::array<uint8_t, 32> b;
    for (std::size_t i = 0; i < 32; ++i) {
        const int hi = HexVal(s[2 * i]), lo = HexVal(s[2 * i + 1]);
        if (hi < 0 || lo < 0) return false;
        b[31 - i] = uint8_t(hi << 4 | lo);
    }
    t = Txid(uint256(b));
    return true;
}

template <typename I>
bool ParseNum(std::string_view s, I& v)
{
    auto r = std::from_chars(s.data(), s.data() + s.size(), v);
    return r.ec == std::errc() && r.ptr == s.data() + s.size() && !s.empty();
}

class File {
public:
    File(const fs::path& p, const char* mode) : m_f(std::fopen(p.c_str(), mode)) {}
    ~File()
    {
        if (m_f) std::fclose(m_f);
    }
    FILE* get() const noexcept { return m_f; }
    bool Close()
    {
        if (!m_f) return false;
        const bool ok = std::fflush(m_f) == 0 && ::fsync(fileno(m_f)) == 0;
        const bool closed = std::fclose(m_f) == 0;
        m_f = nullptr;
        return ok && closed;
    }

private:
    FILE* m_f;
};

// ---- text formats (CSV, JSON lines) -----------------------------------------------------------

void WriteRow(Out& o, ExportFormat f, const OutPoint& op, const Coin& c, AddressNetwork net)
{
    const Script& s = c.out.script_pubkey;
    const TxoutType tt = Solver(s.span());
    const std::string_view type = GetTxnOutputType(tt);
    const std::optional<std::string> addr = EncodeAddress(s, tt, net);
    if (f == ExportFormat::Csv) {
        o.Hex(op.hash.data(), 32, true);
        o.Put(',');
        o.Num(op.n);
        o.Put(',');
        o.Num(c.height);
        o.Put(c.coinbase ? ",1," : ",0,");
        o.Num(c.out.value);
        o.Put(',');
        o.Put(type);
        o.Put(',');
        if (addr) o.Put(*addr);
        o.Put(',');
        o.Hex(s.data(), s.size());
        o.Put('\n');
    } else {
        o.Put("{\"txid\":\"");
        o.Hex(op.hash.data(), 32, true);
        o.Put("\",\"vout\":");
        o.Num(op.n);
        o.Put(",\"height\":");
        o.Num(c.height);
        o.Put(c.coinbase ? ",\"coinbase\":true,\"amount\":" : ",\"coinbase\":false,\"amount\":");
        o.Num(c.out.value);
        o.Put(",\"type\":\"");
        o.Put(type);
        o.Put(addr ? "\",\"address\":\"" : "\",\"address\":null");
        if (addr) {
            o.Put(*addr);
            o.Put('"');
        }
        o.Put(",\"script\":\"");
        o.Hex(s.data(), s.size());
        o.Put("\"}\n");
    }
}

/// Parses one row the way WriteRow wrote it. Returns false on any deviation.
bool ParseRow(ExportFormat f, std::string_view line, OutPoint& op, Coin& c, std::vector<uint8_t>& script)
{
    std::string_view fields[8];
    if (f == ExportFormat::Csv) {
        std::size_t start = 0;
        for (int k = 0; k < 7; ++k) {
            const void* comma = std::memchr(line.data() + start, ',', line.size() - start);
            if (!comma) return false;
            const std::size_t at = std::size_t(static_cast<const char*>(comma) - line.data());
            fields[k] = line.substr(start, at - start);
            start = at + 1;
        }
        fields[7] = line.substr(start);
        if (fields[7].find(',') != std::string_view::npos) return false;
    } else {
        // {"txid":"..","vout":N,"height":N,"coinbase":B,"amount":N,"type":"..","address":..,"script":".."}
        static constexpr std::string_view KEYS[8] = {"{\"txid\":",   ",\"vout\":", ",\"height\":",
                                                     ",\"coinbase\":", ",\"amount\":", ",\"type\":",
                                                     ",\"address\":", ",\"script\":"};
        std::size_t pos = 0;
        for (int k = 0; k < 8; ++k) {
            if (line.substr(pos, KEYS[k].size()) != KEYS[k]) return false;
            pos += KEYS[k].size();
            std::size_t end = pos;
            if (end < line.size() && line[end] == '"') {
                end = line.find('"', end + 1);
                if (end == std::string_view::npos) return false;
                fields[k] = line.substr(pos + 1, end - pos - 1);
                ++end;
            } else {
                while (end < line.size() && line[end] != ',' && line[end] != '}') ++end;
                fields[k] = line.substr(pos, end - pos);
            }
            pos = end;
        }
        if (line.substr(pos) != "}") return false;
        if (fields[3] == "true") fields[3] = "1";
        else if (fields[3] == "false") fields[3] = "0";
        else return false;
    }
    int64_t amount;
    if (!ParseTxid(fields[0], op.hash) || !ParseNum(fields[1], op.n) || !ParseNum(fields[2], c.height) ||
        (fields[3] != "0" && fields[3] != "1") || !ParseNum(fields[4], amount) || !ParseHexInto(fields[7], script)) {
        return false;
    }
    c.coinbase = fields[3] == "1";
    c.out.value = amount;
    c.out.script_pubkey = Script(script.data(), script.size());
    // The derived columns must be what the script says.
    if (fields[5] != GetTxnOutputType(Solver(c.out.script_pubkey.span()))) return false;
    return true;
}

Result<UtxoStats> TextStats(ExportFormat f, const fs::path& file, const ExportProgress& progress)
{
    File in(file, "rb");
    if (!in.get()) return Error{Errc::InvalidValue, "cannot open " + file.string() + ": " + std::strerror(errno)};
    std::error_code ec;
    const double size = double(std::max<uintmax_t>(1, fs::file_size(file, ec)));
    UtxoStatsBuilder builder;
    UtxoStats stats;
    std::vector<char> buf(1 << 20);
    std::string carry;
    std::vector<uint8_t> script;
    OutPoint op;
    Coin coin;
    uint64_t line_no = 0, rows = 0, consumed = 0;
    bool header_seen = f != ExportFormat::Csv;
    auto handle = [&](std::string_view line) -> bool {
        ++line_no;
        if (!header_seen) {
            header_seen = true;
            return line == CSV_HEADER;
        }
        if (!ParseRow(f, line, op, coin, script)) return false;
        builder.Add(op, coin);
        if (progress && (++rows & 0xffff) == 0) progress("verify", rows, double(consumed) / size);
        return true;
    };
    while (true) {
        const std::size_t n = std::fread(buf.data(), 1, buf.size(), in.get());
        if (n == 0) break;
        consumed += n;
        std::string_view chunk(buf.data(), n);
        std::size_t start = 0;
        while (true) {
            const std::size_t nl = chunk.find('\n', start);
            if (nl == std::string_view::npos) break;
            bool ok;
            if (!carry.empty()) {
                carry.append(chunk.substr(start, nl - start));
                ok = handle(carry);
                carry.clear();
            } else {
                ok = handle(chunk.substr(start, nl - start));
            }
            if (!ok) return Error{Errc::Corrupt, file.string() + ": line " + std::to_string(line_no) + " does not parse"};
            start = nl + 1;
        }
        carry.append(chunk.substr(start));
        if (carry.size() > (64u << 20)) return Error{Errc::Corrupt, file.string() + ": line too long"};
    }
    if (!carry.empty()) return Error{Errc::Corrupt, file.string() + ": last line has no newline"};
    if (!header_seen) return Error{Errc::Corrupt, file.string() + ": no header"};
    builder.Finish(stats);
    return stats;
}

// ---- SQLite ------------------------------------------------------------------------------------

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
    " amount INTEGER NOT NULL,"   // satoshis
    " type TEXT NOT NULL,"        // Core's TxoutType name
    " address TEXT,"              // NULL where the script has no address
    " script BLOB NOT NULL);"
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

Result<UtxoStats> SqliteStats(const fs::path& file, const ExportProgress& progress)
{
    auto db = OpenSqlite(file, SQLITE_OPEN_READONLY);
    if (!db) return db.error();
    sqlite3_stmt* raw = nullptr;
    if (sqlite3_prepare_v2(db->get(), "SELECT txid, vout, height, coinbase, amount, type, script FROM utxo ORDER BY rowid",
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
        if (std::string_view(type) != GetTxnOutputType(Solver(coin.out.script_pubkey.span()))) {
            return Error{Errc::Corrupt, file.string() + ": row " + std::to_string(rows) + " has the wrong type"};
        }
        builder.Add(op, coin);
        if (progress && (rows & 0xffff) == 0) progress("verify", rows, Fraction(op.hash));
    }
    if (rc != SQLITE_DONE) return SqlError(db->get(), "reading " + file.string());
    builder.Finish(stats);
    return stats;
}

Result<uint64_t> WriteSqlite(const CoinsDB& db, const fs::path& out, AddressNetwork net, UtxoStatsBuilder& builder,
                             const ExportProgress& progress, UtxoStats& chain_stats)
{
    std::error_code ec;
    fs::remove(out, ec);
    auto sdb = OpenSqlite(out, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE);
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
    Out txid;
    std::optional<Error> failure;
    uint64_t n = 0;
    auto r = db.ForEachCoin([&](const OutPoint& op, const Coin& c) {
        builder.Add(op, c);
        const Script& sc = c.out.script_pubkey;
        const TxoutType tt = Solver(sc.span());
        const std::string_view type = GetTxnOutputType(tt);
        const auto addr = EncodeAddress(sc, tt, net);
        txid.buf.clear();
        txid.Hex(op.hash.data(), 32, true);
        sqlite3_bind_text(ins.get(), 1, txid.buf.data(), 64, SQLITE_TRANSIENT);
        sqlite3_bind_int64(ins.get(), 2, op.n);
        sqlite3_bind_int64(ins.get(), 3, c.height);
        sqlite3_bind_int64(ins.get(), 4, c.coinbase ? 1 : 0);
        sqlite3_bind_int64(ins.get(), 5, c.out.value);
        sqlite3_bind_text(ins.get(), 6, type.data(), int(type.size()), SQLITE_STATIC);
        if (addr) sqlite3_bind_text(ins.get(), 7, addr->data(), int(addr->size()), SQLITE_TRANSIENT);
        else sqlite3_bind_null(ins.get(), 7);
        sqlite3_bind_blob(ins.get(), 8, sc.data(), int(sc.size()), SQLITE_TRANSIENT);
        if (sqlite3_step(ins.get()) != SQLITE_DONE) {
            failure = SqlError(s, "inserting into " + out.string());
            return false;
        }
        sqlite3_reset(ins.get());
        if (progress && (++n & 0xffff) == 0) progress("write", n, Fraction(op.hash));
        return true;
    });
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
        {"format", "ibdkit utxo dump 1"},
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
    return uint64_t(fs::file_size(out, ec));
}

} // namespace

Result<UtxoStats> ComputeExportStats(ExportFormat format, const fs::path& file, const ExportProgress& progress)
{
    if (format == ExportFormat::Sqlite) return SqliteStats(file, progress);
    return TextStats(format, file, progress);
}

Result<ExportResult> ExportUtxoSet(const CoinsDB& db, ExportFormat format, const fs::path& out, AddressNetwork net,
                                   const ExportProgress& progress)
{
    ExportResult res;
    auto best = db.GetBestBlock();
    if (!best) return best.error();
    res.chainstate_stats.best_block = *best;
    UtxoStatsBuilder builder;
    const auto t0 = Clock::now();
    const double c0 = ThreadCpuSeconds();
    if (format == ExportFormat::Sqlite) {
        auto w = WriteSqlite(db, out, net, builder, progress, res.chainstate_stats);
        if (!w) return w.error();
        res.bytes = *w;
    } else {
        File f(out, "wb");
        if (!f.get()) return Error{Errc::InvalidValue, "cannot open " + out.string() + " for writing: " + std::strerror(errno)};
        Out o;
        o.buf.reserve((1 << 20) + 4096);
        bool write_failed = false;
        auto drain = [&] {
            if (!o.buf.empty() && std::fwrite(o.buf.data(), 1, o.buf.size(), f.get()) != o.buf.size()) write_failed = true;
            res.bytes += o.buf.size();
            o.buf.clear();
        };
        if (format == ExportFormat::Csv) {
            o.Put(CSV_HEADER);
            o.Put('\n');
        }
        uint64_t n = 0;
        auto r = db.ForEachCoin([&](const OutPoint& op, const Coin& c) {
            builder.Add(op, c);
            WriteRow(o, format, op, c, net);
            if (o.buf.size() >= (1 << 20)) {
                drain();
                if (write_failed) return false;
            }
            if (progress && (++n & 0xffff) == 0) progress("write", n, Fraction(op.hash));
            return true;
        });
        if (!r) return r.error();
        drain();
        if (write_failed || !f.Close()) {
            return Error{Errc::InvalidValue, "writing " + out.string() + " failed: " + std::strerror(errno)};
        }
        builder.Finish(res.chainstate_stats);
    }
    const auto t1 = Clock::now();
    const double c1 = ThreadCpuSeconds();
    auto back = ComputeExportStats(format, out, progress);
    if (!back) return Error{back.error().code, "verifying " + out.string() + ": " + back.error().message};
    res.file_stats = *back;
    res.write_seconds = std::chrono::duration<double>(t1 - t0).count();
    res.verify_seconds = std::chrono::duration<double>(Clock::now() - t1).count();
    res.write_cpu_seconds = c1 - c0;
    res.verify_cpu_seconds = ThreadCpuSeconds() - c1;
    const UtxoStats& a = res.chainstate_stats;
    const UtxoStats& b = res.file_stats;
    if (a.txouts != b.txouts || a.total_amount != b.total_amount || a.hash_serialized != b.hash_serialized) {
        return Error{Errc::Corrupt, out.string() + " does not match the chainstate: coins " + std::to_string(b.txouts) +
                                        " vs " + std::to_string(a.txouts) + ", amount " + FormatMoney(b.total_amount) +
                                        " vs " + FormatMoney(a.total_amount) + ", hash_serialized_3 " +
                                        b.hash_serialized.ToHex() + " vs " + a.hash_serialized.ToHex()};
    }
    if (progress) progress("verify", b.txouts, 1.0);
    return res;
}

} // namespace ibdkit

// UTXO set exports (include/ibdkit/utxo/export.h): CSV, JSON lines, SQLite, each re-read and
// checked against the chainstate walk that produced it.
#include <ibdkit/utxo/export.h>

#include <ibdkit/primitives/script_ops.h>

#include "common/handoff.h"

#include <sqlite3.h>

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <charconv>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <system_error>
#include <thread>
#include <vector>

namespace ibdkit {

namespace fs = std::filesystem;

namespace {

using Clock = std::chrono::steady_clock;

/// Two lower-case hex characters per byte value.
constexpr std::array<std::array<char, 2>, 256> HEX_PAIRS = [] {
    constexpr char digits[] = "0123456789abcdef";
    std::array<std::array<char, 2>, 256> t{};
    for (std::size_t b = 0; b < 256; ++b) t[b] = {digits[b >> 4], digits[b & 15]};
    return t;
}();

/// Decimal digit pairs "00".."99".
constexpr std::array<std::array<char, 2>, 100> DEC_PAIRS = [] {
    std::array<std::array<char, 2>, 100> t{};
    for (std::size_t i = 0; i < 100; ++i) t[i] = {char('0' + i / 10), char('0' + i % 10)};
    return t;
}();

double ProcessCpuSeconds()
{
    timespec ts{};
    ::clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return double(ts.tv_sec) + double(ts.tv_nsec) * 1e-9;
}

double Fraction(const Txid& t) { return (t.data()[0] * 256.0 + t.data()[1]) / 65536.0; }

/// Page-cache hygiene for exports of many GB: pages already written back (or already parsed) are
/// dropped, so the kernel recycles warm pages instead of taking fresh ones for every 4 KiB; on a
/// VM that halves the kernel's share of a dump (docs/benchmarks.md). It also makes the re-read
/// check read the device, not the copy in memory. `fd` may be a pipe or tmpfs: errors are ignored.
void DropCachedRange(int fd, uint64_t from, uint64_t to)
{
    if (to > from) (void)::posix_fadvise(fd, off_t(from), off_t(to - from), POSIX_FADV_DONTNEED);
}

/// The text writer's output buffer: one allocation for the whole export, filled through a raw
/// cursor. Room() guarantees space for the next row (draining to the file first when needed).
class Out {
public:
    static constexpr std::size_t DRAIN_AT = 1 << 20;
    /// Written data this far behind the end has been written back and is dropped from the cache.
    static constexpr uint64_t CACHE_LAG = 32 << 20;

    explicit Out(FILE* f) : m_fd(fileno(f)) { Grow(DRAIN_AT + 64 * 1024); }

    /// Makes room for `n` more bytes; false once a write to the file failed.
    bool Room(std::size_t n)
    {
        if (std::size_t(m_end - m_p) < n || std::size_t(m_p - m_buf.get()) >= DRAIN_AT) {
            if (!Drain()) return false;
            if (std::size_t(m_end - m_p) < n) Grow(n);
        }
        return true;
    }
    bool Drain()
    {
        const std::size_t len = std::size_t(m_p - m_buf.get());
        for (std::size_t off = 0; off < len;) {
            const ssize_t n = ::write(m_fd, m_buf.get() + off, len - off);
            if (n < 0 && errno == EINTR) continue;
            if (n <= 0) {
                m_errno = n < 0 ? errno : ENOSPC;
                return false;
            }
            off += std::size_t(n);
        }
        // Start writeback of this chunk now; drop the chunk written CACHE_LAG ago (clean by now).
        const uint64_t end = m_bytes + len;
        DropCachedRange(m_fd, m_bytes, end);
        if (end > CACHE_LAG && end - CACHE_LAG > m_dropped) {
            DropCachedRange(m_fd, m_dropped, end - CACHE_LAG);
            m_dropped = end - CACHE_LAG;
        }
        m_bytes = end;
        m_p = m_buf.get();
        return true;
    }
    uint64_t Bytes() const noexcept { return m_bytes; }
    /// errno of the failed write (it may have failed on another thread), 0 if none failed.
    int Errno() const noexcept { return m_errno; }

    // The writers below assume Room() was called for the whole row.
    void Put(char c) noexcept { *m_p++ = c; }
    void Put(std::string_view s) noexcept
    {
        std::memcpy(m_p, s.data(), s.size());
        m_p += s.size();
    }
    void Put(const char* s, std::size_t n) noexcept
    {
        std::memcpy(m_p, s, n);
        m_p += n;
    }
    /// Decimal, two digits per step from a table.
    void Dec(uint64_t v) noexcept
    {
        char tmp[20];
        char* e = tmp + sizeof(tmp);
        char* q = e;
        while (v >= 100) {
            q -= 2;
            std::memcpy(q, DEC_PAIRS[v % 100].data(), 2);
            v /= 100;
        }
        if (v >= 10) {
            q -= 2;
            std::memcpy(q, DEC_PAIRS[v].data(), 2);
        } else {
            *--q = char('0' + v);
        }
        Put(q, std::size_t(e - q));
    }
    void Dec(int64_t v) noexcept
    {
        if (v < 0) {
            Put('-');
            Dec(uint64_t(0) - uint64_t(v));
        } else {
            Dec(uint64_t(v));
        }
    }
    void Dec(uint32_t v) noexcept { Dec(uint64_t(v)); }
    void Hex(const uint8_t* p, std::size_t n) noexcept
    {
        for (std::size_t i = 0; i < n; ++i) std::memcpy(m_p + 2 * i, HEX_PAIRS[p[i]].data(), 2);
        m_p += 2 * n;
    }
    void HexReversed(const uint8_t* p, std::size_t n) noexcept
    {
        for (std::size_t i = 0; i < n; ++i) std::memcpy(m_p + 2 * i, HEX_PAIRS[p[n - 1 - i]].data(), 2);
        m_p += 2 * n;
    }

private:
    void Grow(std::size_t extra)
    {
        const std::size_t used = std::size_t(m_p - m_buf.get()), cap = used + extra;
        auto nb = std::make_unique_for_overwrite<char[]>(cap);
        if (used) std::memcpy(nb.get(), m_buf.get(), used);
        m_buf = std::move(nb);
        m_p = m_buf.get() + used;
        m_end = m_buf.get() + cap;
    }

    int m_fd;
    std::unique_ptr<char[]> m_buf;
    char* m_p{nullptr};
    char* m_end{nullptr};
    uint64_t m_bytes{0};
    uint64_t m_dropped{0}; ///< everything below this offset has been dropped from the cache
    int m_errno{0};
};

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
              std::thread::hardware_concurrency() > 1)
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

/// Writes rows for one export; keeps the hex of the current txid (a transaction's outputs are
/// contiguous in key order).
class RowWriter {
public:
    RowWriter(Out& o, ExportFormat f, AddressNetwork net) : m_o(o), m_format(f), m_net(net) {}

    /// False once writing to the file failed.
    bool Write(const OutPoint& op, const Coin& c, TxoutType tt)
    {
        const Script& s = c.out.script_pubkey;
        // Fixed parts of a JSON row < 160 bytes; numbers < 64; txid 64; address; script hex.
        if (!m_o.Room(320 + MAX_ADDRESS_LENGTH + 2 * std::size_t(s.size()))) return false;
        if (!m_have_txid || op.hash != m_txid) {
            m_txid = op.hash;
            m_have_txid = true;
            char* p = m_txid_hex.data();
            const uint8_t* h = op.hash.data();
            for (std::size_t i = 0; i < 32; ++i) std::memcpy(p + 2 * i, HEX_PAIRS[h[31 - i]].data(), 2);
        }
        const std::string_view type = GetTxnOutputType(tt);
        char addr[MAX_ADDRESS_LENGTH];
        const std::size_t addr_len = EncodeAddressInto(s, tt, m_net, addr);
        Out& o = m_o;
        if (m_format == ExportFormat::Csv) {
            o.Put(m_txid_hex.data(), 64);
            o.Put(',');
            o.Dec(op.n);
            o.Put(',');
            o.Dec(c.height);
            o.Put(c.coinbase ? std::string_view(",1,") : std::string_view(",0,"));
            o.Dec(c.out.value);
            o.Put(',');
            o.Put(type);
            o.Put(',');
            o.Put(addr, addr_len);
            o.Put(',');
            o.Hex(s.data(), s.size());
            o.Put('\n');
        } else {
            o.Put("{\"txid\":\"");
            o.Put(m_txid_hex.data(), 64);
            o.Put("\",\"vout\":");
            o.Dec(op.n);
            o.Put(",\"height\":");
            o.Dec(c.height);
            o.Put(c.coinbase ? std::string_view(",\"coinbase\":true,\"amount\":")
                             : std::string_view(",\"coinbase\":false,\"amount\":"));
            o.Dec(c.out.value);
            o.Put(",\"type\":\"");
            o.Put(type);
            if (addr_len) {
                o.Put("\",\"address\":\"");
                o.Put(addr, addr_len);
                o.Put('"');
            } else {
                o.Put("\",\"address\":null");
            }
            o.Put(",\"script\":\"");
            o.Hex(s.data(), s.size());
            o.Put("\"}\n");
        }
        return true;
    }

private:
    Out& m_o;
    ExportFormat m_format;
    AddressNetwork m_net;
    Txid m_txid;
    bool m_have_txid{false};
    std::array<char, 64> m_txid_hex{};
};

/// Parses one row the way WriteRow wrote it. Returns false on any deviation.
bool ParseRow(ExportFormat f, std::string_view line, OutPoint& op, Coin& c, std::vector<uint8_t>& script, TxoutType& type)
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
    c.out.script_pubkey.assign(script.data(), script.size());
    // The derived columns must be what the script says.
    type = Solver(c.out.script_pubkey.span());
    return fields[5] == GetTxnOutputType(type);
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
    // One thread: handing rows to a hashing thread cost more in cache traffic than it saved.
    auto handle = [&](std::string_view line) -> bool {
        ++line_no;
        if (!header_seen) {
            header_seen = true;
            return line == CSV_HEADER;
        }
        TxoutType type;
        if (!ParseRow(f, line, op, coin, script, type)) return false;
        builder.Add(op, coin, type);
        if (progress && (++rows & 0xffff) == 0) progress("verify", rows, double(consumed) / size);
        return true;
    };
    const int fd = fileno(in.get());
    (void)::posix_fadvise(fd, 0, 0, POSIX_FADV_SEQUENTIAL);
    while (true) {
        ssize_t got = ::read(fd, buf.data(), buf.size());
        if (got < 0 && errno == EINTR) continue;
        if (got < 0) return Error{Errc::Corrupt, "reading " + file.string() + ": " + std::strerror(errno)};
        if (got == 0) break;
        const std::size_t n = std::size_t(got);
        DropCachedRange(fd, consumed, consumed + n); // read once: let the pages go
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
    const double c0 = ProcessCpuSeconds();
    if (format == ExportFormat::Sqlite) {
        auto w = WriteSqlite(db, out, net, builder, progress, res.chainstate_stats);
        if (!w) return w.error();
        res.bytes = *w;
    } else {
        File f(out, "wb");
        if (!f.get()) return Error{Errc::InvalidValue, "cannot open " + out.string() + " for writing: " + std::strerror(errno)};
        Out o(f.get());
        RowWriter rows(o, format, net);
        if (format == ExportFormat::Csv) {
            o.Room(CSV_HEADER.size() + 1);
            o.Put(CSV_HEADER);
            o.Put('\n');
        }
        // This thread walks, decodes and hashes; the pipe's thread formats and writes.
        CoinPipe pipe([&](const CoinRow* batch, std::size_t n) {
            for (std::size_t i = 0; i < n; ++i) {
                if (!rows.Write(batch[i].op, batch[i].coin, batch[i].type)) return false;
            }
            return true;
        });
        auto r = WalkInto(db, pipe, builder, progress);
        const bool write_failed = !pipe.Finish() || !o.Drain();
        if (!r) return r.error();
        res.bytes = o.Bytes();
        if (write_failed || !f.Close()) {
            const int err = o.Errno() ? o.Errno() : errno;
            return Error{Errc::InvalidValue, "writing " + out.string() + " failed: " + std::strerror(err)};
        }
        builder.Finish(res.chainstate_stats);
    }
    const auto t1 = Clock::now();
    const double c1 = ProcessCpuSeconds();
    auto back = ComputeExportStats(format, out, progress);
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
    if (progress) progress("verify", b.txouts, 1.0);
    return res;
}

} // namespace ibdkit

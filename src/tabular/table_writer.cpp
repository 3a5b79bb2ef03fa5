// TableWriter's three formats (include/ibdkit/tabular/table.h): CSV and JSON lines through the one
// buffered file writer, SQLite through prepared inserts in one transaction.
#include <ibdkit/common/atomic_file.h>
#include <ibdkit/common/write_guard.h>
#include <ibdkit/tabular/table.h>

#include "common/buffered_writer.h"

#include <sqlite3.h>

#include <array>
#include <cassert>
#include <charconv>
#include <cmath>
#include <cstring>
#include <string>
#include <system_error>
#include <vector>

namespace ibdkit {

namespace fs = std::filesystem;

std::optional<TableFormat> ParseTableFormat(std::string_view name)
{
    if (name == "csv") return TableFormat::Csv;
    if (name == "jsonl" || name == "json") return TableFormat::Jsonl;
    if (name == "sqlite") return TableFormat::Sqlite;
    return std::nullopt;
}

std::string_view TableFormatName(TableFormat f)
{
    switch (f) {
    case TableFormat::Csv: return "csv";
    case TableFormat::Jsonl: return "jsonl";
    case TableFormat::Sqlite: return "sqlite";
    }
    return "?";
}

namespace {

/// Column and table names go into SQL and JSON unquoted by us: letters, digits and '_' only.
bool IsPlainName(std::string_view s)
{
    if (s.empty() || (s[0] >= '0' && s[0] <= '9')) return false;
    for (char c : s) {
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_')) return false;
    }
    return true;
}

/// CSV quotes a field holding a comma, a quote or a line break (RFC 4180). One table lookup per
/// character: string_view::find_first_of calls memchr over the set once per character.
bool NeedsQuotes(std::string_view v)
{
    static constexpr auto SPECIAL = [] {
        std::array<bool, 256> t{};
        for (char c : {',', '"', '\r', '\n'}) t[uint8_t(c)] = true;
        return t;
    }();
    bool any = false;
    for (char c : v) any |= SPECIAL[uint8_t(c)];
    return any;
}

/// What every format does with the columns and the temporary file (AtomicFile: removed unless
/// Finish() published it).
class WriterBase : public TableWriter {
protected:
    WriterBase(const fs::path& out, std::span<const Column> columns) : m_atomic(out), m_columns(columns.begin(), columns.end()) {}
    const fs::path& Partial() const noexcept { return m_atomic.Temp(); }

    /// The column the next cell belongs to (asserting the producer's order and types).
    const Column& Next([[maybe_unused]] ColumnType t)
    {
        assert(m_col < m_columns.size());
        assert(m_columns[m_col].type == t);
        return m_columns[m_col++];
    }
    void NextNull()
    {
        assert(m_col < m_columns.size());
        assert(m_columns[m_col].nullable || m_columns[m_col].type == ColumnType::Real);
        ++m_col;
    }
    void RowDone()
    {
        assert(m_col == m_columns.size());
        m_col = 0;
        ++m_rows;
    }
    std::optional<Error> Rename()
    {
        if (auto e = m_atomic.Commit()) return e;
        std::error_code ec;
        m_bytes = uint64_t(fs::file_size(m_atomic.Final(), ec));
        return std::nullopt;
    }

    AtomicFile m_atomic;
    std::vector<Column> m_columns;
    std::size_t m_col{0};
};

/// CSV and JSON lines.
class TextWriter final : public WriterBase {
public:
    static Result<std::unique_ptr<TableWriter>> Create(const fs::path& out, TableFormat format, std::span<const Column> columns)
    {
        auto w = std::unique_ptr<TextWriter>(new TextWriter(out, format == TableFormat::Jsonl, columns));
        if (!w->m_file.get()) {
            return Error{Errc::InvalidValue, "cannot create " + w->Partial().string() + ": " + std::strerror(errno)};
        }
        w->m_writer.emplace(w->m_file.get());
        if (!w->m_json) {
            for (std::size_t i = 0; i < columns.size(); ++i) {
                w->m_writer->Room(columns[i].name.size() + 1);
                if (i) w->m_writer->Put(',');
                w->m_writer->Put(columns[i].name);
            }
            w->m_writer->Room(1);
            w->m_writer->Put('\n');
        }
        return std::unique_ptr<TableWriter>(std::move(w));
    }

    void Int(int64_t v) override
    {
        Open(ColumnType::Int, 20);
        m_writer->Dec(v);
    }
    void Real(double v) override
    {
        if (!std::isfinite(v)) return Null();
        Open(ColumnType::Real, 32);
        char buf[32];
        const auto r = std::to_chars(buf, buf + sizeof(buf), v);
        m_writer->Put(buf, std::size_t(r.ptr - buf));
    }
    void Bool(bool v) override
    {
        Open(ColumnType::Bool, 5);
        if (m_json) m_writer->Put(v ? std::string_view("true") : std::string_view("false"));
        else m_writer->Put(v ? '1' : '0');
    }
    void Text(std::string_view v) override
    {
        if (m_json) {
            Open(ColumnType::Text, 2 + 6 * v.size());
            PutJsonString(v);
        } else if (!NeedsQuotes(v)) {
            Open(ColumnType::Text, v.size());
            m_writer->Put(v);
        } else {
            Open(ColumnType::Text, 2 + 2 * v.size());
            m_writer->Put('"');
            for (char c : v) {
                if (c == '"') m_writer->Put('"');
                m_writer->Put(c);
            }
            m_writer->Put('"');
        }
    }
    void Blob(std::span<const uint8_t> v) override
    {
        Open(ColumnType::Blob, 2 + 2 * v.size());
        if (m_json) m_writer->Put('"');
        m_writer->Hex(v.data(), v.size());
        if (m_json) m_writer->Put('"');
    }
    void Null() override
    {
        const bool first = m_col == 0;
        PutKey(m_col, first, 4);
        NextNull();
        if (m_json) m_writer->Put("null");
    }
    void EndRow() override
    {
        RowDone();
        m_writer->Room(2);
        if (m_json) m_writer->Put('}');
        m_writer->Put('\n');
    }
    std::optional<Error> Finish() override
    {
        if (!m_writer->Drain() || !m_file.Close()) return Error{Errc::InvalidValue, "writing " + Partial().string() + ": " + std::strerror(m_writer->Errno() ? m_writer->Errno() : errno)};
        return Rename();
    }
    bool ok() const noexcept override { return m_writer->ok(); }

private:
    TextWriter(const fs::path& out, bool json, std::span<const Column> columns)
        : WriterBase(out, columns), m_json(json), m_file(Partial(), "wb")
    {
        for (const Column& c : columns) m_keys.push_back("\"" + std::string(c.name) + "\":");
    }

    /// Room for the separator, the key and `n` bytes of value, then the separator and key.
    void PutKey(std::size_t col, bool first, std::size_t n)
    {
        m_writer->Room(n + (m_json ? m_keys[col].size() + 2 : 1));
        if (m_json) {
            m_writer->Put(first ? '{' : ',');
            m_writer->Put(m_keys[col]);
        } else if (!first) {
            m_writer->Put(',');
        }
    }
    void Open(ColumnType t, std::size_t n)
    {
        PutKey(m_col, m_col == 0, n);
        Next(t);
    }
    void PutJsonString(std::string_view v)
    {
        m_writer->Put('"');
        for (char c : v) {
            const auto u = uint8_t(c);
            if (c == '"' || c == '\\') {
                m_writer->Put('\\');
                m_writer->Put(c);
            } else if (u < 0x20) {
                constexpr char digits[] = "0123456789abcdef";
                const char esc[6] = {'\\', 'u', '0', '0', digits[u >> 4], digits[u & 15]};
                m_writer->Put(esc, 6);
            } else {
                m_writer->Put(c);
            }
        }
        m_writer->Put('"');
    }

    bool m_json;
    File m_file;
    std::optional<BufferedFileWriter> m_writer;
    std::vector<std::string> m_keys; ///< JSON: "name": per column
};

struct DbCloser {
    void operator()(sqlite3* db) const noexcept { sqlite3_close(db); }
};
struct StmtCloser {
    void operator()(sqlite3_stmt* s) const noexcept { sqlite3_finalize(s); }
};

class SqliteWriter final : public WriterBase {
public:
    static Result<std::unique_ptr<TableWriter>> Create(const fs::path& out, std::string_view table, std::span<const Column> columns)
    {
        auto w = std::unique_ptr<SqliteWriter>(new SqliteWriter(out, columns));
        const fs::path& partial = w->Partial();
        sqlite3* raw = nullptr;
        const int rc = sqlite3_open_v2(partial.c_str(), &raw, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, nullptr);
        w->m_db.reset(raw);
        if (rc != SQLITE_OK) return w->SqlError("cannot create " + partial.string());
        std::string create = "CREATE TABLE " + std::string(table) + " (", insert = "INSERT INTO " + std::string(table) + " VALUES (";
        for (std::size_t i = 0; i < columns.size(); ++i) {
            static constexpr const char* TYPES[] = {"INTEGER", "REAL", "INTEGER", "TEXT", "BLOB"};
            create += (i ? ", " : "") + std::string(columns[i].name) + " " + TYPES[std::size_t(columns[i].type)] +
                      (columns[i].nullable ? "" : " NOT NULL");
            insert += i ? ",?" : "?";
        }
        create += ");";
        insert += ")";
        if (!w->Exec("PRAGMA journal_mode=OFF; PRAGMA synchronous=OFF; PRAGMA cache_size=-16384;") || !w->Exec(create.c_str()) ||
            !w->Exec("BEGIN")) {
            return w->SqlError("creating " + partial.string());
        }
        sqlite3_stmt* st = nullptr;
        if (sqlite3_prepare_v2(w->m_db.get(), insert.c_str(), -1, &st, nullptr) != SQLITE_OK) return w->SqlError("preparing the insert");
        w->m_insert.reset(st);
        return std::unique_ptr<TableWriter>(std::move(w));
    }

    void Int(int64_t v) override { sqlite3_bind_int64(m_insert.get(), Param(ColumnType::Int), v); }
    void Real(double v) override
    {
        if (!std::isfinite(v)) return Null();
        sqlite3_bind_double(m_insert.get(), Param(ColumnType::Real), v);
    }
    void Bool(bool v) override { sqlite3_bind_int(m_insert.get(), Param(ColumnType::Bool), v ? 1 : 0); }
    void Text(std::string_view v) override
    {
        sqlite3_bind_text(m_insert.get(), Param(ColumnType::Text), v.data(), int(v.size()), SQLITE_TRANSIENT);
    }
    void Blob(std::span<const uint8_t> v) override
    {
        // A zero-length blob still has to be a BLOB, not NULL: sqlite binds a null pointer as NULL.
        static constexpr uint8_t EMPTY = 0;
        sqlite3_bind_blob(m_insert.get(), Param(ColumnType::Blob), v.empty() ? &EMPTY : v.data(), int(v.size()), SQLITE_TRANSIENT);
    }
    void Null() override
    {
        NextNull();
        sqlite3_bind_null(m_insert.get(), int(m_col));
    }
    void EndRow() override
    {
        RowDone();
        if (!m_failure && sqlite3_step(m_insert.get()) != SQLITE_DONE) m_failure = SqlError("inserting into " + Partial().string());
        sqlite3_reset(m_insert.get());
    }
    std::optional<Error> Finish() override
    {
        if (m_failure) return m_failure;
        m_insert.reset();
        if (!Exec("COMMIT")) return SqlError("committing " + Partial().string());
        if (sqlite3_close(m_db.release()) != SQLITE_OK) return Error{Errc::InvalidValue, "closing " + Partial().string()};
        return Rename();
    }
    bool ok() const noexcept override { return !m_failure; }

private:
    SqliteWriter(const fs::path& out, std::span<const Column> columns) : WriterBase(out, columns) {}

    int Param(ColumnType t)
    {
        Next(t);
        return int(m_col); // 1-based: the column just taken
    }
    bool Exec(const char* sql) { return sqlite3_exec(m_db.get(), sql, nullptr, nullptr, nullptr) == SQLITE_OK; }
    Error SqlError(const std::string& what) const
    {
        return Error{Errc::InvalidValue, what + ": " + (m_db ? sqlite3_errmsg(m_db.get()) : "out of memory")};
    }

    std::unique_ptr<sqlite3, DbCloser> m_db;
    std::unique_ptr<sqlite3_stmt, StmtCloser> m_insert;
    std::optional<Error> m_failure;
};

} // namespace

Result<std::unique_ptr<TableWriter>> TableWriter::Create(const fs::path& out, TableFormat format, std::string_view table,
                                                         std::span<const Column> columns)
{
    if (auto refused = CheckOutputFile(out)) return *refused;
    if (columns.empty()) return Error{Errc::InvalidValue, "a table needs at least one column"};
    for (const Column& c : columns) {
        if (!IsPlainName(c.name)) return Error{Errc::InvalidValue, "unusable column name \"" + std::string(c.name) + "\""};
    }
    if (format == TableFormat::Sqlite) {
        if (!IsPlainName(table)) return Error{Errc::InvalidValue, "unusable table name \"" + std::string(table) + "\""};
        return SqliteWriter::Create(out, table, columns);
    }
    return TextWriter::Create(out, format, columns);
}

} // namespace ibdkit

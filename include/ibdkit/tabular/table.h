// ibdkit/tabular/table.h — one writer for every row-shaped export: CSV, JSON lines and SQLite.
//
// A table is a list of typed columns. Producers hand rows over cell by cell, in column order, to a
// RowSink: TableWriter is one (a file), Python's Arrow column builder is another, so a table's
// rows are produced once for every destination. Cells never allocate per row on the write path.
//
// Formats (docs/tabular.md):
//  - CSV: a header line of the column names, then one line per row; RFC 4180 quoting for text that
//    holds a comma, a quote or a line break; Bool as 1/0; Blob as lower-case hex; Null as an empty
//    field.
//  - JSON lines: one object per row, keys in column order; Bool as true/false; Blob as a hex
//    string; Null (and a Real that is not finite) as null.
//  - SQLite: one table (INTEGER, REAL, INTEGER 0/1, TEXT, BLOB; NOT NULL unless the column is
//    nullable) filled in one transaction.
// The file is written under a temporary name (OUT.partial-PID, ibdkit/atomic_file.h) and renamed
// onto OUT only when Finish() succeeds, so an interrupted export never leaves a truncated file
// under the name asked for.
#pragma once

#include <ibdkit/error.h>

#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <span>
#include <string_view>

namespace ibdkit {

enum class ColumnType : uint8_t { Int, Real, Bool, Text, Blob };

struct Column {
    std::string_view name;
    ColumnType type{ColumnType::Int};
    bool nullable{false};
};

enum class TableFormat : uint8_t { Csv, Jsonl, Sqlite };

/// "csv", "jsonl" (or "json"), "sqlite" (case-sensitive); nullopt otherwise. Pure.
std::optional<TableFormat> ParseTableFormat(std::string_view name);
/// "csv", "jsonl", "sqlite" ("?" outside the enum). Pure.
std::string_view TableFormatName(TableFormat f);

/// Receives a table's rows: the cells of a row in column order, then EndRow().
template <typename S>
concept RowSink = requires(S& s, int64_t i, double d, bool b, std::string_view t, std::span<const uint8_t> blob) {
    s.Int(i);
    s.Real(d);
    s.Bool(b);
    s.Text(t);
    s.Blob(blob);
    s.Null();
    s.EndRow();
};

/// A RowSink whose cells are virtual calls: what the public row producers write to (EmitRows,
/// spent/tables.h), so that a user's own sink needs no template. TableWriter is one.
class RowSinkBase {
public:
    virtual ~RowSinkBase() = default;
    /// One cell of the row being written, in the columns' order: a number, a boolean, text or
    /// bytes (copied before the call returns), or NULL; EndRow ends the row.
    virtual void Int(int64_t v) = 0;
    virtual void Real(double v) = 0;
    virtual void Bool(bool v) = 0;
    virtual void Text(std::string_view v) = 0;
    virtual void Blob(std::span<const uint8_t> v) = 0;
    virtual void Null() = 0;
    virtual void EndRow() = 0;
};

static_assert(RowSink<RowSinkBase>);

/// Writes one table to a file. Cells must follow the columns' order and types (a programmer
/// error otherwise, asserted). I/O errors are kept and returned by Finish(). One thread at a time;
/// a cell's text or bytes are copied before the call returns.
class TableWriter : public RowSinkBase {
public:
    /// Creates the temporary file. `table` names the SQLite table (CSV and JSON lines have no name).
    /// Errors: no column, an unusable column or table name, a file that cannot be created
    /// (Errc::InvalidValue); `out` refused by the write guard (Errc::Refused). The caller owns the
    /// writer; `columns` is read during the call only.
    static Result<std::unique_ptr<TableWriter>> Create(const std::filesystem::path& out, TableFormat format,
                                                       std::string_view table, std::span<const Column> columns);
    ~TableWriter() override = default; ///< without a successful Finish(), the temporary file is removed

    /// Flushes, commits, fsyncs and renames the temporary file onto OUT. Returns the first error of the
    /// whole run (nothing is renamed then), Errc::InvalidValue.
    virtual std::optional<Error> Finish() = 0;
    /// Whether no write has failed yet (a long export can stop early).
    virtual bool ok() const noexcept = 0;

    /// Rows ended so far.
    uint64_t Rows() const noexcept { return m_rows; }
    /// Bytes of the finished file (0 before Finish()).
    uint64_t Bytes() const noexcept { return m_bytes; }

protected:
    TableWriter() = default;
    uint64_t m_rows{0};
    uint64_t m_bytes{0};
};

static_assert(RowSink<TableWriter>);

} // namespace ibdkit

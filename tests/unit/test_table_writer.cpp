// TableWriter: the exact bytes of CSV and JSON lines, SQLite's typed values, and the partial file.
#include <ibdkit/tabular/table.h>

#include "test_util.h"

#include <gtest/gtest.h>

#include <unistd.h>
#include <sqlite3.h>

#include <array>
#include <limits>
#include <string>

using namespace ibdkit;
namespace fs = std::filesystem;

namespace {

constexpr std::array<Column, 6> COLUMNS{{
    {"height", ColumnType::Int},
    {"feerate", ColumnType::Real, true},
    {"coinbase", ColumnType::Bool},
    {"label", ColumnType::Text, true},
    {"script", ColumnType::Blob},
    {"address", ColumnType::Text, true},
}};

/// Three rows covering negative numbers, quoting and escaping, nulls, an empty blob and a NaN.
template <RowSink S>
void WriteRows(S& s)
{
    const std::array<uint8_t, 3> script{0x00, 0x14, 0xab};
    s.Int(0);
    s.Real(1.5);
    s.Bool(true);
    s.Text("plain");
    s.Blob(script);
    s.Text("bc1qexample");
    s.EndRow();
    s.Int(-7);
    s.Null();
    s.Bool(false);
    s.Text("a,\"b\"\nc\\");
    s.Blob({});
    s.Null();
    s.EndRow();
    s.Int(std::numeric_limits<int64_t>::max());
    s.Real(std::numeric_limits<double>::quiet_NaN());
    s.Bool(false);
    s.Text(std::string_view("\x01", 1));
    s.Blob(script);
    s.Null();
    s.EndRow();
}

std::string WriteFile(const fs::path& out, TableFormat f)
{
    auto w = TableWriter::Create(out, f, "t", COLUMNS);
    EXPECT_TRUE(w) << (w ? "" : w.error().message);
    WriteRows(**w);
    EXPECT_FALSE(fs::exists(out)) << "the file appears only when finished";
    EXPECT_TRUE(fs::exists(fs::path(out.string() + ".partial-" + std::to_string(::getpid()))));
    auto err = (*w)->Finish();
    EXPECT_FALSE(err) << err->message;
    EXPECT_EQ((*w)->Rows(), 3u);
    EXPECT_EQ((*w)->Bytes(), fs::file_size(out));
    EXPECT_FALSE(fs::exists(fs::path(out.string() + ".partial-" + std::to_string(::getpid()))));
    const auto bytes = test::ReadFile(out);
    return std::string(bytes.begin(), bytes.end());
}

} // namespace

TEST(TableWriter, CsvBytes)
{
    test::TempDir dir;
    EXPECT_EQ(WriteFile(dir.path / "t.csv", TableFormat::Csv),
              "height,feerate,coinbase,label,script,address\n"
              "0,1.5,1,plain,0014ab,bc1qexample\n"
              "-7,,0,\"a,\"\"b\"\"\nc\\\",,\n"
              "9223372036854775807,,0,\x01,0014ab,\n");
}

TEST(TableWriter, JsonLinesBytes)
{
    test::TempDir dir;
    EXPECT_EQ(WriteFile(dir.path / "t.jsonl", TableFormat::Jsonl),
              "{\"height\":0,\"feerate\":1.5,\"coinbase\":true,\"label\":\"plain\",\"script\":\"0014ab\",\"address\":\"bc1qexample\"}\n"
              "{\"height\":-7,\"feerate\":null,\"coinbase\":false,\"label\":\"a,\\\"b\\\"\\u000ac\\\\\",\"script\":\"\",\"address\":null}\n"
              "{\"height\":9223372036854775807,\"feerate\":null,\"coinbase\":false,\"label\":\"\\u0001\",\"script\":\"0014ab\",\"address\":null}\n");
}

TEST(TableWriter, SqliteTypedValues)
{
    test::TempDir dir;
    const fs::path out = dir.path / "t.sqlite";
    WriteFile(out, TableFormat::Sqlite);
    sqlite3* db = nullptr;
    ASSERT_EQ(sqlite3_open_v2(out.c_str(), &db, SQLITE_OPEN_READONLY, nullptr), SQLITE_OK);
    sqlite3_stmt* st = nullptr;
    ASSERT_EQ(sqlite3_prepare_v2(db, "SELECT height, feerate, coinbase, label, script, address, typeof(script), typeof(feerate) FROM t ORDER BY rowid",
                                 -1, &st, nullptr),
              SQLITE_OK);
    ASSERT_EQ(sqlite3_step(st), SQLITE_ROW);
    EXPECT_EQ(sqlite3_column_int64(st, 0), 0);
    EXPECT_EQ(sqlite3_column_double(st, 1), 1.5);
    EXPECT_EQ(sqlite3_column_int(st, 2), 1);
    EXPECT_STREQ(reinterpret_cast<const char*>(sqlite3_column_text(st, 3)), "plain");
    EXPECT_EQ(sqlite3_column_bytes(st, 4), 3);
    EXPECT_STREQ(reinterpret_cast<const char*>(sqlite3_column_text(st, 6)), "blob");
    ASSERT_EQ(sqlite3_step(st), SQLITE_ROW);
    EXPECT_EQ(sqlite3_column_int64(st, 0), -7);
    EXPECT_STREQ(reinterpret_cast<const char*>(sqlite3_column_text(st, 3)), "a,\"b\"\nc\\");
    EXPECT_EQ(sqlite3_column_bytes(st, 4), 0);
    EXPECT_STREQ(reinterpret_cast<const char*>(sqlite3_column_text(st, 6)), "blob") << "an empty script is a blob, not NULL";
    EXPECT_EQ(sqlite3_column_type(st, 5), SQLITE_NULL);
    ASSERT_EQ(sqlite3_step(st), SQLITE_ROW);
    EXPECT_EQ(sqlite3_column_int64(st, 0), std::numeric_limits<int64_t>::max());
    EXPECT_STREQ(reinterpret_cast<const char*>(sqlite3_column_text(st, 7)), "null") << "NaN is stored as NULL";
    EXPECT_EQ(sqlite3_step(st), SQLITE_DONE);
    sqlite3_finalize(st);
    sqlite3_close(db);
}

TEST(TableWriter, UnfinishedWriterLeavesNoFile)
{
    test::TempDir dir;
    const fs::path out = dir.path / "t.csv";
    for (TableFormat f : {TableFormat::Csv, TableFormat::Jsonl, TableFormat::Sqlite}) {
        {
            auto w = TableWriter::Create(out, f, "t", COLUMNS);
            ASSERT_TRUE(w);
            WriteRows(**w);
        }
        EXPECT_TRUE(fs::is_empty(dir.path)) << TableFormatName(f);
    }
}

TEST(TableWriter, RejectsUnusableNamesAndPaths)
{
    test::TempDir dir;
    const std::array<Column, 1> bad{{{"drop table", ColumnType::Int}}};
    EXPECT_FALSE(TableWriter::Create(dir.path / "x.csv", TableFormat::Csv, "t", bad));
    EXPECT_FALSE(TableWriter::Create(dir.path / "x.sqlite", TableFormat::Sqlite, "t;", COLUMNS));
    EXPECT_FALSE(TableWriter::Create(dir.path / "x.csv", TableFormat::Csv, "t", std::span<const Column>{}));
    auto w = TableWriter::Create(dir.path / "missing" / "x.csv", TableFormat::Csv, "t", COLUMNS);
    ASSERT_FALSE(w);
    EXPECT_EQ(w.error().code, Errc::Refused);
    EXPECT_NE(w.error().message.find("does not exist: create it first"), std::string::npos) << w.error().message;
}

TEST(TableWriter, ParsesFormatNames)
{
    EXPECT_EQ(ParseTableFormat("csv"), TableFormat::Csv);
    EXPECT_EQ(ParseTableFormat("jsonl"), TableFormat::Jsonl);
    EXPECT_EQ(ParseTableFormat("sqlite"), TableFormat::Sqlite);
    EXPECT_FALSE(ParseTableFormat("parquet"));
    for (TableFormat f : {TableFormat::Csv, TableFormat::Jsonl, TableFormat::Sqlite}) EXPECT_EQ(ParseTableFormat(TableFormatName(f)), f);
}

// Arrow record-batch buffers for any table of include/ibdkit/tabular/table.h: a RowSink that lays
// the cells out in the Arrow columnar format (int64/float64 values, LSB bitmaps for bools and
// validity, int32 offsets for utf8/binary), so a table producer fills Arrow and files alike.
// Python adopts the buffers without copying (ArrowTableBuilder::TakeBatch, python/ibdkit/_arrow.py).
#pragma once

#include "coin_cursor.h" // ColumnBuffer

#include <ibdkit/tabular/table.h>

#include <nanobind/nanobind.h>

#include <cassert>
#include <cstdint>
#include <cstring>
#include <span>
#include <string_view>
#include <deque>

namespace ibdkit::py {

class ArrowTableBuilder {
public:
    explicit ArrowTableBuilder(std::span<const Column> columns);
    ArrowTableBuilder(const ArrowTableBuilder&) = delete;
    ArrowTableBuilder& operator=(const ArrowTableBuilder&) = delete;

    void Int(int64_t v) { PutFixed(ColumnType::Int, v); }
    void Real(double v) { PutFixed(ColumnType::Real, v); }
    void Bool(bool v)
    {
        Col& c = Next(ColumnType::Bool);
        if (v) SetBit(c.values, m_rows);
        Valid(c);
    }
    void Text(std::string_view v) { PutVar(ColumnType::Text, v.data(), v.size()); }
    void Blob(std::span<const uint8_t> v) { PutVar(ColumnType::Blob, v.data(), v.size()); }
    void Null();
    void EndRow()
    {
        assert(m_col == m_cols.size());
        m_col = 0;
        ++m_rows;
        if ((m_rows & 7) == 0) ZeroBitmaps(); // the next byte of every bitmap starts at zero
    }

    std::size_t Rows() const noexcept { return m_rows; }
    /// Whether a text or binary column is near the int32 offsets' limit: end the batch now.
    bool Full() const noexcept;
    /// The batch so far as {"rows": n, "columns": [...]} with each buffer as (address, size, owner);
    /// the builder starts an empty batch.
    nanobind::dict TakeBatch();

private:
    static constexpr std::size_t MAX_VAR_BYTES = std::size_t(1) << 30;

    struct Col {
        ColumnType type{ColumnType::Int};
        bool nullable{false};
        ColumnBuffer values;  ///< fixed-width values, a bitmap for bools, or the bytes of text/blob
        ColumnBuffer offsets; ///< text/blob: int32 offsets, rows + 1
        ColumnBuffer valid;   ///< nullable: validity bitmap
        std::size_t nulls{0};
    };

    Col& Next([[maybe_unused]] ColumnType t)
    {
        assert(m_col < m_cols.size() && m_cols[m_col].type == t);
        return m_cols[m_col++];
    }
    static void SetBit(ColumnBuffer& b, std::size_t i) { b.data()[i / 8] = char(uint8_t(b.data()[i / 8]) | (1u << (i % 8))); }
    void Valid(Col& c)
    {
        if (c.nullable) SetBit(c.valid, m_rows);
    }
    template <typename T>
    void PutFixed(ColumnType t, T v)
    {
        Col& c = Next(t);
        std::memcpy(c.values.Take(sizeof(T)), &v, sizeof(T));
        Valid(c);
    }
    void PutVar(ColumnType t, const void* p, std::size_t n)
    {
        Col& c = Next(t);
        if (n) std::memcpy(c.values.Take(n), p, n);
        const auto end = int32_t(c.values.size());
        std::memcpy(c.offsets.Take(4), &end, 4);
        Valid(c);
    }
    void ZeroBitmaps();
    void Start();

    std::deque<Col> m_cols; ///< a deque: ColumnBuffer does not move
    std::size_t m_col{0};
    std::size_t m_rows{0};
};

static_assert(RowSink<ArrowTableBuilder>);

/// The pyarrow type names of a table's columns, for python/ibdkit/_arrow.py: [(name, type, nullable)].
nanobind::list ArrowSchema(std::span<const Column> columns);

} // namespace ibdkit::py

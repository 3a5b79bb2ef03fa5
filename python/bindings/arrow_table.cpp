// ArrowTableBuilder (arrow_table.h).
#include "arrow_table.h"

#include <nanobind/stl/string.h>

#include <cstdlib>

namespace nb = nanobind;

namespace ibdkit::py {
namespace {

bool IsBitmap(ColumnType t) { return t == ColumnType::Bool; }
bool IsVar(ColumnType t) { return t == ColumnType::Text || t == ColumnType::Blob; }

/// (address, size, owner): Python frees the allocation through the capsule.
nb::tuple Hand(ColumnBuffer& b)
{
    b.Trim();
    const std::size_t size = b.size();
    char* p = b.Release();
    if (!p) p = static_cast<char*>(std::calloc(1, 1)); // pyarrow wants an address even for no bytes
    nb::capsule owner(p, [](void* q) noexcept { std::free(q); });
    return nb::make_tuple(reinterpret_cast<uintptr_t>(p), size, owner);
}

} // namespace

ArrowTableBuilder::ArrowTableBuilder(std::span<const Column> columns)
{
    for (const Column& c : columns) {
        Col& col = m_cols.emplace_back();
        col.type = c.type;
        col.nullable = c.nullable;
    }
    Start();
}

void ArrowTableBuilder::Start()
{
    m_rows = 0;
    m_col = 0;
    for (Col& c : m_cols) {
        c.nulls = 0;
        if (IsVar(c.type)) std::memset(c.offsets.Take(4), 0, 4);
    }
    ZeroBitmaps();
}

void ArrowTableBuilder::ZeroBitmaps()
{
    for (Col& c : m_cols) {
        if (IsBitmap(c.type)) *c.values.Take(1) = 0;
        if (c.nullable) *c.valid.Take(1) = 0;
    }
}

void ArrowTableBuilder::Null()
{
    assert(m_col < m_cols.size() && m_cols[m_col].nullable);
    Col& c = m_cols[m_col++];
    ++c.nulls;
    switch (c.type) {
    case ColumnType::Int:
    case ColumnType::Real:
        std::memset(c.values.Take(8), 0, 8);
        break;
    case ColumnType::Bool:
        break;
    case ColumnType::Text:
    case ColumnType::Blob: {
        const auto end = int32_t(c.values.size());
        std::memcpy(c.offsets.Take(4), &end, 4);
        break;
    }
    }
}

bool ArrowTableBuilder::Full() const noexcept
{
    for (const Col& c : m_cols) {
        if (IsVar(c.type) && c.values.size() > MAX_VAR_BYTES) return true;
    }
    return false;
}

nb::dict ArrowTableBuilder::TakeBatch()
{
    assert(m_col == 0);
    const std::size_t bitmap_bytes = (m_rows + 7) / 8;
    nb::list cols;
    for (Col& c : m_cols) {
        // Bitmaps took a byte ahead for the next eight rows: keep only what the rows use.
        if (IsBitmap(c.type)) c.values.Unused(c.values.size() - bitmap_bytes);
        if (c.nullable) c.valid.Unused(c.valid.size() - bitmap_bytes);
        nb::object valid = c.nullable && c.nulls ? nb::object(Hand(c.valid)) : nb::none();
        if (c.nullable && !c.nulls) c.valid.Unused(c.valid.size());
        nb::object offsets = IsVar(c.type) ? nb::object(Hand(c.offsets)) : nb::none();
        cols.append(nb::make_tuple(valid, c.nulls, offsets, Hand(c.values)));
    }
    nb::dict batch;
    batch["rows"] = m_rows;
    batch["columns"] = cols;
    Start();
    return batch;
}

nb::list ArrowSchema(std::span<const Column> columns)
{
    static constexpr const char* TYPES[] = {"int64", "float64", "bool", "string", "binary"};
    nb::list out;
    for (const Column& c : columns) out.append(nb::make_tuple(std::string(c.name), TYPES[std::size_t(c.type)], c.nullable));
    return out;
}

} // namespace ibdkit::py

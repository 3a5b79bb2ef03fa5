// ibdkit/tabular/table.h — STUB of the shared table writer's types (columns and the RowSink
// concept) until the coordinator's header lands on main; replaced by it on merge.
#pragma once

#include <concepts>
#include <cstdint>
#include <optional>
#include <span>
#include <string_view>

namespace ibdkit {

enum class ColumnType : uint8_t { Int, Real, Bool, Text, Blob };
struct Column {
    std::string_view name;
    ColumnType type;
    bool nullable{false};
};

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

} // namespace ibdkit

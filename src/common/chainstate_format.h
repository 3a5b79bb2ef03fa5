// src/common/chainstate_format.h — facts about the chainstates ibdkit writes that both the
// key-value layer (kv/, which writes them) and the write guards (common/write_guard.h, which
// recognise them) need. Below both on the floors, so neither repeats the other's constant.
#pragma once

#include <cstddef>

namespace ibdkit {

/// Bytes of a table block in the tables ibdkit writes (LevelDB's block_size; Core: 4 KiB, and its
/// LevelDB reads any size). A lookup reads, copies and checksums one whole block for one coin; every
/// open table keeps one index entry per block in memory, outside any cache, four times as many at
/// Core's size. Smaller blocks are faster where the cache has room and slower where the chainstate
/// is much larger than the cache, whose room the index then takes (docs/chainstate.md, *Table block
/// size*). The write guards also take a LevelDB of blocks this size, without ibdkit's mark, as one
/// ibdkit wrote.
inline constexpr std::size_t TABLE_BLOCK_BYTES = std::size_t{16} << 10;

} // namespace ibdkit

// Blocks with their spent outputs in the Python module (python/bindings/blocks.cpp): the reader
// behind read_blocks(..., spent_outputs=True), and the SpentBlock behind a Python Block, for the
// table code that feeds spent/tables.h's row producers into Arrow column builders.
#pragma once

#include <ibdkit/chain/params.h>
#include <ibdkit/spent/reader.h>
#include <ibdkit/spent/spent_block.h>

#include <nanobind/nanobind.h>

#include <memory>
#include <optional>
#include <string>

namespace ibdkit::py {

/// Blocks with their spent outputs in height order (a Core datadir's rev files, or blk files replayed).
class SpentReader {
public:
    SpentReader(const std::string& path, std::optional<std::string> network, std::optional<int> from_height,
                std::optional<int> to_height);
    /// The next block, read without the GIL; null after the last. Failures raise ibdkit.Error.
    std::shared_ptr<const SpentBlock> NextSpent();
    ChainType chain() const noexcept { return m_reader->chain(); }
    int first_height() const noexcept { return m_reader->first_height(); }
    int last_height() const noexcept { return m_reader->last_height(); }

private:
    std::unique_ptr<SpentBlockReader> m_reader;
};

/// The SpentBlock a Python ibdkit.Block carries (read with spent_outputs=True, or made by
/// Block.with_spent_outputs), or null when it has none (or `block` is not a Block).
std::shared_ptr<const SpentBlock> SpentOf(nanobind::handle block);

} // namespace ibdkit::py

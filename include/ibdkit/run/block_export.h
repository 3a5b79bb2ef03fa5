// ibdkit/run/block_export.h — one table of blocks with their spent outputs written to a file: the
// driver behind `ibdkit export` (docs/spent-outputs.md). It pulls the blocks from a
// SpentBlockReader (a datadir's rev files, or blk files replayed: spent/reader.h), turns each into
// the table's rows (spent/tables.h) and writes them through the shared table writer
// (tabular/table.h), which puts the file in place only once it is whole.
#pragma once

#include <ibdkit/error.h>
#include <ibdkit/spent/reader.h>
#include <ibdkit/spent/tables.h>
#include <ibdkit/tabular/table.h>

#include <cstdint>
#include <filesystem>
#include <functional>

namespace ibdkit::run {

/// Where a block-table export stands, after each block.
struct BlockExportProgress {
    int height{0};          ///< the block just written
    int first_height{0};    ///< the first block of the export
    int last_height{-1};    ///< the last, as far as the reader knows (-1: not known yet)
    uint64_t rows{0};       ///< rows written so far
    uint64_t block_bytes{0};///< serialized bytes of the blocks written so far
    double seconds{0};      ///< since the export started
};

struct BlockExportOptions {
    SpentReaderOptions reader; ///< the blocks: source, heights, the replay's budget
    BlockTable table{BlockTable::Blocks};
    TableFormat format{TableFormat::Csv};
    std::filesystem::path out; ///< the file, replaced only once complete (its folder must exist)
    /// Called on the calling thread after each block (empty: none).
    std::function<void(const BlockExportProgress&)> on_progress;
};

struct BlockExportResult {
    uint64_t rows{0};
    uint64_t blocks{0};
    int from_height{0};
    int to_height{-1}; ///< the last block written (-1: none)
    uint64_t block_bytes{0};
    double seconds{0};
};

/// Writes `options.table` of the blocks `options.reader` gives to `options.out` in
/// `options.format`. Errors: SpentBlockReader::Open's and Next's (the message then ends
/// "(nothing written to OUT)"), TableWriter::Create's, and a failed write (ending "(writing
/// OUT)"); on any error `out` is left as it was. Blocks the calling thread until done.
Result<BlockExportResult> ExportBlockTable(const BlockExportOptions& options);

} // namespace ibdkit::run

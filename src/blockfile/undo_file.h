// src/blockfile/undo_file.h — undo records in Bitcoin Core's rev files (revNNNNN.dat): reading
// them from a Core data directory, and writing them for blocks ibdkit connects.
//
// Record (docs/formats.md §6, Core's BlockManager::WriteBlockUndo): network magic[4] |
// size LE32 | undo bytes (coins/undo.h) | checksum[32], checksum = SHA256d(previous block hash ‖ undo
// bytes). A block's undo position (Core's nUndoPos) is the offset of its undo bytes, just after the
// 8-byte header. Core's files may be XORed with the blocks directory's xor.dat key (blockfile.h).
//
// The writer (docs/undo.md) puts records in Core's format into a directory of its own: revNNNNN.dat
// files of at most MAX_BLOCKFILE_SIZE bytes each, never obfuscated, plus `revindex.dat` — ibdkit's
// stand-in for the positions Core keeps in its block index: fixed 48-byte entries
// `block hash[32] | height LE32 | file LE32 | undo pos LE32 | undo size LE32`, appended only after
// the records they point to are durable (Sync). A later entry for the same block supersedes an
// earlier one. The writer refuses a directory that looks like Core's (blk files, an `index/`).
#pragma once

#include <ibdkit/blockfile/undo_reader.h> // UndoFileReader
#include <ibdkit/chain/params.h>
#include <ibdkit/coins/undo.h>
#include <ibdkit/error.h>
#include <ibdkit/primitives/hash.h>
#include <ibdkit/stream/obfuscation.h>

#include <array>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

namespace ibdkit {

/// Core's STORAGE_HEADER_BYTES (magic + size) and UNDO_DATA_DISK_OVERHEAD (header + checksum).
inline constexpr uint32_t UNDO_HEADER_BYTES = 8;
inline constexpr uint32_t UNDO_DATA_DISK_OVERHEAD = UNDO_HEADER_BYTES + 32;
/// A rev file the writer starts is not grown past Core's MAX_BLOCKFILE_SIZE (128 MiB).
inline constexpr uint64_t MAX_UNDOFILE_SIZE = 0x8000000;
/// Bytes of one revindex.dat entry.
inline constexpr std::size_t UNDO_INDEX_ENTRY_SIZE = 48;

/// SHA256d(prev ‖ undo bytes): the record's checksum (Core hashes the previous block's hash).
uint256 UndoChecksum(const BlockHash& prev, std::span<const uint8_t> undo_bytes) noexcept;

/// Appends a whole record (header, undo bytes, checksum) to `out`.
void AppendUndoRecord(std::vector<uint8_t>& out, const MessageStart& magic, const BlockHash& prev,
                      std::span<const uint8_t> undo_bytes);

/// DIR/revNNNNN.dat.
std::filesystem::path UndoFilePath(const std::filesystem::path& dir, uint32_t file);

/// Where a block's undo record is: rev file number, offset of the undo bytes (Core's nUndoPos) and
/// their size.
struct UndoPos {
    uint32_t file{0};
    uint32_t pos{0};
    uint32_t size{0};
    friend bool operator==(const UndoPos&, const UndoPos&) = default;
};

/// One revindex.dat entry.
struct UndoIndexEntry {
    BlockHash hash;
    int32_t height{0};
    UndoPos pos;
};

/// Every entry of DIR/revindex.dat in file order (a torn last entry is ignored). A missing index
/// is an empty list.
Result<std::vector<UndoIndexEntry>> ReadUndoIndex(const std::filesystem::path& dir);

/// A failure writing undo data (disk full, I/O error): an environment failure of the run.
class UndoWriteError : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

class BufferedFileWriter; // src/common/buffered_writer.h

/// Appends undo records to a directory of its own (see the header comment).
class UndoFileWriter {
public:
    /// Opens (creating) `dir` for appending. Errors: `dir` holds blk files or `index/` (a Core
    /// blocks directory, never written), or rev files without a revindex.dat (not a writer's).
    static Result<std::unique_ptr<UndoFileWriter>> Open(const std::filesystem::path& dir, const MessageStart& magic);
    ~UndoFileWriter();
    UndoFileWriter(const UndoFileWriter&) = delete;
    UndoFileWriter& operator=(const UndoFileWriter&) = delete;

    /// Appends the record of block `hash` at `height` whose parent is `prev`; returns where its undo
    /// bytes are. Buffered: durable after Sync(). Throws UndoWriteError on an I/O failure.
    UndoPos Write(const BlockHash& hash, int height, const BlockHash& prev, std::span<const uint8_t> undo_bytes);
    /// Writes buffered records, makes the rev files durable, then appends and syncs their index
    /// entries. Call before a chainstate flush that includes the blocks. Throws UndoWriteError.
    void Sync();
    /// Where the latest record of `hash` is (pending entries included), if any. Reads the index
    /// from its end: cheap for recent blocks.
    Result<std::optional<UndoPos>> Find(const BlockHash& hash);

    const std::filesystem::path& dir() const noexcept { return m_dir; }
    uint64_t records_written() const noexcept { return m_records; }
    uint64_t bytes_written() const noexcept { return m_bytes; }

private:
    UndoFileWriter();
    /// Throws UndoWriteError for a failed write or sync of `out`, which writes `path`.
    static void Check(bool ok, const BufferedFileWriter& out, const std::filesystem::path& path, const char* what);
    std::filesystem::path m_dir;
    MessageStart m_magic{};
    uint32_t m_file{0};
    uint64_t m_file_size{0};      ///< bytes of the current file, buffered ones included
    int m_fd{-1};                 ///< current rev file
    int m_index_fd{-1};
    std::unique_ptr<BufferedFileWriter> m_out;       ///< buffers records into m_fd
    std::unique_ptr<BufferedFileWriter> m_index_out; ///< index entries into m_index_fd
    std::vector<UndoIndexEntry> m_pending;
    uint64_t m_records{0}, m_bytes{0};
};

} // namespace ibdkit

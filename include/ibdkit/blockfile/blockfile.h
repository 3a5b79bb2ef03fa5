// ibdkit/blockfile/blockfile.h — Bitcoin Core's block files (blkNNNNN.dat), read-only.
//
// Format (docs/formats.md §6): records `magic[4] | size LE32 | block`, blocks in arrival order,
// pre-allocated zero tails; with Core ≥ 28 every byte of every file may be XORed with the 8-byte key in
// `xor.dat` at the byte's absolute file offset. Files are opened read-only and never written.
#pragma once

#include <ibdkit/run_stats.h>
#include <ibdkit/consensus/best_chain.h>
#include <ibdkit/error.h>
#include <ibdkit/primitives/hash.h>
#include <ibdkit/stream/obfuscation.h>

#include <array>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace ibdkit {

/// Reads DIR/xor.dat: the key, or a null key when the file is absent. A present file whose size is
/// not 8 bytes is an error (Errc::Corrupt).
Result<ObfuscationKey> ReadXorKey(const std::filesystem::path& blocks_dir);

/// blkNNNNN.dat files of a directory (or a single file path) in numeric order. Files of other names
/// are ignored; a plain file path is returned as the only element, a path that does not exist
/// gives none. A folder that cannot be listed whole (permissions, an I/O error midway) is
/// Errc::Io.
Result<std::vector<std::filesystem::path>> ListBlockFiles(const std::filesystem::path& dir_or_file);
/// A file of this name in a blocks directory says that its blk files are being written or that
/// their writer stopped before the end (`gen-chain` creates it before the first block file and
/// removes it after the last one is durable). Core never writes it.
inline constexpr const char* INCOMPLETE_BLOCKS_MARKER = "gen-chain.incomplete";
/// An error (Errc::InvalidValue, saying to rerun gen-chain) if the blocks directory of `dir_or_file`
/// (the directory itself, or the directory holding the one blk file) holds
/// INCOMPLETE_BLOCKS_MARKER; nullopt otherwise.
std::optional<Error> CheckBlocksComplete(const std::filesystem::path& dir_or_file);
/// Core's MAX_BLOCKFILE_SIZE: a blk or rev file is not grown past 128 MiB (a writer starts the next
/// file before a record would take it past this).
inline constexpr uint64_t MAX_BLOCKFILE_SIZE = 0x8000000;
/// `dir`/blkNNNNN.dat, Core's name of block file `n` (five digits at least).
std::filesystem::path BlockFilePath(const std::filesystem::path& dir, int n);

/// Where a record was found.
struct BlockRecordPos {
    uint32_t file{0};   ///< index into the list of files
    uint64_t offset{0}; ///< offset of the block bytes (after magic and size) in that file
    uint32_t size{0};
};

/// Size of what a scan reads of each record: magic, size and the 80-byte header.
inline constexpr std::size_t RECORD_PREFIX_SIZE = 8 + 80;

/// Scans framed records in the given files in order, reading only each record's first 88 bytes
/// (magic, size, header) and seeking past the block's body: no file is ever held in memory. For each
/// record, calls `fn(pos, header)`; the span is valid only during the call. Garbage between records
/// is skipped by searching for the next magic (as Core's LoadExternalBlockFile does); a zero run
/// ends a file; a record running past the end of its file is counted as truncated. Returns an
/// environment error if a file cannot be read.
Result<BlockFileScanStats> ScanBlockFiles(const std::vector<std::filesystem::path>& files,
                                          std::span<const uint8_t, 4> magic, const ObfuscationKey& key,
                                          const std::function<void(const BlockRecordPos&, std::span<const uint8_t, 80>)>& fn);

class OpenFiles; // blockfile/open_files.h (internal)

/// Random reads of block records: keeps the files it reads open (read-only; at most 64 at once,
/// or KeepOpenAtMost's count, the one read least recently closed first), reads a record's block bytes into a caller's buffer, deobfuscates them,
/// and counts every byte it reads from disk.
class BlockFileReader {
public:
    BlockFileReader(std::vector<std::filesystem::path> files, const ObfuscationKey& key);
    ~BlockFileReader();
    BlockFileReader(const BlockFileReader&) = delete;
    BlockFileReader& operator=(const BlockFileReader&) = delete;

    /// Reads the record's block bytes into `dst` (resized to pos.size; any buffer with resize() and
    /// data() of 1-byte elements: std::vector<uint8_t>, DataStream<Policy>, ...). A record running
    /// past the end of its file is Errc::EndOfData; an unopenable file Errc::Corrupt. Returns pos.size.
    template <typename Buffer>
    Result<std::size_t> Read(const BlockRecordPos& pos, Buffer& dst)
    {
        static_assert(sizeof(*dst.data()) == 1);
        dst.resize(pos.size);
        return ReadInto(pos.file, pos.offset, std::span<std::byte>(reinterpret_cast<std::byte*>(dst.data()), pos.size));
    }
    /// The record's block bytes as a new vector.
    Result<std::vector<uint8_t>> Read(const BlockRecordPos& pos);
    /// Reads `dst.size()` deobfuscated bytes at `offset` of file `file` (an index into the list);
    /// returns the count read.
    Result<std::size_t> ReadInto(uint32_t file, uint64_t offset, std::span<std::byte> dst);
    /// The record framing just before a block's data position (magic and size at offset - 8): the
    /// record's position with its size. Errc::BadMagic if the magic is not `magic`.
    Result<BlockRecordPos> ReadFrame(uint32_t file, uint64_t data_offset, std::span<const uint8_t, 4> magic);

    /// From here on at most `n` (≥ 1) files are open at once: opening another closes the one read
    /// least recently. A reader per connection of a server keeps one: each reads the whole chain.
    void KeepOpenAtMost(std::size_t n);

    /// Bytes read from disk so far (block bytes and frames).
    uint64_t bytes_read() const noexcept { return m_bytes_read; }
    const std::vector<std::filesystem::path>& files() const noexcept { return m_files; }

private:
    std::vector<std::filesystem::path> m_files;
    ObfuscationKey m_key;
    std::unique_ptr<OpenFiles> m_open;
    uint64_t m_bytes_read{0};
};

/// The best chain through a set of scanned headers.
struct ChainOrder {
    std::vector<BlockRecordPos> blocks; ///< genesis (or first known) first, tip last
    std::vector<BlockHash> hashes;      ///< hashes of `blocks`, same order
    uint64_t orphans{0};                ///< blocks whose ancestry does not reach the genesis
    uint64_t stale{0};                  ///< blocks connected to the genesis but not on the best chain
    uint64_t duplicates{0};             ///< records of a block already seen
};

/// Orders scanned blocks into the most-work chain from `genesis` (consensus/best_chain.h; ties: the
/// first seen). Input: each record's position and 80-byte header.
class ChainOrderer {
public:
    explicit ChainOrderer(const BlockHash& genesis) : m_genesis(genesis) {}
    /// Adds a block by its header (the first 80 bytes of the block).
    void Add(const BlockRecordPos& pos, std::span<const uint8_t, 80> header);
    ChainOrder Finish() const;

private:
    BlockHash m_genesis;
    std::vector<BlockRecordPos> m_positions;
    std::vector<ChainCandidate> m_headers; ///< same order as m_positions
};

} // namespace ibdkit

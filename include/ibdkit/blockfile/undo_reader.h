// ibdkit/blockfile/undo_reader.h — a block's undo record read from Bitcoin Core's rev files.
//
// A record (docs/formats.md §6): network magic[4] | size LE32 | undo bytes (coins/undo.h) |
// checksum[32] = SHA256d(previous block hash ‖ undo bytes). Where each block's record is comes
// from Core's block index (LocateUndoInDatadir, blockfile/locate.h) or ibdkit's undo folder.
#pragma once

#include <ibdkit/chain/params.h>
#include <ibdkit/coins/undo.h>
#include <ibdkit/error.h>
#include <ibdkit/primitives/hash.h>
#include <ibdkit/stream/obfuscation.h>

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <span>
#include <vector>

namespace ibdkit {

class OpenFiles; // blockfile/open_files.h (internal)

/// Random reads of undo records from the rev files of a directory (Core's blocks directory, or
/// ibdkit's undo folder): files opened read-only on first use and kept open until 64 others (or
/// KeepOpenAtMost's count) were read since, or the reader goes,
/// deobfuscated with `key` (a Core blocks directory's xor.dat; zero for ibdkit's). Nothing is
/// written. One reader serves one thread at a time; readers of one directory may run at once.
class UndoFileReader {
public:
    /// A reader of `dir`'s revNNNNN.dat files whose records start with `magic` (the network's
    /// message start). Opens nothing yet.
    UndoFileReader(std::filesystem::path dir, const ObfuscationKey& key, const MessageStart& magic);
    ~UndoFileReader();
    UndoFileReader(const UndoFileReader&) = delete;
    UndoFileReader& operator=(const UndoFileReader&) = delete;

    /// The undo bytes of the record whose undo bytes start at `pos` in rev file `file`, checked:
    /// magic (Errc::BadMagic), the declared size against what the file holds (Errc::EndOfData; the
    /// buffer grows in bounded batches as bytes arrive, never to a size the file only claims), and
    /// the checksum against `prev`, the previous block's hash (Errc::BadChecksum). An unreadable
    /// file is Errc::Corrupt naming it.
    Result<std::vector<uint8_t>> ReadBytes(uint32_t file, uint32_t pos, const BlockHash& prev);
    /// ReadBytes, then DecodeBlockUndo.
    Result<BlockUndo> Read(uint32_t file, uint32_t pos, const BlockHash& prev);

    /// From here on at most `n` (≥ 1) files are open at once: opening another closes the one read
    /// least recently (BlockFileReader::KeepOpenAtMost, for a server's reader per connection).
    void KeepOpenAtMost(std::size_t n);

    /// Bytes read from the rev files so far (headers and checksums included).
    uint64_t bytes_read() const noexcept { return m_bytes_read; }

private:
    Result<std::size_t> ReadAt(uint32_t file, uint64_t offset, std::span<std::byte> dst);
    std::filesystem::path m_dir;
    ObfuscationKey m_key;
    MessageStart m_magic;
    std::unique_ptr<OpenFiles> m_open;
    uint64_t m_bytes_read{0};
};

} // namespace ibdkit

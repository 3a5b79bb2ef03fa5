// src/blockfile/block_file_writer.h (internal) — block files written as Core writes them: records
// of magic, size and block, obfuscated with the directory's key, in blkNNNNN.dat files of at most
// a given size (BlockFilePath), through the one buffered writer (common/buffered_writer.h). Each
// file is fsynced when closed, so that the generator (src/gen/, which writes through it) removes
// its incomplete-chain marker (INCOMPLETE_BLOCKS_MARKER) only over durable files.
#pragma once

#include "common/buffered_writer.h"

#include <ibdkit/blockfile/blockfile.h>
#include <ibdkit/stream/obfuscation.h>

#include <array>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <span>
#include <string>
#include <vector>

namespace ibdkit {

class BlockFileWriter {
public:
    /// Writes into `dir` from blk00000.dat on, records framed with `magic`, a file closed once the
    /// next record would take it past `max_size` (a record larger than that gets a file of its own).
    BlockFileWriter(std::filesystem::path dir, const std::array<uint8_t, 4>& magic, const ObfuscationKey& key, uint64_t max_size);
    ~BlockFileWriter() { Close(); }
    BlockFileWriter(const BlockFileWriter&) = delete;
    BlockFileWriter& operator=(const BlockFileWriter&) = delete;

    /// Appends one record; false (with *err set) on an I/O failure.
    bool Write(std::span<const uint8_t> block, std::string* err);
    /// Appends one record whose block is already in `recbuf` after 8 bytes of room for the magic
    /// and size (filled in here; `recbuf` is obfuscated in place).
    bool WriteFramed(std::vector<uint8_t>& recbuf, std::string* err);
    /// Closes the current file; false (with *err set when given) if that failed.
    bool Close(std::string* err = nullptr);
    uint64_t total() const noexcept { return m_total; }
    int files() const noexcept { return m_files; }

private:
    std::filesystem::path m_dir;
    std::array<uint8_t, 4> m_magic;
    ObfuscationKey m_key;
    uint64_t m_max;
    std::unique_ptr<File> m_file;               ///< the current blk file
    std::unique_ptr<BufferedFileWriter> m_out;  ///< buffers into m_file
    std::filesystem::path m_path;
    int m_index{0};
    int m_files{0};
    uint64_t m_offset{0};
    uint64_t m_total{0};
    std::vector<uint8_t> m_buf;
};

} // namespace ibdkit

// BlockFileWriter (block_file_writer.h).
#include "blockfile/block_file_writer.h"

#include <cstring>

namespace ibdkit {

BlockFileWriter::BlockFileWriter(std::filesystem::path dir, const std::array<uint8_t, 4>& magic, const ObfuscationKey& key,
                                 uint64_t max_size)
    : m_dir(std::move(dir)), m_magic(magic), m_key(key), m_max(max_size)
{
}

bool BlockFileWriter::Write(std::span<const uint8_t> block, std::string* err)
{
    m_buf.resize(8 + block.size());
    std::memcpy(m_buf.data() + 8, block.data(), block.size());
    return WriteFramed(m_buf, err);
}

bool BlockFileWriter::WriteFramed(std::vector<uint8_t>& recbuf, std::string* err)
{
    const uint64_t rec = recbuf.size();
    if (m_file && m_offset + rec > m_max && m_offset > 0) {
        if (!Close(err)) return false;
        ++m_index;
    }
    if (!m_file) {
        m_path = BlockFilePath(m_dir, m_index);
        m_file = std::make_unique<File>(m_path, "wb");
        if (!m_file->get()) {
            m_file.reset();
            *err = m_path.string() + ": cannot open for writing";
            return false;
        }
        // The replay that follows reads these files: their pages stay cached.
        m_out = std::make_unique<BufferedFileWriter>(m_file->get(), false);
        m_offset = 0;
        ++m_files;
    }
    std::memcpy(recbuf.data(), m_magic.data(), 4);
    const uint32_t size = uint32_t(rec - 8);
    for (int i = 0; i < 4; ++i) recbuf[4 + std::size_t(i)] = uint8_t(size >> (8 * i));
    XorBytes(std::span<std::byte>(reinterpret_cast<std::byte*>(recbuf.data()), recbuf.size()), m_key, std::size_t(m_offset));
    m_out->write(std::as_bytes(std::span<const uint8_t>(recbuf)));
    if (!m_out->ok()) {
        *err = m_path.string() + ": write failed: " + std::strerror(m_out->Errno());
        return false;
    }
    m_offset += rec;
    m_total += rec;
    return true;
}

bool BlockFileWriter::Close(std::string* err)
{
    if (!m_file) return true;
    const bool drained = m_out->Drain();
    const int write_errno = m_out->Errno();
    m_out.reset();
    // Durable before the generator declares the chain complete (INCOMPLETE_BLOCKS_MARKER).
    const bool closed = m_file->Close(/*fsync=*/true);
    m_file.reset();
    if (err && !drained) *err = m_path.string() + ": write failed: " + std::strerror(write_errno);
    if (err && drained && !closed) *err = m_path.string() + ": close failed";
    return drained && closed;
}

} // namespace ibdkit

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
        m_file = std::fopen(m_path.c_str(), "wb");
        if (!m_file) {
            *err = m_path.string() + ": cannot open for writing";
            return false;
        }
        std::setvbuf(m_file, nullptr, _IOFBF, 1 << 20);
        m_offset = 0;
        ++m_files;
    }
    std::memcpy(recbuf.data(), m_magic.data(), 4);
    const uint32_t size = uint32_t(rec - 8);
    for (int i = 0; i < 4; ++i) recbuf[4 + std::size_t(i)] = uint8_t(size >> (8 * i));
    XorBytes(std::span<std::byte>(reinterpret_cast<std::byte*>(recbuf.data()), recbuf.size()), m_key, std::size_t(m_offset));
    if (std::fwrite(recbuf.data(), 1, recbuf.size(), m_file) != recbuf.size()) {
        *err = m_path.string() + ": write failed";
        return false;
    }
    m_offset += rec;
    m_total += rec;
    return true;
}

bool BlockFileWriter::Close(std::string* err)
{
    if (!m_file) return true;
    const bool ok = std::fclose(m_file) == 0;
    m_file = nullptr;
    if (!ok && err) *err = m_path.string() + ": close failed";
    return ok;
}

} // namespace ibdkit

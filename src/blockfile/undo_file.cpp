#include "blockfile/undo_file.h"

#include "blockfile/open_files.h"
#include "common/buffered_writer.h"
#include "common/pread.h"

#include <ibdkit/common/write_guard.h>
#include <ibdkit/crypto/sha256.h>
#include <ibdkit/encoding/endian.h>
#include <ibdkit/encoding/serialize.h>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>

namespace ibdkit {

namespace {

constexpr const char* INDEX_NAME = "revindex.dat";
Error FileError(const std::filesystem::path& p, const std::string& what)
{
    return Error{Errc::Corrupt, p.string() + ": " + what};
}

// revNNNNN.dat → NNNNN; nullopt for other names.
std::optional<uint32_t> RevFileNumber(const std::string& name)
{
    if (name.size() != 12 || name.compare(0, 3, "rev") != 0 || name.compare(8, 4, ".dat") != 0) return std::nullopt;
    uint32_t n = 0;
    for (std::size_t i = 3; i < 8; ++i) {
        if (name[i] < '0' || name[i] > '9') return std::nullopt;
        n = n * 10 + uint32_t(name[i] - '0');
    }
    return n;
}

void EncodeIndexEntry(uint8_t* out, const UndoIndexEntry& e)
{
    std::memcpy(out, e.hash.data(), 32);
    WriteLE32(out + 32, uint32_t(e.height));
    WriteLE32(out + 36, e.pos.file);
    WriteLE32(out + 40, e.pos.pos);
    WriteLE32(out + 44, e.pos.size);
}

UndoIndexEntry DecodeIndexEntry(const uint8_t* in)
{
    UndoIndexEntry e;
    e.hash = BlockHash(uint256(std::span<const uint8_t, 32>(in, 32)));
    e.height = int32_t(ReadLE32(in + 32));
    e.pos.file = ReadLE32(in + 36);
    e.pos.pos = ReadLE32(in + 40);
    e.pos.size = ReadLE32(in + 44);
    return e;
}

} // namespace

uint256 UndoChecksum(const BlockHash& prev, std::span<const uint8_t> undo_bytes) noexcept
{
    Sha256d h;
    h.Write(std::span<const uint8_t>(prev.data(), 32));
    h.Write(undo_bytes);
    uint256 out;
    h.Finalize(out.data());
    return out;
}

namespace {

/// A record's header: the network's magic and the undo bytes' size.
void EncodeUndoHeader(uint8_t* out, const MessageStart& magic, std::size_t undo_size)
{
    std::memcpy(out, magic.data(), 4);
    WriteLE32(out + 4, uint32_t(undo_size));
}

/// AppendUndoRecord into the writer; false once a write failed.
bool PutUndoRecord(BufferedFileWriter& out, const MessageStart& magic, const BlockHash& prev, std::span<const uint8_t> undo_bytes)
{
    if (!out.Room(UNDO_HEADER_BYTES + undo_bytes.size() + 32)) return false;
    uint8_t header[UNDO_HEADER_BYTES];
    EncodeUndoHeader(header, magic, undo_bytes.size());
    out.Put(reinterpret_cast<const char*>(header), sizeof header);
    if (!undo_bytes.empty()) out.Put(reinterpret_cast<const char*>(undo_bytes.data()), undo_bytes.size());
    const uint256 sum = UndoChecksum(prev, undo_bytes);
    out.Put(reinterpret_cast<const char*>(sum.data()), 32);
    return true;
}

} // namespace

void AppendUndoRecord(std::vector<uint8_t>& out, const MessageStart& magic, const BlockHash& prev,
                      std::span<const uint8_t> undo_bytes)
{
    const std::size_t at = out.size();
    out.resize(at + UNDO_HEADER_BYTES + undo_bytes.size() + 32);
    uint8_t* p = out.data() + at;
    EncodeUndoHeader(p, magic, undo_bytes.size());
    if (!undo_bytes.empty()) std::memcpy(p + 8, undo_bytes.data(), undo_bytes.size());
    const uint256 sum = UndoChecksum(prev, undo_bytes);
    std::memcpy(p + 8 + undo_bytes.size(), sum.data(), 32);
}

std::filesystem::path UndoFilePath(const std::filesystem::path& dir, uint32_t file)
{
    char name[32];
    std::snprintf(name, sizeof name, "rev%05u.dat", file);
    return dir / name;
}

// ---- reader ---------------------------------------------------------------------------------------

UndoFileReader::UndoFileReader(std::filesystem::path dir, const ObfuscationKey& key, const MessageStart& magic)
    : m_dir(std::move(dir)), m_key(key), m_magic(magic), m_open(std::make_unique<OpenFiles>())
{
}

UndoFileReader::~UndoFileReader() = default;

void UndoFileReader::KeepOpenAtMost(std::size_t n) { m_open->KeepOpenAtMost(n); }

Result<std::size_t> UndoFileReader::ReadAt(uint32_t file, uint64_t offset, std::span<std::byte> dst)
{
    const int fd = m_open->Get(file, [&] { return UndoFilePath(m_dir, file); });
    if (fd < 0) return FileError(UndoFilePath(m_dir, file), std::string("cannot open for reading: ") + std::strerror(errno));
    const ssize_t r = PreadFull(fd, dst.data(), dst.size(), offset);
    if (r < 0) return FileError(UndoFilePath(m_dir, file), std::string("read failed: ") + std::strerror(errno));
    m_bytes_read += uint64_t(r);
    XorBytes(dst.first(std::size_t(r)), m_key, std::size_t(offset));
    return std::size_t(r);
}

Result<std::vector<uint8_t>> UndoFileReader::ReadBytes(uint32_t file, uint32_t pos, const BlockHash& prev)
{
    const auto where = [&] { return UndoFilePath(m_dir, file).string() + " at " + std::to_string(pos); };
    if (pos < UNDO_HEADER_BYTES) return Error{Errc::Corrupt, where() + ": undo position leaves no room for the record header"};
    std::array<std::byte, UNDO_HEADER_BYTES> header;
    auto r = ReadAt(file, pos - UNDO_HEADER_BYTES, header);
    if (!r) return r.error();
    if (*r != header.size()) return Error{Errc::EndOfData, where() + ": undo record header runs past the end of the file"};
    if (std::memcmp(header.data(), m_magic.data(), 4) != 0) return Error{Errc::BadMagic, where() + ": no undo record magic"};
    const uint32_t size = ReadLE32(header.data() + 4);
    // Undo bytes then the checksum, read in bounded batches: a size the file does not back costs
    // at most one batch of memory.
    const uint64_t total = uint64_t(size) + 32;
    std::vector<uint8_t> buf;
    uint64_t done = 0;
    while (done < total) {
        const std::size_t batch = std::size_t(std::min<uint64_t>(total - done, MAX_VECTOR_ALLOCATE));
        buf.resize(std::size_t(done) + batch);
        auto got = ReadAt(file, uint64_t(pos) + done, MakeWritableByteSpan(std::span(buf.data() + done, batch)));
        if (!got) return got.error();
        if (*got != batch) return Error{Errc::EndOfData, where() + ": undo record of " + std::to_string(size) + " bytes runs past the end of the file"};
        done += batch;
    }
    const std::span<const uint8_t> undo(buf.data(), size);
    const uint256 sum = UndoChecksum(prev, undo);
    if (std::memcmp(sum.data(), buf.data() + size, 32) != 0) {
        return Error{Errc::BadChecksum, where() + ": undo checksum mismatch (wrong block or corrupt record)"};
    }
    buf.resize(size);
    return buf;
}

Result<BlockUndo> UndoFileReader::Read(uint32_t file, uint32_t pos, const BlockHash& prev)
{
    auto bytes = ReadBytes(file, pos, prev);
    if (!bytes) return bytes.error();
    auto undo = DecodeBlockUndo(*bytes);
    if (!undo) return Error{undo.error().code, UndoFilePath(m_dir, file).string() + " at " + std::to_string(pos) + ": " + undo.error().message};
    return undo;
}

// ---- index ----------------------------------------------------------------------------------------

Result<std::vector<UndoIndexEntry>> ReadUndoIndex(const std::filesystem::path& dir)
{
    const auto p = dir / INDEX_NAME;
    std::vector<UndoIndexEntry> out;
    const int fd = ::open(p.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        if (errno == ENOENT) return out;
        return FileError(p, std::string("cannot open for reading: ") + std::strerror(errno));
    }
    std::vector<uint8_t> chunk(UNDO_INDEX_ENTRY_SIZE * 4096);
    uint64_t offset = 0;
    for (;;) {
        const ssize_t r = PreadFull(fd, chunk.data(), chunk.size(), offset);
        if (r < 0) {
            ::close(fd);
            return FileError(p, std::string("read failed: ") + std::strerror(errno));
        }
        const std::size_t whole = std::size_t(r) / UNDO_INDEX_ENTRY_SIZE;
        for (std::size_t i = 0; i < whole; ++i) out.push_back(DecodeIndexEntry(chunk.data() + i * UNDO_INDEX_ENTRY_SIZE));
        offset += whole * UNDO_INDEX_ENTRY_SIZE;
        if (std::size_t(r) < chunk.size()) break;
    }
    ::close(fd);
    return out;
}

// ---- writer ---------------------------------------------------------------------------------------

Result<std::unique_ptr<UndoFileWriter>> UndoFileWriter::Open(const std::filesystem::path& dir, const MessageStart& magic)
{
    if (auto refused = CheckUndoDirWritable(dir)) return *refused;
    std::error_code ec;
    std::filesystem::create_directories(dir, ec);
    if (ec) return FileError(dir, "cannot create the undo directory: " + ec.message());
    std::optional<uint32_t> last_file;
    bool core_like = std::filesystem::exists(dir / "index", ec);
    for (const auto& entry : std::filesystem::directory_iterator(dir, ec)) {
        const std::string name = entry.path().filename().string();
        if (name.size() == 12 && name.compare(0, 3, "blk") == 0) core_like = true;
        if (auto n = RevFileNumber(name)) last_file = std::max(last_file.value_or(0), *n);
    }
    if (ec) return FileError(dir, "cannot list the undo directory: " + ec.message());
    if (core_like) {
        return Error{Errc::InvalidValue, dir.string() + " looks like a Bitcoin Core blocks directory (blk files or index/): "
                                                        "ibdkit never writes there; give --undo a directory of its own"};
    }
    const bool has_index = std::filesystem::exists(dir / INDEX_NAME, ec);
    if (last_file && !has_index) {
        return Error{Errc::InvalidValue, dir.string() + " holds rev files without ibdkit's " + INDEX_NAME +
                                             ": not an ibdkit undo directory; give --undo a directory of its own"};
    }
    std::unique_ptr<UndoFileWriter> w(new UndoFileWriter());
    w->m_dir = dir;
    w->m_magic = magic;
    w->m_file = last_file.value_or(0);
    const auto rev = UndoFilePath(dir, w->m_file);
    w->m_fd = ::open(rev.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (w->m_fd < 0) return FileError(rev, std::string("cannot open for appending: ") + std::strerror(errno));
    struct stat st{};
    if (::fstat(w->m_fd, &st) != 0) return FileError(rev, std::string("cannot stat: ") + std::strerror(errno));
    w->m_file_size = uint64_t(st.st_size);
    const auto idx = dir / INDEX_NAME;
    w->m_index_fd = ::open(idx.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (w->m_index_fd < 0) return FileError(idx, std::string("cannot open: ") + std::strerror(errno));
    if (::fstat(w->m_index_fd, &st) != 0) return FileError(idx, std::string("cannot stat: ") + std::strerror(errno));
    // A torn last entry (a crash while appending) is cut off.
    const off_t whole = off_t(uint64_t(st.st_size) / UNDO_INDEX_ENTRY_SIZE * UNDO_INDEX_ENTRY_SIZE);
    if (whole != st.st_size && ::ftruncate(w->m_index_fd, whole) != 0) {
        return FileError(idx, std::string("cannot truncate a torn entry: ") + std::strerror(errno));
    }
    if (::lseek(w->m_index_fd, whole, SEEK_SET) < 0) return FileError(idx, std::string("cannot seek: ") + std::strerror(errno));
    // Rev files and the index are read back (a reorganisation, the next run): their pages stay cached.
    w->m_out = std::make_unique<BufferedFileWriter>(w->m_fd, false);
    w->m_index_out = std::make_unique<BufferedFileWriter>(w->m_index_fd, false);
    return w;
}

UndoFileWriter::UndoFileWriter() = default;

void UndoFileWriter::Check(bool ok, const BufferedFileWriter& out, const std::filesystem::path& path, const char* what)
{
    if (!ok) throw UndoWriteError(path.string() + ": " + what + " failed: " + std::strerror(out.Errno()));
}

UndoFileWriter::~UndoFileWriter()
{
    try {
        Sync();
    } catch (const UndoWriteError&) {
        // Unsynced records are not indexed: the next run writes them again.
    }
    if (m_fd >= 0) ::close(m_fd);
    if (m_index_fd >= 0) ::close(m_index_fd);
}

UndoPos UndoFileWriter::Write(const BlockHash& hash, int height, const BlockHash& prev, std::span<const uint8_t> undo_bytes)
{
    const uint64_t record = uint64_t(undo_bytes.size()) + UNDO_DATA_DISK_OVERHEAD;
    if (m_file_size > 0 && m_file_size + record > MAX_UNDOFILE_SIZE) {
        // The next file: the full one is made durable before it is closed.
        Check(m_out->DrainAndSync(), *m_out, UndoFilePath(m_dir, m_file), "write or fdatasync");
        m_out.reset();
        ::close(m_fd);
        ++m_file;
        const auto rev = UndoFilePath(m_dir, m_file);
        m_fd = ::open(rev.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_APPEND | O_CLOEXEC, 0644);
        if (m_fd < 0) throw UndoWriteError(rev.string() + ": cannot create: " + std::strerror(errno));
        m_out = std::make_unique<BufferedFileWriter>(m_fd, false);
        m_file_size = 0;
    }
    const UndoPos pos{m_file, uint32_t(m_file_size + UNDO_HEADER_BYTES), uint32_t(undo_bytes.size())};
    Check(PutUndoRecord(*m_out, m_magic, prev, undo_bytes), *m_out, UndoFilePath(m_dir, m_file), "write");
    m_file_size += record;
    m_pending.push_back({hash, int32_t(height), pos});
    ++m_records;
    m_bytes += record;
    return pos;
}

void UndoFileWriter::Sync()
{
    if (m_fd < 0 || !m_out) return;
    if (m_out->Buffered() == 0 && m_pending.empty()) return;
    Check(m_out->DrainAndSync(), *m_out, UndoFilePath(m_dir, m_file), "write or fdatasync");
    if (m_pending.empty()) return;
    uint8_t entry[UNDO_INDEX_ENTRY_SIZE];
    for (const UndoIndexEntry& e : m_pending) {
        EncodeIndexEntry(entry, e);
        m_index_out->write(std::as_bytes(std::span<const uint8_t>(entry)));
    }
    Check(m_index_out->DrainAndSync(), *m_index_out, m_dir / INDEX_NAME, "write or fdatasync");
    m_pending.clear();
}

Result<std::optional<UndoPos>> UndoFileWriter::Find(const BlockHash& hash)
{
    for (auto it = m_pending.rbegin(); it != m_pending.rend(); ++it) {
        if (it->hash == hash) return std::optional<UndoPos>(it->pos);
    }
    const auto idx = m_dir / INDEX_NAME;
    struct stat st{};
    if (::fstat(m_index_fd, &st) != 0) return FileError(idx, std::string("cannot stat: ") + std::strerror(errno));
    // From the end backwards, a chunk of entries at a time.
    constexpr std::size_t CHUNK = 1024;
    std::vector<uint8_t> chunk(CHUNK * UNDO_INDEX_ENTRY_SIZE);
    uint64_t end = uint64_t(st.st_size) / UNDO_INDEX_ENTRY_SIZE;
    while (end > 0) {
        const uint64_t begin = end > CHUNK ? end - CHUNK : 0;
        const std::size_t n = std::size_t(end - begin);
        const ssize_t r = PreadFull(m_index_fd, chunk.data(), n * UNDO_INDEX_ENTRY_SIZE, begin * UNDO_INDEX_ENTRY_SIZE);
        if (r != ssize_t(n * UNDO_INDEX_ENTRY_SIZE)) return FileError(idx, "read failed");
        for (std::size_t i = n; i-- > 0;) {
            const uint8_t* e = chunk.data() + i * UNDO_INDEX_ENTRY_SIZE;
            if (std::memcmp(e, hash.data(), 32) == 0) return std::optional<UndoPos>(DecodeIndexEntry(e).pos);
        }
        end = begin;
    }
    return std::optional<UndoPos>();
}

} // namespace ibdkit

#include <ibdkit/blockfile/blockfile.h>

#include "blockfile/open_files.h"
#include "common/pread.h"

#include <ibdkit/encoding/endian.h>
#include <ibdkit/span.h>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <charconv>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <regex>
#include <utility>

namespace ibdkit {

namespace {

// Core's MAX_BLOCK_SERIALIZED_SIZE: no record larger than this is a block.
constexpr uint32_t MAX_RECORD_SIZE = 4'000'000;
constexpr uint32_t MIN_RECORD_SIZE = 80;

Error EnvError(const std::filesystem::path& p, const std::string& what)
{
    return Error{Errc::Corrupt, p.string() + ": " + what};
}

// Reads a whole file read-only.
Result<std::vector<uint8_t>> ReadWholeFile(const std::filesystem::path& p)
{
    std::ifstream f(p, std::ios::binary);
    if (!f) return EnvError(p, "cannot open for reading");
    f.seekg(0, std::ios::end);
    const auto size = f.tellg();
    if (size < 0) return EnvError(p, "cannot determine size");
    std::vector<uint8_t> buf(static_cast<std::size_t>(size));
    f.seekg(0);
    if (!buf.empty() && !f.read(reinterpret_cast<char*>(buf.data()), size)) return EnvError(p, "read failed");
    return buf;
}

} // namespace

Result<ObfuscationKey> ReadXorKey(const std::filesystem::path& blocks_dir)
{
    const auto p = blocks_dir / "xor.dat";
    std::error_code ec;
    if (!std::filesystem::exists(p, ec)) return ObfuscationKey{};
    auto bytes = ReadWholeFile(p);
    if (!bytes) return bytes.error();
    if (bytes->size() != 8) {
        return Error{Errc::Corrupt, p.string() + ": xor.dat must hold exactly 8 bytes, found " + std::to_string(bytes->size())};
    }
    ObfuscationKey key;
    std::memcpy(key.bytes.data(), bytes->data(), 8);
    return key;
}

std::filesystem::path BlockFilePath(const std::filesystem::path& dir, int n)
{
    char name[32];
    std::snprintf(name, sizeof name, "blk%05d.dat", n);
    return dir / name;
}

Result<std::vector<std::filesystem::path>> ListBlockFiles(const std::filesystem::path& dir_or_file)
{
    std::error_code ec;
    if (std::filesystem::is_regular_file(dir_or_file, ec)) return std::vector<std::filesystem::path>{dir_or_file};
    std::vector<std::pair<uint64_t, std::filesystem::path>> found;
    static const std::regex name(R"(blk(\d{5,})\.dat)");
    // The non-throwing forms throughout: a file that vanishes or cannot be typed while the folder
    // is listed is passed over, and a number too long for 64 bits names no file Core writes
    // (blk%05u.dat); a folder that cannot be listed whole is an error, never a shorter chain.
    std::filesystem::directory_iterator it(dir_or_file, ec), end;
    if (ec == std::errc::no_such_file_or_directory || ec == std::errc::not_a_directory) {
        return std::vector<std::filesystem::path>{};
    }
    for (; !ec && it != end; it.increment(ec)) {
        std::smatch m;
        const std::string fn = it->path().filename().string();
        std::error_code type_ec;
        if (!it->is_regular_file(type_ec) || !std::regex_match(fn, m, name)) continue;
        uint64_t n = 0;
        const std::string digits = m[1];
        const auto [end_ptr, parse_ec] = std::from_chars(digits.data(), digits.data() + digits.size(), n);
        if (parse_ec == std::errc() && end_ptr == digits.data() + digits.size()) found.emplace_back(n, it->path());
    }
    if (ec) return Error{Errc::Io, "cannot list the blk files of " + dir_or_file.string() + ": " + ec.message()};
    std::sort(found.begin(), found.end());
    std::vector<std::filesystem::path> out;
    for (auto& f : found) out.push_back(std::move(f.second));
    return out;
}

std::optional<Error> CheckBlocksComplete(const std::filesystem::path& dir_or_file)
{
    std::error_code ec;
    const auto dir = std::filesystem::is_directory(dir_or_file, ec) ? dir_or_file : dir_or_file.parent_path();
    const auto marker = dir / INCOMPLETE_BLOCKS_MARKER;
    if (!std::filesystem::exists(marker, ec)) return std::nullopt;
    const std::string out = dir.filename() == "blocks" ? dir.parent_path().string() : dir.string();
    return Error{Errc::InvalidValue, dir.string() + " holds an incomplete generated chain (" + marker.string() +
                                         ": gen-chain was interrupted or is still running); rerun `ibdkit gen-chain --out " +
                                         out + "` with the same options"};
}

namespace {

/// A read-only file descriptor, closed on scope exit.
struct Fd {
    int fd{-1};
    explicit Fd(const std::filesystem::path& p) : fd(::open(p.c_str(), O_RDONLY | O_CLOEXEC)) {}
    ~Fd()
    {
        if (fd >= 0) ::close(fd);
    }
    Fd(const Fd&) = delete;
    Fd& operator=(const Fd&) = delete;
};

// Resynchronisation reads this much at a time.
constexpr std::size_t SCAN_CHUNK = 256 * 1024;

} // namespace

Result<BlockFileScanStats> ScanBlockFiles(const std::vector<std::filesystem::path>& files,
                                          std::span<const uint8_t, 4> magic, const ObfuscationKey& key,
                                          const std::function<void(const BlockRecordPos&, std::span<const uint8_t, 80>)>& fn)
{
    BlockFileScanStats st;
    // Resynchronisation reads the file through this window (deobfuscated); record prefixes are
    // served from it when it covers them. Windows only move forward, so a file is read at most
    // about once however much garbage it holds.
    std::vector<uint8_t> win(SCAN_CHUNK);
    for (uint32_t fi = 0; fi < files.size(); ++fi) {
        Fd f(files[fi]);
        if (f.fd < 0) return EnvError(files[fi], std::string("cannot open for reading: ") + std::strerror(errno));
        struct stat sb;
        if (::fstat(f.fd, &sb) != 0) return EnvError(files[fi], "cannot determine size");
        const uint64_t n = uint64_t(sb.st_size);
        // Headers are read one by one far apart: the kernel's read-ahead would pull in the bodies.
        ::posix_fadvise(f.fd, 0, 0, POSIX_FADV_RANDOM);
        uint64_t win_off = 0;
        std::size_t win_len = 0;
        auto read_at = [&](uint64_t off, uint8_t* dst, std::size_t len) -> bool {
            if (off >= win_off && off + len <= win_off + win_len) {
                std::memcpy(dst, win.data() + (off - win_off), len);
                return true;
            }
            const ssize_t r = PreadFull(f.fd, dst, len, off);
            if (r != ssize_t(len)) return false;
            st.bytes_read += len;
            XorBytes(std::span<std::byte>(reinterpret_cast<std::byte*>(dst), len), key, std::size_t(off));
            return true;
        };
        auto refill = [&](uint64_t off) -> bool {
            win_off = off;
            win_len = 0; // read_at must not serve the refill from the old window
            const std::size_t len = std::size_t(std::min<uint64_t>(win.size(), n - off));
            if (!read_at(off, win.data(), len)) return false;
            win_len = len;
            return true;
        };
        uint64_t pos = 0;
        std::array<uint8_t, RECORD_PREFIX_SIZE> prefix;
        while (pos < n) {
            if (n - pos >= 8) {
                const std::size_t want = std::size_t(std::min<uint64_t>(RECORD_PREFIX_SIZE, n - pos));
                if (!read_at(pos, prefix.data(), want)) return EnvError(files[fi], "read failed");
                if (std::memcmp(prefix.data(), magic.data(), 4) == 0) {
                    const uint32_t size = ReadLE32(prefix.data() + 4);
                    if (size >= MIN_RECORD_SIZE && size <= MAX_RECORD_SIZE) {
                        if (size > n - pos - 8) { // declared size runs past the end: a truncated tail
                            ++st.truncated;
                            st.skipped_bytes += n - pos;
                            break;
                        }
                        ++st.records;
                        st.bytes += size;
                        fn(BlockRecordPos{fi, pos + 8, size}, std::span<const uint8_t, 80>(prefix.data() + 8, 80));
                        pos += 8 + uint64_t(size);
                        continue;
                    }
                }
            }
            // Not a record here: resync on the next magic after pos. A zero run to the end of the
            // file is pre-allocated space, anything else skipped garbage.
            bool all_zero = true;
            uint64_t zero_checked = pos; // bytes [pos, zero_checked) are known to be zero
            uint64_t to = n;
            uint64_t from = pos + 1;     // where the next magic may start
            while (from < n) {
                // The window must hold [from, from + 4) (or reach the end of the file).
                const uint64_t need = all_zero ? std::min(zero_checked, from) : from;
                if (need < win_off || from + std::min<uint64_t>(4, n - from) > win_off + win_len) {
                    if (!refill(need)) return EnvError(files[fi], "read failed");
                }
                const uint64_t win_end = win_off + win_len;
                if (all_zero && zero_checked < win_end) {
                    const uint64_t z0 = std::max(zero_checked, win_off);
                    all_zero = std::all_of(win.begin() + std::ptrdiff_t(z0 - win_off), win.begin() + std::ptrdiff_t(win_len),
                                           [](uint8_t b) { return b == 0; });
                    zero_checked = win_end;
                }
                const auto* base = win.data() + (from - win_off);
                const std::size_t avail = std::size_t(win_end - from);
                const auto* hit = avail >= 4 ? static_cast<const uint8_t*>(memmem(base, avail, magic.data(), 4)) : nullptr;
                if (hit) {
                    to = win_off + uint64_t(hit - win.data());
                    break;
                }
                if (win_end >= n) break;
                from = win_end - 3; // a magic may straddle the window's end
            }
            while (to == n && all_zero && zero_checked < n) { // a tail too short to hold a magic
                if (!refill(zero_checked)) return EnvError(files[fi], "read failed");
                all_zero = std::all_of(win.begin(), win.begin() + std::ptrdiff_t(win_len), [](uint8_t b) { return b == 0; });
                zero_checked = win_off + win_len;
            }
            if (to == n && all_zero) {
                st.zero_tail_bytes += n - pos;
                break;
            }
            st.skipped_bytes += to - pos;
            pos = to;
        }
    }
    return st;
}

BlockFileReader::BlockFileReader(std::vector<std::filesystem::path> files, const ObfuscationKey& key)
    : m_files(std::move(files)), m_key(key), m_open(std::make_unique<OpenFiles>())
{
}

BlockFileReader::~BlockFileReader() = default;

Result<std::size_t> BlockFileReader::ReadInto(uint32_t file, uint64_t offset, std::span<std::byte> dst)
{
    if (file >= m_files.size()) return Error{Errc::InvalidValue, "block file index " + std::to_string(file) + " out of range"};
    const int fd = m_open->Get(file, [&] { return m_files[file]; });
    if (fd < 0) return EnvError(m_files[file], std::string("cannot open for reading: ") + std::strerror(errno));
    const ssize_t r = PreadFull(fd, dst.data(), dst.size(), offset);
    if (r < 0) return EnvError(m_files[file], std::string("read failed: ") + std::strerror(errno));
    m_bytes_read += uint64_t(r);
    if (std::size_t(r) != dst.size()) {
        return Error{Errc::EndOfData, m_files[file].string() + ": record at offset " + std::to_string(offset) +
                                          " runs past the end of the file"};
    }
    XorBytes(dst, m_key, std::size_t(offset));
    return dst.size();
}

void BlockFileReader::KeepOpenAtMost(std::size_t n) { m_open->KeepOpenAtMost(n); }

Result<std::vector<uint8_t>> BlockFileReader::Read(const BlockRecordPos& pos)
{
    std::vector<uint8_t> out;
    auto r = Read(pos, out);
    if (!r) return r.error();
    return out;
}

Result<BlockRecordPos> BlockFileReader::ReadFrame(uint32_t file, uint64_t data_offset, std::span<const uint8_t, 4> magic)
{
    if (data_offset < 8) return Error{Errc::Corrupt, "block data position " + std::to_string(data_offset) + " leaves no room for the record framing"};
    std::array<uint8_t, 8> frame;
    auto r = ReadInto(file, data_offset - 8, MakeWritableByteSpan(frame));
    if (!r) return r.error();
    if (std::memcmp(frame.data(), magic.data(), 4) != 0) {
        return Error{Errc::BadMagic, m_files[file].string() + ": no record magic before data position " + std::to_string(data_offset)};
    }
    const uint32_t size = ReadLE32(frame.data() + 4);
    if (size < MIN_RECORD_SIZE || size > MAX_RECORD_SIZE) {
        return Error{Errc::Corrupt, m_files[file].string() + ": record at " + std::to_string(data_offset) + " declares size " + std::to_string(size)};
    }
    return BlockRecordPos{file, data_offset, size};
}

void ChainOrderer::Add(const BlockRecordPos& pos, std::span<const uint8_t, 80> header)
{
    m_positions.push_back(pos);
    m_headers.push_back({BlockHash(HashSha256d(std::span<const uint8_t>(header))),
                         BlockHash(uint256(header.subspan<4, 32>())), ReadLE32(header.data() + 72)});
}

ChainOrder ChainOrderer::Finish() const
{
    // Records come in file order, so ties go to the tip whose record comes first on disk.
    const MostWorkChain best = SelectMostWorkChain(m_headers, m_genesis);
    ChainOrder out;
    for (std::size_t i : best.chain) {
        out.blocks.push_back(m_positions[i]);
        out.hashes.push_back(m_headers[i].hash);
    }
    out.orphans = best.orphans;
    out.stale = best.stale;
    out.duplicates = best.duplicates;
    return out;
}

} // namespace ibdkit

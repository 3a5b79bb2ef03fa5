// Where ibdkit may write (common/write_guard.h).
#include "common/chainstate_format.h"
#include "common/network_folders.h"
#include "common/write_guard_internal.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <fstream>
#include <string>
#include <vector>

namespace ibdkit {

namespace fs = std::filesystem;

namespace {

bool IsDir(const fs::path& p)
{
    std::error_code ec;
    return fs::is_directory(p, ec);
}

bool Exists(const fs::path& p)
{
    std::error_code ec;
    return fs::exists(fs::symlink_status(p, ec));
}

bool HasBlkFile(const fs::path& dir)
{
    std::error_code ec;
    for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
        const std::string n = it->path().filename().string();
        if (n.size() == 12 && n.compare(0, 3, "blk") == 0 && n.compare(8, 4, ".dat") == 0) return true;
    }
    return false;
}

/// A blocks directory's index that Core wrote, not ibdkit (DATADIR_MARKER).
bool CoreIndexIn(const fs::path& blocks) { return IsDir(blocks / "index") && !Exists(blocks / DATADIR_MARKER); }

/// One directory of Core's layout: a data directory, a network's directory, or a blocks directory.
/// The blocks and index of a datadir ibdkit wrote do not count; what bitcoind adds once it runs on
/// one (peers.dat, bitcoin.conf) does.
bool LooksLikeCore(const fs::path& d)
{
    if (Exists(d / "bitcoin.conf") || Exists(d / "peers.dat") || CoreIndexIn(d / "blocks")) return true;
    for (std::string_view net : NETWORK_SUBFOLDERS) {
        if (!net.empty() && CoreIndexIn(d / net / "blocks")) return true;
    }
    return CoreIndexIn(d) && HasBlkFile(d);
}

/// `p` made absolute, with symbolic links resolved as far as the path exists.
fs::path Resolved(const fs::path& p)
{
    std::error_code ec;
    fs::path a = fs::absolute(p, ec);
    if (ec) a = p;
    fs::path r = fs::weakly_canonical(a, ec);
    return ec ? a.lexically_normal() : r;
}

Error Refused(std::string message) { return Error{Errc::Refused, std::move(message)}; }

} // namespace

bool IsSameOrInside(const fs::path& path, const fs::path& dir)
{
    const fs::path p = Resolved(path), d = Resolved(dir);
    auto pi = p.begin();
    for (auto di = d.begin(); di != d.end(); ++di, ++pi) {
        if (di->empty() && std::next(di) == d.end()) break; // a trailing separator
        if (pi == p.end() || *pi != *di) return false;
    }
    return true;
}

namespace {

std::optional<Error> InsideCore(const fs::path& path, const char* what)
{
    const auto core = CoreDataDirAround(path);
    if (!core) return std::nullopt;
    return Refused(path.string() + " is inside the Bitcoin Core data directory " + core->string() +
                   ": ibdkit never writes there; give " + what + " a path outside it");
}

bool ReadVarint(const std::vector<uint8_t>& b, std::size_t& pos, std::size_t end, uint64_t& out)
{
    out = 0;
    for (int shift = 0; shift <= 63 && pos < end; shift += 7) {
        const uint8_t byte = b[pos++];
        out |= uint64_t(byte & 0x7f) << shift;
        if (!(byte & 0x80)) return true;
    }
    return false;
}

/// The sizes of a LevelDB table's data blocks, from its footer and index block (LevelDB's
/// doc/table_format.md); empty if the file is not a readable, uncompressed table.
std::vector<uint64_t> TableDataBlockSizes(const fs::path& table)
{
    constexpr std::size_t FOOTER = 48, TRAILER = 5, MAX_INDEX = 4 << 20;
    constexpr uint64_t MAGIC = 0xdb4775248b80fb57ull;
    std::ifstream f(table, std::ios::binary);
    std::error_code ec;
    const uint64_t size = fs::file_size(table, ec);
    if (!f || ec || size < FOOTER) return {};
    std::vector<uint8_t> footer(FOOTER);
    f.seekg(std::streamoff(size - FOOTER));
    if (!f.read(reinterpret_cast<char*>(footer.data()), FOOTER)) return {};
    uint64_t magic = 0;
    for (int i = 7; i >= 0; --i) magic = (magic << 8) | footer[FOOTER - 8 + std::size_t(i)];
    std::size_t pos = 0;
    uint64_t meta_off, meta_size, index_off, index_size;
    if (magic != MAGIC || !ReadVarint(footer, pos, 40, meta_off) || !ReadVarint(footer, pos, 40, meta_size) ||
        !ReadVarint(footer, pos, 40, index_off) || !ReadVarint(footer, pos, 40, index_size) || index_size < 4 ||
        index_size > MAX_INDEX || index_off + index_size + TRAILER > size) {
        return {};
    }
    std::vector<uint8_t> block(std::size_t(index_size) + 1);
    f.seekg(std::streamoff(index_off));
    if (!f.read(reinterpret_cast<char*>(block.data()), std::streamsize(block.size())) || block.back() != 0) return {};
    const std::size_t n = std::size_t(index_size);
    const uint32_t restarts = uint32_t(block[n - 4]) | uint32_t(block[n - 3]) << 8 | uint32_t(block[n - 2]) << 16 |
                              uint32_t(block[n - 1]) << 24;
    if ((uint64_t(restarts) + 1) * 4 > n) return {};
    const std::size_t end = n - (std::size_t(restarts) + 1) * 4;
    std::vector<uint64_t> sizes;
    pos = 0;
    while (pos < end) {
        uint64_t shared, non_shared, value_len, off, len;
        if (!ReadVarint(block, pos, end, shared) || !ReadVarint(block, pos, end, non_shared) ||
            !ReadVarint(block, pos, end, value_len) || non_shared > end - pos) {
            return {};
        }
        pos += std::size_t(non_shared);
        const std::size_t value_end = pos + std::size_t(value_len);
        if (value_len > end - pos || !ReadVarint(block, pos, value_end, off) || !ReadVarint(block, pos, value_end, len)) return {};
        sizes.push_back(len);
        pos = value_end;
    }
    return sizes;
}

/// A LevelDB database ibdkit wrote before it marked its chainstates: its tables' data blocks are
/// TABLE_BLOCK_BYTES (Core writes 4 KiB blocks). Needs a table of at least three blocks, so that
/// a block made large by one large record cannot decide.
bool WrittenWithIbdkitBlocks(const fs::path& dir)
{
    std::error_code ec;
    for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
        if (it->path().extension() != ".ldb") continue;
        auto sizes = TableDataBlockSizes(it->path());
        if (sizes.size() < 3) continue;
        sizes.pop_back(); // the last block of a table is whatever was left
        std::sort(sizes.begin(), sizes.end());
        return sizes[sizes.size() / 2] >= TABLE_BLOCK_BYTES * 3 / 4;
    }
    return false;
}

} // namespace

std::optional<fs::path> CoreDataDirAround(const fs::path& path)
{
    if (path.empty()) return std::nullopt;
    for (fs::path d = Resolved(path);; d = d.parent_path()) {
        if (LooksLikeCore(d)) return d;
        if (d == d.parent_path() || d.empty()) return std::nullopt;
    }
}

std::optional<Error> CheckChainstateWritable(const fs::path& dir)
{
    if (dir.empty()) return std::nullopt;
    if (auto e = InsideCore(dir, "the chainstate")) return e;
    std::error_code ec;
    const auto st = fs::status(dir, ec);
    if (!fs::exists(st)) return std::nullopt;
    if (!fs::is_directory(st)) {
        return Refused(dir.string() + " is a file, not a folder: a chainstate is a folder; give a new folder's path");
    }
    if (::access(dir.c_str(), W_OK | X_OK) != 0) {
        return Refused("cannot write into " + dir.string() + ": permission denied (check its owner and mode)");
    }
    if (Exists(dir / CHAINSTATE_MARKER)) return std::nullopt;
    fs::directory_iterator it(dir, ec);
    if (ec) {
        return Refused("cannot look into " + dir.string() + " (" + ec.message() + "): check its permissions");
    }
    if (it == fs::directory_iterator()) return std::nullopt;
    if (!Exists(dir / "CURRENT")) {
        return Refused(dir.string() + " holds files and is not a chainstate: ibdkit writes a chainstate only into a new "
                                      "or empty folder; give another path");
    }
    if (WrittenWithIbdkitBlocks(dir)) return std::nullopt;
    return Refused(dir.string() + " holds a LevelDB database that ibdkit did not create (no " + CHAINSTATE_MARKER +
                   " file): ibdkit will not write into it. If it is a chainstate ibdkit made, or a copy you want ibdkit to "
                   "continue, mark it: touch " + (dir / CHAINSTATE_MARKER).string());
}

bool HoldsChainstateMarker(const fs::path& dir) { return Exists(dir / CHAINSTATE_MARKER); }

namespace {
/// Makes the last change to `dir`'s entries durable.
bool SyncDir(const fs::path& dir)
{
    const int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0) return false;
    const bool ok = ::fsync(fd) == 0;
    ::close(fd);
    return ok;
}
} // namespace

std::optional<Error> MarkUnfinishedChainstate(const fs::path& dir)
{
    const fs::path marker = dir / UNFINISHED_CHAINSTATE_MARKER;
    std::ofstream f(marker, std::ios::binary | std::ios::trunc);
    f << "An unfinished chainstate: its writer (ibdkit replay --swiftsync) was stopped before it wrote the UTXO set. "
         "It holds no UTXO set; the same command run again starts it over.\n";
    f.close();
    if (!f || !SyncDir(dir)) return Refused("cannot write " + marker.string() + ": check the folder's permissions");
    return std::nullopt;
}

std::optional<Error> FinishChainstate(const fs::path& dir)
{
    std::error_code ec;
    fs::remove(dir / UNFINISHED_CHAINSTATE_MARKER, ec);
    if (ec || !SyncDir(dir)) {
        return Error{Errc::Io, "cannot remove " + (dir / UNFINISHED_CHAINSTATE_MARKER).string() + ": " +
                                   (ec ? ec.message() : std::string("the folder cannot be synced"))};
    }
    return std::nullopt;
}

std::optional<Error> CheckChainstateFinished(const fs::path& dir)
{
    if (!Exists(dir / UNFINISHED_CHAINSTATE_MARKER)) return std::nullopt;
    return Refused(dir.string() + " is an unfinished chainstate (" + UNFINISHED_CHAINSTATE_MARKER +
                   "): an interrupted `replay --swiftsync` left it, and it holds no UTXO set; run that command again "
                   "to start it over, or remove the folder");
}

Result<bool> ClearUnfinishedChainstate(const fs::path& dir)
{
    if (!Exists(dir / UNFINISHED_CHAINSTATE_MARKER)) return false;
    std::error_code ec;
    std::vector<fs::path> inside;
    for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) inside.push_back(it->path());
    if (ec) return Error{Errc::Io, "cannot look into " + dir.string() + ": " + ec.message()};
    // The marker last: a clearing stopped half way is still recognised.
    std::stable_partition(inside.begin(), inside.end(), [](const fs::path& p) { return p.filename() != UNFINISHED_CHAINSTATE_MARKER; });
    for (const auto& p : inside) {
        fs::remove_all(p, ec);
        if (ec) return Error{Errc::Io, "cannot remove " + p.string() + ": " + ec.message()};
    }
    return true;
}

std::optional<Error> MarkChainstate(const fs::path& dir)
{
    const fs::path marker = dir / CHAINSTATE_MARKER;
    if (Exists(marker)) return std::nullopt;
    std::ofstream f(marker, std::ios::binary | std::ios::trunc);
    f << "A chainstate written by ibdkit (Bitcoin Core's format); ibdkit writes only into chainstates holding this file.\n";
    f.close();
    if (!f) return Refused("cannot write " + marker.string() + ": check the folder's permissions");
    return std::nullopt;
}

namespace {
constexpr std::string_view NETWORK_LINE = "network=";
} // namespace

std::optional<Error> RecordChainstateNetwork(const fs::path& dir, std::string_view network)
{
    const fs::path marker = dir / CHAINSTATE_MARKER;
    if (!Exists(marker)) return Refused(dir.string() + " is not a chainstate ibdkit made (no " + CHAINSTATE_MARKER + ")");
    if (ChainstateNetworkRecord(dir) == std::string(network)) return std::nullopt;
    std::ofstream f(marker, std::ios::binary | std::ios::trunc);
    f << "A chainstate written by ibdkit (Bitcoin Core's format); ibdkit writes only into chainstates holding this file.\n"
      << NETWORK_LINE << network << "\n";
    f.close();
    if (!f) return Refused("cannot write " + marker.string() + ": check the folder's permissions");
    return std::nullopt;
}

std::optional<std::string> ChainstateNetworkRecord(const fs::path& dir)
{
    std::ifstream f(dir / CHAINSTATE_MARKER, std::ios::binary);
    std::string line;
    while (f && std::getline(f, line)) {
        if (line.compare(0, NETWORK_LINE.size(), NETWORK_LINE) == 0 && line.size() > NETWORK_LINE.size() && line.size() < 32) {
            return line.substr(NETWORK_LINE.size());
        }
    }
    return std::nullopt;
}

std::optional<Error> CheckOutputFile(const fs::path& file)
{
    if (file.empty()) return Refused("no output file given");
    if (auto e = InsideCore(file, "the output file")) return e;
    if (IsDir(file)) return Refused(file.string() + " is a folder: give the path of a file to write (e.g. " + (file / "out").string() + ")");
    const fs::path parent = file.has_parent_path() ? file.parent_path() : fs::path(".");
    std::error_code ec;
    const auto st = fs::status(parent, ec);
    if (!fs::exists(st)) return Refused("the folder " + parent.string() + " does not exist: create it first (mkdir -p " + parent.string() + ")");
    if (!fs::is_directory(st)) return Refused(parent.string() + " is a file, not a folder: " + file.string() + " cannot be written");
    if (::access(parent.c_str(), W_OK | X_OK) != 0) {
        return Refused("cannot write into " + parent.string() + ": permission denied (check its owner and mode)");
    }
    return std::nullopt;
}

std::optional<Error> CheckTempDirWritable(const fs::path& dir, std::string_view what)
{
    if (dir.empty()) return std::nullopt;
    const std::string name(what);
    if (auto e = InsideCore(dir, name.c_str())) return e;
    std::error_code ec;
    const auto st = fs::status(dir, ec);
    if (!fs::exists(st)) return Refused(name + " " + dir.string() + " does not exist: give an existing folder for the temporary files");
    if (!fs::is_directory(st)) return Refused(name + " " + dir.string() + " is a file, not a folder: give a folder for the temporary files");
    if (::access(dir.c_str(), W_OK | X_OK) != 0) {
        return Refused("cannot write into " + dir.string() + ": permission denied (check its owner and mode)");
    }
    return std::nullopt;
}

std::optional<Error> CheckOwnFolderWritable(const fs::path& dir, std::string_view what,
                                            const std::function<bool(const fs::path& relative)>& ours)
{
    const std::string name(what);
    if (auto e = InsideCore(dir, name.c_str())) return e;
    std::error_code ec;
    const auto st = fs::status(dir, ec);
    if (!fs::exists(st)) return std::nullopt;
    if (!fs::is_directory(st)) return Refused(name + " " + dir.string() + " is a file, not a folder: give a new folder's path");
    if (::access(dir.c_str(), W_OK | X_OK) != 0) {
        return Refused("cannot write into " + dir.string() + ": permission denied (check its owner and mode)");
    }
    fs::recursive_directory_iterator it(dir, ec);
    for (const fs::recursive_directory_iterator end; !ec && it != end; it.increment(ec)) {
        const fs::path rel = it->path().lexically_relative(dir);
        if (ours(rel)) continue;
        return Refused(name + " " + dir.string() + " holds " + rel.string() + ", which ibdkit did not write there: it writes only "
                       "into a new or empty folder, or one it made; give another path");
    }
    if (ec) return Refused("cannot look into " + dir.string() + " (" + ec.message() + "): check its permissions");
    return std::nullopt;
}

std::optional<Error> CheckUndoDirWritable(const fs::path& dir)
{
    if (dir.empty()) return std::nullopt;
    if (auto e = InsideCore(dir, "--undo")) return e;
    std::error_code ec;
    const auto st = fs::status(dir, ec);
    if (!fs::exists(st)) return std::nullopt;
    if (!fs::is_directory(st)) return Refused(dir.string() + " is a file, not a folder: undo data goes into a folder; give a new folder's path");
    if (::access(dir.c_str(), W_OK | X_OK) != 0) {
        return Refused("cannot write into " + dir.string() + ": permission denied (check its owner and mode)");
    }
    if (Exists(dir / "revindex.dat")) return std::nullopt;
    fs::directory_iterator it(dir, ec);
    if (ec) return Refused("cannot look into " + dir.string() + " (" + ec.message() + "): check its permissions");
    if (it == fs::directory_iterator()) return std::nullopt;
    return Refused(dir.string() + " holds files and is not an ibdkit undo folder (no revindex.dat): give a new or empty folder");
}

std::optional<Error> CheckUndoApartFromChainstate(const fs::path& undo_dir, const fs::path& chainstate)
{
    if (undo_dir.empty() || chainstate.empty()) return std::nullopt;
    if (!IsSameOrInside(undo_dir, chainstate) && !IsSameOrInside(chainstate, undo_dir)) return std::nullopt;
    return Refused("the undo folder " + undo_dir.string() + " and the chainstate " + chainstate.string() +
                   " share a folder: give each a folder of its own");
}

std::optional<Error> CheckDatadirWritable(const fs::path& datadir, const fs::path& net_dir)
{
    // The network folder and every folder above it: bitcoind writes peers.dat into the former.
    if (auto e = InsideCore(net_dir, "--datadir")) return e;
    std::error_code ec;
    if (!fs::exists(datadir, ec)) return std::nullopt;
    if (!fs::is_directory(datadir, ec)) return Refused(datadir.string() + " is a file: --datadir names a folder for a new data directory");
    if (Exists(net_dir / "blocks" / DATADIR_MARKER) || fs::is_empty(datadir, ec)) return std::nullopt;
    // What a run that stopped before its first block leaves: the network folder, its chainstate.
    const auto only = [&](const fs::path& dir, const std::function<bool(const fs::path&)>& ours) {
        std::error_code iec;
        for (fs::directory_iterator it(dir, iec), end; !iec && it != end; it.increment(iec)) {
            if (!ours(it->path())) return false;
        }
        return !iec;
    };
    const auto in_net = [&](const fs::path& p) {
        return (p.filename() == "blocks" && IsDir(p) && fs::is_empty(p, ec)) || (p.filename() == "chainstate" && HoldsChainstateMarker(p));
    };
    const bool started = net_dir == datadir ? only(datadir, in_net)
                                            : only(datadir, [&](const fs::path& p) { return p.filename() == net_dir.filename() && IsDir(p); }) && only(net_dir, in_net);
    if (started) return std::nullopt;
    return Refused(datadir.string() + " holds other files and no data directory ibdkit wrote for this network (no " +
                   (net_dir / "blocks" / DATADIR_MARKER).string() + "): give --datadir a new or empty folder");
}

} // namespace ibdkit

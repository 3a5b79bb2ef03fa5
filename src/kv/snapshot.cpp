// A consistent private copy of a LevelDB directory another process is writing (snapshot.h).
#include "kv/snapshot.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <optional>
#include <vector>

namespace ibdkit::kv {

namespace {

/// Why an attempt ended: done, the database changed under it (try again), or a real failure.
enum class Outcome { Done, Changed, Failed };

struct Attempt {
    Outcome outcome{Outcome::Done};
    StoreStatus status;
};

Attempt Changed() { return {Outcome::Changed, StoreStatus::Ok()}; }
Attempt Failed(StoreStatus::Code c, std::string msg) { return {Outcome::Failed, StoreStatus::Error(c, std::move(msg))}; }

/// The whole content of a small file; nullopt if it does not exist.
std::optional<std::string> ReadSmall(const std::filesystem::path& p)
{
    const int fd = ::open(p.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return std::nullopt;
    std::string out;
    char buf[4096];
    for (;;) {
        const ssize_t n = ::read(fd, buf, sizeof buf);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) break;
        out.append(buf, std::size_t(n));
        if (out.size() > (1 << 16)) break; // CURRENT is one line
    }
    ::close(fd);
    return out;
}

/// Copies `src` as it is now (a prefix, if it grows meanwhile) to a new file `dst`. Returns the bytes
/// copied; ENOENT as errno 0 + nullopt means the file vanished.
std::optional<uint64_t> CopyFile(const std::filesystem::path& src, const std::filesystem::path& dst, int* err)
{
    *err = 0;
    const int in = ::open(src.c_str(), O_RDONLY | O_CLOEXEC);
    if (in < 0) {
        *err = errno == ENOENT ? 0 : errno;
        return std::nullopt;
    }
    const int out = ::open(dst.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    if (out < 0) {
        *err = errno;
        ::close(in);
        return std::nullopt;
    }
    std::vector<char> buf(1 << 20);
    uint64_t total = 0;
    bool ok = true;
    for (;;) {
        const ssize_t n = ::read(in, buf.data(), buf.size());
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) {
            *err = errno;
            ok = false;
            break;
        }
        if (n == 0) break;
        for (ssize_t done = 0; done < n;) {
            const ssize_t w = ::write(out, buf.data() + done, std::size_t(n - done));
            if (w < 0 && errno == EINTR) continue;
            if (w < 0) {
                *err = errno;
                ok = false;
                break;
            }
            done += w;
        }
        if (!ok) break;
        total += uint64_t(n);
    }
    ::close(in);
    if (::close(out) != 0 && ok) {
        *err = errno;
        ok = false;
    }
    if (!ok) return std::nullopt;
    return total;
}

bool EndsWith(const std::string& s, const char* suffix)
{
    const std::size_t n = std::strlen(suffix);
    return s.size() >= n && s.compare(s.size() - n, n, suffix) == 0;
}

uint64_t FileNumber(const std::string& name)
{
    uint64_t v = 0;
    for (char c : name) {
        if (c < '0' || c > '9') break;
        v = v * 10 + uint64_t(c - '0');
    }
    return v;
}

std::string Errno(int err) { return std::strerror(err); }

Attempt TakeOnce(const std::filesystem::path& src, const std::filesystem::path& dst, int attempt, SnapshotInfo& info,
                 const SnapshotHooks& hooks)
{
    auto before = [&](const std::string& name) {
        if (hooks.before_file) hooks.before_file(attempt, name);
    };
    const auto current = ReadSmall(src / "CURRENT");
    if (!current) return Failed(StoreStatus::Code::NotFound, "no LevelDB database at " + src.string() + " (missing CURRENT)");
    std::string manifest = *current;
    while (!manifest.empty() && (manifest.back() == '\n' || manifest.back() == '\r')) manifest.pop_back();
    if (manifest.rfind("MANIFEST-", 0) != 0 || manifest.find('/') != std::string::npos) {
        return Failed(StoreStatus::Code::Corruption, (src / "CURRENT").string() + " does not name a MANIFEST");
    }
    int err = 0;
    before(manifest);
    const auto manifest_bytes = CopyFile(src / manifest, dst / manifest, &err);
    if (!manifest_bytes) {
        if (err != 0) return Failed(StoreStatus::Code::IoError, "cannot copy " + (src / manifest).string() + ": " + Errno(err));
        return Changed(); // a new MANIFEST replaced it (the writer reopened)
    }
    ++info.copied;

    std::vector<std::string> tables;
    std::vector<std::pair<uint64_t, std::string>> logs;
    std::error_code ec;
    for (std::filesystem::directory_iterator it(src, ec), end; !ec && it != end; it.increment(ec)) {
        const std::string name = it->path().filename().string();
        if (EndsWith(name, ".ldb") || EndsWith(name, ".sst")) tables.push_back(name);
        else if (EndsWith(name, ".log")) logs.emplace_back(FileNumber(name), name);
    }
    if (ec) return Failed(StoreStatus::Code::IoError, "cannot list " + src.string() + ": " + ec.message());

    for (const auto& name : tables) {
        before(name);
        if (::link((src / name).c_str(), (dst / name).c_str()) == 0) {
            ++info.linked;
            continue;
        }
        if (errno == ENOENT) return Changed(); // compacted away since the listing
        // Another file system, hard links refused (protected_hardlinks, permissions), too many links.
        const auto copied = CopyFile(src / name, dst / name, &err);
        if (!copied) {
            if (err != 0) return Failed(StoreStatus::Code::IoError, "cannot copy " + (src / name).string() + ": " + Errno(err));
            return Changed();
        }
        ++info.copied;
    }
    // Newest log first: once a newer log exists LevelDB never writes an older one again, so the
    // older logs copied afterwards are whole and only the newest may miss its latest records.
    std::sort(logs.begin(), logs.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
    for (const auto& [number, name] : logs) {
        before(name);
        if (!CopyFile(src / name, dst / name, &err)) {
            if (err != 0) return Failed(StoreStatus::Code::IoError, "cannot copy " + (src / name).string() + ": " + Errno(err));
            return Changed();
        }
        ++info.copied;
    }

    // The set of live files did not change while they were taken: the MANIFEST (appended to before
    // any file it drops is deleted) and CURRENT are as they were.
    struct stat sb;
    if (ReadSmall(src / "CURRENT") != current) return Changed();
    if (::stat((src / manifest).c_str(), &sb) != 0 || uint64_t(sb.st_size) != *manifest_bytes) return Changed();

    const int fd = ::open((dst / "CURRENT").c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    if (fd < 0) return Failed(StoreStatus::Code::IoError, "cannot write " + (dst / "CURRENT").string() + ": " + Errno(errno));
    const bool wrote = ::write(fd, current->data(), current->size()) == ssize_t(current->size());
    if (::close(fd) != 0 || !wrote) return Failed(StoreStatus::Code::IoError, "cannot write " + (dst / "CURRENT").string());
    ++info.copied;
    return {};
}

} // namespace

StoreStatus SnapshotDatabase(const std::filesystem::path& src, const std::filesystem::path& dst, int attempts,
                             SnapshotInfo* info_out, const SnapshotHooks& hooks)
{
    SnapshotInfo info;
    for (int attempt = 1; attempt <= attempts; ++attempt) {
        std::error_code ec;
        std::filesystem::remove_all(dst, ec);
        std::filesystem::create_directories(dst, ec);
        if (ec) return StoreStatus::Error(StoreStatus::Code::IoError, "cannot create " + dst.string() + ": " + ec.message());
        info = SnapshotInfo{};
        info.attempts = attempt;
        const Attempt a = TakeOnce(src, dst, attempt, info, hooks);
        if (info_out) *info_out = info;
        if (a.outcome == Outcome::Done) return StoreStatus::Ok();
        if (a.outcome == Outcome::Failed) return a.status;
    }
    return StoreStatus::Error(StoreStatus::Code::IoError, "the database " + src.string() + " changed during each of " +
                                                              std::to_string(attempts) + " attempts to copy it; try again");
}

} // namespace ibdkit::kv

// AtomicFile (common/atomic_file.h): a temporary beside the final name, fsync, rename.
//
// The files being written are listed in a fixed table of plain character arrays, so that a signal
// handler can remove their temporaries with nothing but unlink(2) (no allocation, no locks).
#include <ibdkit/common/atomic_file.h>

#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <array>
#include <atomic>
#include <cerrno>
#include <charconv>
#include <climits>
#include <cstring>
#include <string>
#include <system_error>

namespace ibdkit {

namespace fs = std::filesystem;

namespace {

/// A slot's life: FREE → CLAIMED (strings being copied) → WRITING → COMMITTING (rename under
/// way) → FREE. A signal handler reads only WRITING and COMMITTING slots.
enum SlotState : int { FREE, CLAIMED, WRITING, COMMITTING };

struct Slot {
    std::atomic<int> state{FREE};
    char temp[PATH_MAX];
    char final_name[PATH_MAX];
};

constexpr int SLOTS = 16;
std::array<Slot, SLOTS> g_slots;

int Register(const fs::path& temp, const fs::path& final_path) noexcept
{
    const std::string& t = temp.native();
    const std::string& f = final_path.native();
    if (t.size() >= PATH_MAX || f.size() >= PATH_MAX) return -1;
    for (int i = 0; i < SLOTS; ++i) {
        int expected = FREE;
        if (!g_slots[std::size_t(i)].state.compare_exchange_strong(expected, CLAIMED)) continue;
        Slot& s = g_slots[std::size_t(i)];
        std::memcpy(s.temp, t.c_str(), t.size() + 1);
        std::memcpy(s.final_name, f.c_str(), f.size() + 1);
        s.state.store(WRITING);
        return i;
    }
    return -1; // more results at once than slots: written atomically all the same, not cleaned on a signal
}

void SetState(int slot, SlotState state) noexcept
{
    if (slot >= 0) g_slots[std::size_t(slot)].state.store(state);
}

/// fsync of a file or directory by name; a directory that cannot be synced (some filesystems
/// refuse) is not an error.
bool SyncPath(const fs::path& p, bool directory)
{
    const int fd = ::open(p.c_str(), O_RDONLY | O_CLOEXEC | (directory ? O_DIRECTORY : 0));
    if (fd < 0) return directory;
    const bool ok = ::fsync(fd) == 0 || (directory && (errno == EINVAL || errno == EROFS));
    ::close(fd);
    return ok;
}

/// Removes `NAME.partial-PID` files beside `final_path` whose process is gone.
void RemoveStaleTemporaries(const fs::path& final_path)
{
    const std::string prefix = final_path.filename().native() + ".partial-";
    const fs::path dir = final_path.has_parent_path() ? final_path.parent_path() : fs::path(".");
    std::error_code ec;
    for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
        const std::string name = it->path().filename().native();
        if (name.size() <= prefix.size() || name.compare(0, prefix.size(), prefix) != 0) continue;
        long pid = 0;
        const char* first = name.data() + prefix.size();
        const char* last = name.data() + name.size();
        const auto r = std::from_chars(first, last, pid);
        if (r.ec != std::errc() || r.ptr != last || pid <= 0 || pid == long(::getpid())) continue;
        if (::kill(pid_t(pid), 0) == 0 || errno != ESRCH) continue; // still running (or not ours to judge)
        std::error_code rm;
        fs::remove(it->path(), rm);
    }
}

void WriteAll(int fd, const char* s) noexcept
{
    std::size_t n = std::strlen(s);
    while (n > 0) {
        const ssize_t w = ::write(fd, s, n);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) return;
        s += w;
        n -= std::size_t(w);
    }
}

} // namespace

AtomicFile::AtomicFile(fs::path final_path) : m_final(std::move(final_path))
{
    std::error_code ec;
    if (fs::is_symlink(m_final, ec)) {
        const fs::path target = fs::canonical(m_final, ec);
        if (!ec) m_final = target; // replace the file the link names, keep the link
    }
    const auto st = fs::status(m_final, ec);
    if (fs::is_character_file(st) || fs::is_block_file(st) || fs::is_fifo(st) || fs::is_socket(st)) {
        m_temp = m_final; // a device, a pipe: written in place, never renamed over (Direct())
        m_direct = true;
        return;
    }
    m_temp = m_final;
    m_temp += ".partial-" + std::to_string(::getpid());
    fs::remove(m_temp, ec);
    RemoveStaleTemporaries(m_final);
    m_slot = Register(m_temp, m_final);
}

AtomicFile::~AtomicFile()
{
    if (!m_committed && !m_direct) {
        std::error_code ec;
        fs::remove(m_temp, ec);
    }
    SetState(m_slot, FREE);
}

std::optional<Error> AtomicFile::Commit()
{
    auto fail = [&](const std::string& what, int err) {
        std::error_code ec;
        fs::remove(m_temp, ec);
        return Error{Errc::InvalidValue, what + ": " + std::strerror(err) + " (" + m_final.string() + " left as it was)"};
    };
    if (m_committed) return std::nullopt;
    if (m_direct) {
        m_committed = true;
        return std::nullopt;
    }
    if (!SyncPath(m_temp, false)) return fail("cannot sync " + m_temp.string(), errno);
    SetState(m_slot, COMMITTING);
    if (::rename(m_temp.c_str(), m_final.c_str()) != 0) {
        const int err = errno;
        SetState(m_slot, WRITING);
        return fail("cannot rename " + m_temp.string() + " to " + m_final.string(), err);
    }
    m_committed = true;
    SetState(m_slot, FREE);
    if (!SyncPath(m_final.has_parent_path() ? m_final.parent_path() : fs::path("."), true)) {
        return Error{Errc::InvalidValue, "cannot sync the directory of " + m_final.string() + ": " + std::strerror(errno)};
    }
    return std::nullopt;
}

int AbandonAtomicFilesFromSignal(int fd, const char* prefix) noexcept
{
    int reported = 0;
    for (Slot& s : g_slots) {
        const int state = s.state.load();
        if (state != WRITING && state != COMMITTING) continue;
        // The kernel orders our unlink and a rename on another thread: if the temporary is gone
        // while committing, the rename won and the final file is complete.
        const bool removed = ::unlink(s.temp) == 0;
        const bool complete = !removed && state == COMMITTING && errno == ENOENT;
        WriteAll(fd, prefix);
        WriteAll(fd, " ");
        WriteAll(fd, s.final_name);
        WriteAll(fd, complete ? ": complete\n" : ": not written (any previous file there is unchanged)\n");
        ++reported;
    }
    return reported;
}

} // namespace ibdkit

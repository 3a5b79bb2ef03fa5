// src/common/buffered_writer.h (internal) — the one buffered file writer: a buffer filled through
// a raw cursor (Room() before each record, then Put/Dec/Hex) or as a WriteStream (write()),
// drained to a file descriptor with write(2), optionally dropping the written pages from the page
// cache behind it, and made durable on request (DrainAndSync). The UTXO exports and snapshots, the
// generator's block files (BlockFileWriter) and the undo files (UndoFileWriter) write through it;
// File owns the FILE* it drains into and closes it, with an fsync unless told otherwise.
#pragma once

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <memory>
#include <span>
#include <string_view>

namespace ibdkit {

/// Two lower-case hex characters per byte value.
inline constexpr std::array<std::array<char, 2>, 256> HEX_PAIRS = [] {
    constexpr char digits[] = "0123456789abcdef";
    std::array<std::array<char, 2>, 256> t{};
    for (std::size_t b = 0; b < 256; ++b) t[b] = {digits[b >> 4], digits[b & 15]};
    return t;
}();

/// Decimal digit pairs "00".."99".
inline constexpr std::array<std::array<char, 2>, 100> DEC_PAIRS = [] {
    std::array<std::array<char, 2>, 100> t{};
    for (std::size_t i = 0; i < 100; ++i) t[i] = {char('0' + i / 10), char('0' + i % 10)};
    return t;
}();

/// Page-cache hygiene for exports of many GB: pages already written back (or already parsed) are
/// dropped, so the kernel recycles warm pages instead of taking fresh ones for every page, which
/// cuts the kernel's share of a dump. It also makes the re-read
/// check read the device, not the copy in memory. `fd` may be a pipe or tmpfs: errors are ignored.
/// The kernel keeps a page the range covers only in part, so the range starts at the 64 KiB (any
/// page size) holding `from`: bytes below it are dropped too, once. Dirty pages stay, their
/// writeback started.
inline void DropCachedRange(int fd, uint64_t from, uint64_t to)
{
    from -= from % (64 << 10);
    if (to > from) (void)::posix_fadvise(fd, off_t(from), off_t(to - from), POSIX_FADV_DONTNEED);
}

/// Drop-behind for a file written at its end: each chunk's writeback starts as it is written, and
/// what lies CACHE_LAG behind the end (written back by then) leaves the cache, as does all of it
/// once made durable.
class DropBehind {
public:
    static constexpr uint64_t CACHE_LAG = 32 << 20;
    DropBehind() noexcept = default;
    /// For a file whose first `start` bytes are written already.
    explicit DropBehind(uint64_t start) noexcept : m_dropped(start) {}
    /// Bytes [from, end) of `fd` were just written.
    void Written(int fd, uint64_t from, uint64_t end) noexcept
    {
        DropCachedRange(fd, from, end);
        if (end > CACHE_LAG && end - CACHE_LAG > m_dropped) {
            DropCachedRange(fd, m_dropped, end - CACHE_LAG);
            m_dropped = end - CACHE_LAG;
        }
    }
    /// The file's bytes below `end` are durable (fdatasync).
    void Synced(int fd, uint64_t end) noexcept
    {
        DropCachedRange(fd, m_dropped, end);
        m_dropped = std::max(m_dropped, end);
    }

private:
    uint64_t m_dropped{0}; ///< everything below this offset has left the cache
};

/// The output buffer: one allocation for the whole file, filled through a raw cursor. Room() guarantees space for the next row (draining to the file first when needed).
class BufferedFileWriter {
public:
    static constexpr std::size_t DRAIN_AT = 1 << 20;

    /// Writes to `f`'s descriptor (nothing goes through its stdio buffer). `drop_behind`: the
    /// written pages leave the page cache as the file grows (DropCachedRange).
    explicit BufferedFileWriter(FILE* f, bool drop_behind = true) : BufferedFileWriter(fileno(f), drop_behind) {}
    /// Writes to the descriptor `fd`, which stays the caller's to close.
    BufferedFileWriter(int fd, bool drop_behind) : m_fd(fd), m_drop_behind(drop_behind) { Grow(DRAIN_AT + 64 * 1024); }

    /// Makes room for `n` more bytes; false once a write to the file failed.
    bool Room(std::size_t n)
    {
        if (std::size_t(m_end - m_p) < n || std::size_t(m_p - m_buf.get()) >= DRAIN_AT) {
            if (!Drain()) return false;
            if (std::size_t(m_end - m_p) < n) Grow(n);
        }
        return true;
    }
    bool Drain()
    {
        const std::size_t len = std::size_t(m_p - m_buf.get());
        for (std::size_t off = 0; off < len;) {
            const ssize_t n = ::write(m_fd, m_buf.get() + off, len - off);
            if (n < 0 && errno == EINTR) continue;
            if (n <= 0) {
                m_errno = n < 0 ? errno : ENOSPC;
                return false;
            }
            off += std::size_t(n);
        }
        const uint64_t end = m_bytes + len;
        if (m_drop_behind) m_behind.Written(m_fd, m_bytes, end);
        m_bytes = end;
        m_p = m_buf.get();
        return true;
    }
    /// Drains, then makes the file's data durable (fdatasync); false once a write or the sync failed.
    bool DrainAndSync()
    {
        if (!Drain()) return false;
        if (::fdatasync(m_fd) != 0) {
            m_errno = errno;
            return false;
        }
        return true;
    }
    /// Bytes drained to the file so far (all of them after Drain()).
    uint64_t Bytes() const noexcept { return m_bytes; }
    /// Bytes in the buffer, not yet drained.
    std::size_t Buffered() const noexcept { return std::size_t(m_p - m_buf.get()); }
    /// Whether no write has failed yet.
    bool ok() const noexcept { return m_errno == 0; }
    /// WriteStream: appends `b` (dropped once a write has failed; ok() says so).
    void write(std::span<const std::byte> b)
    {
        if (Room(b.size())) Put(reinterpret_cast<const char*>(b.data()), b.size());
    }
    /// Drains, then overwrites the file's bytes at `offset` (a count known only at the end).
    bool PatchAt(uint64_t offset, std::span<const uint8_t> b)
    {
        if (!Drain()) return false;
        for (std::size_t done = 0; done < b.size();) {
            const ssize_t n = ::pwrite(m_fd, b.data() + done, b.size() - done, off_t(offset + done));
            if (n < 0 && errno == EINTR) continue;
            if (n <= 0) {
                m_errno = n < 0 ? errno : ENOSPC;
                return false;
            }
            done += std::size_t(n);
        }
        return true;
    }
    /// errno of the failed write (it may have failed on another thread), 0 if none failed.
    int Errno() const noexcept { return m_errno; }

    // The writers below assume Room() was called for the whole row.
    void Put(char c) noexcept { *m_p++ = c; }
    void Put(std::string_view s) noexcept
    {
        std::memcpy(m_p, s.data(), s.size());
        m_p += s.size();
    }
    void Put(const char* s, std::size_t n) noexcept
    {
        std::memcpy(m_p, s, n);
        m_p += n;
    }
    /// Decimal, two digits per step from a table.
    void Dec(uint64_t v) noexcept
    {
        char tmp[20];
        char* e = tmp + sizeof(tmp);
        char* q = e;
        while (v >= 100) {
            q -= 2;
            std::memcpy(q, DEC_PAIRS[v % 100].data(), 2);
            v /= 100;
        }
        if (v >= 10) {
            q -= 2;
            std::memcpy(q, DEC_PAIRS[v].data(), 2);
        } else {
            *--q = char('0' + v);
        }
        Put(q, std::size_t(e - q));
    }
    void Dec(int64_t v) noexcept
    {
        if (v < 0) {
            Put('-');
            Dec(uint64_t(0) - uint64_t(v));
        } else {
            Dec(uint64_t(v));
        }
    }
    void Dec(uint32_t v) noexcept { Dec(uint64_t(v)); }
    void Hex(const uint8_t* p, std::size_t n) noexcept
    {
        for (std::size_t i = 0; i < n; ++i) std::memcpy(m_p + 2 * i, HEX_PAIRS[p[i]].data(), 2);
        m_p += 2 * n;
    }

private:
    void Grow(std::size_t extra)
    {
        const std::size_t used = std::size_t(m_p - m_buf.get()), cap = used + extra;
        auto nb = std::unique_ptr<char[]>(new char[cap]);
        if (used) std::memcpy(nb.get(), m_buf.get(), used);
        m_buf = std::move(nb);
        m_p = m_buf.get() + used;
        m_end = m_buf.get() + cap;
    }

    int m_fd;
    bool m_drop_behind;
    std::unique_ptr<char[]> m_buf;
    char* m_p{nullptr};
    char* m_end{nullptr};
    uint64_t m_bytes{0};
    DropBehind m_behind;
    int m_errno{0};
};

/// A FILE* closed on destruction; Close() flushes, fsyncs (unless `fsync` is false) and closes, and
/// says whether all of that succeeded.
class File {
public:
    File(const std::filesystem::path& p, const char* mode) : m_f(std::fopen(p.c_str(), mode)) {}
    ~File()
    {
        if (m_f) std::fclose(m_f);
    }
    File(const File&) = delete;
    File& operator=(const File&) = delete;
    FILE* get() const noexcept { return m_f; }
    bool Close(bool fsync = true)
    {
        if (!m_f) return false;
        const bool ok = std::fflush(m_f) == 0 && (!fsync || ::fsync(fileno(m_f)) == 0);
        const bool closed = std::fclose(m_f) == 0;
        m_f = nullptr;
        return ok && closed;
    }

private:
    FILE* m_f;
};

} // namespace ibdkit

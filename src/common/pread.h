// src/common/pread.h (internal) — a positioned read that does not stop short: pread until `n`
// bytes or the end of the file, retrying on EINTR. Block files, rev files and LevelDB's tables
// (kv/leveldb_env.h) all read through it.
#pragma once

#include <unistd.h>

#include <cerrno>
#include <cstddef>
#include <cstdint>

namespace ibdkit {

/// Bytes read (fewer than `n` only at the end of the file), or -1 on an I/O error (errno set).
inline ssize_t PreadFull(int fd, void* buf, std::size_t n, uint64_t offset) noexcept
{
    std::size_t got = 0;
    while (got < n) {
        const ssize_t r = ::pread(fd, static_cast<char*>(buf) + got, n - got, off_t(offset + got));
        if (r < 0) {
            if (errno == EINTR) continue;
            return -1;
        }
        if (r == 0) break;
        got += std::size_t(r);
    }
    return ssize_t(got);
}

} // namespace ibdkit

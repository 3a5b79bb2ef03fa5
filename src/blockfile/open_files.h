// src/blockfile/open_files.h (internal) — the read-only descriptors a block or undo file reader
// keeps: opened on first use, at most a bound open at once (the one read least recently closed
// first). What BlockFileReader and UndoFileReader share.
#pragma once

#include <ibdkit/error.h>

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <map>
#include <utility>
#include <vector>

namespace ibdkit {

class OpenFiles {
public:
    /// Files a reader keeps open unless told otherwise: a mainnet datadir holds thousands of blk
    /// and rev files, a process often may open only 1,024 descriptors, and a replay in height order
    /// reads from a few neighbouring files at a time (Core stores blocks a little out of order).
    static constexpr std::size_t DEFAULT_MAX_OPEN = 64;

    OpenFiles() = default;
    OpenFiles(const OpenFiles&) = delete;
    OpenFiles& operator=(const OpenFiles&) = delete;
    ~OpenFiles()
    {
        for (auto& [file, fd] : m_fds) ::close(fd);
    }

    /// The descriptor of file `file`, opened read-only (`path()` names it) the first time, or
    /// after it was closed to keep within the bound; -1 with errno set if it cannot be opened.
    template <typename PathFn>
    int Get(uint32_t file, PathFn&& path)
    {
        auto it = m_fds.find(file);
        if (it == m_fds.end()) {
            CloseBeyond(m_max_open - 1);
            const std::filesystem::path p = path();
            const int fd = ::open(p.c_str(), O_RDONLY | O_CLOEXEC);
            if (fd < 0) return -1;
            m_fds.emplace(file, fd);
            m_open.push_back(file);
            return fd;
        }
        if (m_open.back() != file) {
            // Least recently read first: this file moves to the end (a short list: the bound).
            m_open.erase(std::find(m_open.begin(), m_open.end(), file));
            m_open.push_back(file);
        }
        return it->second;
    }

    /// From here on at most `n` (≥ 1) files are open at once.
    void KeepOpenAtMost(std::size_t n)
    {
        IBDKIT_EXPECTS(n >= 1, "a reader keeps at least one file open");
        m_max_open = n;
        CloseBeyond(n);
    }

private:
    void CloseBeyond(std::size_t keep)
    {
        while (m_open.size() > keep) {
            const auto it = m_fds.find(m_open.front());
            ::close(it->second);
            m_fds.erase(it);
            m_open.erase(m_open.begin());
        }
    }

    std::map<uint32_t, int> m_fds;
    std::vector<uint32_t> m_open; ///< the keys of m_fds, the one read least recently first
    std::size_t m_max_open{DEFAULT_MAX_OPEN};
};

} // namespace ibdkit

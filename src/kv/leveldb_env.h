// src/kv/leveldb_env.h — the LevelDB environments the store opens databases with (private to
// src/kv/, store.cpp): table files read with pread and checked block by block (PreadEnv), and a
// read-only overlay of a directory (OverlayEnv).
#pragma once

#include "common/crc32c.h"
#include "common/pread.h"

#include <leveldb/env.h>
#include <leveldb/status.h>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdarg>
#include <cstring>
#include <mutex>
#include <set>
#include <string>

namespace ibdkit::kv {

/// LevelDB's informational log goes nowhere (Core routes it to debug.log; ibdkit has none). It also
/// keeps LevelDB from creating LOG / renaming LOG.old in the database directory.
class NullLogger final : public leveldb::Logger {
public:
    void Logv(const char*, std::va_list) override {}
};

/// A table file read with pread(2). LevelDB's default environment maps up to 1000 table files
/// into memory; every page a lookup or a compaction touches then counts in the process's resident
/// set (RssFile), so a chainstate of a few GB pushes peak RSS far past the dbcache budget without
/// using a byte more of the heap. Reads through the page cache instead keep RSS what the process
/// really holds (docs/chainstate.md, "The budget").
///
/// It also checks every block's checksum, which LevelDB's ReadOptions::verify_checksums would do
/// with a byte-table CRC (Debian's LevelDB has no CRC instruction; docs/chainstate.md, *Block
/// checksums*). LevelDB reads a table in two kinds of call (table/format.cc, table.cc): the
/// 48-byte footer at the end of the file, and a block with its 5-byte trailer — the compression
/// type, then the masked CRC-32C of the block and that type byte. Every read but the footer's is
/// checked here, so a block LevelDB has not checked itself is never handed to it unchecked.
class PreadFile final : public leveldb::RandomAccessFile {
public:
    static constexpr std::size_t FOOTER = 48, TRAILER = 5;

    PreadFile(std::string name, int fd, uint64_t size) : m_name(std::move(name)), m_fd(fd), m_size(size) {}
    ~PreadFile() override { ::close(m_fd); }
    leveldb::Status Read(uint64_t offset, std::size_t n, leveldb::Slice* result, char* scratch) const override
    {
        const ssize_t got = PreadFull(m_fd, scratch, n, offset); // short only at the end of the file
        if (got < 0) {
            *result = leveldb::Slice(scratch, 0);
            return leveldb::Status::IOError(m_name, std::strerror(errno));
        }
        *result = leveldb::Slice(scratch, std::size_t(got));
        // A short read is LevelDB's to report ("truncated block read").
        const bool footer = n == FOOTER && offset + n == m_size;
        if (std::size_t(got) == n && n > TRAILER && !footer) {
            const uint32_t stored = Crc32cUnmask(ReadLE32(scratch + n - 4));
            if (Crc32c(0, scratch, n - 4) != stored) {
                return leveldb::Status::Corruption("block checksum mismatch", m_name);
            }
        }
        return leveldb::Status::OK();
    }

private:
    const std::string m_name;
    const int m_fd;
    const uint64_t m_size;
};

/// The default environment, with table files read by pread instead of mmap.
class PreadEnv final : public leveldb::EnvWrapper {
public:
    PreadEnv() : leveldb::EnvWrapper(leveldb::Env::Default()) {}
    leveldb::Status NewRandomAccessFile(const std::string& f, leveldb::RandomAccessFile** r) override
    {
        const int fd = ::open(f.c_str(), O_RDONLY | O_CLOEXEC);
        if (fd < 0) {
            *r = nullptr;
            return errno == ENOENT ? leveldb::Status::NotFound(f, std::strerror(errno))
                                   : leveldb::Status::IOError(f, std::strerror(errno));
        }
        struct stat sb;
        if (::fstat(fd, &sb) != 0) {
            const int err = errno;
            ::close(fd);
            *r = nullptr;
            return leveldb::Status::IOError(f, std::strerror(err));
        }
        *r = new PreadFile(f, fd, uint64_t(sb.st_size)); // tables never change once written
        return leveldb::Status::OK();
    }
};

/// One per process, never destroyed (LevelDB's background thread may outlive static destructors).
inline leveldb::Env* NoMmapEnv()
{
    static PreadEnv* env = new PreadEnv;
    return env;
}

/// A read-only view of `dir`: reads come from the directory, everything LevelDB creates goes to a
/// scratch directory, and removals/renames of the directory's own files are only recorded. The
/// user's directory stays byte-identical (and its files' mtimes unchanged).
class OverlayEnv final : public leveldb::EnvWrapper {
public:
    OverlayEnv(leveldb::Env* base, std::string dir, std::string scratch)
        : leveldb::EnvWrapper(base), m_dir(std::move(dir)), m_scratch(std::move(scratch))
    {
    }

    leveldb::Status NewSequentialFile(const std::string& f, leveldb::SequentialFile** r) override
    {
        std::string name;
        if (!Ours(f, &name)) return target()->NewSequentialFile(f, r);
        std::string p;
        if (!Resolve(name, &p)) return leveldb::Status::NotFound(f);
        return target()->NewSequentialFile(p, r);
    }
    leveldb::Status NewRandomAccessFile(const std::string& f, leveldb::RandomAccessFile** r) override
    {
        std::string name;
        if (!Ours(f, &name)) return target()->NewRandomAccessFile(f, r);
        std::string p;
        if (!Resolve(name, &p)) return leveldb::Status::NotFound(f);
        return target()->NewRandomAccessFile(p, r);
    }
    /// After the open: refuse to create files. LevelDB's background compactions (size- or
    /// seek-triggered while a large chainstate is scanned) then fail harmlessly instead of writing
    /// gigabytes to the scratch directory; reads are unaffected.
    void Freeze() { m_frozen = true; }

    leveldb::Status NewWritableFile(const std::string& f, leveldb::WritableFile** r) override
    {
        std::string name;
        if (!Ours(f, &name)) return target()->NewWritableFile(f, r);
        if (m_frozen) return leveldb::Status::IOError(f, "read-only chainstate view");
        Shadow(name);
        return target()->NewWritableFile(Scratch(name), r);
    }
    leveldb::Status NewAppendableFile(const std::string& f, leveldb::WritableFile** r) override
    {
        std::string name;
        if (!Ours(f, &name)) return target()->NewAppendableFile(f, r);
        if (m_frozen) return leveldb::Status::IOError(f, "read-only chainstate view");
        if (!target()->FileExists(Scratch(name)) && !Hidden(name) && target()->FileExists(f)) {
            auto st = CopyToScratch(f, name);
            if (!st.ok()) return st;
        }
        Shadow(name);
        return target()->NewAppendableFile(Scratch(name), r);
    }
    bool FileExists(const std::string& f) override
    {
        std::string name;
        if (!Ours(f, &name)) return target()->FileExists(f);
        std::string p;
        return Resolve(name, &p);
    }
    leveldb::Status GetChildren(const std::string& dir, std::vector<std::string>* r) override
    {
        if (Strip(dir) != m_dir) return target()->GetChildren(dir, r);
        std::vector<std::string> orig, scratch;
        auto st = target()->GetChildren(m_dir, &orig);
        if (!st.ok()) return st;
        st = target()->GetChildren(m_scratch, &scratch);
        if (!st.ok()) return st;
        std::set<std::string> all;
        {
            std::lock_guard<std::mutex> lock(m_mutex);
            for (auto& n : orig) {
                if (!m_hidden.count(n)) all.insert(n);
            }
        }
        for (auto& n : scratch) all.insert(n);
        r->assign(all.begin(), all.end());
        return leveldb::Status::OK();
    }
    leveldb::Status RemoveFile(const std::string& f) override
    {
        std::string name;
        if (!Ours(f, &name)) return target()->RemoveFile(f);
        if (target()->FileExists(Scratch(name))) target()->RemoveFile(Scratch(name));
        std::lock_guard<std::mutex> lock(m_mutex);
        m_hidden.insert(name);
        return leveldb::Status::OK();
    }
    leveldb::Status CreateDir(const std::string& d) override
    {
        if (Strip(d) == m_dir) return leveldb::Status::OK();
        return target()->CreateDir(d);
    }
    leveldb::Status RemoveDir(const std::string& d) override
    {
        if (Strip(d) == m_dir) return leveldb::Status::OK();
        return target()->RemoveDir(d);
    }
    leveldb::Status GetFileSize(const std::string& f, uint64_t* s) override
    {
        std::string name;
        if (!Ours(f, &name)) return target()->GetFileSize(f, s);
        std::string p;
        if (!Resolve(name, &p)) return leveldb::Status::NotFound(f);
        return target()->GetFileSize(p, s);
    }
    leveldb::Status RenameFile(const std::string& src, const std::string& dst) override
    {
        std::string sn, dn;
        const bool so = Ours(src, &sn), dn_ours = Ours(dst, &dn);
        if (!so && !dn_ours) return target()->RenameFile(src, dst);
        if (!so || !dn_ours) return leveldb::Status::NotSupported("rename across the read-only overlay");
        if (target()->FileExists(Scratch(sn))) {
            Shadow(dn);
            auto st = target()->RenameFile(Scratch(sn), Scratch(dn));
            if (st.ok()) {
                std::lock_guard<std::mutex> lock(m_mutex);
                m_hidden.insert(sn);
            }
            return st;
        }
        if (Hidden(sn)) return leveldb::Status::NotFound(src);
        auto st = CopyToScratch(src, dn);
        if (!st.ok()) return st;
        std::lock_guard<std::mutex> lock(m_mutex);
        m_hidden.insert(sn);
        return st;
    }
    leveldb::Status LockFile(const std::string& f, leveldb::FileLock** l) override
    {
        std::string name;
        if (!Ours(f, &name)) return target()->LockFile(f, l);
        return target()->LockFile(Scratch(name), l);
    }
    leveldb::Status NewLogger(const std::string&, leveldb::Logger** result) override
    {
        *result = new NullLogger;
        return leveldb::Status::OK();
    }

private:
    static std::string Strip(std::string p)
    {
        while (p.size() > 1 && p.back() == '/') p.pop_back();
        return p;
    }
    bool Ours(const std::string& f, std::string* name) const
    {
        const auto slash = f.find_last_of('/');
        if (slash == std::string::npos) return false;
        if (Strip(f.substr(0, slash)) != m_dir) return false;
        *name = f.substr(slash + 1);
        return true;
    }
    std::string Scratch(const std::string& name) const { return m_scratch + "/" + name; }
    bool Hidden(const std::string& name)
    {
        std::lock_guard<std::mutex> lock(m_mutex);
        return m_hidden.count(name) != 0;
    }
    /// The file now lives in scratch: the original (if any) is shadowed.
    void Shadow(const std::string& name)
    {
        std::lock_guard<std::mutex> lock(m_mutex);
        m_hidden.insert(name);
    }
    bool Resolve(const std::string& name, std::string* path)
    {
        if (target()->FileExists(Scratch(name))) {
            *path = Scratch(name);
            return true;
        }
        if (Hidden(name)) return false;
        *path = m_dir + "/" + name;
        return target()->FileExists(*path);
    }
    leveldb::Status CopyToScratch(const std::string& src, const std::string& name)
    {
        std::error_code ec;
        std::filesystem::copy_file(src, Scratch(name), std::filesystem::copy_options::overwrite_existing, ec);
        if (ec) return leveldb::Status::IOError(src, ec.message());
        return leveldb::Status::OK();
    }

    const std::string m_dir;
    const std::string m_scratch;
    std::mutex m_mutex;
    std::set<std::string> m_hidden; ///< names of the directory's files that no longer exist in the view
    std::atomic<bool> m_frozen{false};
};

} // namespace ibdkit::kv

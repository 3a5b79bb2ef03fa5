// src/run/scratch_dir.h (internal) — what the run drivers share: a temporary folder for a run that
// needs a chainstate the caller did not ask to keep, and the statistics of a chainstate written.
#pragma once

#include <ibdkit/coins/coins_db.h>
#include <ibdkit/error.h>
#include <ibdkit/utxo/stats.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string>
#include <system_error>
#include <utility>

namespace ibdkit::run {

/// A folder made for this run in the system's temporary directory, removed with what it holds.
class ScratchDir {
public:
    static Result<ScratchDir> Make(const std::string& what)
    {
        std::error_code ec;
        const std::filesystem::path base = std::filesystem::temp_directory_path(ec);
        if (ec) return Error{Errc::Io, "no temporary directory (TMPDIR): " + ec.message()};
        std::string tmpl = (base / ("ibdkit-" + what + "-XXXXXX")).string();
        if (::mkdtemp(tmpl.data()) == nullptr) {
            return Error{Errc::Io, "cannot make a temporary folder in " + base.string() + ": " + std::strerror(errno) +
                                       " (TMPDIR chooses another)"};
        }
        ScratchDir d;
        d.m_path = tmpl;
        return d;
    }
    ScratchDir() = default;
    ScratchDir(ScratchDir&& o) noexcept : m_path(std::exchange(o.m_path, {})) {}
    ScratchDir& operator=(ScratchDir&&) = delete;
    ~ScratchDir()
    {
        std::error_code ec;
        if (!m_path.empty()) std::filesystem::remove_all(m_path, ec);
    }
    const std::filesystem::path& Path() const noexcept { return m_path; }

private:
    std::filesystem::path m_path;
};

/// The statistics of a chainstate a run wrote.
inline Result<UtxoStats> StatsOf(const std::filesystem::path& dir)
{
    CoinsDBOptions o;
    o.read_only = true;
    auto db = CoinsDB::Open(dir, o);
    if (!db) return Error{Errc::Corrupt, "cannot read the chainstate written: " + db.error().message};
    return ComputeUtxoStats(**db);
}

} // namespace ibdkit::run

// src/common/temp_dir.h — the one way ibdkit makes a folder of its own in the system's temporary
// directory: a run's temporary chainstate, a read-only open's scratch for LevelDB, a driver's
// chainstate that is not kept. Each name is new (mkdtemp), never one made from the process id,
// which could meet the leftover of a killed run that had the same id and continue it.
#pragma once

#include <ibdkit/error.h>

#include <filesystem>
#include <string>

namespace ibdkit {

/// Makes a new, empty folder "ibdkit-WHAT-XXXXXX" in the system's temporary directory (TMPDIR).
/// Errors: Errc::Io naming the directory and the system's reason (TMPDIR chooses another).
/// Thread-safe.
Result<std::filesystem::path> MakeTempDir(const std::string& what);

/// A folder made by MakeTempDir, removed with what it holds when the owner is destroyed. Movable,
/// not copyable.
class TempDir {
public:
    static Result<TempDir> Make(const std::string& what);
    TempDir() = default;
    TempDir(TempDir&& o) noexcept;
    TempDir& operator=(TempDir&& o) noexcept;
    TempDir(const TempDir&) = delete;
    TempDir& operator=(const TempDir&) = delete;
    ~TempDir();
    /// Empty for a default-made or moved-from one.
    const std::filesystem::path& Path() const noexcept { return m_path; }

private:
    void Remove() noexcept;
    std::filesystem::path m_path;
};

} // namespace ibdkit

// The one maker of ibdkit's temporary folders (common/temp_dir.h).
#include "common/temp_dir.h"

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <system_error>
#include <utility>

namespace ibdkit {

Result<std::filesystem::path> MakeTempDir(const std::string& what)
{
    std::error_code ec;
    const std::filesystem::path base = std::filesystem::temp_directory_path(ec);
    if (ec) return Error{Errc::Io, "no temporary directory (TMPDIR): " + ec.message()};
    std::string tmpl = (base / ("ibdkit-" + what + "-XXXXXX")).string();
    if (::mkdtemp(tmpl.data()) == nullptr) {
        return Error{Errc::Io, "cannot make a temporary folder in " + base.string() + ": " + std::strerror(errno) +
                                   " (TMPDIR chooses another)"};
    }
    return std::filesystem::path(tmpl);
}

Result<TempDir> TempDir::Make(const std::string& what)
{
    auto path = MakeTempDir(what);
    if (!path) return path.error();
    TempDir d;
    d.m_path = std::move(*path);
    return d;
}

TempDir::TempDir(TempDir&& o) noexcept : m_path(std::exchange(o.m_path, {})) {}

TempDir& TempDir::operator=(TempDir&& o) noexcept
{
    if (this != &o) {
        Remove();
        m_path = std::exchange(o.m_path, {});
    }
    return *this;
}

TempDir::~TempDir() { Remove(); }

void TempDir::Remove() noexcept
{
    std::error_code ec;
    if (!m_path.empty()) std::filesystem::remove_all(m_path, ec);
    m_path.clear();
}

} // namespace ibdkit

// Helpers shared by unit tests.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <stdlib.h> // mkdtemp
#include <filesystem>
#include <fstream>
#include <optional>
#include <random>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

namespace ibdkit::test {

inline std::vector<uint8_t> ParseHex(const std::string& hex)
{
    std::vector<uint8_t> out;
    auto nib = [](char c) -> int {
        if (c >= '0' && c <= '9') return c - '0';
        if (c >= 'a' && c <= 'f') return c - 'a' + 10;
        if (c >= 'A' && c <= 'F') return c - 'A' + 10;
        return -1;
    };
    for (std::size_t i = 0; i + 1 < hex.size(); i += 2) out.push_back(uint8_t(nib(hex[i]) * 16 + nib(hex[i + 1])));
    return out;
}

template <typename R>
std::string ToHex(const R& bytes)
{
    static const char* d = "0123456789abcdef";
    std::string s;
    for (auto b : bytes) {
        s += d[uint8_t(b) >> 4];
        s += d[uint8_t(b) & 15];
    }
    return s;
}

/// A fresh directory under the system's temp directory (mkdtemp: unique, also across processes),
/// removed with everything in it when the object goes.
class TempDir {
public:
    explicit TempDir(const std::string& prefix = "ibdkit-test")
    {
        std::string t = (std::filesystem::temp_directory_path() / (prefix + "-XXXXXX")).string();
        if (::mkdtemp(t.data()) == nullptr) throw std::runtime_error("mkdtemp failed for " + t);
        path = t;
    }
    TempDir(const TempDir&) = delete;
    TempDir& operator=(const TempDir&) = delete;
    ~TempDir()
    {
        std::error_code ec;
        std::filesystem::remove_all(path, ec);
    }
    std::filesystem::path path;
};

/// Path under tests/data (the repository's own copy of real chain data), or nullopt if absent.
inline std::optional<std::filesystem::path> TestData(const std::string& rel)
{
    std::filesystem::path p = std::filesystem::path(IBDKIT_TEST_DATA) / rel;
    if (std::filesystem::exists(p)) return p;
    return std::nullopt;
}

/// The files under `dir` this process holds open now (from /proc/self/fd), by canonical path.
inline std::set<std::filesystem::path> OpenFilesUnder(const std::filesystem::path& dir)
{
    const auto root = std::filesystem::canonical(dir).string() + "/";
    std::set<std::filesystem::path> out;
    std::error_code ec;
    for (const auto& e : std::filesystem::directory_iterator("/proc/self/fd", ec)) {
        const auto target = std::filesystem::read_symlink(e.path(), ec);
        if (!ec && target.string().rfind(root, 0) == 0) out.insert(target);
    }
    return out;
}

inline std::vector<uint8_t> ReadFile(const std::filesystem::path& p)
{
    std::ifstream f(p, std::ios::binary);
    return std::vector<uint8_t>((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
}

/// A seed printed by the test so a failure can be replayed: IBDKIT_TEST_SEED overrides it.
inline uint64_t TestSeed()
{
    static const uint64_t seed = [] {
        if (const char* s = std::getenv("IBDKIT_TEST_SEED")) return uint64_t(std::strtoull(s, nullptr, 10));
        return uint64_t(std::random_device{}()) << 32 | std::random_device{}();
    }();
    return seed;
}

/// Called with every block the test binary's global operator delete is about to free (and its
/// usable size), while set. The counting operator new/delete live in test_bench.cpp; under
/// AddressSanitizer they are not installed and this is never called (FreeHookInstalled()).
inline std::atomic<void (*)(const void*, std::size_t)> g_on_free{nullptr};
/// Called with every block the test binary's global operator new returns (and its usable size), while set.
inline std::atomic<void (*)(void*, std::size_t)> g_on_alloc{nullptr};
/// Whether the binary's operator delete calls g_on_free (set by test_bench.cpp at static init).
inline std::atomic<bool> g_free_hook_installed{false};

/// True when CI=true (or 1/yes): a test whose prerequisite is missing fails instead of skipping.
inline bool OnCI()
{
    const char* ci = std::getenv("CI");
    if (!ci) return false;
    const std::string v(ci);
    return v == "true" || v == "TRUE" || v == "True" || v == "1" || v == "yes";
}

} // namespace ibdkit::test

/// A prerequisite is missing: skips with the reason locally; with CI=true, fails naming what to
/// install. Use in a test body (it returns from it).
#define IBDKIT_MISSING_PREREQUISITE(what, install)                                                  \
    do {                                                                                            \
        if (::ibdkit::test::OnCI()) {                                                               \
            FAIL() << "CI=true and " << what << "; install " << install;                           \
        } else {                                                                                    \
            GTEST_SKIP() << what << "; install " << install;                                        \
        }                                                                                           \
    } while (0)

// Helpers shared by unit tests.
#pragma once

#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <random>
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

/// Path under ../shared/data, or nullopt when the data is not present.
inline std::optional<std::filesystem::path> SharedData(const std::string& rel)
{
    std::filesystem::path p = std::filesystem::path(IBDKIT_SHARED_DATA) / rel;
    if (std::filesystem::exists(p)) return p;
    return std::nullopt;
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

} // namespace ibdkit::test

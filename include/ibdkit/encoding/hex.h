// ibdkit/encoding/hex.h — hex of bytes, in order: Core's HexStr and its inverse (the one hex parser).
// Every function here is pure and thread-safe.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace ibdkit {

/// "00ff…" for the bytes in order (no reversal: for hashes' display form use uint256::ToHex()).
std::string HexStr(std::span<const uint8_t> bytes);

namespace detail {
/// Digit values by character, -1 for a non-digit: one load per character where parsers read
/// gigabytes of hex (an export's re-read check).
inline constexpr std::array<int8_t, 256> HEX_DIGITS = [] {
    std::array<int8_t, 256> t{};
    for (auto& v : t) v = -1;
    for (int i = 0; i < 10; ++i) t[std::size_t('0' + i)] = int8_t(i);
    for (int i = 0; i < 6; ++i) t[std::size_t('a' + i)] = t[std::size_t('A' + i)] = int8_t(10 + i);
    return t;
}();
} // namespace detail

/// The value of a hex digit (0-9, a-f, A-F), or -1 for any other character.
constexpr int HexDigit(char c) noexcept { return detail::HEX_DIGITS[uint8_t(c)]; }

/// The bytes of a hex string, in order; nullopt for an odd length or a character that is not a hex
/// digit (no whitespace, no 0x prefix).
std::optional<std::vector<uint8_t>> ParseHex(std::string_view hex);
/// ParseHex into `out` (resized; its capacity reused from call to call). Returns false where
/// ParseHex returns nullopt (`out` then holds garbage).
bool ParseHexInto(std::string_view hex, std::vector<uint8_t>& out);

} // namespace ibdkit

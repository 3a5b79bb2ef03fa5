// ibdkit/encoding/hex.h — hex of bytes, in order: Core's HexStr and its inverse (the one hex parser).
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace ibdkit {

/// "00ff…" for the bytes in order (no reversal: for hashes' display form use uint256::ToHex()).
std::string HexStr(std::span<const uint8_t> bytes);

/// The value of a hex digit (0-9, a-f, A-F), or -1 for any other character.
constexpr int HexDigit(char c) noexcept
{
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

/// The bytes of a hex string, in order; nullopt for an odd length or a character that is not a hex
/// digit (no whitespace, no 0x prefix).
std::optional<std::vector<uint8_t>> ParseHex(std::string_view hex);

} // namespace ibdkit

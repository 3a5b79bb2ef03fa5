// ibdkit/encoding/hex.h — lower-case hex of bytes, in order (Core's HexStr).
#pragma once

#include <cstdint>
#include <span>
#include <string>

namespace ibdkit {

/// "00ff…" for the bytes in order (no reversal: for hashes' display form use uint256::ToHex()).
std::string HexStr(std::span<const uint8_t> bytes);

} // namespace ibdkit

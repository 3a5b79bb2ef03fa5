#include <ibdkit/encoding/hex.h>
#include <ibdkit/primitives/hash.h>

#include <ibdkit/crypto/sha256.h>

namespace ibdkit {

namespace {
constexpr char HEX[] = "0123456789abcdef";
} // namespace

std::string uint256::ToHex() const
{
    std::string s(64, '0');
    for (std::size_t i = 0; i < SIZE; ++i) {
        const uint8_t b = m_data[SIZE - 1 - i];
        s[2 * i] = HEX[b >> 4];
        s[2 * i + 1] = HEX[b & 15];
    }
    return s;
}

std::string uint256::ToInternalHex() const
{
    std::string s(64, '0');
    for (std::size_t i = 0; i < SIZE; ++i) {
        s[2 * i] = HEX[m_data[i] >> 4];
        s[2 * i + 1] = HEX[m_data[i] & 15];
    }
    return s;
}

std::optional<uint256> uint256::FromHex(std::string_view hex)
{
    if (hex.size() != 64) return std::nullopt;
    uint256 out;
    for (std::size_t i = 0; i < SIZE; ++i) {
        const int hi = HexDigit(hex[2 * i]), lo = HexDigit(hex[2 * i + 1]);
        if (hi < 0 || lo < 0) return std::nullopt;
        out.m_data[SIZE - 1 - i] = uint8_t(hi * 16 + lo);
    }
    return out;
}

uint256 HashSha256d(std::span<const uint8_t> data) noexcept
{
    uint256 out;
    Sha256dOf(data, out.data());
    return out;
}

} // namespace ibdkit

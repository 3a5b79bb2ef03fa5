#include <ibdkit/encoding/hex.h>

namespace ibdkit {

std::string HexStr(std::span<const uint8_t> bytes)
{
    static constexpr char DIGITS[] = "0123456789abcdef";
    std::string s(bytes.size() * 2, '0');
    for (std::size_t i = 0; i < bytes.size(); ++i) {
        s[2 * i] = DIGITS[bytes[i] >> 4];
        s[2 * i + 1] = DIGITS[bytes[i] & 15];
    }
    return s;
}

std::optional<std::vector<uint8_t>> ParseHex(std::string_view hex)
{
    if (hex.size() % 2 != 0) return std::nullopt;
    std::vector<uint8_t> out(hex.size() / 2);
    for (std::size_t i = 0; i < out.size(); ++i) {
        const int hi = HexDigit(hex[2 * i]), lo = HexDigit(hex[2 * i + 1]);
        if (hi < 0 || lo < 0) return std::nullopt;
        out[i] = uint8_t(hi * 16 + lo);
    }
    return out;
}

} // namespace ibdkit

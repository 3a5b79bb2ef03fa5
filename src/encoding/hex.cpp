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

bool ParseHexInto(std::string_view hex, std::vector<uint8_t>& out)
{
    if (hex.size() % 2 != 0) return false;
    out.resize(hex.size() / 2);
    int bad = 0;
    for (std::size_t i = 0; i < out.size(); ++i) {
        const int hi = HexDigit(hex[2 * i]), lo = HexDigit(hex[2 * i + 1]);
        bad |= hi | lo; // negative once any character is not a digit: one test at the end
        out[i] = uint8_t(hi << 4 | lo);
    }
    return bad >= 0;
}

std::optional<std::vector<uint8_t>> ParseHex(std::string_view hex)
{
    std::vector<uint8_t> out;
    if (!ParseHexInto(hex, out)) return std::nullopt;
    return out;
}

} // namespace ibdkit

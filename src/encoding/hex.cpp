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

} // namespace ibdkit

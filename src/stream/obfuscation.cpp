#include <ibdkit/stream/obfuscation.h>

#include <cstring>

namespace ibdkit {

void XorBytes(std::span<std::byte> data, const ObfuscationKey& key, std::size_t key_offset) noexcept
{
    if (key.IsNull() || data.empty()) return;
    // Rotate the key so that rot[0] applies to data[0]; then whole 8-byte words XOR with one load.
    std::array<std::byte, 16> twice;
    std::memcpy(twice.data(), key.bytes.data(), 8);
    std::memcpy(twice.data() + 8, key.bytes.data(), 8);
    const std::byte* rot = twice.data() + (key_offset % 8);
    uint64_t k;
    std::memcpy(&k, rot, 8);
    std::byte* p = data.data();
    std::size_t n = data.size();
    while (n >= 8) {
        uint64_t w;
        std::memcpy(&w, p, 8);
        w ^= k;
        std::memcpy(p, &w, 8);
        p += 8;
        n -= 8;
    }
    for (std::size_t i = 0; i < n; ++i) p[i] ^= rot[i];
}

} // namespace ibdkit

// ibdkit/stream/obfuscation.h — the 8-byte XOR key of Core's chainstate values and block files.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>

namespace ibdkit {

/// An 8-byte XOR key. All-zero means "not obfuscated".
struct ObfuscationKey {
    std::array<std::byte, 8> bytes{};

    bool IsNull() const noexcept
    {
        for (std::byte b : bytes) {
            if (b != std::byte{0}) return false;
        }
        return true;
    }
    friend bool operator==(const ObfuscationKey&, const ObfuscationKey&) = default;
};

/// data[i] ^= key[(key_offset + i) mod 8]. key_offset is the absolute position of data[0] in the
/// obfuscated object (e.g. a file offset). Word-at-a-time; a null key is a no-op.
void XorBytes(std::span<std::byte> data, const ObfuscationKey& key, std::size_t key_offset = 0) noexcept;

} // namespace ibdkit

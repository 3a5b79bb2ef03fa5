#include <ibdkit/wire/message.h>

namespace ibdkit {

std::string MessageHeader::Command() const
{
    std::size_t n = 0;
    while (n < COMMAND_SIZE && command[n] != '\0') ++n;
    return std::string(command.data(), n);
}

bool MessageHeader::IsCommandValid() const noexcept
{
    std::size_t i = 0;
    for (; i < COMMAND_SIZE && command[i] != '\0'; ++i) {
        if (command[i] < ' ' || command[i] > 0x7e) return false;
    }
    for (; i < COMMAND_SIZE; ++i) {
        if (command[i] != '\0') return false;
    }
    return true;
}

std::array<uint8_t, 4> MessageChecksum(std::span<const uint8_t> payload) noexcept
{
    uint8_t digest[32];
    Sha256dOf(payload, digest);
    return {digest[0], digest[1], digest[2], digest[3]};
}

} // namespace ibdkit

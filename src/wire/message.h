// src/wire/message.h — P2P v1 message framing (docs/formats.md §4).
//
// 24-byte header `magic[4] | command[12] | payload length LE32 | checksum[4]`, then the payload.
// MessageReceiver is the incremental decoder a connection feeds with byte chunks of any size; it keeps
// the payload in a DataStream<Policy> of the buffer policy it was made with, as Bitcoin Core does,
// grows it only as bytes arrive, and hands it out as OwnedBytes (freed by that policy's release).
//
// Error classes, as Core's V1Transport:
//  - disconnect: wrong magic (Errc::BadMagic), payload length above the limit
//    (Errc::OversizedMessage). The receiver enters a failed state; the peer must be dropped.
//  - drop: bad checksum, malformed command. The message is discarded and counted; the stream goes on.
#pragma once

#include <ibdkit/chain/params.h>
#include <ibdkit/crypto/sha256.h>
#include <ibdkit/error.h>

#include "memory/policy.h"
#include "stream/owned_bytes.h"
#include "stream/streams.h"

#include <array>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace ibdkit {

inline constexpr std::size_t MESSAGE_HEADER_SIZE = 24;
inline constexpr std::size_t COMMAND_SIZE = 12;
/// Core's MAX_PROTOCOL_MESSAGE_LENGTH: larger payloads disconnect the peer.
inline constexpr uint32_t MAX_PROTOCOL_MESSAGE_LENGTH = 4'000'000;

struct MessageHeader {
    MessageStart magic{};
    std::array<char, COMMAND_SIZE> command{};
    uint32_t length{0};
    std::array<uint8_t, 4> checksum{};

    /// The command without its NUL padding.
    std::string Command() const;
    /// Printable ASCII (0x20..0x7e), NUL-padded; after the first NUL only NULs (Core's rule, which
    /// accepts an all-NUL command).
    bool IsCommandValid() const noexcept;

    template <typename Op, typename Self>
    static void SerOps(Op& op, Self& self) { op(self.magic, self.command, self.length, self.checksum); }
};

/// First 4 bytes of SHA256d(payload).
std::array<uint8_t, 4> MessageChecksum(std::span<const uint8_t> payload) noexcept;

/// Appends a complete message (header + payload) to out. Precondition: command is 1..12 chars.
template <typename Out>
void WriteMessage(Out& out, const MessageStart& magic, std::string_view command, std::span<const uint8_t> payload)
{
    MessageHeader h;
    h.magic = magic;
    for (std::size_t i = 0; i < command.size() && i < COMMAND_SIZE; ++i) h.command[i] = command[i];
    h.length = uint32_t(payload.size());
    h.checksum = MessageChecksum(payload);
    Serialize(out, h);
    out.write(MakeByteSpan(payload));
}

/// A complete, checksum-verified message; its payload is still in the receiver's policy buffer.
struct NetMessage {
    std::string command;
    OwnedBytes payload;
};

/// Counters of a receiver.
struct ReceiverStats {
    uint64_t messages{0};           ///< complete messages delivered
    uint64_t bytes{0};              ///< bytes fed
    uint64_t dropped_checksum{0};   ///< messages dropped for a bad checksum
    uint64_t dropped_command{0};    ///< messages dropped for a malformed command
};

namespace detail {
/// The receiver of one policy (src/wire/message.cpp): its payload is a DataStream of that policy.
class ReceiverState;
} // namespace detail

class MessageReceiver {
public:
    /// Receives payloads into DataStream<P> of the policy `policy`; payloads longer than
    /// `max_length` disconnect.
    explicit MessageReceiver(const MessageStart& magic, PolicyId policy = DefaultPolicy::id,
                             uint32_t max_length = MAX_PROTOCOL_MESSAGE_LENGTH);
    MessageReceiver(MessageReceiver&&) noexcept;
    MessageReceiver& operator=(MessageReceiver&&) noexcept;
    ~MessageReceiver();

    /// Consumes bytes from the front of `data` until a message is complete or `data` is empty.
    /// Returns true when a message is ready (take it with TakeMessage()). On a disconnect-class
    /// error returns the error; the receiver then stays failed.
    Result<bool> Feed(std::span<const uint8_t>& data);

    /// The completed message; precondition: the last Feed returned true.
    NetMessage TakeMessage();

    /// Bytes of the current message received so far (header + payload).
    std::size_t PendingBytes() const noexcept;
    const ReceiverStats& stats() const noexcept;
    bool failed() const noexcept;
    /// After a failure for a header in another magic (Errc::BadMagic): that magic.
    std::optional<MessageStart> WrongMagic() const noexcept;
    PolicyId policy() const noexcept { return m_policy; }

private:
    PolicyId m_policy;
    std::unique_ptr<detail::ReceiverState> m_state;
};

} // namespace ibdkit

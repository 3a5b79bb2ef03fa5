// ibdkit/wire/message.h — P2P v1 message framing (docs/formats.md §4).
//
// 24-byte header `magic[4] | command[12] | payload length LE32 | checksum[4]`, then the payload.
// MessageReceiver is the incremental decoder a connection feeds with byte chunks of any size; it keeps
// the payload in a DataStream<Policy>, as Bitcoin Core does, and grows it only as bytes arrive.
//
// Error classes, as Core's V1Transport:
//  - disconnect: wrong magic (Errc::BadMagic), payload length above the limit
//    (Errc::OversizedMessage). The receiver enters a failed state; the peer must be dropped.
//  - drop: bad checksum, malformed command. The message is discarded and counted; the stream goes on.
#pragma once

#include <ibdkit/chain/params.h>
#include <ibdkit/crypto/sha256.h>
#include <ibdkit/error.h>
#include <ibdkit/stream/streams.h>

#include <array>
#include <cstdint>
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

/// A complete, checksum-verified message.
template <typename Policy>
struct NetMessage {
    std::string command;
    DataStream<Policy> payload;
};

/// Counters of a receiver.
struct ReceiverStats {
    uint64_t messages{0};           ///< complete messages delivered
    uint64_t bytes{0};              ///< bytes fed
    uint64_t dropped_checksum{0};   ///< messages dropped for a bad checksum
    uint64_t dropped_command{0};    ///< messages dropped for a malformed command
};

template <typename Policy = DefaultPolicy>
class MessageReceiver {
public:
    explicit MessageReceiver(const MessageStart& magic, uint32_t max_length = MAX_PROTOCOL_MESSAGE_LENGTH)
        : m_magic(magic), m_max_length(max_length)
    {
    }

    /// Consumes bytes from the front of `data` until a message is complete or `data` is empty.
    /// Returns true when a message is ready (take it with TakeMessage()). On a disconnect-class
    /// error returns the error; the receiver then stays failed.
    Result<bool> Feed(std::span<const uint8_t>& data)
    {
        if (m_failed) return *m_failed;
        while (!data.empty() && !m_ready) {
            if (m_header_pos < MESSAGE_HEADER_SIZE) {
                const std::size_t n = std::min(data.size(), MESSAGE_HEADER_SIZE - m_header_pos);
                std::memcpy(m_header_bytes.data() + m_header_pos, data.data(), n);
                m_header_pos += n;
                Advance(data, n);
                if (m_header_pos == MESSAGE_HEADER_SIZE) {
                    if (auto err = ParseHeader()) return Fail(std::move(*err));
                    if (m_header.length == 0) Complete();
                }
                continue;
            }
            const std::size_t n = std::min<std::size_t>(data.size(), m_header.length - m_payload.size());
            const auto chunk = data.first(n);
            m_payload.write(MakeByteSpan(chunk)); // grows only by what arrived
            m_hasher.Write(chunk);
            Advance(data, n);
            if (m_payload.size() == m_header.length) Complete();
        }
        return m_ready;
    }

    /// The completed message; precondition: the last Feed returned true.
    NetMessage<Policy> TakeMessage()
    {
        NetMessage<Policy> m{m_header.Command(), std::move(m_payload)};
        Reset();
        return m;
    }

    /// Bytes of the current message received so far (header + payload).
    std::size_t PendingBytes() const noexcept { return m_header_pos + m_payload.size(); }
    const ReceiverStats& stats() const noexcept { return m_stats; }
    bool failed() const noexcept { return m_failed.has_value(); }

private:
    void Advance(std::span<const uint8_t>& data, std::size_t n)
    {
        data = data.subspan(n);
        m_stats.bytes += n;
    }

    std::optional<Error> ParseHeader()
    {
        SpanReader r{std::span<const uint8_t>(m_header_bytes)};
        r >> m_header;
        if (m_header.magic != m_magic) return Error{Errc::BadMagic, "P2P message with the wrong network magic: disconnect"};
        if (m_header.length > m_max_length) {
            return Error{Errc::OversizedMessage, "P2P message of " + std::to_string(m_header.length) +
                                                     " bytes exceeds the limit of " + std::to_string(m_max_length) + ": disconnect"};
        }
        m_hasher.Reset();
        return std::nullopt;
    }

    void Complete()
    {
        uint8_t digest[32];
        m_hasher.Finalize(digest);
        if (std::memcmp(digest, m_header.checksum.data(), 4) != 0) {
            ++m_stats.dropped_checksum;
            Reset();
            return;
        }
        if (!m_header.IsCommandValid()) {
            ++m_stats.dropped_command;
            Reset();
            return;
        }
        ++m_stats.messages;
        m_ready = true;
    }

    void Reset()
    {
        m_header_pos = 0;
        m_payload.clear();
        m_ready = false;
    }

    Result<bool> Fail(Error e)
    {
        m_failed = e;
        return e;
    }

    MessageStart m_magic;
    uint32_t m_max_length;
    std::array<uint8_t, MESSAGE_HEADER_SIZE> m_header_bytes{};
    std::size_t m_header_pos{0};
    MessageHeader m_header;
    DataStream<Policy> m_payload;
    Sha256d m_hasher;
    bool m_ready{false};
    std::optional<Error> m_failed;
    ReceiverStats m_stats;
};

} // namespace ibdkit

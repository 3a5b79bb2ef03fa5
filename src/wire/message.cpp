#include <ibdkit/wire/message.h>

#include <cstring>

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

namespace detail {

/// The payload of the message being received, in one policy's DataStream: the one place a
/// receiver's policy is a type.
class PayloadBuffer {
public:
    virtual ~PayloadBuffer() = default;
    /// Appends bytes as they arrive (Core's insert at the end, through the policy's container).
    virtual void Write(std::span<const uint8_t> bytes) = 0;
    virtual std::size_t Size() const noexcept = 0;
    virtual void Clear() noexcept = 0;
    /// Hands the payload out in its buffer; the next payload starts in a buffer of its own.
    virtual OwnedBytes Take() noexcept = 0;
};

} // namespace detail

namespace {

template <typename Policy>
class PolicyPayloadBuffer final : public detail::PayloadBuffer {
public:
    void Write(std::span<const uint8_t> bytes) override { m_stream.write(MakeByteSpan(bytes)); }
    std::size_t Size() const noexcept override { return m_stream.size(); }
    void Clear() noexcept override { m_stream.clear(); }
    OwnedBytes Take() noexcept override { return OwnedBytes(std::move(m_stream)); }

private:
    DataStream<Policy> m_stream;
};

} // namespace

MessageReceiver::MessageReceiver(const MessageStart& magic, PolicyId policy, uint32_t max_length)
    : m_magic(magic), m_policy(policy), m_max_length(max_length),
      m_payload(VisitPolicy(policy, []<typename P>(P) -> std::unique_ptr<detail::PayloadBuffer> {
          return std::make_unique<PolicyPayloadBuffer<P>>();
      }))
{
}

MessageReceiver::MessageReceiver(MessageReceiver&&) noexcept = default;
MessageReceiver& MessageReceiver::operator=(MessageReceiver&&) noexcept = default;
MessageReceiver::~MessageReceiver() = default;

Result<bool> MessageReceiver::Feed(std::span<const uint8_t>& data)
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
        const std::size_t n = std::min<std::size_t>(data.size(), m_header.length - m_payload->Size());
        const auto chunk = data.first(n);
        m_payload->Write(chunk); // grows only by what arrived
        m_hasher.Write(chunk);
        Advance(data, n);
        if (m_payload->Size() == m_header.length) Complete();
    }
    return m_ready;
}

NetMessage MessageReceiver::TakeMessage()
{
    NetMessage m{m_header.Command(), m_payload->Take()};
    Reset();
    return m;
}

std::size_t MessageReceiver::PendingBytes() const noexcept { return m_header_pos + m_payload->Size(); }

void MessageReceiver::Advance(std::span<const uint8_t>& data, std::size_t n)
{
    data = data.subspan(n);
    m_stats.bytes += n;
}

std::optional<Error> MessageReceiver::ParseHeader()
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

void MessageReceiver::Complete()
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

void MessageReceiver::Reset()
{
    m_header_pos = 0;
    m_payload->Clear();
    m_ready = false;
}

Result<bool> MessageReceiver::Fail(Error e)
{
    m_failed = e;
    return e;
}

} // namespace ibdkit

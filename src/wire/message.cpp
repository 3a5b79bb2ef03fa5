#include "wire/message.h"

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

/// A receiver of one policy: the one place a receiver's policy is a type, its payload growing in
/// that policy's DataStream as bytes arrive.
class ReceiverState {
public:
    virtual ~ReceiverState() = default;
    virtual Result<bool> Feed(std::span<const uint8_t>& data) = 0;
    virtual NetMessage TakeMessage() = 0;
    virtual std::size_t PendingBytes() const noexcept = 0;
    virtual const ReceiverStats& Stats() const noexcept = 0;
    virtual bool Failed() const noexcept = 0;
    virtual std::optional<MessageStart> WrongMagic() const noexcept = 0;
};

} // namespace detail

namespace {

template <typename Policy>
class PolicyReceiver final : public detail::ReceiverState {
public:
    PolicyReceiver(const MessageStart& magic, uint32_t max_length) : m_magic(magic), m_max_length(max_length) {}

    Result<bool> Feed(std::span<const uint8_t>& data) override
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

    NetMessage TakeMessage() override
    {
        NetMessage m{m_header.Command(), OwnedBytes(std::move(m_payload))};
        Reset();
        return m;
    }

    std::size_t PendingBytes() const noexcept override { return m_header_pos + m_payload.size(); }
    const ReceiverStats& Stats() const noexcept override { return m_stats; }
    bool Failed() const noexcept override { return m_failed.has_value(); }
    std::optional<MessageStart> WrongMagic() const noexcept override
    {
        if (!m_failed || m_failed->code != Errc::BadMagic) return std::nullopt;
        return m_header.magic;
    }

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

} // namespace

MessageReceiver::MessageReceiver(const MessageStart& magic, PolicyId policy, uint32_t max_length)
    : m_policy(policy), m_state(VisitPolicy(policy, [&]<typename P>(P) -> std::unique_ptr<detail::ReceiverState> {
          return std::make_unique<PolicyReceiver<P>>(magic, max_length);
      }))
{
}

MessageReceiver::MessageReceiver(MessageReceiver&&) noexcept = default;
MessageReceiver& MessageReceiver::operator=(MessageReceiver&&) noexcept = default;
MessageReceiver::~MessageReceiver() = default;

Result<bool> MessageReceiver::Feed(std::span<const uint8_t>& data) { return m_state->Feed(data); }
NetMessage MessageReceiver::TakeMessage() { return m_state->TakeMessage(); }
std::size_t MessageReceiver::PendingBytes() const noexcept { return m_state->PendingBytes(); }
const ReceiverStats& MessageReceiver::stats() const noexcept { return m_state->Stats(); }
bool MessageReceiver::failed() const noexcept { return m_state->Failed(); }
std::optional<MessageStart> MessageReceiver::WrongMagic() const noexcept { return m_state->WrongMagic(); }

} // namespace ibdkit

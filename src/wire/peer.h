// src/wire/peer.h — one outbound P2P connection: a TCP socket (POSIX, non-blocking, every wait
// bounded by poll with a deadline), the v1 framing of wire/message.h on top, and the handshake.
//
// Nothing here blocks without a deadline: a peer that stops sending, a peer that never accepts
// our bytes, and a Ctrl-C all end a wait with a NetError whose message says which it was.
// Disconnect-class framing errors (wrong magic, oversize length) end the connection with
// NetErrc::Misbehaving; dropped messages (bad checksum or command) are counted and skipped.
#pragma once

#include <ibdkit/chain/params.h>
#include <ibdkit/error.h>
#include <ibdkit/wire/host_port.h> // SplitHostPort, for the files that connect
#include <ibdkit/wire/net_error.h>

#include "wire/message.h"
#include "wire/protocol.h"

#include <atomic>
#include <chrono>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

namespace ibdkit {

class SendRateLimit;

using NetClock = std::chrono::steady_clock;

/// Seconds from `since` to now, as a run's results report the time a phase took.
inline double SecondsSince(NetClock::time_point since) { return std::chrono::duration<double>(NetClock::now() - since).count(); }

/// What to do when no peer could be reached on `chain`: the fix every sync names after a failed connect.
inline std::string ReachablePeerFix(ChainType chain)
{
    return "give the address of a running " + std::string(ChainTypeName(chain)) + " node that accepts connections (HOST:PORT)";
}

/// A connected stream socket (owns the descriptor).
class Socket {
public:
    Socket() = default;
    /// Adopts a connected descriptor (e.g. one end of a socketpair); makes it non-blocking.
    explicit Socket(int fd);
    ~Socket();
    Socket(Socket&& o) noexcept : m_fd(std::exchange(o.m_fd, -1)) {}
    Socket& operator=(Socket&& o) noexcept;
    Socket(const Socket&) = delete;
    Socket& operator=(const Socket&) = delete;

    /// Resolves host (name, IPv4 or IPv6 literal) and connects, waiting at most `timeout`.
    static NetResult<Socket> Connect(const std::string& host, uint16_t port, std::chrono::milliseconds timeout,
                                     const std::atomic<bool>* interrupt = nullptr);

    /// Sends every byte before `deadline`.
    std::optional<NetError> SendAll(std::span<const uint8_t> data, NetClock::time_point deadline,
                                    const std::atomic<bool>* interrupt = nullptr);
    /// Waits until bytes arrive (or `deadline`), then reads what is there into buf: a count > 0.
    NetResult<std::size_t> Receive(std::span<uint8_t> buf, NetClock::time_point deadline,
                                   const std::atomic<bool>* interrupt = nullptr);

    int fd() const noexcept { return m_fd; }
    bool valid() const noexcept { return m_fd >= 0; }
    void Close() noexcept;

private:
    int m_fd{-1};
};

/// How many of a peer's reject messages a connection keeps (the newest).
inline constexpr std::size_t MAX_REJECTS_KEPT = 16;
/// How many BIP 434 features of a peer a connection keeps (the first; later ones are ignored).
inline constexpr std::size_t MAX_FEATURES_KEPT = 16;

struct PeerInfo {
    VersionMessage version; ///< the peer's version message
    bool verack{false};
    uint64_t pings_answered{0};
    std::vector<std::string> rejects; ///< the last MAX_REJECTS_KEPT reject messages received, formatted
    /// BIP 434 features the peer announced between version and verack (the first MAX_FEATURES_KEPT).
    std::vector<FeatureMessage> features;
    bool HasFeature(std::string_view id) const noexcept
    {
        for (const auto& f : features) {
            if (f.id == id) return true;
        }
        return false;
    }
};

/// A P2P connection on top of a socket; messages are received through a MessageReceiver of the
/// connection's buffer policy, so every payload lives in that policy's DataStream until released.
class Peer {
public:
    Peer(Socket socket, const ChainParams& params, PolicyId policy = DefaultPolicy::id, const std::atomic<bool>* interrupt = nullptr);

    /// Sends one message; waits at most `timeout` for the socket to take it (with a rate limit, for
    /// the socket to take each piece: the wait for the limit is not the peer's).
    std::optional<NetError> Send(std::string_view command, std::span<const uint8_t> payload = {},
                                 std::chrono::milliseconds timeout = std::chrono::seconds(30));

    /// The next complete message, waiting until `deadline`. Answers `ping` with `pong` and records
    /// `reject` messages on the way (neither is returned).
    NetResult<NetMessage> Receive(NetClock::time_point deadline);

    /// version → (version + verack) ← → verack. `start_height` is our best height; `version` our
    /// protocol version (FEATURE_NEGOTIATION_VERSION to hear the peer's BIP 434 features, which
    /// info().features then lists; a malformed one ends the handshake). A node of another network
    /// is NetErrc::WrongNetwork naming both: its messages in that network's magic, or, when it
    /// closes the connection without a word as nodes do at a foreign magic, the network a version in
    /// each other magic finds it on (a connection each, only then).
    std::optional<NetError> Handshake(int32_t start_height, std::chrono::milliseconds timeout, uint64_t nonce,
                                      int32_t version = PROTOCOL_VERSION);

    /// One getheaders exchange: sends `getheaders` with `locator` and waits at most `wait` for the
    /// `headers` answer (other messages are skipped, as Core answers getheaders with one headers
    /// message). The peer's silence is NetErrc::Timeout ("no answer to getheaders within N s"), a
    /// malformed answer NetErrc::Misbehaving ("a malformed headers message: ..."); at most
    /// MAX_HEADERS_RESULTS headers, none of them checked.
    NetResult<std::vector<BlockHeader>> AskHeaders(std::vector<BlockHash> locator, std::chrono::milliseconds wait);

    /// From here on every message sent is charged to `limit` (shared with other connections; it
    /// must outlive this Peer) and sent in SendRateLimit::SEND_CHUNK pieces as the limit allows.
    void LimitSendRate(SendRateLimit* limit) noexcept { m_send_limit = limit; }

    /// A message's payload bytes.
    static std::span<const uint8_t> Bytes(const NetMessage& m) noexcept { return m.payload.uchars(); }

    const PeerInfo& info() const noexcept { return m_info; }
    const ReceiverStats& stats() const noexcept { return m_rx.stats(); }
    uint64_t bytes_sent() const noexcept { return m_bytes_sent; }
    Socket& socket() noexcept { return m_socket; }

private:
    std::string RejectSuffix() const { return m_info.rejects.empty() ? "" : " (" + m_info.rejects.back() + ")"; }

    Socket m_socket;
    const ChainParams& m_params;
    const std::atomic<bool>* m_interrupt;
    MessageReceiver m_rx;
    std::vector<uint8_t> m_buf;
    std::span<const uint8_t> m_pending;
    PeerInfo m_info;
    uint64_t m_bytes_sent{0};
    SendRateLimit* m_send_limit{nullptr};
    std::string m_remote_host; ///< numeric, for a probe of the peer's network after a failed handshake
    uint16_t m_remote_port{0};
};

} // namespace ibdkit

#include "wire/peer.h"

#include "wire/rate_limit.h"

#include "common/seconds_text.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <tuple>

namespace ibdkit {

namespace {

// Poll slices are short so an interrupt is noticed within this time.
constexpr auto POLL_SLICE = std::chrono::milliseconds(200);

std::string Errno(const char* what)
{
    return std::string(what) + ": " + std::strerror(errno);
}

// Waits for `events` on fd until deadline. nullopt when ready.
std::optional<NetError> WaitFor(int fd, short events, NetClock::time_point deadline, const std::atomic<bool>* interrupt,
                                const char* what)
{
    for (;;) {
        if (interrupt && interrupt->load(std::memory_order_relaxed)) return NetError{NetErrc::Interrupted, "interrupted"};
        const auto now = NetClock::now();
        if (now >= deadline) return NetError{NetErrc::Timeout, std::string("timed out ") + what};
        const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - now);
        pollfd p{fd, events, 0};
        const int r = ::poll(&p, 1, int(std::max<int64_t>(1, std::min(left, POLL_SLICE).count())));
        if (r < 0) {
            if (errno == EINTR) continue;
            return NetError{NetErrc::Io, Errno("poll")};
        }
        if (r > 0) return std::nullopt; // readable/writable, or an error the next call reports
    }
}

void SetNonBlocking(int fd)
{
    const int flags = ::fcntl(fd, F_GETFL, 0);
    if (flags >= 0) ::fcntl(fd, F_SETFL, flags | O_NONBLOCK);
}

/// The numeric address and port of the far end of `fd` ("" when not known).
std::pair<std::string, uint16_t> RemoteOf(int fd)
{
    sockaddr_storage addr{};
    socklen_t len = sizeof addr;
    char host[NI_MAXHOST], service[NI_MAXSERV];
    if (fd < 0 || ::getpeername(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0 ||
        ::getnameinfo(reinterpret_cast<sockaddr*>(&addr), len, host, sizeof host, service, sizeof service, NI_NUMERICHOST | NI_NUMERICSERV) != 0) {
        return {"", 0};
    }
    return {host, uint16_t(std::atoi(service))};
}

/// Our version message: nothing served, no relay.
VersionMessage OurVersion(int32_t version, uint16_t port, uint64_t nonce, int32_t start_height)
{
    VersionMessage v;
    v.version = version;
    v.services = NODE_NONE;
    v.time = std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch()).count();
    v.addr_recv = VersionAddress::FromIPv4({127, 0, 0, 1}, port);
    v.addr_from = VersionAddress::FromIPv4({0, 0, 0, 0}, 0);
    v.nonce = nonce;
    v.start_height = start_height;
    v.relay = false;
    return v;
}

/// The most a probe of another network waits for each answer: a node answers a version of its own
/// network at once and drops one of another network at once.
constexpr auto PROBE_WAIT = std::chrono::seconds(3);

/// The network of the node at host:port, when it is not `ours`: a node closes the connection at a
/// message in another network's magic (Core's and ibdkit serve's rule) and answers a version in
/// its own with its own, so a version in each other network's magic finds it.
std::optional<ChainType> ProbeNetwork(const std::string& host, uint16_t port, ChainType ours, std::chrono::milliseconds timeout,
                                      const std::atomic<bool>* interrupt)
{
    const auto wait = std::min<std::chrono::milliseconds>(timeout, PROBE_WAIT);
    for (ChainType c : {ChainType::MAIN, ChainType::TESTNET, ChainType::TESTNET4, ChainType::SIGNET, ChainType::REGTEST}) {
        if (c == ours) continue;
        const ChainParams& p = GetChainParams(c);
        auto s = Socket::Connect(host, port, wait, interrupt);
        if (!s) return std::nullopt;
        const auto deadline = NetClock::now() + wait;
        if (s->SendAll(MakeMessage(p.message_start, "version", EncodeVersion(OurVersion(PROTOCOL_VERSION, port, 1, 0))), deadline, interrupt)) continue;
        MessageStart got{};
        std::size_t have = 0;
        while (have < got.size()) {
            auto n = s->Receive(std::span<uint8_t>(got).subspan(have), deadline, interrupt);
            if (!n) break;
            have += *n;
        }
        if (have == got.size() && got == p.message_start) return c;
    }
    return std::nullopt;
}

NetError WrongNetwork(ChainType ours, ChainType theirs, const std::string& how)
{
    const std::string name(ChainTypeName(theirs));
    return NetError{NetErrc::WrongNetwork, "the peer is a " + name + " node, not " + std::string(ChainTypeName(ours)) + " (" + how +
                                               "): give --network " + name};
}

} // namespace

std::string_view NetErrcName(NetErrc c) noexcept
{
    switch (c) {
    case NetErrc::Connect: return "Connect";
    case NetErrc::Timeout: return "Timeout";
    case NetErrc::Closed: return "Closed";
    case NetErrc::Io: return "Io";
    case NetErrc::Misbehaving: return "Misbehaving";
    case NetErrc::Interrupted: return "Interrupted";
    case NetErrc::WrongNetwork: return "WrongNetwork";
    }
    return "?";
}

Socket::Socket(int fd) : m_fd(fd)
{
    if (m_fd >= 0) SetNonBlocking(m_fd);
}

Socket::~Socket() { Close(); }

Socket& Socket::operator=(Socket&& o) noexcept
{
    if (this != &o) {
        Close();
        m_fd = std::exchange(o.m_fd, -1);
    }
    return *this;
}

void Socket::Close() noexcept
{
    if (m_fd >= 0) ::close(m_fd);
    m_fd = -1;
}

NetResult<Socket> Socket::Connect(const std::string& host, uint16_t port, std::chrono::milliseconds timeout,
                                  const std::atomic<bool>* interrupt)
{
    const std::string where = host + ":" + std::to_string(port);
    addrinfo hints{};
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    addrinfo* res = nullptr;
    const std::string service = std::to_string(port);
    if (int rc = ::getaddrinfo(host.c_str(), service.c_str(), &hints, &res); rc != 0) {
        return NetError{NetErrc::Connect, "cannot resolve " + host + ": " + ::gai_strerror(rc)};
    }
    struct Free {
        addrinfo* p;
        ~Free() { ::freeaddrinfo(p); }
    } free_res{res};
    const auto deadline = NetClock::now() + timeout;
    std::string last_error = "no address";
    for (addrinfo* ai = res; ai; ai = ai->ai_next) {
        Socket s(::socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC, ai->ai_protocol));
        if (!s.valid()) {
            last_error = Errno("socket");
            continue;
        }
        const int one = 1;
        ::setsockopt(s.fd(), IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
        if (::connect(s.fd(), ai->ai_addr, ai->ai_addrlen) != 0 && errno != EINPROGRESS) {
            last_error = Errno("connect");
            continue;
        }
        if (auto e = WaitFor(s.fd(), POLLOUT, deadline, interrupt, "connecting")) {
            if (e->code == NetErrc::Timeout) e->message = "connecting to " + where + " timed out";
            if (e->code != NetErrc::Interrupted) e->code = e->code == NetErrc::Timeout ? NetErrc::Timeout : NetErrc::Connect;
            return *e;
        }
        int err = 0;
        socklen_t len = sizeof err;
        ::getsockopt(s.fd(), SOL_SOCKET, SO_ERROR, &err, &len);
        if (err != 0) {
            last_error = std::strerror(err);
            continue;
        }
        return s;
    }
    return NetError{NetErrc::Connect, "cannot connect to " + where + ": " + last_error};
}

std::optional<NetError> Socket::SendAll(std::span<const uint8_t> data, NetClock::time_point deadline,
                                        const std::atomic<bool>* interrupt)
{
    while (!data.empty()) {
        const ssize_t n = ::send(m_fd, data.data(), data.size(), MSG_NOSIGNAL);
        if (n > 0) {
            data = data.subspan(std::size_t(n));
            continue;
        }
        if (n < 0 && errno == EINTR) continue;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
            if (auto e = WaitFor(m_fd, POLLOUT, deadline, interrupt, "sending")) {
                if (e->code == NetErrc::Timeout) e->message = "timed out sending: the peer does not read its socket";
                return e;
            }
            continue;
        }
        if (n < 0 && (errno == EPIPE || errno == ECONNRESET)) return NetError{NetErrc::Closed, "the peer closed the connection"};
        return NetError{NetErrc::Io, Errno("send")};
    }
    return std::nullopt;
}

NetResult<std::size_t> Socket::Receive(std::span<uint8_t> buf, NetClock::time_point deadline, const std::atomic<bool>* interrupt)
{
    for (;;) {
        const ssize_t n = ::recv(m_fd, buf.data(), buf.size(), 0);
        if (n > 0) return std::size_t(n);
        if (n == 0) return NetError{NetErrc::Closed, "the peer closed the connection"};
        if (errno == EINTR) continue;
        if (errno == EAGAIN || errno == EWOULDBLOCK) {
            if (auto e = WaitFor(m_fd, POLLIN, deadline, interrupt, "waiting for the peer")) return *e;
            continue;
        }
        if (errno == ECONNRESET) return NetError{NetErrc::Closed, "the peer reset the connection"};
        return NetError{NetErrc::Io, Errno("recv")};
    }
}

Peer::Peer(Socket socket, const ChainParams& params, PolicyId policy, const std::atomic<bool>* interrupt)
    : m_socket(std::move(socket)), m_params(params), m_interrupt(interrupt), m_rx(params.message_start, policy), m_buf(256 * 1024)
{
    std::tie(m_remote_host, m_remote_port) = RemoteOf(m_socket.fd());
}

std::optional<NetError> Peer::Send(std::string_view command, std::span<const uint8_t> payload, std::chrono::milliseconds timeout)
{
    const auto msg = MakeMessage(m_params.message_start, command, payload);
    m_bytes_sent += msg.size();
    if (!m_send_limit) return m_socket.SendAll(msg, NetClock::now() + timeout, m_interrupt);
    for (std::span<const uint8_t> rest(msg); !rest.empty();) {
        const auto piece = rest.first(std::min(rest.size(), SendRateLimit::SEND_CHUNK));
        if (!m_send_limit->Take(piece.size(), m_interrupt)) return NetError{NetErrc::Interrupted, "interrupted"};
        if (auto e = m_socket.SendAll(piece, NetClock::now() + timeout, m_interrupt)) return e;
        rest = rest.subspan(piece.size());
    }
    return std::nullopt;
}

NetResult<NetMessage> Peer::Receive(NetClock::time_point deadline)
{
    for (;;) {
        while (!m_pending.empty()) {
            auto r = m_rx.Feed(m_pending);
            if (!r) {
                // The first message in another network's magic is a node of that network; a later
                // one, after messages in ours, a peer that breaks the protocol.
                const auto magic = m_rx.WrongMagic();
                const auto theirs = magic && m_rx.stats().messages == 0 ? ChainTypeFromMagic(*magic) : std::nullopt;
                if (theirs) return WrongNetwork(m_params.type, *theirs, "its messages carry that network's magic");
                return NetError{NetErrc::Misbehaving, "peer misbehaved: " + r.error().message};
            }
            if (!*r) continue;
            NetMessage msg = m_rx.TakeMessage();
            if (msg.command == "ping") {
                auto nonce = DecodePing(Bytes(msg));
                if (nonce) {
                    const auto pong = EncodePing(*nonce);
                    if (auto e = Send("pong", pong)) return *e;
                    ++m_info.pings_answered;
                }
                continue;
            }
            if (msg.command == "reject") {
                auto rej = DecodeReject(Bytes(msg));
                // Kept for the failure they explain: the last few, so that a peer's stream of
                // them cannot grow our memory.
                if (m_info.rejects.size() == MAX_REJECTS_KEPT) m_info.rejects.erase(m_info.rejects.begin());
                m_info.rejects.push_back(rej ? rej->ToString() : "malformed reject message");
                continue;
            }
            return msg;
        }
        auto n = m_socket.Receive(m_buf, deadline, m_interrupt);
        if (!n) return n.error();
        m_pending = std::span<const uint8_t>(m_buf.data(), *n);
    }
}

NetResult<std::vector<BlockHeader>> Peer::AskHeaders(std::vector<BlockHash> locator, std::chrono::milliseconds wait)
{
    LocatorMessage ask;
    ask.locator = std::move(locator);
    if (auto e = Send("getheaders", EncodeLocator(ask), wait)) return *e;
    const auto deadline = NetClock::now() + wait;
    for (;;) {
        auto m = Receive(deadline);
        if (!m) {
            if (m.error().code == NetErrc::Timeout) return NetError{NetErrc::Timeout, "no answer to getheaders within " + SecondsText(wait)};
            return m.error();
        }
        if (m->command != "headers") continue;
        auto headers = DecodeHeaders(Bytes(*m));
        if (!headers) return NetError{NetErrc::Misbehaving, "a malformed headers message: " + headers.error().message};
        return std::move(*headers);
    }
}

std::optional<NetError> Peer::Handshake(int32_t start_height, std::chrono::milliseconds timeout, uint64_t nonce, int32_t version)
{
    if (auto e = Send("version", EncodeVersion(OurVersion(version, m_params.default_port, nonce, start_height)), timeout)) return e;
    const auto deadline = NetClock::now() + timeout;
    bool got_version = false;
    while (!got_version || !m_info.verack) {
        auto m = Receive(deadline);
        if (!m) {
            if (m.error().code == NetErrc::Timeout) {
                return NetError{NetErrc::Timeout, std::string("handshake timed out: no ") + (got_version ? "verack" : "version") +
                                                      " from the peer within " + SecondsText(timeout) +
                                                      RejectSuffix()};
            }
            if (m.error().code == NetErrc::Closed) {
                // Closed before a byte came back: a node of another network does that to our version.
                if (m_rx.stats().bytes == 0 && !m_remote_host.empty()) {
                    if (auto theirs = ProbeNetwork(m_remote_host, m_remote_port, m_params.type, timeout, m_interrupt)) {
                        return WrongNetwork(m_params.type, *theirs, "it closed the connection at our version in the magic of " +
                                                                        std::string(ChainTypeName(m_params.type)) +
                                                                        " and answered one in the magic of " + std::string(ChainTypeName(*theirs)));
                    }
                }
                return NetError{NetErrc::Closed, "the peer closed the connection during the handshake" + RejectSuffix()};
            }
            return m.error();
        }
        if (m->command == "version") {
            if (got_version) return NetError{NetErrc::Misbehaving, "peer sent a second version message"};
            auto pv = DecodeVersion(Bytes(*m));
            if (!pv) return NetError{NetErrc::Misbehaving, "peer sent a malformed version message: " + pv.error().message};
            if (pv->version < MIN_PEER_PROTO_VERSION) {
                return NetError{NetErrc::Misbehaving, "peer's protocol version " + std::to_string(pv->version) + " is too old"};
            }
            if (pv->nonce == nonce && nonce != 0) return NetError{NetErrc::Misbehaving, "connected to ourselves"};
            m_info.version = *pv;
            got_version = true;
            if (auto e = Send("verack", {}, timeout)) return e;
        } else if (m->command == "verack") {
            if (!got_version) return NetError{NetErrc::Misbehaving, "peer sent verack before version"};
            m_info.verack = true;
        } else if (m->command == "feature" && version >= FEATURE_NEGOTIATION_VERSION) {
            auto f = DecodeFeature(Bytes(*m));
            if (!f) return NetError{NetErrc::Misbehaving, "peer sent a malformed feature message: " + f.error().message};
            if (m_info.features.size() < MAX_FEATURES_KEPT) m_info.features.push_back(std::move(*f));
        }
        // wtxidrelay, sendaddrv2, sendcmpct, feefilter, ... before verack: accepted, ignored.
    }
    return std::nullopt;
}

} // namespace ibdkit

// A listening TCP socket (src/serve/listener.h).
#include "serve/listener.h"

#include <arpa/inet.h>
#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <thread>

namespace ibdkit {
namespace {

std::string AddressText(const sockaddr_storage& ss)
{
    char buf[INET6_ADDRSTRLEN] = {};
    if (ss.ss_family == AF_INET) {
        const auto& a = reinterpret_cast<const sockaddr_in&>(ss);
        ::inet_ntop(AF_INET, &a.sin_addr, buf, sizeof(buf));
        return std::string(buf) + ":" + std::to_string(ntohs(a.sin_port));
    }
    const auto& a = reinterpret_cast<const sockaddr_in6&>(ss);
    ::inet_ntop(AF_INET6, &a.sin6_addr, buf, sizeof(buf));
    return "[" + std::string(buf) + "]:" + std::to_string(ntohs(a.sin6_port));
}

} // namespace

Result<Listener> Listener::Bind(const std::string& host, uint16_t port)
{
    sockaddr_storage ss{};
    socklen_t len = 0;
    auto* v4 = reinterpret_cast<sockaddr_in*>(&ss);
    auto* v6 = reinterpret_cast<sockaddr_in6*>(&ss);
    if (::inet_pton(AF_INET, host.c_str(), &v4->sin_addr) == 1) {
        v4->sin_family = AF_INET;
        v4->sin_port = htons(port);
        len = sizeof(sockaddr_in);
    } else if (::inet_pton(AF_INET6, host.c_str(), &v6->sin6_addr) == 1) {
        v6->sin6_family = AF_INET6;
        v6->sin6_port = htons(port);
        len = sizeof(sockaddr_in6);
    } else {
        return Error{Errc::InvalidValue, "'" + host + "' is not an IPv4 or IPv6 address to listen on (e.g. 127.0.0.1 or ::1)"};
    }
    const std::string where = (ss.ss_family == AF_INET6 ? "[" + host + "]" : host) + ":" + std::to_string(port);
    const int fd = ::socket(ss.ss_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (fd < 0) return Error{Errc::Io, "cannot make a socket for " + where + ": " + std::strerror(errno)};
    const int one = 1;
    ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    if (::bind(fd, reinterpret_cast<sockaddr*>(&ss), len) != 0 || ::listen(fd, 64) != 0) {
        const int err = errno;
        ::close(fd);
        return Error{Errc::Io, "cannot listen on " + where + ": " + std::strerror(err) +
                                   (err == EADDRINUSE ? " (another program listens there: choose another --listen port)" : "")};
    }
    sockaddr_storage bound{};
    socklen_t blen = sizeof(bound);
    ::getsockname(fd, reinterpret_cast<sockaddr*>(&bound), &blen);
    const uint16_t p = bound.ss_family == AF_INET ? ntohs(reinterpret_cast<sockaddr_in&>(bound).sin_port)
                                                  : ntohs(reinterpret_cast<sockaddr_in6&>(bound).sin6_port);
    return Listener(fd, p);
}

Listener::~Listener()
{
    if (m_fd >= 0) ::close(m_fd);
}

std::optional<std::pair<int, std::string>> Listener::Accept(std::chrono::milliseconds wait, const std::atomic<bool>* interrupt)
{
    if (interrupt && interrupt->load()) return std::nullopt;
    pollfd p{m_fd, POLLIN, 0};
    if (::poll(&p, 1, int(wait.count())) <= 0) return std::nullopt;
    sockaddr_storage ss{};
    socklen_t len = sizeof(ss);
    const int fd = ::accept4(m_fd, reinterpret_cast<sockaddr*>(&ss), &len, SOCK_CLOEXEC);
    if (fd < 0) {
        // Out of descriptors (or of kernel memory) the connection stays queued and poll says so
        // again at once: asking at once again would spin a core until some connection ends.
        if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM) std::this_thread::sleep_for(wait);
        return std::nullopt;
    }
    // As Core sets on every connection: a small message (a block of a few hundred bytes, a pong)
    // goes out at once instead of waiting on the peer's delayed ACK of the one before.
    const int one = 1;
    ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    return std::make_pair(fd, AddressText(ss));
}

} // namespace ibdkit

// src/serve/listener.h — a listening TCP socket (POSIX) whose waits are bounded and interruptible.
#pragma once

#include <ibdkit/error.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>

namespace ibdkit {

class Listener {
public:
    /// Binds `host` (an IPv4 or IPv6 literal) and `port` (0: any free port) and listens. Errors:
    /// Errc::InvalidValue (not an address literal), Errc::Io (bind or listen failed, naming the
    /// address and the system's reason).
    static Result<Listener> Bind(const std::string& host, uint16_t port);

    Listener(Listener&& o) noexcept : m_fd(std::exchange(o.m_fd, -1)), m_port(o.m_port) {}
    Listener& operator=(Listener&&) = delete;
    Listener(const Listener&) = delete;
    ~Listener();

    /// The bound port.
    uint16_t port() const noexcept { return m_port; }
    /// Waits at most `wait` for a connection: its descriptor (the caller owns it) and the peer's
    /// address as text, or nullopt when none came (or `interrupt` was set). When the process is
    /// out of descriptors it waits `wait` once more and returns nullopt: the connection stays
    /// queued until one is free.
    std::optional<std::pair<int, std::string>> Accept(std::chrono::milliseconds wait, const std::atomic<bool>* interrupt);

private:
    Listener(int fd, uint16_t port) : m_fd(fd), m_port(port) {}
    int m_fd{-1};
    uint16_t m_port{0};
};

} // namespace ibdkit

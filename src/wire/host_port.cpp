// src/wire/host_port.cpp — a peer's address split into host and port.
#include <ibdkit/wire/host_port.h>

#include <charconv>
#include <system_error>

namespace ibdkit {

std::optional<std::pair<std::string, uint16_t>> SplitHostPort(std::string_view s, uint16_t default_port)
{
    std::string_view host = s;
    std::string_view port_text;
    if (!s.empty() && s.front() == '[') {
        const auto close = s.find(']');
        if (close == std::string_view::npos) return std::nullopt;
        host = s.substr(1, close - 1);
        const auto rest = s.substr(close + 1);
        if (!rest.empty()) {
            if (rest.front() != ':') return std::nullopt;
            port_text = rest.substr(1);
        }
    } else if (const auto colon = s.rfind(':'); colon != std::string_view::npos) {
        if (s.find(':') != colon) { // a bare IPv6 literal: no port
            host = s;
        } else {
            host = s.substr(0, colon);
            port_text = s.substr(colon + 1);
        }
    }
    if (host.empty()) return std::nullopt;
    uint16_t port = default_port;
    if (!port_text.empty()) {
        unsigned v = 0;
        auto [p, ec] = std::from_chars(port_text.data(), port_text.data() + port_text.size(), v);
        if (ec != std::errc{} || p != port_text.data() + port_text.size() || v == 0 || v > 65535) return std::nullopt;
        port = uint16_t(v);
    } else if (s.size() && s.back() == ':') {
        return std::nullopt;
    }
    return std::make_pair(std::string(host), port);
}

} // namespace ibdkit

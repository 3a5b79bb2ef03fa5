// ibdkit/wire/host_port.h — a peer's address as `--connect` and Python's `connect=` take it.
// Pure and thread-safe; nothing is resolved or connected here.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

namespace ibdkit {

/// Splits "host:port", "[v6]:port", "host" or a bare IPv6 literal ("::1") into the host (without
/// brackets) and the port, `default_port` where none is written. nullopt when malformed: an empty
/// host, an unclosed '[', a trailing ':', or a port that is not a decimal number in 1-65535.
std::optional<std::pair<std::string, uint16_t>> SplitHostPort(std::string_view s, uint16_t default_port);

} // namespace ibdkit

// ibdkit/wire/net_error.h — how talking to a peer fails: a sync's result carries it
// (engine/sync.h), the peer code returns it (wire/peer.h).
#pragma once

#include <ibdkit/error.h>

#include <string>
#include <string_view>

namespace ibdkit {

enum class NetErrc {
    Connect,     ///< name resolution or TCP connect failed
    Timeout,     ///< the peer did not answer / send / accept bytes in time
    Closed,      ///< the peer closed the connection
    Io,          ///< a socket error
    Misbehaving, ///< the peer broke the protocol (framing, malformed message, wrong chain)
    Interrupted, ///< our interrupt flag was set (Ctrl-C)
    WrongNetwork, ///< the peer is a node of another network (its magic; the message names both)
};
std::string_view NetErrcName(NetErrc c) noexcept;

struct NetError {
    NetErrc code{NetErrc::Io};
    std::string message;
};

/// A value or a NetError.
template <typename T>
using NetResult = Result<T, NetError>;

} // namespace ibdkit

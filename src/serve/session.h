// src/serve/session.h — one inbound peer of `ibdkit serve` (serve/serve.h): the handshake, then
// each request answered from the located chain, until the peer leaves, breaks the protocol, stalls
// or the server stops.
#pragma once

#include <ibdkit/blockfile/locate.h>
#include <ibdkit/chain/params.h>
#include <ibdkit/serve/serve.h>

#include "wire/rate_limit.h"

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>

namespace ibdkit {

/// What every connection of one server shares: the chain (read-only), the options, the counters.
struct ServeShared {
    ServeShared(const LocatedChain& c, const ChainParams& p, const ServeOptions& o, const DatadirUndo* u)
        : chain(c), params(p), options(o), undo(u),
          upload_limit(o.max_upload_rate ? std::make_unique<SendRateLimit>(o.max_upload_rate) : nullptr)
    {
    }
    const LocatedChain& chain;
    const ChainParams& params;
    const ServeOptions& options;
    /// The datadir's undo data: BIP 455's spent coins are served from it (nullptr: none, no feature).
    const DatadirUndo* undo;
    /// options.max_upload_rate as one bucket every connection's sends are charged to (nullptr: none).
    const std::unique_ptr<SendRateLimit> upload_limit;
    std::atomic<uint64_t> connections{0}, dropped{0}, blocks_sent{0}, headers_sent{0}, bspent_sent{0}, bytes_sent{0}, bytes_received{0};
    std::mutex event_mutex;

    /// Calls options.on_event, one caller at a time.
    void Event(const std::string& line);
};

/// Serves the peer connected on `fd` (owned from here on) until it ends; `address` names it in events.
void ServeConnection(int fd, const std::string& address, ServeShared& shared);

} // namespace ibdkit

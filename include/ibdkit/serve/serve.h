// ibdkit/serve/serve.h — a read-only P2P server over a Bitcoin Core data directory (`ibdkit serve`):
// other nodes download the chain from it as from a Core peer.
//
// It speaks Core's P2P v1 with every inbound peer: version/verack (its height, NODE_NETWORK |
// NODE_WITNESS), ping/pong, getheaders → headers, getblocks → inv, getdata → block (witness or
// not, as asked) or notfound; other messages are read and ignored. From a datadir with undo data
// it also serves SwiftSync's spent coins (BIP 455): to a peer of protocol version 70017 or more it
// announces `blockspentcoinsv1` (BIP 434's `feature`) and answers `getbspent` with `bspent`, made
// from the block's rev record (docs/formats.md §13). Peers are untrusted: a
// malformed message, a payload above Core's limits or a stall ends that connection only. Each
// connection holds at most one message and one block at a time. Blocks are read from the
// datadir's block files where Core's block index (or, while bitcoind runs, a private snapshot of
// it: docs/live-node.md) puts them; nothing is ever written into the datadir.
#pragma once

#include <ibdkit/blockfile/source.h>
#include <ibdkit/chain/chain_type.h>
#include <ibdkit/error.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>

namespace ibdkit {

struct ServeOptions {
    BlockFileSource source;            ///< the blocks, exactly one (a datadir's undo data: BIP 455)
    std::string listen_host{"127.0.0.1"}; ///< an IPv4 or IPv6 literal
    std::optional<uint16_t> port;      ///< nullopt: the network's default port; 0: any free port
    unsigned max_peers{32};            ///< connections served at once (1..1024); more are closed at once
    /// A peer that sends nothing for this long, or takes longer than this to accept a message, is
    /// disconnected.
    std::chrono::milliseconds peer_timeout{std::chrono::minutes(2)};
    /// Bytes per second sent over every connection together (0: no limit). Each message is sent in
    /// pieces as a shared token bucket allows (a burst of a tenth of a second's bytes), so a block is
    /// paced and the peers share the rate; the wait for it never counts against peer_timeout.
    uint64_t max_upload_rate{0};
    /// Set (e.g. by a signal handler) to stop: the server closes every connection and returns.
    const std::atomic<bool>* interrupt{nullptr};
    /// Called once, on the calling thread, when the socket listens: the address and the bound port.
    std::function<void(const std::string& host, uint16_t port)> on_listening;
    /// One line per connection's start and end (peer address, user agent, why it ended); called
    /// from the connections' threads, one at a time. Before them, on the calling thread, notes on
    /// what is served: beside a running bitcoind, the height its block index's snapshot holds
    /// (LiveDatadirMessage).
    std::function<void(const std::string& line)> on_event;
};

struct ServeStats {
    int height{-1};                   ///< the tip served
    uint64_t connections{0};          ///< accepted and handshaken
    uint64_t refused{0};              ///< closed at once: max_peers already served
    uint64_t dropped{0};              ///< ended for breaking the protocol (malformed, oversized, stalled)
    uint64_t blocks_sent{0};
    uint64_t headers_sent{0};
    uint64_t bspent_sent{0};          ///< BIP 455 answers
    bool spent_coins{false};          ///< BIP 455 was offered (a datadir with undo data)
    uint64_t bytes_sent{0};
    uint64_t bytes_received{0};
    uint64_t max_upload_rate{0};      ///< the options' cap, bytes per second (0: none)
    /// Seconds the connections waited for the cap, summed over them (two waiting at once count twice).
    double upload_wait_seconds{0};
};

/// Serves until `interrupt` is set. Errors before serving: the blocks cannot be located
/// (LocateFromDatadir's or LocateFromBlocksDir's errors), bad options (Errc::InvalidValue), an
/// address that cannot be bound (Errc::Io, naming it). A connection's failure is never an error of
/// the server. Blocks the calling thread; each connection runs on a thread of its own.
Result<ServeStats> Serve(const ServeOptions& options);

} // namespace ibdkit

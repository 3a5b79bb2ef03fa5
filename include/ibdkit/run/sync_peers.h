// ibdkit/run/sync_peers.h — the classic initial block download from several P2P peers at once
// (`ibdkit sync --connect A --connect B …` without --swiftsync): the header chain from every peer
// (each header checked as Core checks it, the network's minimum chain work), then the blocks in
// parallel windows spread over the peers, a thread each, and connected in height order by the same
// engine as the one-peer sync (engine/sync.h): Core's rules, scripts where Core's assumevalid rule
// runs them, flushes within --dbcache, the chainstate resumable after any stop.
//
// Peers are untrusted: a block must be the one its header names; a peer that stalls, closes,
// answers `notfound` or breaks the protocol is dropped and its heights go to the others; one whose
// block does not decode or is mutated (consensus/check.h IsMutatedReason) is dropped and the engine
// starts again from the chainstate's tip to take that block from the others; the run
// ends cleanly (flushed, `sync.failure` says why) when no peer is left for a height. Stock Bitcoin
// Core peers serve this run (no BIP 455 needed). Not here, unlike the one-peer sync: the getblocks
// fallback and reorganisations below the chainstate's tip (a chainstate off the peers' chain is
// refused with advice).
#pragma once

#include <ibdkit/engine/sync.h>
#include <ibdkit/error.h>
#include <ibdkit/run/swiftsync_sync.h>

#include <string>
#include <vector>

namespace ibdkit::run {

struct SyncPeersResult {
    /// The engine's result and the header chain's height; the peer_* fields are the first
    /// connected peer's, the message counters are not kept (each peer's share is in `peers`).
    SyncResult sync;
    std::vector<PeerSummary> peers;       ///< the peers that served (spent_bytes 0)
    std::vector<std::string> unreachable; ///< peers left out (no connection, no handshake), with why
    std::vector<std::string> notes;       ///< what the headers phase found wrong with peers
};

/// Runs the sync from `connect` (HOST[:PORT] each, at least one) with `options` (its host and
/// port are not used; `force_getblocks` must be off). Errors as for Sync (engine/sync.h), and
/// Errc::InvalidValue for an address that does not parse. Blocks until the run ends; callbacks run
/// on the calling thread.
Result<SyncPeersResult> SyncFromPeers(const SyncOptions& options, const std::vector<std::string>& connect);

} // namespace ibdkit::run

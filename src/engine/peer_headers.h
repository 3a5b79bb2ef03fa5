// src/engine/peer_headers.h (internal to sync.cpp) — one peer's header chain: getheaders until the
// peer's tip, competing branches followed by chain work (a reorganisation below the chainstate's
// tip is handed to the engine), Core's minimum chain work, and the assumevalid decision per height.
// `PeerSource` (sync.cpp) holds a `PeerHeaders` beside the block download; both reach the peer
// through the `PeerLink` they share.
#pragma once

#include "block_source.h"

#include <ibdkit/consensus/header_chain.h>
#include <ibdkit/engine/sync.h>

#include "common/seconds_text.h"
#include "consensus/header_walk.h"
#include "wire/peer.h"

#include <atomic>
#include <chrono>
#include <deque>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace ibdkit::sync_detail {

/// What the header chain and the block download share: the run's options and result, the header
/// chain, the one connection (its messages in the run's buffer policy), the mode, and the heights
/// the engine's thread reads for progress.
struct PeerLink {
    PeerLink(const SyncOptions& options, const ChainParams& chain_params, HeaderChain& header_chain, SyncResult& result,
             Socket socket);

    /// A peer failure ends the run cleanly (the engine flushes; result.failure says why); an
    /// interrupt is the engine's to see. Returns nullopt, for `return Fail(...)` in a producer.
    std::optional<Error> Fail(NetError e);
    /// Publishes the header height, the run's target height and the blocks in flight.
    void PublishHeights();
    bool Interrupted() const;

    const SyncOptions& o;
    const ChainParams& params;
    HeaderChain& chain;
    SyncResult& res;
    Peer peer;
    bool getblocks{false};            ///< the peer is synced with getblocks/inv (no getheaders answer)
    std::deque<BlockHash> inflight;   ///< blocks requested, in chain order (the download's; counted in progress)
    // Read by the engine's thread for progress.
    std::atomic<int> header_height{0}, target_height{0};
    std::atomic<std::size_t> in_flight{0};
};

/// The peer's header chain, kept in `link.chain` and stored in the headers file.
class PeerHeaders {
public:
    PeerHeaders(PeerLink& link, std::filesystem::path headers_file);

    /// getheaders until a short answer (HeaderWalk: the download SwiftSync over P2P shares); the
    /// chainstate's tip is at height `connected`. Falls back to getblocks (link.getblocks) when the
    /// first request gets no answer within headers_wait.
    /// A peer failure is recorded (PeerLink::Fail); an error is the environment's.
    std::optional<Error> SyncHeaders(int connected);
    /// Core does not download a header chain below the network's minimum chain work (a failure).
    void CheckMinimumChainWork();
    /// The run's minimum chain work (RunSettings::MinimumChainWork: the option, else the network's).
    uint256 MinimumChainWork() const;
    /// Stores the headers from height `from` on in the headers file.
    std::optional<Error> Persist(int from);
    /// Stores the headers a reorganisation held back, once the engine has disconnected the stale
    /// branch (until then the stored headers must still name the chainstate's tip).
    std::optional<Error> PersistHeldBack();
    /// The branch below the chainstate's tip that SyncHeaders left for one with more work.
    const std::optional<engine::BlockSource::StaleBranch>& Reorganisation() const noexcept { return m_reorg; }
    /// Whether `hash` is a block of that stale branch.
    bool IsStale(const BlockHash& hash) const { return m_stale.contains(hash); }

private:
    std::optional<Error> EndBranch(HeaderWalk& walk, int connected);
    void ReportHeaders();

    PeerLink& m_link;
    std::filesystem::path m_headers_file;
    std::optional<engine::BlockSource::StaleBranch> m_reorg;
    std::unordered_map<BlockHash, int, Uint256Hasher> m_stale; ///< the stale branch's blocks by hash
    std::optional<int> m_persist_from; ///< headers to store once the reorganisation is done
};

} // namespace ibdkit::sync_detail

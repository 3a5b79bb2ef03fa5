// src/swiftsync/peer_fetch.h (internal) — SwiftSync over P2P, the network's side: connecting to
// several peers, their header chain, and each block of 1..n downloaded with its spent coins (BIP
// 455 `getbspent`/`bspent`) from whichever peer is free, in windows, on a thread per peer.
//
// Nothing a peer sends is believed here beyond what the message itself can show: a block must be
// one that was asked for (its header's hash), a `bspent` must decode and name a block asked for.
// Whether the block and its coins are right is the checker's to find (check_peers.cpp); it hands a
// peer it caught back through Drop, and the height goes to another peer. A peer that stalls (silent
// past the timeout; or holding the height Take waits for while another peer is connected, either
// past the timeout or, by Core's rule, for 2 s while the blocks ahead of it fill the room and leave
// the others idle), closes, misbehaves or says `notfound` is dropped the same way; when no peer is left
// for a height, Take says so. Memory: blocks that arrived ahead of the checker, with their spent
// coins, and the heights asked for and not yet arrived (each charged what the last blocks took)
// stay within max_ahead_bytes, beyond which peers are given only heights that were handed back and
// the height the checker waits for (so the run goes on whatever the limit).
#pragma once

#include <ibdkit/consensus/header_chain.h>
#include <ibdkit/error.h>
#include <ibdkit/memory/policy_id.h>
#include <ibdkit/wire/peer_summary.h>

#include "stream/owned_bytes.h"
#include "wire/peer.h"

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace ibdkit::swiftsync {

/// One peer of the run, connected and past the handshake.
struct ConnectedPeer {
    std::string address; ///< as the user gave it
    std::unique_ptr<Peer> peer;
    /// The highest height of the run's header chain the peer showed it holds (set by
    /// DownloadHeaders: the last of its headers on that chain, or where its own chain forks from
    /// it, or, when it showed none, the height its version message claimed). The fetcher asks it
    /// for no block above (Core asks a peer only for blocks its best known block has). Unknown,
    /// any height, until then.
    uint32_t best_height{UINT32_MAX};
    /// Why the peer is out before any block is asked of it (set by DownloadHeaders when its
    /// headers broke Core's rules, as Core disconnects such a peer); empty while it may serve.
    /// The fetcher reports it dropped for this and asks it nothing.
    std::string dropped{};
};

/// Connects to each of `addresses` (HOST[:PORT], the network's port by default) and shakes hands
/// announcing BIP 434 feature negotiation. A peer that cannot be reached or fails the handshake
/// is left out, with its reason in `failed`; an address that does not parse is an error
/// (Errc::InvalidValue), and so is no peer reached where one is of another network (its
/// handshake's NetErrc::WrongNetwork message, which names the fix).
Result<std::vector<ConnectedPeer>> ConnectPeers(const std::vector<std::string>& addresses, const ChainParams& params, PolicyId policy,
                                                std::chrono::milliseconds timeout, const std::atomic<bool>* interrupt,
                                                std::vector<std::string>& failed);

/// A run's failure when none of its peers could be reached: each address with why (ConnectPeers'
/// `failed`), and what to do.
std::string NoPeerReached(const std::vector<std::string>& failed, ChainType chain);

/// The header chain from the peers, each asked in turn with getheaders until its answer is short;
/// every header checked as Core checks one before asking for its block (HeaderChain::Append). A
/// peer whose headers fork from the chain held gives its whole branch, which replaces the chain
/// above the fork only with more chain work (Core's choice; on a tie the first seen stays), so the
/// result is the peers' chain with the most work. A peer whose headers fail a check or do not
/// connect adds nothing and is dropped (ConnectedPeer::dropped; its reason goes to `notes`, as
/// does a branch followed or left, or a peer that went silent); a chain below `minimum_chain_work`
/// (the run's, RunSettings::MinimumChainWork) is an error (Errc::NotFound, BelowMinimumChainWork's words).
Result<HeaderChain> DownloadHeaders(std::vector<ConnectedPeer>& peers, const ChainParams& params, const uint256& minimum_chain_work,
                                    std::chrono::milliseconds timeout, std::vector<std::string>& notes);
/// The same onto `start` (full headers, e.g. those below a chainstate's tip, already checked):
/// each peer is asked from its tip (the locator), so only the headers above it travel. The first
/// peer to answer may fork below `start`'s tip whatever its work (its chain then replaces the part
/// above the fork, as from the genesis: `start` is no peer's claim); later peers' branches as above.
/// `received` counts the headers that arrived.
Result<HeaderChain> DownloadHeaders(std::vector<ConnectedPeer>& peers, HeaderChain start, const uint256& minimum_chain_work,
                                    std::chrono::milliseconds timeout, std::vector<std::string>& notes, uint64_t& received);

/// A block as it arrived with its spent coins.
struct FetchedBlock {
    uint32_t height{0};
    OwnedBytes block;            ///< the `block` message's payload (its header is the chain's)
    BspentMessage spent;         ///< the `bspent` message, decoded (it names the block)
    uint32_t cutoff{0};          ///< the cutoff it was asked for with (0: every coin)
    std::size_t spent_bytes{0};  ///< its payload's size
    std::size_t peer{0};         ///< which peer sent both (an index into the fetcher's peers)
};

struct FetchOptions {
    /// A peer silent this long has stalled; so has one holding the height Take waits for this long
    /// after it was asked for, while another peer could serve it (beside Core's block-stalling
    /// rule, which drops it after 2 s, doubled at each such drop up to 64 s, once the blocks ahead
    /// of that height have filled max_ahead_bytes).
    std::chrono::milliseconds timeout{std::chrono::seconds(30)};
    std::size_t window{16};                ///< heights in flight per peer
    /// Blocks and `bspent`s arrived and not taken, with the heights asked for, at most (roughly:
    /// a height is charged before it arrives what the blocks before it took). The run's share of
    /// --dbcache: CacheBudget::SwiftSyncFromPeers.
    std::size_t max_ahead_bytes{64 << 20};
    /// BIP 455's cutoff: a block's `bspent` is asked for without the coins created in the last this
    /// many blocks before it and in itself, which the client keeps (0: every coin). A height asked
    /// for again is asked for whole.
    uint32_t recent_blocks{0};
    /// Whether each block's spent coins are asked for (`getbspent`) beside it: off, blocks alone
    /// (the classic sync from several peers; `spent` stays empty and a `bspent` is ignored).
    bool spent_coins{true};
    const std::atomic<bool>* interrupt{nullptr};
};

/// "No peer" where a peer's index is asked for.
inline constexpr std::size_t NO_PEER = SIZE_MAX;

/// Heights from..to of `headers` from the peers. Take them in increasing order, once each (a
/// height Drop handed back is taken again).
class BlockFetcher {
public:
    /// Starts a thread per peer. `headers` must outlive the fetcher and hold `to`.
    BlockFetcher(std::vector<ConnectedPeer> peers, const HeaderChain& headers, uint32_t from, uint32_t to, FetchOptions options);
    ~BlockFetcher();
    BlockFetcher(const BlockFetcher&) = delete;
    BlockFetcher& operator=(const BlockFetcher&) = delete;

    /// Height h with its spent coins, waiting until a peer delivers it. Errc::NotFound when no
    /// peer is left to ask (the message names the dropped peers' reasons), Errc::Io on
    /// the interrupt flag, even when h has arrived (TryTake then gives nothing).
    Result<FetchedBlock> Take(uint32_t h);
    /// As Take, without waiting: nullopt when h has not arrived yet.
    std::optional<FetchedBlock> TryTake(uint32_t h);
    /// Drops peer `p` for `why` (its connection closes, its heights go to others) and asks for
    /// height h again from the peers left (but `avoid`); Take(h) then gives it.
    void DropAndRefetch(std::size_t p, const std::string& why, uint32_t h, std::size_t avoid = NO_PEER);
    /// Drops peer `p` for `why`.
    void Drop(std::size_t p, const std::string& why);
    /// Asks for height h (taken before) again, from any peer but `avoid`; Take(h) then gives it.
    void AskOthers(uint32_t h, std::size_t avoid);
    /// Asks for height h (taken before) again, from peer `p` alone; Take(h) then gives it, or
    /// another peer's copy when p drops out with h in flight, or Errc::NotFound when p is gone.
    void AskPeer(uint32_t h, std::size_t p);
    /// Whether peer `p` is still serving.
    bool Alive(std::size_t p) const;
    /// Whether a peer other than `p` is still serving.
    bool OthersAlive(std::size_t p) const;
    std::vector<PeerSummary> Reports() const;
    std::size_t PeerCount() const noexcept;

private:
    struct State;
    std::unique_ptr<State> m_state;
};

} // namespace ibdkit::swiftsync

// SwiftSync over P2P, the network's side (swiftsync/peer_fetch.h): connecting to the peers and
// their header chain, with how far each peer shares it. The blocks: peer_fetch.cpp.
#include "consensus/header_walk.h"
#include "swiftsync/peer_fetch.h"
#include "wire/protocol.h"

#include <algorithm>
#include <random>

namespace ibdkit::swiftsync {

Result<std::vector<ConnectedPeer>> ConnectPeers(const std::vector<std::string>& addresses, const ChainParams& params, PolicyId policy,
                                                std::chrono::milliseconds timeout, const std::atomic<bool>* interrupt,
                                                std::vector<std::string>& failed)
{
    std::vector<ConnectedPeer> peers;
    std::optional<std::string> wrong_network; // the first peer of another network: the fix is --network
    std::random_device rd;
    for (const std::string& a : addresses) {
        auto hp = SplitHostPort(a, params.default_port);
        if (!hp) return Error{Errc::InvalidValue, "peer address '" + a + "' is not HOST, HOST:PORT or [IPv6]:PORT"};
        auto socket = Socket::Connect(hp->first, hp->second, timeout, interrupt);
        if (!socket) {
            failed.push_back(a + ": " + socket.error().message);
            continue;
        }
        auto peer = std::make_unique<Peer>(std::move(*socket), params, policy, interrupt);
        const uint64_t nonce = (uint64_t(rd()) << 32 | rd()) | 1;
        if (auto e = peer->Handshake(0, timeout, nonce, FEATURE_NEGOTIATION_VERSION)) {
            failed.push_back(a + ": " + e->message);
            if (e->code == NetErrc::WrongNetwork && !wrong_network) wrong_network = failed.back();
            continue;
        }
        peers.push_back(ConnectedPeer{a, std::move(peer)});
    }
    if (peers.empty() && wrong_network) return Error{Errc::InvalidValue, *wrong_network};
    return peers;
}

std::string NoPeerReached(const std::vector<std::string>& failed, ChainType chain)
{
    std::string why;
    for (const std::string& f : failed) why += (why.empty() ? "" : "; ") + f;
    return "no peer could be reached (" + why + "): " + ReachablePeerFix(chain);
}

namespace {

/// What a peer's headers left to say: a note, and whether the peer broke Core's rules with them
/// (a header that fails Core's checks, an answer that does not connect or goes nowhere, a
/// malformed message), which Core disconnects a peer for.
struct HeadersNote {
    std::string text;
    bool misbehaved{false};
};

HeadersNote Misbehaved(std::string text) { return {std::move(text), true}; }

/// getheaders from `peer` onto `chain` until a short answer (HeaderWalk); nullopt when the peer's
/// chain ends on it, otherwise why the peer added nothing (more) or what its chain changed. While
/// `seed_only` (the chain is what the run started from, and no peer has answered onto it yet), a
/// peer whose headers fork below its tip replaces the part above the fork, as a download from the
/// genesis would have given the first peer's chain. After that, a peer's branch replaces the chain
/// above the fork only with more chain work, as Core chooses among its peers' chains (on a tie the
/// first seen stays): the peers' chain is the one with the most work, whichever peer answers
/// first. A peer whose chain has less than `minimum` work is presynced first (Core's headers
/// presync, HeaderWalk): none of its headers reach `chain` unless it shows the work, and one whose
/// chain stays below it is dropped. `shown` becomes the highest height of `chain` the peer showed
/// it holds (-1: none), `adopted` the fork above which its branch replaced the chain (-1: none).
std::optional<HeadersNote> HeadersFrom(Peer& peer, HeaderChain& chain, const arith_uint256& minimum, std::chrono::milliseconds timeout,
                                       bool& seed_only, uint64_t& received, int& shown, int& adopted)
{
    static_assert(HEADERS_PER_ANSWER == MAX_HEADERS_RESULTS);
    HeaderWalk walk(chain, seed_only, minimum);
    auto ended = [&](std::optional<HeadersNote> note) {
        seed_only = seed_only && !walk.Answered();
        shown = walk.Shown();
        return note;
    };
    for (;;) {
        const auto ask = walk.Next();
        auto got = peer.AskHeaders(MakeLocator(ask.chain, ask.first), timeout);
        if (!got) return ended(HeadersNote{got.error().message, got.error().code == NetErrc::Misbehaving});
        received += got->size();
        const auto step = walk.Take(*got);
        if (!step) return ended(Misbehaved("sent " + step.error()));
        if (*step == HeaderWalk::Step::More) continue;
        if (*step == HeaderWalk::Step::Done) return ended(std::nullopt);
        if (*step == HeaderWalk::Step::LowWork) {
            const auto& seen = walk.LowWorkSeen();
            return ended(Misbehaved("sent a " + MinimumChainWorkShortfall(seen.height, seen.work, ArithToUint256(minimum),
                                                                           "none of it kept (headers presync)")));
        }
        const int fork = walk.Branch()->Fork();
        const std::string forks = "its chain forks from the one held after height " + std::to_string(fork) + " with ";
        if (!walk.Branch()->MoreWork()) return ended(HeadersNote{forks + "no more work (kept the chain held)"});
        walk.Adopt();
        adopted = fork;
        return ended(HeadersNote{forks + "more work: the peers' chain follows it"});
    }
}

} // namespace

Result<HeaderChain> DownloadHeaders(std::vector<ConnectedPeer>& peers, const ChainParams& params, const uint256& minimum_chain_work,
                                    std::chrono::milliseconds timeout, std::vector<std::string>& notes)
{
    uint64_t received = 0;
    return DownloadHeaders(peers, HeaderChain(params), minimum_chain_work, timeout, notes, received);
}

Result<HeaderChain> DownloadHeaders(std::vector<ConnectedPeer>& peers, HeaderChain start, const uint256& minimum_chain_work,
                                    std::chrono::milliseconds timeout, std::vector<std::string>& notes, uint64_t& received)
{
    HeaderChain chain = std::move(start);
    const arith_uint256 minimum = UintToArith256(minimum_chain_work);
    bool seed_only = chain.Height() > 0;
    std::vector<int> shown(peers.size(), -1);
    for (std::size_t k = 0; k < peers.size(); ++k) {
        int adopted = -1;
        auto note = HeadersFrom(*peers[k].peer, chain, minimum, timeout, seed_only, received, shown[k], adopted);
        if (note) notes.push_back(peers[k].address + ": headers: " + note->text);
        if (note && note->misbehaved) peers[k].dropped = "headers: " + note->text;
        // A branch taken leaves the peers before on the chain only up to its fork.
        for (std::size_t j = 0; adopted >= 0 && j < k; ++j) shown[j] = std::min(shown[j], adopted);
    }
    for (std::size_t k = 0; k < peers.size(); ++k) {
        // A peer that showed no header says only what its version message claimed.
        const int claimed = std::clamp(peers[k].peer->info().version.start_height, 0, chain.Height());
        peers[k].best_height = uint32_t(shown[k] >= 0 ? shown[k] : claimed);
    }
    if (auto below = BelowMinimumChainWork(chain, minimum_chain_work)) {
        // What each peer showed (a low-work chain it sent, a branch) says more than the genesis left.
        std::string shown_by;
        for (const std::string& note : notes) shown_by += (shown_by.empty() ? "; " : ", ") + note;
        return Error{Errc::NotFound, *below + shown_by};
    }
    return chain;
}

} // namespace ibdkit::swiftsync

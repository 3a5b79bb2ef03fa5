// SwiftSync over P2P, the network's side (swiftsync/peer_fetch.h): the blocks, from whichever peer
// is free. Connecting and the header chain: peer_connect.cpp.
#include "swiftsync/peer_fetch.h"
#include "common/seconds_text.h"
#include "wire/protocol.h"

#include <ibdkit/primitives/consensus_constants.h>

#include <sys/socket.h>

#include <algorithm>
#include <condition_variable>
#include <cstdio>
#include <deque>
#include <map>
#include <mutex>
#include <thread>
#include <unordered_map>

namespace ibdkit::swiftsync {

namespace {

/// Core's BLOCK_STALLING_TIMEOUT_DEFAULT and _MAX: how long a peer may hold the block the run waits
/// for while the blocks ahead of it fill the room, at first and at most.
constexpr std::chrono::seconds STALL_WINDOW_MIN{2}, STALL_WINDOW_MAX{64};

} // namespace

struct BlockFetcher::State {
    /// A height handed to a peer: the cutoff its coins are asked with, and what it is charged
    /// against max_ahead_bytes until it arrives.
    struct Asked {
        uint32_t height, cutoff;
        std::size_t charge;
    };

    const HeaderChain& headers;
    const uint32_t from, to;
    const FetchOptions o;
    std::vector<ConnectedPeer> peers;

    mutable std::mutex mu;
    std::condition_variable cv;
    /// A height handed back: asked for from any peer but `peer` (NO_PEER: any), or from `peer` alone.
    struct Retry {
        uint32_t height;
        std::size_t peer;
        bool only;
        bool For(std::size_t p) const { return only ? p == peer : p != peer; }
    };
    std::deque<Retry> retry;                    ///< asked for before new heights
    uint32_t next;                              ///< the lowest height never handed out
    std::map<uint32_t, FetchedBlock> ready;     ///< arrived, not taken
    /// The bytes of `ready` (blocks and bspents as sent) and the charges of heights asked for.
    std::size_t ahead_bytes{0};
    /// What a height asked for is charged: the bytes of the last blocks, smoothed; a largest block
    /// until one arrived (nothing is known of the chain's sizes then).
    std::size_t estimate{MAX_BLOCK_SERIALIZED_SIZE};
    bool arrived_any{false};
    uint32_t waiting{0};                        ///< the height Take waits for (0: none)
    /// Who holds each height asked for and not yet arrived, since when, and whether it was asked
    /// of that peer alone (AskPeer: no other may serve it, so it is never taken away for a stall).
    struct Holder {
        std::size_t peer;
        bool only;
        NetClock::time_point since;
    };
    std::unordered_map<uint32_t, Holder> held;
    /// Core's window stall, by peer: since when it has held the height Take waits for while another
    /// peer could be given nothing more because the room ahead was full (unset: not so). Any block
    /// of its resets it, as in Core.
    std::vector<std::optional<NetClock::time_point>> stuck_since;
    /// How long that may last before the holder is dropped: STALL_WINDOW_MIN, doubled at each such
    /// drop up to STALL_WINDOW_MAX and brought back by 0.85 a block taken (Core's dynamic timeout).
    std::chrono::seconds stall_window{STALL_WINDOW_MIN};
    std::vector<PeerSummary> reports;
    std::vector<bool> alive;
    bool stop{false};
    std::vector<std::thread> threads;

    State(std::vector<ConnectedPeer> p, const HeaderChain& h, uint32_t f, uint32_t t, FetchOptions opts)
        : headers(h), from(f), to(t), o(opts), peers(std::move(p)), next(f)
    {
        reports.resize(peers.size());
        stuck_since.resize(peers.size());
        alive.assign(peers.size(), true);
        for (std::size_t i = 0; i < peers.size(); ++i) {
            reports[i].address = peers[i].address;
            reports[i].user_agent = SanitizePeerText(peers[i].peer->info().version.user_agent);
            if (peers[i].best_height != UINT32_MAX) reports[i].synced_headers = peers[i].best_height;
            if (!peers[i].dropped.empty()) {
                alive[i] = false;
                reports[i].dropped = peers[i].dropped;
                ::shutdown(peers[i].peer->socket().fd(), SHUT_RDWR);
            }
        }
    }

    bool Interrupted() const { return o.interrupt && o.interrupt->load(std::memory_order_relaxed); }

    /// Whether a live peer may still be asked for h (one a retry of h is for, if h waits in
    /// `retry`). Under mu.
    bool AnyAliveFor(uint32_t h) const
    {
        bool listed = false;
        for (const Retry& r : retry) {
            if (r.height != h) continue;
            listed = true;
            for (std::size_t p = 0; p < alive.size(); ++p) {
                if (alive[p] && r.For(p) && Holds(p, h)) return true;
            }
        }
        if (listed) return false;
        for (std::size_t p = 0; p < alive.size(); ++p) {
            if (alive[p] && Holds(p, h)) return true;
        }
        return false;
    }

    /// Whether peer p showed it holds height h (its headers reach it): it is asked for none above.
    bool Holds(std::size_t p, uint32_t h) const { return h <= peers[p].best_height; }

    /// Whether a new height may be asked for: within max_ahead_bytes, or the one the checker
    /// waits for (then the run goes on whatever the limit). Under mu.
    bool RoomAhead() const { return next <= waiting || ahead_bytes == 0 || ahead_bytes + estimate <= o.max_ahead_bytes; }

    /// Up to `window` heights for peer p, waiting while there are none; empty when the run stops.
    /// Heights handed back go first, whatever the room ahead: the checker may wait for them.
    std::vector<Asked> Claim(std::size_t p)
    {
        std::unique_lock lk(mu);
        std::vector<Asked> got;
        while (got.empty()) {
            if (stop || !alive[p] || Interrupted()) return got;
            for (auto it = retry.begin(); it != retry.end() && got.size() < o.window;) {
                if (!it->For(p) || !Holds(p, it->height)) {
                    ++it;
                    continue;
                }
                got.push_back(Asked{it->height, 0, estimate});
                ahead_bytes += estimate;
                held[it->height] = Holder{p, it->only, NetClock::now()};
                it = retry.erase(it);
            }
            while (next <= to && Holds(p, next) && got.size() < o.window && RoomAhead()) {
                const uint32_t h = next++;
                got.push_back(Asked{h, o.recent_blocks == 0 ? 0 : h > o.recent_blocks ? h - o.recent_blocks : 1, estimate});
                ahead_bytes += estimate;
                held[h] = Holder{p, false, NetClock::now()};
            }
            if (got.empty()) {
                NoteStuckWindow(p);
                cv.wait_for(lk, std::chrono::milliseconds(100));
            }
        }
        return got;
    }

    /// Peer p could be given nothing: when that is because the room ahead is full (and not p's
    /// chain ending) while another peer holds the height Take waits for (and not for it alone to
    /// give), that holder stalls the download from now on (Core's block-stalling rule;
    /// DropStaller). Under mu.
    void NoteStuckWindow(std::size_t p)
    {
        if (waiting == 0 || next > to || !Holds(p, next) || !arrived_any || RoomAhead()) return;
        auto it = held.find(waiting);
        if (it == held.end() || it->second.peer == p || it->second.only) return;
        auto& since = stuck_since[it->second.peer];
        if (!since) since = NetClock::now();
    }

    /// Block b arrived, asked for with `charge`: its bytes take the charge's place.
    void Deliver(std::size_t p, FetchedBlock&& b, std::size_t charge)
    {
        std::lock_guard lk(mu);
        PeerSummary& r = reports[p];
        ++r.blocks;
        r.block_bytes += b.block.size();
        r.spent_bytes += b.spent_bytes;
        const std::size_t bytes = b.block.size() + b.spent_bytes;
        ahead_bytes = ahead_bytes + bytes - std::min(charge, ahead_bytes + bytes);
        estimate = arrived_any ? (estimate / 8 * 7 + bytes / 8) : bytes;
        arrived_any = true;
        stuck_since[p].reset();
        Release(b.height, p);
        ready.emplace(b.height, std::move(b));
        cv.notify_all();
    }

    /// Height `it` of `ready`, taken: its bytes leave the room ahead. Under mu.
    FetchedBlock TakeLocked(std::map<uint32_t, FetchedBlock>::iterator it)
    {
        FetchedBlock b = std::move(it->second);
        ready.erase(it);
        ahead_bytes -= std::min(ahead_bytes, b.block.size() + b.spent_bytes);
        if (stall_window > STALL_WINDOW_MIN) {
            stall_window = std::max(std::chrono::duration_cast<std::chrono::seconds>(stall_window * 0.85), STALL_WINDOW_MIN);
        }
        cv.notify_all();
        return b;
    }

    /// Peer p is gone: its unfinished heights go back, lowest first, and their charges are freed.
    void Fail(std::size_t p, const std::string& why, const std::vector<Asked>& unfinished)
    {
        std::lock_guard lk(mu);
        for (auto it = unfinished.rbegin(); it != unfinished.rend(); ++it) {
            retry.push_front(Retry{it->height, NO_PEER, false});
            ahead_bytes -= std::min(ahead_bytes, it->charge);
            Release(it->height, p);
        }
        DropLocked(p, why);
    }

    /// Height h is no longer in flight at peer p (another may hold it by now). Under mu.
    void Release(uint32_t h, std::size_t p)
    {
        if (auto it = held.find(h); it != held.end() && it->second.peer == p) held.erase(it);
    }

    /// Core's block-stalling rule, for the height the run waits for (h), held by a peer while another
    /// could serve it: the holder is dropped when the blocks ahead of h filled their room and left
    /// the others idle for the stall window (Core's rule: 2 s at first, NoteStuckWindow), or, with room
    /// to spare, when h was asked of it longer than the timeout ago, or a peer that sends one block
    /// just inside each timeout (and so is never silent that long) would set the whole run's pace.
    /// The latter is counted from the ask and not restarted by the holder's other blocks (Core
    /// restarts its clock on each block, against a window of 1024 blocks; ours is a peer's few), so
    /// a peer's window must come within the timeout while the run waits on it. The last peer left is
    /// never dropped for this: a slow honest one still finishes the run. Under mu.
    void DropStaller(uint32_t h)
    {
        auto it = held.find(h);
        if (it == held.end() || it->second.only) return;
        const std::size_t p = it->second.peer;
        const auto now = NetClock::now();
        const bool window = stuck_since[p] && now - *stuck_since[p] >= stall_window;
        if (!window && now - it->second.since < o.timeout) return;
        bool others = false;
        for (std::size_t q = 0; q < alive.size(); ++q) others = others || (q != p && alive[q] && Holds(q, h));
        if (!alive[p] || !others) return;
        // Core's words: "Peer is stalling block download".
        const std::string what = "stalling block download: height " + std::to_string(h) + ", which the run waits for, ";
        if (!window) {
            DropLocked(p, Stalled(*peers[p].peer, what + "not given within " + SecondsText(o.timeout)));
            return;
        }
        DropLocked(p, Stalled(*peers[p].peer, what + "held while the blocks ahead of it filled their room for " + SecondsText(stall_window)));
        stall_window = std::min(stall_window * 2, STALL_WINDOW_MAX);
    }

    /// Peer p serves no more (its thread hands back what it holds as it ends). Under mu.
    void DropLocked(std::size_t p, const std::string& why)
    {
        stuck_since[p].reset();
        if (alive[p]) {
            alive[p] = false;
            reports[p].dropped = why;
            ::shutdown(peers[p].peer->socket().fd(), SHUT_RDWR);
        }
        cv.notify_all();
    }

    /// Why peer `peer` stalled (`why`), with the messages of its that were skipped unread: a block
    /// with a bad checksum is skipped as Core skips it, and then never arrives, so the stall is all
    /// the user would otherwise hear of it.
    std::string Stalled(const Peer& peer, std::string why) const
    {
        const ReceiverStats& s = peer.stats();
        if (s.dropped_checksum) why += "; " + std::to_string(s.dropped_checksum) + " of its messages skipped for a bad checksum";
        if (s.dropped_command) why += "; " + std::to_string(s.dropped_command) + " of its messages skipped for a malformed command";
        return why;
    }

    /// Asks peer p for `heights` and waits for every block and `bspent`; why not, or nullopt.
    std::optional<std::string> FetchWindow(std::size_t p, const std::vector<Asked>& claimed, std::vector<Asked>& unfinished)
    {
        unfinished = claimed; // from the first send on: whatever fails, these go back to the others
        Peer& peer = *peers[p].peer;
        const bool witness = peer.info().version.services & NODE_WITNESS;
        std::unordered_map<BlockHash, uint32_t, Uint256Hasher> asked;
        std::vector<Inv> invs;
        for (const Asked& a : claimed) {
            const BlockHash& hash = headers.Hash(int(a.height));
            asked.emplace(hash, a.height);
            invs.push_back(Inv{witness ? MSG_WITNESS_BLOCK : MSG_BLOCK, hash.ToUint256()});
        }
        if (auto e = peer.Send("getdata", EncodeInv(invs), o.timeout)) return e->message;
        std::unordered_map<uint32_t, FetchedBlock> partial;
        for (const Asked& a : claimed) {
            partial[a.height].cutoff = a.cutoff;
            if (!o.spent_coins) continue;
            if (auto e = peer.Send("getbspent", EncodeGetBspent(GetBspentMessage{headers.Hash(int(a.height)), a.cutoff}), o.timeout)) {
                return e->message;
            }
        }
        auto deadline = NetClock::now() + o.timeout;
        while (!unfinished.empty()) {
            auto m = peer.Receive(deadline);
            if (!m) {
                if (m.error().code == NetErrc::Timeout) return Stalled(peer, "stalled: nothing asked for within " + SecondsText(o.timeout));
                return m.error().message;
            }
            const auto payload = Peer::Bytes(*m);
            std::optional<uint32_t> height;
            if (m->command == "block") {
                if (payload.size() < 80) return "a block message of " + std::to_string(payload.size()) + " bytes";
                auto it = asked.find(HeaderFromBytes(payload.first<80>()).GetHash());
                if (it == asked.end()) continue; // not asked for: ignored, as Core ignores it
                FetchedBlock& f = partial[it->second];
                if (f.block.size()) return "sent block " + it->first.ToHex() + " twice";
                f.block = std::move(m->payload);
                height = it->second;
            } else if (m->command == "bspent" && o.spent_coins) {
                auto b = DecodeBspent(payload);
                if (!b) return "a malformed bspent: " + b.error().message;
                auto it = asked.find(b->block_hash);
                if (it == asked.end()) return "a bspent for block " + b->block_hash.ToHex() + ", which was not asked for";
                FetchedBlock& f = partial[it->second];
                if (f.spent_bytes) return "sent the bspent of block " + it->first.ToHex() + " twice";
                f.spent = std::move(*b);
                f.spent_bytes = std::max<std::size_t>(payload.size(), 1);
                height = it->second;
            } else if (m->command == "notfound") {
                return "answered notfound for blocks it was asked for";
            } else {
                continue;
            }
            deadline = NetClock::now() + o.timeout;
            FetchedBlock& f = partial[*height];
            if (f.block.size() && (f.spent_bytes || !o.spent_coins)) {
                f.height = *height;
                f.peer = p;
                auto done = std::find_if(unfinished.begin(), unfinished.end(), [&](const Asked& a) { return a.height == *height; });
                if (done == unfinished.end()) return "delivered height " + std::to_string(*height) + " twice"; // `asked` rules it out
                Deliver(p, std::move(f), done->charge);
                partial.erase(*height);
                unfinished.erase(done);
                // Delivered once: sent again, its block is one not asked for, and so is its bspent.
                asked.erase(headers.Hash(int(*height)));
            }
        }
        return std::nullopt;
    }

    void Run(std::size_t p)
    {
        std::vector<Asked> unfinished;
        for (;;) {
            auto heights = Claim(p);
            if (heights.empty()) break;
            if (auto why = FetchWindow(p, heights, unfinished)) {
                Fail(p, *why, unfinished);
                return;
            }
        }
    }
};

BlockFetcher::BlockFetcher(std::vector<ConnectedPeer> peers, const HeaderChain& headers, uint32_t from, uint32_t to, FetchOptions options)
    : m_state(std::make_unique<State>(std::move(peers), headers, from, to, options))
{
    for (std::size_t p = 0; p < m_state->peers.size(); ++p) m_state->threads.emplace_back([this, p] { m_state->Run(p); });
}

BlockFetcher::~BlockFetcher()
{
    {
        std::lock_guard lk(m_state->mu);
        m_state->stop = true;
        for (auto& p : m_state->peers) ::shutdown(p.peer->socket().fd(), SHUT_RDWR);
        m_state->cv.notify_all();
    }
    for (auto& t : m_state->threads) t.join();
}

std::optional<FetchedBlock> BlockFetcher::TryTake(uint32_t h)
{
    std::lock_guard lk(m_state->mu);
    auto it = m_state->ready.find(h);
    if (it == m_state->ready.end() || m_state->Interrupted()) return std::nullopt;
    return m_state->TakeLocked(it);
}

Result<FetchedBlock> BlockFetcher::Take(uint32_t h)
{
    State& s = *m_state;
    std::unique_lock lk(s.mu);
    s.waiting = h;
    s.cv.notify_all();
    for (;;) {
        // Before the blocks that arrived: with a large --dbcache they may be the whole range.
        if (s.Interrupted()) return Error{Errc::Io, "interrupted"};
        if (auto it = s.ready.find(h); it != s.ready.end()) {
            s.waiting = 0;
            return s.TakeLocked(it);
        }
        if (!s.AnyAliveFor(h)) {
            std::erase_if(s.retry, [h](const State::Retry& r) { return r.height == h; }); // none may serve them
            std::string why;
            for (std::size_t p = 0; p < s.reports.size(); ++p) {
                const PeerSummary& r = s.reports[p];
                why += (why.empty() ? "" : "; ") + r.address + ": " +
                       (s.alive[p] ? "its headers end at height " + std::to_string(s.peers[p].best_height) : r.dropped);
            }
            return Error{Errc::NotFound, "no peer is left to give block " + s.headers.Hash(int(h)).ToHex() + " at height " +
                                             std::to_string(h) + (s.o.spent_coins ? " and its spent coins (" : " (") + why + ")"};
        }
        s.DropStaller(h);
        s.cv.wait_for(lk, std::chrono::milliseconds(100));
    }
}

void BlockFetcher::DropAndRefetch(std::size_t p, const std::string& why, uint32_t h, std::size_t avoid)
{
    State& s = *m_state;
    std::lock_guard lk(s.mu);
    s.retry.push_front(State::Retry{h, avoid, false});
    s.DropLocked(p, why);
}

void BlockFetcher::Drop(std::size_t p, const std::string& why)
{
    State& s = *m_state;
    std::lock_guard lk(s.mu);
    s.DropLocked(p, why);
}

void BlockFetcher::AskOthers(uint32_t h, std::size_t avoid)
{
    State& s = *m_state;
    std::lock_guard lk(s.mu);
    s.retry.push_back(State::Retry{h, avoid, false});
    s.cv.notify_all();
}

void BlockFetcher::AskPeer(uint32_t h, std::size_t p)
{
    State& s = *m_state;
    std::lock_guard lk(s.mu);
    s.retry.push_back(State::Retry{h, p, true});
    s.cv.notify_all();
}

bool BlockFetcher::Alive(std::size_t p) const
{
    std::lock_guard lk(m_state->mu);
    return m_state->alive[p];
}

bool BlockFetcher::OthersAlive(std::size_t p) const
{
    std::lock_guard lk(m_state->mu);
    for (std::size_t q = 0; q < m_state->alive.size(); ++q) {
        if (q != p && m_state->alive[q]) return true;
    }
    return false;
}

std::vector<PeerSummary> BlockFetcher::Reports() const
{
    std::lock_guard lk(m_state->mu);
    return m_state->reports;
}

std::size_t BlockFetcher::PeerCount() const noexcept { return m_state->peers.size(); }

} // namespace ibdkit::swiftsync

// src/engine/sync.cpp — sync from one peer: the handshake, the block download (in a window, in
// chain order, getblocks when the peer ignores getheaders), the blocks of a stale branch for a
// reorganisation, and Sync() running the engine over that source. The header chain is a part of
// its own (PeerHeaders, peer_headers.h), beside the download.
#include <ibdkit/engine/sync.h>

#include "header_file.h"
#include "peer_headers.h"
#include "run.h"

#include "common/test_hooks.h"

#include <ibdkit/blockfile/locate.h>
#include <ibdkit/coins/coins_db.h>
#include <ibdkit/common/write_guard.h>
#include <ibdkit/consensus/check.h>

#include <algorithm>
#include <deque>
#include <fstream>
#include <random>
#include <unordered_set>

namespace ibdkit {

namespace {

// One peer as a block source: the handshake and header sync in Prepare, then blocks requested in
// a window and emitted in chain order as they arrive (the engine decodes, checks and connects them).
class PeerSource final : public engine::BlockSource {
public:
    PeerSource(const SyncOptions& o, const ChainParams& params, HeaderChain& chain, std::filesystem::path headers_file,
               SyncResult& res, Socket socket)
        : m_link(o, params, chain, res, std::move(socket)), m_headers(m_link, std::move(headers_file))
    {
    }

    const HeaderChain& Headers() const override { return m_link.chain; }

    Result<Prepared> Prepare(const BlockHash& best) override
    {
        if (auto e = HandshakeAndHeaders(best)) return *e;
        Prepared p;
        p.failed = Failed();
        p.chain = "the peer's chain";
        p.chain_advice = (m_link.getblocks ? " (and " + std::string(HEADERS_FILE) +
                                                 " does not know it; the peer did not answer getheaders)"
                                           : std::string()) +
                         ": use another --chainstate or a peer on the same chain";
        p.recovery = "chainstate was interrupted mid-flush between blocks this peer's chain does not have; "
                     "sync it from the peer it was built from";
        p.stale = m_headers.Reorganisation();
        return p;
    }

    /// The handshake, then the headers (or the getblocks fallback). A failure of the peer is
    /// recorded (Failed()); an error is the environment's.
    std::optional<Error> HandshakeAndHeaders(const BlockHash& best)
    {
        const auto t_start = NetClock::now();
        std::optional<int> best_height = best.IsNull() ? std::optional<int>(-1) : m_link.chain.HeightOf(best);

        // ---- handshake ----
        std::mt19937_64 rng(std::random_device{}());
        if (auto e = m_link.peer.Handshake(std::max(0, best_height.value_or(0)), m_link.o.timeout, rng() | 1)) return m_link.Fail(*e);
        const auto& pv = m_link.peer.info().version;
        m_link.res.peer_user_agent = SanitizePeerText(pv.user_agent); // as Core's getpeerinfo shows it
        m_link.res.peer_version = pv.version;
        m_link.res.peer_height = pv.start_height;
        m_link.res.peer_services = pv.services;
        m_block_type = (pv.services & NODE_WITNESS) ? MSG_WITNESS_BLOCK : MSG_BLOCK;
        m_link.res.handshake_seconds = SecondsSince(t_start);
        m_link.PublishHeights();

        // ---- headers ----
        const auto t_headers = NetClock::now();
        m_link.getblocks = m_link.o.force_getblocks;
        if (!m_link.getblocks) {
            if (auto e = m_headers.SyncHeaders(best_height.value_or(-1))) return e;
            if (!Failed() && !m_link.getblocks) m_headers.CheckMinimumChainWork();
        }
        m_link.res.mode = m_link.getblocks ? "getblocks" : "headers";
        m_link.res.headers_seconds = SecondsSince(t_headers);
        return std::nullopt;
    }

    bool Failed() const { return m_link.res.failure.has_value(); }

    // The stale branch's blocks from the peer (Core serves the blocks of a branch it left), tip
    // first, a window at a time.
    std::optional<Error> ProduceStale(const StaleBranch& stale,
                                      const Emit& emit) override
    {
        const auto& hashes = stale.hashes;
        std::unordered_map<BlockHash, OwnedBytes, Uint256Hasher> got;
        std::size_t next = 0, requested = 0;
        auto last = NetClock::now();
        while (next < hashes.size()) {
            if (m_link.Interrupted() || Failed()) return std::nullopt;
            std::vector<Inv> req;
            for (; requested < hashes.size() && requested - next < m_link.o.window; ++requested) {
                req.push_back({m_block_type, hashes[requested].ToUint256()});
            }
            if (!req.empty()) {
                if (auto e = m_link.peer.Send("getdata", EncodeInv(req))) return m_link.Fail(*e);
            }
            if (auto it = got.find(hashes[next]); it != got.end()) {
                engine::RawBlock raw;
                raw.height = stale.tip_height - int(next);
                raw.hash = hashes[next];
                raw.bytes = std::move(it->second);
                raw.message = true;
                got.erase(it);
                if (!emit(std::move(raw))) return std::nullopt;
                ++next;
                last = NetClock::now();
                continue;
            }
            auto m = m_link.peer.Receive(last + m_link.o.timeout);
            if (!m) {
                if (m.error().code == NetErrc::Timeout) {
                    return m_link.Fail({NetErrc::Timeout, "peer stalled: no block for " + SecondsText(m_link.o.timeout) + " while fetching block " +
                                                       hashes[next].ToHex() + " of the branch it left (needed to disconnect it)"});
                }
                return m_link.Fail(m.error());
            }
            const auto payload = Peer::Bytes(*m);
            if (m->command == "block" && payload.size() >= 80) {
                const BlockHash hash = HeaderFromBytes(payload.first<80>()).GetHash();
                if (m_headers.IsStale(hash) && !got.contains(hash)) got.emplace(hash, std::move(m->payload));
            } else if (m->command == "notfound") {
                if (auto invs = DecodeInv(payload)) {
                    for (const auto& i : *invs) {
                        if (i.IsBlock() && m_headers.IsStale(BlockHash(i.hash))) {
                            return m_link.Fail({NetErrc::Misbehaving, "peer does not serve block " + i.hash.ToHex() +
                                                                   " of the branch it left (needed to disconnect it)"});
                        }
                    }
                }
            }
        }
        return std::nullopt;
    }
    int TipHeight() const override { return m_link.target_height.load(std::memory_order_relaxed); }

    std::optional<Error> Produce(int from, int to, const Emit& emit) override
    {
        if (auto e = m_headers.PersistHeldBack()) return e;
        m_emit = &emit;
        m_emitted = from - 1;
        m_to = to;
        m_halted = false;
        m_queue.clear();
        m_link.inflight.clear();
        m_requested.clear();
        m_arrived.clear();
        // Past the known headers, getblocks mode learns the chain from the peer as blocks arrive.
        m_extend = m_link.getblocks && to > m_link.chain.Height();
        for (int h = from; h <= std::min(to, m_link.chain.Height()); ++h) m_queue.push_back(m_link.chain.Hash(h));
        auto e = DownloadBlocks();
        m_emit = nullptr;
        return e;
    }

    std::optional<Error> Undecodable(int height, const Error& e) override
    {
        m_link.Fail({NetErrc::Misbehaving, "peer sent a block that does not decode (height " + std::to_string(height) + "): " + e.message});
        return std::nullopt;
    }

    /// The peer's side of the progress (safe while Produce runs).
    void FillProgress(SyncProgress& p) const
    {
        p.header_height = m_link.header_height.load(std::memory_order_relaxed);
        p.in_flight = m_link.in_flight.load(std::memory_order_relaxed);
    }

    void CollectPeerStats()
    {
        m_link.res.messages = m_link.peer.stats().messages;
        m_link.res.dropped_messages = m_link.peer.stats().dropped_checksum + m_link.peer.stats().dropped_command;
        m_link.res.bytes_received = m_link.peer.stats().bytes;
        m_link.res.bytes_sent = m_link.peer.bytes_sent();
        m_link.res.peer_rejects = m_link.peer.info().rejects;
        m_link.res.header_height = m_link.chain.Height();
    }

private:

    // The download loop: requests m_queue in windows, connects blocks in order; in getblocks
    // mode also asks the peer for more hashes.
    std::optional<Error> DownloadBlocks()
    {
        m_last_progress = NetClock::now();
        for (;;) {
            if (m_link.Interrupted() || m_halted || Failed()) return std::nullopt;
            if (m_emitted >= m_to) return std::nullopt;
            // Request what fits in the window.
            std::vector<Inv> req;
            const bool idle = m_link.inflight.empty();
            while (m_link.inflight.size() < m_link.o.window && !m_queue.empty()) {
                // Requests go out in chain order, so the next one is for this height.
                const int next_height = m_emitted + int(m_link.inflight.size()) + 1;
                if (next_height > m_to) {
                    m_queue.clear();
                    m_peer_exhausted = true; // nothing more wanted
                    break;
                }
                req.push_back({m_block_type, m_queue.front().ToUint256()});
                m_link.inflight.push_back(m_queue.front());
                m_requested.insert(m_queue.front());
                m_queue.pop_front();
            }
            if (!req.empty()) {
                if (auto e = m_link.peer.Send("getdata", EncodeInv(req))) return m_link.Fail(*e);
                if (idle) m_last_progress = NetClock::now();
            }
            // getblocks: more hashes.
            std::optional<NetClock::time_point> grace;
            m_link.PublishHeights();
            if (m_extend && m_queue.empty() && !m_getblocks_pending && !m_peer_exhausted) {
                if (m_awaiting_continue && m_continue_block_arrived) {
                    grace = *m_continue_block_arrived + std::chrono::seconds(2);
                    if (NetClock::now() >= *grace) m_awaiting_continue.reset();
                }
                if (!m_awaiting_continue) {
                    LocatorMessage gb;
                    gb.locator = MakeLocator(m_link.chain.Hashes(), m_link.inflight.empty() ? m_link.chain.Tip() : m_link.inflight.back());
                    if (auto e = m_link.peer.Send("getblocks", EncodeLocator(gb))) return m_link.Fail(*e);
                    m_getblocks_pending = true;
                    m_getblocks_sent = NetClock::now();
                    if (idle && req.empty()) m_last_progress = NetClock::now();
                }
            }
            if (m_queue.empty() && m_link.inflight.empty() && (!m_extend || m_peer_exhausted)) return std::nullopt;

            // Wait for the next message.
            auto deadline = m_last_progress + m_link.o.timeout;
            bool short_wait = false;
            if (m_getblocks_pending && m_link.inflight.empty() && m_link.chain.Height() >= m_link.res.peer_height) {
                // At (or past) the height the peer announced: a getblocks it leaves unanswered means done.
                const auto d = m_getblocks_sent + m_link.o.headers_wait;
                if (d < deadline) {
                    deadline = d;
                    short_wait = true;
                }
            }
            if (grace && *grace < deadline) deadline = *grace;
            auto m = m_link.peer.Receive(deadline);
            if (!m) {
                if (m.error().code == NetErrc::Timeout) {
                    if (short_wait && NetClock::now() >= m_getblocks_sent + m_link.o.headers_wait) return std::nullopt;
                    if (grace && NetClock::now() >= *grace) continue;
                    return m_link.Fail({NetErrc::Timeout, StallMessage()});
                }
                return m_link.Fail(m.error());
            }
            if (auto e = Handle(*m)) return e;
        }
    }

    std::string StallMessage() const
    {
        if (!m_link.inflight.empty()) {
            return "peer stalled: no block for " + SecondsText(m_link.o.timeout) + " with " + std::to_string(m_link.inflight.size()) +
                   " requested (waiting for block " + m_link.inflight.front().ToHex() + " at height " +
                   std::to_string(m_emitted + 1) + ")";
        }
        return "peer stalled: no answer to getblocks for " + SecondsText(m_link.o.timeout) + " (at height " + std::to_string(m_emitted) +
               ", the peer announced " + std::to_string(m_link.res.peer_height) + ")";
    }

    std::optional<Error> Handle(NetMessage& m)
    {
        const auto payload = Peer::Bytes(m);
        if (m.command == "block") {
            if (payload.size() < 80) {
                m_link.Fail({NetErrc::Misbehaving, "peer sent a block that does not decode: " + std::to_string(payload.size()) +
                                                " bytes, shorter than a header"});
                return std::nullopt;
            }
            // The hash from the header alone; the engine's workers decode and check the block.
            const BlockHash hash = HeaderFromBytes(payload.first<80>()).GetHash();
            if (!m_requested.contains(hash)) {
                // Unsolicited (or from a reset queue): ignored — unless it is garbage, which only
                // a misbehaving peer sends (rare, so decoding it here costs nothing).
                if (auto b = DecodeBlockMessage(payload); !b) {
                    m_link.Fail({NetErrc::Misbehaving, "peer sent a block that does not decode: " + b.error().message});
                }
                return std::nullopt;
            }
            m_requested.erase(hash);
            m_last_progress = NetClock::now();
            m_arrived.emplace(hash, std::move(m.payload));
            while (!m_link.inflight.empty()) {
                auto it = m_arrived.find(m_link.inflight.front());
                if (it == m_arrived.end()) break;
                OwnedBytes bytes = std::move(it->second);
                m_arrived.erase(it);
                const BlockHash bh = m_link.inflight.front();
                m_link.inflight.pop_front();
                if (m_awaiting_continue && bh == *m_awaiting_continue) m_continue_block_arrived = NetClock::now();
                if (auto e = Process(bh, std::move(bytes))) return e;
                if (m_halted || Failed()) return std::nullopt;
            }
            return std::nullopt;
        }
        if (m.command == "notfound") {
            auto invs = DecodeInv(payload);
            if (!invs) return std::nullopt;
            for (const auto& i : *invs) {
                if (i.IsBlock() && m_requested.contains(BlockHash(i.hash))) {
                    const auto h = m_link.chain.HeightOf(BlockHash(i.hash));
                    m_link.Fail({NetErrc::Misbehaving, "peer does not have block " + i.hash.ToHex() + " at height " +
                                                           std::to_string(h.value_or(-1)) +
                                                           " (notfound): its chain ends below the headers held, or it withholds the block"});
                    return std::nullopt;
                }
            }
            return std::nullopt;
        }
        if (m.command == "inv" && m_extend) {
            auto invs = DecodeInv(payload);
            if (!invs) {
                m_link.Fail({NetErrc::Misbehaving, "peer sent a malformed inv: " + invs.error().message});
                return std::nullopt;
            }
            std::vector<BlockHash> blocks;
            for (const auto& i : *invs) {
                if (i.IsBlock()) blocks.emplace_back(i.hash);
            }
            if (blocks.empty()) return std::nullopt;
            if (!m_getblocks_pending) {
                // Unsolicited: the continuation hint after the last block of a full batch, or an
                // announcement. Either way, time to ask again.
                m_awaiting_continue.reset();
                return std::nullopt;
            }
            m_getblocks_pending = false;
            m_last_progress = NetClock::now();
            std::size_t fresh = 0;
            for (const auto& h : blocks) {
                if (m_link.chain.HeightOf(h) || m_requested.contains(h) || std::find(m_queue.begin(), m_queue.end(), h) != m_queue.end()) {
                    continue;
                }
                m_queue.push_back(h);
                ++fresh;
            }
            if (blocks.size() >= MAX_BLOCKS_PER_GETBLOCKS) {
                m_awaiting_continue = blocks.back();
                m_continue_block_arrived.reset();
            } else {
                m_awaiting_continue.reset();
                m_peer_exhausted = true; // a short answer: the peer has nothing after these
            }
            if (fresh == 0 && ++m_empty_answers > 3) m_peer_exhausted = true;
            return std::nullopt;
        }
        return std::nullopt; // headers announcements, addr, sendcmpct, feefilter, ...: ignored
    }

    // Emits the next block in chain order (learning its header first in getblocks mode).
    std::optional<Error> Process(const BlockHash& hash, OwnedBytes&& bytes)
    {
        const int height = m_emitted + 1;
        if (m_link.chain.Height() < height) {
            // getblocks mode: the block brings its header.
            const BlockHeader header = HeaderFromBytes(bytes.uchars().first<80>());
            if (header.hash_prev_block != m_link.chain.Tip()) {
                // The hashes we queued do not continue our chain (e.g. an announcement taken for
                // an answer): forget them and ask again from our tip.
                if (++m_resets > 8) {
                    m_link.Fail({NetErrc::Misbehaving, "peer keeps announcing blocks that do not extend our chain"});
                    return std::nullopt;
                }
                m_queue.clear();
                m_link.inflight.clear();
                m_arrived.clear();
                m_requested.clear();
                m_getblocks_pending = false;
                m_awaiting_continue.reset();
                m_peer_exhausted = false;
                return std::nullopt;
            }
            if (auto why = m_link.chain.Append(header)) {
                m_link.Fail({NetErrc::Misbehaving, "peer sent a block with an invalid header: " + *why});
                return std::nullopt;
            }
            if (auto e = m_headers.Persist(height)) return e;
            m_link.PublishHeights();
        } else if (m_link.chain.Hash(height) != hash) {
            m_link.Fail({NetErrc::Misbehaving, "peer sent block " + hash.ToHex() + " where height " + std::to_string(height) + " was expected"});
            return std::nullopt;
        }
        engine::RawBlock raw;
        raw.height = height;
        raw.hash = hash;
        raw.bytes = std::move(bytes);
        raw.message = true;
        if (!(*m_emit)(std::move(raw))) {
            m_halted = true;
            return std::nullopt;
        }
        m_emitted = height;
        // The engine may have made us wait (a full pipeline, a flush): that is not the peer stalling.
        m_last_progress = NetClock::now();
        return std::nullopt;
    }


    sync_detail::PeerLink m_link;
    sync_detail::PeerHeaders m_headers;
    uint32_t m_block_type{MSG_WITNESS_BLOCK};
    // The current Produce call.
    const Emit* m_emit{nullptr};
    int m_emitted{0};   ///< height of the last block emitted
    int m_to{0};        ///< last height wanted
    bool m_extend{false};
    bool m_halted{false};
    std::deque<BlockHash> m_queue;
    std::unordered_set<BlockHash, Uint256Hasher> m_requested;
    std::unordered_map<BlockHash, OwnedBytes, Uint256Hasher> m_arrived;
    bool m_getblocks_pending{false};
    bool m_peer_exhausted{false};
    NetClock::time_point m_getblocks_sent{};
    std::optional<BlockHash> m_awaiting_continue;
    std::optional<NetClock::time_point> m_continue_block_arrived;
    int m_empty_answers{0};
    int m_resets{0};
    NetClock::time_point m_last_progress{};
};

/// The peer's socket: host:port, or the tests' connected descriptor (TestHooks::connect).
NetResult<Socket> ConnectToPeer(const SyncOptions& opts)
{
    if (!opts.test_hooks || !opts.test_hooks->connect)
        return Socket::Connect(opts.host, opts.port, opts.timeout, opts.interrupt);
    const int fd = opts.test_hooks->connect();
    if (fd < 0) return NetError{NetErrc::Connect, "the test's connect hook gave no socket"};
    return Socket(fd);
}

} // namespace

Result<SyncResult> Sync(const SyncOptions& opts)
{
    const auto t_start = NetClock::now();
    SyncResult res;
    res.chain = opts.chain;
    const ChainParams& params = GetChainParams(opts.chain);

    auto cs = ChainstateHandle::OpenFor(opts, "sync", opts.chain);
    if (!cs) return cs.error();
    HeaderChain chain(params);
    const auto headers_file = cs->dir() / HEADERS_FILE;
    if (auto loaded = engine::LoadHeaders(chain, headers_file); !loaded) return loaded.error();

    auto socket = ConnectToPeer(opts);
    if (!socket) {
        if (socket.error().code == NetErrc::Interrupted) {
            res.interrupted = true;
        } else {
            res.failure = socket.error();
            if (res.failure->code == NetErrc::Connect) res.failure->message += ": " + ReachablePeerFix(opts.chain);
        }
        res.header_height = chain.Height();
        res.total_seconds = SecondsSince(t_start);
        return res;
    }
    PeerSource source(opts, params, chain, headers_file, res, std::move(*socket));
    EngineOptions eo = opts;
    eo.on_progress = [&](const EngineProgress& ep) {
        if (opts.on_progress) opts.on_progress(ep);
        if (!opts.on_sync_progress) return;
        SyncProgress p;
        static_cast<EngineProgress&>(p) = ep;
        source.FillProgress(p);
        opts.on_sync_progress(p);
    };
    auto run = engine::RunEngine(eo, params, source, *cs, res);
    source.CollectPeerStats();
    if (!run) return run.error();
    static_cast<EngineResult&>(res) = std::move(*run);
    // A mutated block is its sender's fault, never the block's (Core's BLOCK_MUTATED): the run ends
    // as for any misbehaving peer, and the block is not called invalid.
    if (res.reject_reason && IsMutatedReason(*res.reject_reason) && !res.failure) {
        res.failure = NetError{NetErrc::Misbehaving, "peer sent a mutated block at height " + std::to_string(res.reject_height) + " (" +
                                                         *res.reject_reason + "): it is not the block its header names; sync it from another peer"};
        res.reject_reason.reset();
        res.reject_height = -1;
    }
    res.header_height = chain.Height();
    res.total_seconds = SecondsSince(t_start);
    return res;
}

ChainType SyncNetwork(std::optional<ChainType> given, const std::filesystem::path& chainstate,
                      const std::filesystem::path& datadir_out)
{
    if (given) return *given;
    if (!chainstate.empty()) {
        if (auto recorded = ChainstateNetworkRecord(chainstate)) {
            if (auto chain = ParseChainType(*recorded)) return *chain;
        }
    }
    if (!datadir_out.empty()) {
        if (auto chain = DatadirNetworkRecord(datadir_out)) return *chain;
    }
    return ChainType::REGTEST;
}

} // namespace ibdkit

#include <ibdkit/wire/sync.h>

#include <ibdkit/coins/coins_db.h>
#include <ibdkit/consensus/pow.h>
#include <ibdkit/replay/connector.h>

#include <unistd.h>

#include <algorithm>
#include <deque>
#include <fstream>
#include <random>
#include <unordered_set>

namespace ibdkit {

// ---- HeaderChain ------------------------------------------------------------------------------

HeaderChain::HeaderChain(const ChainParams& params) : m_params(params)
{
    m_headers.push_back(params.genesis.header());
    m_hashes.push_back(params.consensus.hash_genesis_block);
    m_times.push_back(params.genesis.time);
    m_height_of.emplace(m_hashes.back(), 0);
}

std::optional<int> HeaderChain::HeightOf(const BlockHash& hash) const
{
    auto it = m_height_of.find(hash);
    if (it == m_height_of.end()) return std::nullopt;
    return it->second;
}

std::optional<std::string> HeaderChain::Append(const BlockHeader& header)
{
    if (header.hash_prev_block != Tip()) {
        return "header " + header.GetHash().ToHex() + " does not extend our best header " + Tip().ToHex() + " (height " +
               std::to_string(Height()) + ")";
    }
    const BlockHash hash = header.GetHash();
    if (!CheckProofOfWork(hash.ToUint256(), header.bits, m_params.consensus)) {
        return "header " + hash.ToHex() + " at height " + std::to_string(Height() + 1) + " does not meet its nBits (high-hash)";
    }
    m_headers.push_back(header);
    m_hashes.push_back(hash);
    m_times.push_back(header.time);
    m_height_of.emplace(hash, Height());
    return std::nullopt;
}

void HeaderChain::Truncate(int height)
{
    while (Height() > std::max(0, height)) {
        m_height_of.erase(m_hashes.back());
        m_headers.pop_back();
        m_hashes.pop_back();
        m_times.pop_back();
    }
}

int64_t HeaderChain::MedianTimePast(int height) const
{
    return ibdkit::MedianTimePast(std::span<const uint32_t>(m_times.data(), std::size_t(height) + 1));
}

Result<int> HeaderChain::Load(const std::filesystem::path& file)
{
    std::error_code ec;
    if (!std::filesystem::exists(file, ec)) return 0;
    std::ifstream in(file, std::ios::binary);
    if (!in) return Error{Errc::Corrupt, "cannot read " + file.string()};
    int loaded = 0;
    std::array<uint8_t, 80> buf;
    while (in.read(reinterpret_cast<char*>(buf.data()), 80)) {
        if (Append(HeaderFromBytes(buf))) break;
        ++loaded;
    }
    in.close();
    const auto want = uintmax_t(loaded) * 80;
    if (std::filesystem::file_size(file, ec) != want) {
        std::filesystem::resize_file(file, want, ec);
        if (ec) return Error{Errc::Corrupt, "cannot truncate " + file.string() + ": " + ec.message()};
    }
    return loaded;
}

std::optional<std::string> HeaderChain::Persist(const std::filesystem::path& file, int from) const
{
    from = std::max(from, 1);
    std::error_code ec;
    const auto keep = uintmax_t(from - 1) * 80;
    if (std::filesystem::exists(file, ec) && std::filesystem::file_size(file, ec) != keep) {
        std::filesystem::resize_file(file, keep, ec);
        if (ec) return "cannot truncate " + file.string() + ": " + ec.message();
    }
    std::ofstream out(file, std::ios::binary | std::ios::app);
    for (int h = from; h <= Height(); ++h) {
        const auto bytes = HeaderToBytes(Header(h));
        out.write(reinterpret_cast<const char*>(bytes.data()), 80);
    }
    out.flush();
    if (!out) return "cannot write " + file.string();
    return std::nullopt;
}

// ---- the sync session ---------------------------------------------------------------------------

namespace {

Error EnvError(std::string msg) { return Error{Errc::Corrupt, std::move(msg)}; }

double Seconds(NetClock::time_point since) { return std::chrono::duration<double>(NetClock::now() - since).count(); }

std::string Secs(std::chrono::milliseconds d)
{
    char b[32];
    std::snprintf(b, sizeof b, "%.1f s", double(d.count()) / 1000.0);
    return b;
}

template <typename Policy>
class Session {
public:
    Session(const SyncOptions& o, const ChainParams& params, CoinsDB& db, HeaderChain& chain, std::filesystem::path headers_file,
            SyncResult& res, Socket socket)
        : m_o(o), m_params(params), m_db(db), m_chain(chain), m_headers_file(std::move(headers_file)), m_res(res),
          m_peer(std::move(socket), params, o.interrupt), m_conn(db, params, o.dbcache_mib << 20)
    {
    }

    // Returns an environment error; peer failures land in m_res.failure.
    std::optional<Error> Run()
    {
        const auto t_start = NetClock::now();
        auto needs = m_db.NeedsReplay();
        if (!needs) return needs.error();
        auto best = m_db.GetBestBlock();
        if (!best) return best.error();
        std::optional<int> best_height = best->IsNull() ? std::optional<int>(-1) : m_chain.HeightOf(*best);

        // ---- handshake ----
        std::mt19937_64 rng(std::random_device{}());
        if (auto e = m_peer.Handshake(std::max(0, best_height.value_or(0)), m_o.timeout, rng() | 1)) return Fail(*e);
        const auto& pv = m_peer.info().version;
        m_res.peer_user_agent = pv.user_agent;
        m_res.peer_version = pv.version;
        m_res.peer_height = pv.start_height;
        m_res.peer_services = pv.services;
        m_block_type = (pv.services & NODE_WITNESS) ? MSG_WITNESS_BLOCK : MSG_BLOCK;
        m_res.handshake_seconds = Seconds(t_start);

        // ---- headers ----
        const auto t_headers = NetClock::now();
        m_getblocks = m_o.force_getblocks;
        if (!m_getblocks) {
            if (auto e = SyncHeaders(best_height.value_or(-1))) return e;
            if (m_res.failure || m_res.interrupted) return std::nullopt;
        }
        m_res.mode = m_getblocks ? "getblocks" : "headers";
        m_res.headers_seconds = Seconds(t_headers);

        // ---- recovery of an interrupted flush ----
        if (*needs) {
            if (auto e = Recover(**needs)) return e;
            if (m_res.failure || m_res.interrupted) return std::nullopt;
            best = m_db.GetBestBlock();
            if (!best) return best.error();
            best_height = m_chain.HeightOf(*best);
        }
        if (!best_height) {
            return EnvError("the chainstate's best block " + best->ToHex() + " is not on the peer's chain" +
                            (m_getblocks ? " (and " + std::string(HEADERS_FILE) + " does not know it; the peer did not answer getheaders)" : "") +
                            ": use another --chainstate or a peer on the same chain");
        }
        m_connected = *best_height;
        if (m_connected < 0) { // a new chainstate: the genesis outputs never enter the UTXO set
            m_conn.cache().SetBestBlock(m_chain.Hash(0));
            m_connected = 0;
        }
        m_res.height = m_connected;
        m_res.tip = m_chain.Hash(m_connected);
        m_res.start_height = m_connected + 1;

        // ---- blocks ----
        const auto t_blocks = NetClock::now();
        m_t0 = t_blocks;
        for (int h = m_connected + 1; h <= m_chain.Height(); ++h) m_queue.push_back(m_chain.Hash(h));
        if (auto e = DownloadBlocks()) return e;
        if (!m_res.reject_reason) {
            if (auto st = m_conn.Flush(); !st.ok()) return EnvError("final flush failed: " + st.message);
        }
        Report(true);
        m_res.seconds = Seconds(t_blocks);
        static_cast<ConnectorCounters&>(m_res) = m_conn.counters();
        return std::nullopt;
    }

    void CollectPeerStats()
    {
        m_res.messages = m_peer.stats().messages;
        m_res.dropped_messages = m_peer.stats().dropped_checksum + m_peer.stats().dropped_command;
        m_res.bytes_received = m_peer.stats().bytes;
        m_res.bytes_sent = m_peer.bytes_sent();
        m_res.peer_rejects = m_peer.info().rejects;
        m_res.header_height = m_chain.Height();
    }

private:
    std::optional<Error> Fail(NetError e)
    {
        if (e.code == NetErrc::Interrupted) {
            m_res.interrupted = true;
        } else {
            if (!m_peer.info().rejects.empty()) e.message += " (the peer sent: " + m_peer.info().rejects.back() + ")";
            m_res.failure = std::move(e);
        }
        return std::nullopt;
    }

    bool Interrupted() const { return m_o.interrupt && m_o.interrupt->load(std::memory_order_relaxed); }

    std::optional<Error> Persist(int from)
    {
        if (auto e = m_chain.Persist(m_headers_file, from)) return EnvError(*e);
        return std::nullopt;
    }

    // getheaders until a short answer. Falls back to getblocks when the first request gets no
    // answer within headers_wait.
    std::optional<Error> SyncHeaders(int connected)
    {
        bool first = true;
        for (;;) {
            LocatorMessage gh;
            gh.locator = m_chain.Locator();
            if (auto e = m_peer.Send("getheaders", EncodeLocator(gh))) return Fail(*e);
            const auto wait = first ? m_o.headers_wait : m_o.timeout;
            const auto deadline = NetClock::now() + wait;
            std::optional<std::vector<BlockHeader>> headers;
            while (!headers) {
                auto m = m_peer.Receive(deadline);
                if (!m) {
                    if (m.error().code == NetErrc::Timeout && first) {
                        m_getblocks = true; // the peer ignores getheaders (e.g. its tip is old): use getblocks
                        return std::nullopt;
                    }
                    if (m.error().code == NetErrc::Timeout) {
                        return Fail({NetErrc::Timeout, "peer stalled: no answer to getheaders within " + Secs(wait)});
                    }
                    return Fail(m.error());
                }
                if (m->command != "headers") continue;
                auto hs = DecodeHeaders(Peer<Policy>::Bytes(*m));
                if (!hs) return Fail({NetErrc::Misbehaving, "peer sent a malformed headers message: " + hs.error().message});
                headers = std::move(*hs);
            }
            first = false;
            m_res.headers_received += headers->size();
            if (headers->empty()) return std::nullopt;
            auto prev = m_chain.HeightOf(headers->front().hash_prev_block);
            if (!prev) {
                return Fail({NetErrc::Misbehaving, "peer sent headers that do not connect to our chain (first header's parent " +
                                                       headers->front().hash_prev_block.ToHex() + " is unknown)"});
            }
            std::size_t i = 0;
            int h = *prev;
            while (i < headers->size() && h + 1 <= m_chain.Height() && m_chain.Hash(h + 1) == (*headers)[i].GetHash()) {
                ++i;
                ++h;
            }
            const int persist_from = h + 1;
            if (i < headers->size() && h < m_chain.Height()) {
                if (h < connected) {
                    return Fail({NetErrc::Misbehaving, "peer's chain forks from ours at height " + std::to_string(h + 1) +
                                                           ", below the chainstate's tip " + std::to_string(connected) +
                                                           " (reorganizations are not supported)"});
                }
                m_chain.Truncate(h); // our stored headers beyond the chainstate lost to the peer's chain
            }
            for (; i < headers->size(); ++i) {
                if (auto why = m_chain.Append((*headers)[i])) {
                    if (auto e = Persist(persist_from)) return e;
                    return Fail({NetErrc::Misbehaving, "peer sent an invalid header: " + *why});
                }
            }
            if (auto e = Persist(persist_from)) return e;
            ReportHeaders();
            if (headers->size() < MAX_HEADERS_RESULTS) return std::nullopt;
            if (Interrupted()) {
                m_res.interrupted = true;
                return std::nullopt;
            }
        }
    }

    std::optional<Error> Recover(const ReplayRange& range)
    {
        auto from = range.old_tip.IsNull() ? std::optional<int>(0) : m_chain.HeightOf(range.old_tip);
        auto to = m_chain.HeightOf(range.new_tip);
        if (!from || !to) {
            return EnvError("chainstate was interrupted mid-flush between blocks this peer's chain does not have; "
                            "sync it from the peer it was built from");
        }
        m_recovering = true;
        for (int h = std::max(*from + 1, 1); h <= *to; ++h) m_queue.push_back(m_chain.Hash(h));
        m_recover_next = std::max(*from + 1, 1);
        if (auto e = DownloadBlocks()) return e;
        m_recovering = false;
        if (m_res.failure || m_res.interrupted) return std::nullopt;
        if (auto st = m_conn.Flush(range.new_tip); !st.ok()) return EnvError("flush after recovery failed: " + st.message);
        return std::nullopt;
    }

    // The download loop: requests m_queue in windows, connects blocks in order; in getblocks
    // mode also asks the peer for more hashes.
    std::optional<Error> DownloadBlocks()
    {
        m_last_progress = NetClock::now();
        for (;;) {
            if (Interrupted()) {
                m_res.interrupted = true;
                return std::nullopt;
            }
            if (!m_recovering && m_o.stop_height && m_connected >= *m_o.stop_height) return std::nullopt;
            // Request what fits in the window.
            std::vector<Inv> req;
            const bool idle = m_inflight.empty();
            while (m_inflight.size() < m_o.window && !m_queue.empty()) {
                // Requests go out in chain order, so the next one is for this height.
                const int next_height = m_connected + int(m_inflight.size()) + 1;
                if (!m_recovering && m_o.stop_height && next_height > *m_o.stop_height) {
                    m_queue.clear();
                    m_peer_exhausted = true; // nothing more wanted
                    break;
                }
                req.push_back({m_block_type, m_queue.front().ToUint256()});
                m_inflight.push_back(m_queue.front());
                m_requested.insert(m_queue.front());
                m_queue.pop_front();
            }
            if (!req.empty()) {
                if (auto e = m_peer.Send("getdata", EncodeInv(req))) return Fail(*e);
                if (idle) m_last_progress = NetClock::now();
            }
            // getblocks: more hashes.
            std::optional<NetClock::time_point> grace;
            if (m_getblocks && !m_recovering && m_queue.empty() && !m_getblocks_pending && !m_peer_exhausted) {
                if (m_awaiting_continue && m_continue_block_arrived) {
                    grace = *m_continue_block_arrived + std::chrono::seconds(2);
                    if (NetClock::now() >= *grace) m_awaiting_continue.reset();
                }
                if (!m_awaiting_continue) {
                    LocatorMessage gb;
                    gb.locator.push_back(m_inflight.empty() ? m_chain.Tip() : m_inflight.back());
                    for (const auto& h : m_chain.Locator()) {
                        if (h != gb.locator.front()) gb.locator.push_back(h);
                    }
                    if (gb.locator.size() > MAX_LOCATOR_SZ) gb.locator.resize(MAX_LOCATOR_SZ);
                    if (auto e = m_peer.Send("getblocks", EncodeLocator(gb))) return Fail(*e);
                    m_getblocks_pending = true;
                    m_getblocks_sent = NetClock::now();
                    if (idle && req.empty()) m_last_progress = NetClock::now();
                }
            }
            if (m_queue.empty() && m_inflight.empty() && (!m_getblocks || m_recovering || m_peer_exhausted)) return std::nullopt;

            // Wait for the next message.
            auto deadline = m_last_progress + m_o.timeout;
            bool short_wait = false;
            if (m_getblocks_pending && m_inflight.empty() && m_chain.Height() >= m_res.peer_height) {
                // At (or past) the height the peer announced: a getblocks it leaves unanswered means done.
                const auto d = m_getblocks_sent + m_o.headers_wait;
                if (d < deadline) {
                    deadline = d;
                    short_wait = true;
                }
            }
            if (grace && *grace < deadline) deadline = *grace;
            auto m = m_peer.Receive(deadline);
            if (!m) {
                if (m.error().code == NetErrc::Timeout) {
                    if (short_wait && NetClock::now() >= m_getblocks_sent + m_o.headers_wait) return std::nullopt;
                    if (grace && NetClock::now() >= *grace) continue;
                    return Fail({NetErrc::Timeout, StallMessage()});
                }
                return Fail(m.error());
            }
            if (auto e = Handle(*m)) return e;
            if (m_res.failure || m_res.reject_reason) return std::nullopt;
        }
    }

    std::string StallMessage() const
    {
        if (!m_inflight.empty()) {
            return "peer stalled: no block for " + Secs(m_o.timeout) + " with " + std::to_string(m_inflight.size()) +
                   " requested (waiting for block " + m_inflight.front().ToHex() + " at height " +
                   std::to_string(m_recovering ? m_recover_next : m_connected + 1) + ")";
        }
        return "peer stalled: no answer to getblocks for " + Secs(m_o.timeout) + " (at height " + std::to_string(m_connected) +
               ", the peer announced " + std::to_string(m_res.peer_height) + ")";
    }

    std::optional<Error> Handle(NetMessage<Policy>& m)
    {
        const auto payload = Peer<Policy>::Bytes(m);
        if (m.command == "block") {
            auto block = DecodeBlock(payload);
            if (!block) {
                Fail({NetErrc::Misbehaving, "peer sent a block that does not decode: " + block.error().message});
                return std::nullopt;
            }
            const BlockHash hash = block->GetHash();
            if (!m_requested.contains(hash)) return std::nullopt; // unsolicited (or from a reset queue): ignored
            m_requested.erase(hash);
            m_last_progress = NetClock::now();
            m_arrived.emplace(hash, std::make_pair(std::move(*block), payload.size()));
            while (!m_inflight.empty()) {
                auto it = m_arrived.find(m_inflight.front());
                if (it == m_arrived.end()) break;
                Block b = std::move(it->second.first);
                const std::size_t size = it->second.second;
                m_arrived.erase(it);
                const BlockHash bh = m_inflight.front();
                m_inflight.pop_front();
                if (m_awaiting_continue && bh == *m_awaiting_continue) m_continue_block_arrived = NetClock::now();
                if (auto e = Process(bh, std::move(b), size)) return e;
                if (m_res.failure || m_res.reject_reason) return std::nullopt;
            }
            return std::nullopt;
        }
        if (m.command == "notfound") {
            auto invs = DecodeInv(payload);
            if (!invs) return std::nullopt;
            for (const auto& i : *invs) {
                if (i.IsBlock() && m_requested.contains(BlockHash(i.hash))) {
                    Fail({NetErrc::Misbehaving, "peer does not have block " + i.hash.ToHex() + " it announced (notfound)"});
                    return std::nullopt;
                }
            }
            return std::nullopt;
        }
        if (m.command == "inv" && m_getblocks && !m_recovering) {
            auto invs = DecodeInv(payload);
            if (!invs) {
                Fail({NetErrc::Misbehaving, "peer sent a malformed inv: " + invs.error().message});
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
                if (m_chain.HeightOf(h) || m_requested.contains(h) || std::find(m_queue.begin(), m_queue.end(), h) != m_queue.end()) {
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

    std::optional<Error> Process(const BlockHash& hash, Block&& block, std::size_t size)
    {
        if (m_recovering) {
            m_conn.Rollforward(block, m_recover_next++);
            return std::nullopt;
        }
        const int height = m_connected + 1;
        if (m_chain.Height() < height) {
            // getblocks mode: the block brings its header.
            if (block.hash_prev_block != m_chain.Tip()) {
                // The hashes we queued do not continue our chain (e.g. an announcement taken for
                // an answer): forget them and ask again from our tip.
                if (++m_resets > 8) {
                    Fail({NetErrc::Misbehaving, "peer keeps announcing blocks that do not extend our chain"});
                    return std::nullopt;
                }
                m_queue.clear();
                m_inflight.clear();
                m_arrived.clear();
                m_requested.clear();
                m_getblocks_pending = false;
                m_awaiting_continue.reset();
                m_peer_exhausted = false;
                return std::nullopt;
            }
            if (auto why = m_chain.Append(block.header())) {
                Fail({NetErrc::Misbehaving, "peer sent a block with an invalid header: " + *why});
                return std::nullopt;
            }
            if (auto e = Persist(height)) return e;
        } else if (m_chain.Hash(height) != hash) {
            Fail({NetErrc::Misbehaving, "peer sent block " + hash.ToHex() + " where height " + std::to_string(height) + " was expected"});
            return std::nullopt;
        }
        ConnectContext ctx;
        ctx.height = height;
        ctx.median_time_past = m_chain.MedianTimePast(height - 1);
        const int bip34 = m_params.consensus.bip34_height;
        if (height > bip34 && bip34 >= 0 && bip34 <= m_chain.Height()) ctx.bip34_ancestor = m_chain.Hash(bip34);
        if (auto reason = m_conn.Connect(std::move(block), ctx, size)) {
            m_res.reject_reason = *reason;
            m_res.reject_height = height;
            return std::nullopt;
        }
        m_connected = height;
        m_res.height = height;
        m_res.tip = hash;
        if (m_o.after_block) m_o.after_block(height);
        Report(false);
        return std::nullopt;
    }

    void Report(bool force)
    {
        if (!m_o.on_progress) return;
        const auto now = NetClock::now();
        if (!force && now - m_last_report < std::chrono::milliseconds(250)) return;
        m_last_report = now;
        SyncProgress p;
        p.height = m_connected;
        p.header_height = m_chain.Height();
        p.target_height = std::max(m_chain.Height(), m_res.peer_height);
        if (m_o.stop_height) p.target_height = std::min(p.target_height, *m_o.stop_height);
        const auto& c = m_conn.counters();
        p.blocks = c.blocks;
        p.txs = c.txs;
        p.bytes = c.bytes;
        p.elapsed_s = std::chrono::duration<double>(now - m_t0).count();
        p.cache_bytes = m_conn.cache().DynamicMemoryUsage();
        p.cache_budget = m_conn.cache().Budget();
        p.in_flight = m_inflight.size();
        m_o.on_progress(p);
    }

    void ReportHeaders()
    {
        if (!m_o.on_progress) return;
        SyncProgress p;
        p.headers_phase = true;
        p.header_height = m_chain.Height();
        p.target_height = std::max(m_chain.Height(), m_res.peer_height);
        m_o.on_progress(p);
    }

    const SyncOptions& m_o;
    const ChainParams& m_params;
    CoinsDB& m_db;
    HeaderChain& m_chain;
    std::filesystem::path m_headers_file;
    SyncResult& m_res;
    Peer<Policy> m_peer;
    BlockConnector m_conn;

    uint32_t m_block_type{MSG_WITNESS_BLOCK};
    bool m_getblocks{false};
    bool m_recovering{false};
    int m_recover_next{0};
    int m_connected{0};
    std::deque<BlockHash> m_queue;
    std::deque<BlockHash> m_inflight;
    std::unordered_set<BlockHash, Uint256Hasher> m_requested;
    std::unordered_map<BlockHash, std::pair<Block, std::size_t>, Uint256Hasher> m_arrived;
    bool m_getblocks_pending{false};
    bool m_peer_exhausted{false};
    NetClock::time_point m_getblocks_sent{};
    std::optional<BlockHash> m_awaiting_continue;
    std::optional<NetClock::time_point> m_continue_block_arrived;
    int m_empty_answers{0};
    int m_resets{0};
    NetClock::time_point m_last_progress{};
    NetClock::time_point m_last_report{};
    NetClock::time_point m_t0{NetClock::now()};
};

} // namespace

Result<SyncResult> Sync(const SyncOptions& opts)
{
    const auto t_start = NetClock::now();
    SyncResult res;
    res.chain = opts.chain;
    const ChainParams& params = GetChainParams(opts.chain);

    auto cs = ChainstateHandle::Open(opts.chainstate, opts.policy, opts.dbcache_mib, "ibdkit-sync");
    if (!cs) return cs.error();
    auto* db = &cs->db();
    const auto& dir = cs->dir();

    HeaderChain chain(params);
    const auto headers_file = dir / HEADERS_FILE;
    if (auto loaded = chain.Load(headers_file); !loaded) return loaded.error();

    auto socket = opts.connect ? opts.connect() : Socket::Connect(opts.host, opts.port, opts.timeout, opts.interrupt);
    std::optional<Error> env;
    if (!socket) {
        if (socket.error().code == NetErrc::Interrupted) {
            res.interrupted = true;
        } else {
            res.failure = socket.error();
        }
    } else {
        env = VisitPolicy(opts.policy, [&]<typename P>(P) -> std::optional<Error> {
            Session<P> s(opts, params, *db, chain, headers_file, res, std::move(*socket));
            std::optional<Error> e;
            try {
                e = s.Run();
            } catch (const StoreError& x) {
                e = EnvError(std::string("chainstate failure: ") + x.what());
            } catch (const DecodeError& x) {
                e = Error{x.code(), std::string("chainstate record does not decode: ") + x.what()};
            }
            s.CollectPeerStats();
            return e;
        });
    }
    if (env) return *env;
    res.header_height = chain.Height();
    res.height = -1;
    res.tip = BlockHash{};
    auto best = db->GetBestBlock();
    if (best && !best->IsNull()) {
        if (auto h = chain.HeightOf(*best)) {
            res.height = *h;
            res.tip = *best;
            auto stats = ComputeUtxoStats(*db, uint32_t(*h));
            if (!stats) return stats.error();
            res.utxo = *stats;
        }
    }
    res.total_seconds = Seconds(t_start);
    return res;
}

} // namespace ibdkit

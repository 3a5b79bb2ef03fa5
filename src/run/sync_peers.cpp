// The classic sync from several peers (include/ibdkit/run/sync_peers.h): swiftsync/'s peers, header
// chain and block fetcher (blocks alone, no spent coins) as the engine's block source.
#include <ibdkit/run/sync_peers.h>

#include <ibdkit/consensus/check.h>
#include <ibdkit/utxo/stats.h>

#include "coins/budget.h"
#include "engine/connector.h"
#include "engine/header_file.h"
#include "engine/run.h"
#include "swiftsync/peer_fetch.h"
#include "wire/protocol.h"

#include <algorithm>
#include <atomic>
#include <cassert>
#include <map>
#include <optional>
#include <tuple>
#include <utility>

namespace ibdkit::run {

namespace {

/// The peers as a block source: connected and their headers downloaded in Prepare, then each
/// Produce fetches its heights from every peer still serving (connected again when an earlier
/// Produce let them go). A peer whose block does not decode or is mutated is left out from then on,
/// and the engine starts again from its chainstate to fetch that block from the others.
class PeersSource final : public engine::BlockSource {
public:
    PeersSource(const SyncOptions& o, const ChainParams& params, std::vector<std::string> connect, HeaderChain loaded,
                std::filesystem::path headers_file, SyncPeersResult& out)
        : m_o(o), m_params(params), m_connect(std::move(connect)), m_chain(std::move(loaded)), m_headers_file(std::move(headers_file)), m_out(out)
    {}

    const HeaderChain& Headers() const override { return *m_chain; }
    int TipHeight() const override { return m_tip_height.load(std::memory_order_relaxed); }

    Result<Prepared> Prepare(const BlockHash& best) override
    {
        Prepared p;
        p.chain = "the peers' chain";
        p.chain_advice = ": use another --chainstate or peers on the same chain (several peers do not follow a "
                         "reorganisation below the chainstate's tip: sync from one peer)";
        p.recovery = "chainstate was interrupted mid-flush between blocks the peers' chain does not have; sync it from the peers "
                     "it was built from";
        const auto t_start = NetClock::now();
        if (auto e = Connect()) return *e;
        if (m_peers.empty()) {
            p.failed = true;
            return p;
        }
        const auto& v = m_peers.front().peer->info().version;
        m_out.sync.peer_user_agent = SanitizePeerText(v.user_agent); // as Core's getpeerinfo shows it
        m_out.sync.peer_version = v.version;
        m_out.sync.peer_height = v.start_height;
        m_out.sync.peer_services = v.services;
        m_out.sync.handshake_seconds = SecondsSince(t_start);
        const auto t_headers = NetClock::now();
        // Only the headers above the chainstate's tip travel (those below it are held: the headers
        // file, or the last run's download when a dropped peer made the engine start again).
        HeaderChain start = *m_chain;
        start.Truncate(best.IsNull() ? 0 : m_chain->HeightOf(best).value_or(0));
        auto headers = swiftsync::DownloadHeaders(m_peers, std::move(start), m_o.MinimumChainWork(m_params.consensus.minimum_chain_work),
                                                  m_o.timeout, m_out.notes, m_out.sync.headers_received);
        if (!headers) {
            if (headers.error().code != Errc::NotFound) return headers.error();
            m_out.sync.failure = NetError{NetErrc::Misbehaving, headers.error().message};
            p.failed = true;
            return p;
        }
        // The stored headers are rewritten from the first one the peers' chain does not share.
        int same = 0;
        while (same < std::min(m_chain->Height(), headers->Height()) && m_chain->Hash(same + 1) == headers->Hash(same + 1)) ++same;
        m_chain.emplace(std::move(*headers));
        m_best.clear();
        for (const auto& peer : m_peers) {
            m_best[peer.address] = peer.best_height;
            // Its headers broke Core's rules: the fetcher reports it dropped; no later connection.
            if (!peer.dropped.empty()) m_connect.erase(std::remove(m_connect.begin(), m_connect.end(), peer.address), m_connect.end());
        }
        if (m_chain->Height() > same) {
            if (auto e = engine::PersistHeaders(*m_chain, m_headers_file, same + 1)) return Error{Errc::Io, "writing the peers' headers: " + *e};
        }
        m_out.sync.mode = "headers";
        m_out.sync.header_height = m_chain->Height();
        m_out.sync.headers_seconds = SecondsSince(t_headers);
        m_tip_height.store(m_chain->Height(), std::memory_order_relaxed);
        return p;
    }

    std::optional<Error> Produce(int from, int to, const Emit& emit) override
    {
        to = std::min(to, m_chain->Height());
        if (from > to) return std::nullopt;
        if (m_peers.empty()) {
            if (auto e = Connect()) return e;
            if (m_peers.empty()) return std::nullopt;
        }
        swiftsync::FetchOptions fo;
        fo.timeout = m_o.timeout;
        fo.window = m_o.window;
        fo.spent_coins = false;
        fo.interrupt = m_o.interrupt;
        swiftsync::BlockFetcher fetcher(std::move(m_peers), *m_chain, uint32_t(from), uint32_t(to), fo);
        m_peers.clear();
        for (int h = from; h <= to; ++h) {
            auto f = fetcher.Take(uint32_t(h));
            if (!f) {
                if (!Interrupted()) m_out.sync.failure = NetError{NetErrc::Closed, f.error().message};
                break;
            }
            m_sender[h] = f->peer;
            if (m_sender.size() > SENDERS_KEPT) m_sender.erase(m_sender.begin());
            engine::RawBlock raw;
            raw.height = h;
            raw.hash = m_chain->Hash(h);
            raw.bytes = std::move(f->block);
            raw.message = true;
            if (!emit(std::move(raw))) break;
        }
        Report(fetcher);
        return std::nullopt;
    }

    std::optional<Error> Undecodable(int height, const Error& e) override
    {
        DropSender(height, "sent a block that does not decode (height " + std::to_string(height) + "): " + e.message);
        return std::nullopt;
    }

    /// The engine refused the block at `height` as mutated (`reason`): its sender's fault.
    void Mutated(int height, const std::string& reason)
    {
        DropSender(height, "sent a mutated block at height " + std::to_string(height) + " (" + reason +
                               "): not the block its header names");
    }

    /// Whether a peer was dropped for a block it sent and others are left to fetch it (once).
    bool TakeAgain() { return std::exchange(m_again, false); }

private:
    /// The heights whose sender is remembered (Undecodable names it): more than the blocks the
    /// engine holds between their arrival and their decoding.
    static constexpr std::size_t SENDERS_KEPT = 4096;

    bool Interrupted() const { return m_o.interrupt && m_o.interrupt->load(std::memory_order_relaxed); }

    /// Leaves out the peer that sent `height` from every later connection, saying `why`; the run
    /// goes on with the others (TakeAgain), or fails when none is left or the sender is forgotten.
    void DropSender(int height, const std::string& why)
    {
        auto it = m_sender.find(height);
        if (it == m_sender.end() || it->second >= m_addresses.size()) {
            m_out.sync.failure = NetError{NetErrc::Misbehaving, "a peer " + why};
            return;
        }
        const std::string who = m_addresses[it->second];
        m_connect.erase(std::remove(m_connect.begin(), m_connect.end(), who), m_connect.end());
        auto s = std::find_if(m_out.peers.begin(), m_out.peers.end(), [&](const PeerSummary& p) { return p.address == who; });
        if (s != m_out.peers.end()) s->dropped = why;
        m_out.notes.push_back(who + " " + why + ": dropped");
        if (m_connect.empty()) {
            m_out.sync.failure = NetError{NetErrc::Misbehaving, "no peer is left: " + who + " " + why};
            return;
        }
        m_again = true;
    }

    /// Connects to every peer; none reachable is the run's failure.
    std::optional<Error> Connect()
    {
        m_out.unreachable.clear();
        auto connected = swiftsync::ConnectPeers(m_connect, m_params, m_o.policy, m_o.timeout, m_o.interrupt, m_out.unreachable);
        if (!connected) return connected.error();
        m_peers = std::move(*connected);
        for (auto& peer : m_peers) { // connected again: what its headers showed still holds
            if (auto b = m_best.find(peer.address); b != m_best.end()) peer.best_height = b->second;
        }
        m_addresses.clear();
        for (const auto& p : m_peers) m_addresses.push_back(p.address);
        if (m_peers.empty() && !Interrupted()) {
            m_out.sync.failure = NetError{NetErrc::Connect, swiftsync::NoPeerReached(m_out.unreachable, m_o.chain)};
        }
        return std::nullopt;
    }

    /// What each peer did in a Produce, added to the run's summary.
    void Report(const swiftsync::BlockFetcher& fetcher)
    {
        for (const PeerSummary& r : fetcher.Reports()) {
            auto it = std::find_if(m_out.peers.begin(), m_out.peers.end(), [&](const PeerSummary& s) { return s.address == r.address; });
            if (it == m_out.peers.end()) it = m_out.peers.insert(m_out.peers.end(), PeerSummary{r.address, r.user_agent, 0, 0, 0, {}});
            it->blocks += r.blocks;
            it->block_bytes += r.block_bytes;
            it->dropped = r.dropped;
            if (r.synced_headers >= 0) it->synced_headers = r.synced_headers;
            m_out.sync.bytes_received += r.block_bytes;
        }
    }

    const SyncOptions& m_o;
    const ChainParams& m_params;
    std::vector<std::string> m_connect;  ///< the peers not dropped for a block they sent or their headers
    std::optional<HeaderChain> m_chain;
    const std::filesystem::path m_headers_file;
    SyncPeersResult& m_out;
    std::vector<swiftsync::ConnectedPeer> m_peers;
    std::vector<std::string> m_addresses; ///< of the fetcher's peers, by index
    std::map<int, std::size_t> m_sender;  ///< the peer that sent each recent height
    std::map<std::string, uint32_t> m_best; ///< each peer's best height on the chain (Prepare's headers)
    std::atomic<int> m_tip_height{0};
    bool m_again{false};
};

/// `run`, a later engine run after a peer was dropped, with the counts of the runs before it.
void AddEarlierRuns(EngineResult& run, const EngineResult& earlier)
{
    ConnectorCounters& c = run;
    const ConnectorCounters& e = earlier;
    c.blocks += e.blocks;
    c.txs += e.txs;
    c.inputs += e.inputs;
    c.outputs += e.outputs;
    c.bytes += e.bytes;
    c.flushes += e.flushes;
    c.recovered_blocks += e.recovered_blocks;
    c.flush_seconds += e.flush_seconds;
    c.script_checked_inputs += e.script_checked_inputs;
    if (e.cache_full_entries) std::tie(c.cache_full_entries, c.cache_full_bytes) = std::tie(e.cache_full_entries, e.cache_full_bytes);
    if (e.script_checks_from_height) std::tie(c.script_checks_from_height, c.script_check_reason) = std::tie(e.script_checks_from_height, e.script_check_reason);
    run.start_height = earlier.start_height;
    run.seconds += earlier.seconds;
    run.final_flush_seconds += earlier.final_flush_seconds;
    run.bytes_cleansed += earlier.bytes_cleansed;
    run.coins_read_from_disk += earlier.coins_read_from_disk;
    run.coins_prefetched += earlier.coins_prefetched;
}

} // namespace

Result<SyncPeersResult> SyncFromPeers(const SyncOptions& options, const std::vector<std::string>& connect)
{
    assert(!options.force_getblocks && !connect.empty());
    const auto t_start = NetClock::now();
    SyncPeersResult out;
    out.sync.chain = options.chain;
    const ChainParams& params = GetChainParams(options.chain);
    auto cs = ChainstateHandle::OpenFor(options, "sync", options.chain);
    if (!cs) return cs.error();
    HeaderChain loaded(params);
    const auto headers_file = cs->dir() / HEADERS_FILE;
    if (auto l = engine::LoadHeaders(loaded, headers_file); !l) return l.error();
    PeersSource source(options, params, connect, std::move(loaded), headers_file, out);
    EngineOptions eo = options;
    eo.on_progress = [&](const EngineProgress& ep) {
        if (options.on_progress) options.on_progress(ep);
        if (!options.on_sync_progress) return;
        SyncProgress p;
        static_cast<EngineProgress&>(p) = ep;
        p.header_height = source.TipHeight();
        options.on_sync_progress(p);
    };
    // The statistics are walked once, after the last run: a run may be followed by another.
    eo.statistics = false;
    std::optional<EngineResult> earlier; // when a dropped peer made the engine start again
    for (;;) {
        EngineResult fresh;
        fresh.chain = options.chain;
        auto run = engine::RunEngine(eo, params, source, *cs, std::move(fresh));
        if (!run) return run.error();
        // A mutated block is its sender's fault, never the block's (Core's BLOCK_MUTATED).
        if (run->reject_reason && IsMutatedReason(*run->reject_reason)) {
            source.Mutated(run->reject_height, *run->reject_reason);
            run->reject_reason.reset();
            run->reject_height = -1;
        }
        if (earlier) AddEarlierRuns(*run, *earlier);
        static_cast<EngineResult&>(out.sync) = std::move(*run);
        if (!source.TakeAgain() || out.sync.interrupted) break;
        earlier = static_cast<const EngineResult&>(out.sync);
    }
    if (options.statistics && out.sync.height >= 0) {
        auto stats = ComputeUtxoStats(cs->db(), uint32_t(out.sync.height));
        if (!stats) return Error{stats.error().code, "chainstate " + cs->dir().string() + ": " + stats.error().message};
        out.sync.utxo = *stats;
        out.sync.peak_rss_bytes = PeakRssBytes();
    }
    out.sync.total_seconds = SecondsSince(t_start);
    return out;
}

} // namespace ibdkit::run

// src/engine/peer_headers.cpp — one peer's header chain (peer_headers.h).
#include "peer_headers.h"

#include "header_file.h"

#include <ibdkit/consensus/pow.h>

#include <algorithm>
#include <cstdio>

namespace ibdkit::sync_detail {

PeerLink::PeerLink(const SyncOptions& options, const ChainParams& chain_params, HeaderChain& header_chain, SyncResult& result,
                   Socket socket)
    : o(options), params(chain_params), chain(header_chain), res(result),
      peer(std::move(socket), chain_params, options.policy, options.interrupt)
{
    PublishHeights();
}

// A peer failure ends the run cleanly (the engine flushes); an interrupt is the engine's to see.
std::optional<Error> PeerLink::Fail(NetError e)
{
    if (e.code != NetErrc::Interrupted) {
        if (!peer.info().rejects.empty()) e.message += " (the peer sent: " + peer.info().rejects.back() + ")";
        res.failure = std::move(e);
    }
    return std::nullopt;
}

void PeerLink::PublishHeights()
{
    header_height.store(chain.Height(), std::memory_order_relaxed);
    target_height.store(std::max(chain.Height(), res.peer_height), std::memory_order_relaxed);
    in_flight.store(inflight.size(), std::memory_order_relaxed);
}

bool PeerLink::Interrupted() const { return o.interrupt && o.interrupt->load(std::memory_order_relaxed); }

// A getheaders exchange's failure as the run reports it: the peer "stalled" or "sent" it.
static NetError Said(NetError e)
{
    if (e.code == NetErrc::Timeout) e.message = "peer stalled: " + e.message;
    if (e.code == NetErrc::Misbehaving) e.message = "peer sent " + e.message;
    return e;
}

PeerHeaders::PeerHeaders(PeerLink& link, std::filesystem::path headers_file)
    : m_link(link), m_headers_file(std::move(headers_file))
{
}

std::optional<Error> PeerHeaders::PersistHeldBack()
{
    if (!m_persist_from) return std::nullopt;
    if (auto e = Persist(*m_persist_from)) return e;
    m_persist_from.reset();
    return std::nullopt;
}

std::optional<Error> PeerHeaders::Persist(int from)
{
    if (auto e = engine::PersistHeaders(m_link.chain, m_headers_file, from)) return engine::EnvError(*e);
    return std::nullopt;
}

// getheaders until a short answer (HeaderWalk), each answer's new headers stored as it comes.
// Falls back to getblocks when the first request gets no answer within headers_wait.
std::optional<Error> PeerHeaders::SyncHeaders(int connected)
{
    static_assert(HEADERS_PER_ANSWER == MAX_HEADERS_RESULTS);
    HeaderWalk walk(m_link.chain, false, UintToArith256(MinimumChainWork()));
    bool first = true;
    for (;;) {
        const auto ask = walk.Next();
        auto headers = m_link.peer.AskHeaders(MakeLocator(ask.chain, ask.first), first ? m_link.o.headers_wait : m_link.o.timeout);
        if (!headers) {
            if (headers.error().code == NetErrc::Timeout && first) {
                m_link.getblocks = true; // the peer ignores getheaders (e.g. its tip is old): use getblocks
                return std::nullopt;
            }
            return m_link.Fail(Said(headers.error()));
        }
        first = false;
        m_link.res.headers_received += headers->size();
        const int before = m_link.chain.Height();
        const auto step = walk.Take(*headers);
        if (m_link.chain.Height() > before) {
            if (auto e = Persist(before + 1)) return e;
            ReportHeaders();
        }
        if (!step) return m_link.Fail({NetErrc::Misbehaving, "peer sent " + step.error()});
        if (*step == HeaderWalk::Step::Done) return std::nullopt;
        if (*step == HeaderWalk::Step::BranchEnded) return EndBranch(walk, connected);
        if (*step == HeaderWalk::Step::LowWork) {
            const auto& seen = walk.LowWorkSeen();
            return m_link.Fail({NetErrc::Misbehaving, "the peer's " + MinimumChainWorkShortfall(seen.height, seen.work, MinimumChainWork(),
                                                                                                  "none of it kept (headers presync)")});
        }
        if (m_link.Interrupted()) return std::nullopt;
    }
}

uint256 PeerHeaders::MinimumChainWork() const
{
    return m_link.o.MinimumChainWork(m_link.params.consensus.minimum_chain_work);
}

// Core does not download a header chain below the network's minimum chain work.
void PeerHeaders::CheckMinimumChainWork()
{
    if (auto below = BelowMinimumChainWork(m_link.chain, MinimumChainWork())) {
        m_link.Fail({NetErrc::Misbehaving, *below});
    }
}

// The peer's competing branch has ended. It replaces our chain above the fork only with more chain
// work (GetBlockProof summed); below the chainstate's tip `connected` that is a reorganisation,
// which the engine carries out with the undo data (the source's Prepared::stale).
std::optional<Error> PeerHeaders::EndBranch(HeaderWalk& walk, int connected)
{
    m_link.res.competing_branches++;
    if (!walk.Branch()->MoreWork()) return std::nullopt; // ours has at least as much work: keep it (Core keeps the first seen)
    const int fork = walk.Branch()->Fork();
    if (fork < connected) {
        if (m_link.o.undo_dir.empty()) {
            return m_link.Fail({NetErrc::Misbehaving, "peer's chain forks from ours at height " + std::to_string(fork + 1) +
                                                   ", below the chainstate's tip " + std::to_string(connected) +
                                                   ", with more work: reorganising needs the undo data of the blocks above the fork "
                                                   "(sync with --undo)"});
        }
        engine::BlockSource::StaleBranch stale;
        stale.tip_height = connected;
        for (int k = connected; k > fork; --k) {
            stale.hashes.push_back(m_link.chain.Hash(k));
            m_stale.emplace(m_link.chain.Hash(k), k);
        }
        m_reorg = std::move(stale);
    }
    walk.Adopt();
    // Below the tip, the new headers are stored only once the engine has disconnected the stale
    // branch (Produce): until then the stored headers must still name the chainstate's tip.
    if (m_reorg) {
        m_persist_from = fork + 1;
    } else if (auto e = Persist(fork + 1)) {
        return e;
    }
    ReportHeaders();
    return std::nullopt;
}

void PeerHeaders::ReportHeaders()
{
    m_link.PublishHeights();
    if (!m_link.o.on_sync_progress) return;
    SyncProgress p;
    p.headers_phase = true;
    p.header_height = m_link.chain.Height();
    p.tip_height = m_link.target_height.load(std::memory_order_relaxed);
    m_link.o.on_sync_progress(p);
}

} // namespace ibdkit::sync_detail

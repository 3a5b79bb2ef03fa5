// src/engine/peer_headers.h (internal to sync.cpp) — one peer's header chain: getheaders until the
// peer's tip, competing branches followed by chain work (a reorganisation below the chainstate's
// tip is handed to the engine), Core's minimum chain work, and the assumevalid decision per height.
// `PeerSource` (sync.cpp) adds the handshake and the block download on top.
#pragma once

#include "block_source.h"

#include <ibdkit/consensus/assumevalid.h>
#include <ibdkit/consensus/pow.h>
#include <ibdkit/engine/sync.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <deque>
#include <filesystem>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

namespace ibdkit::sync_detail {

inline double Seconds(NetClock::time_point since) { return std::chrono::duration<double>(NetClock::now() - since).count(); }

inline std::string Secs(std::chrono::milliseconds d)
{
    char b[32];
    std::snprintf(b, sizeof b, "%.1f s", double(d.count()) / 1000.0);
    return b;
}

class PeerHeaders {
protected:
    PeerHeaders(const SyncOptions& o, const ChainParams& params, HeaderChain& chain, std::filesystem::path headers_file,
                SyncResult& res, Socket socket)
        : m_o(o), m_params(params), m_chain(chain), m_headers_file(std::move(headers_file)), m_res(res),
          m_peer(std::move(socket), params, o.policy, o.interrupt), m_av_params(params.consensus),
          m_assumevalid(ResolveAssumeValid(o.assumevalid, params.consensus))
    {
        // The assumevalid rule compares the best header's work with the minimum this run uses.
        if (o.minimum_chain_work) m_av_params.minimum_chain_work = *o.minimum_chain_work;
        PublishHeights();
    }

    // A peer failure ends the run cleanly (the engine flushes); an interrupt is the engine's to see.
    std::optional<Error> Fail(NetError e)
    {
        if (e.code != NetErrc::Interrupted) {
            if (!m_peer.info().rejects.empty()) e.message += " (the peer sent: " + m_peer.info().rejects.back() + ")";
            m_res.failure = std::move(e);
        }
        return std::nullopt;
    }

    void PublishHeights()
    {
        m_header_height.store(m_chain.Height(), std::memory_order_relaxed);
        m_target_height.store(std::max(m_chain.Height(), m_res.peer_height), std::memory_order_relaxed);
        m_in_flight.store(m_inflight.size(), std::memory_order_relaxed);
    }

    bool Interrupted() const { return m_o.interrupt && m_o.interrupt->load(std::memory_order_relaxed); }

    std::optional<Error> Persist(int from)
    {
        if (auto e = m_chain.Persist(m_headers_file, from)) return engine::EnvError(*e);
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
                auto hs = DecodeHeaders(Peer::Bytes(*m));
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
                // The peer's chain forks from ours after height h: take its whole branch, then follow
                // it only if it has more work than ours above the fork.
                std::vector<BlockHeader> branch(headers->begin() + std::ptrdiff_t(i), headers->end());
                return FollowBranch(h, connected, std::move(branch), headers->size() == MAX_HEADERS_RESULTS);
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
            if (Interrupted()) return std::nullopt;
        }
    }

    // Core does not download a header chain below the network's minimum chain work.
    void CheckMinimumChainWork()
    {
        const arith_uint256 minimum = UintToArith256(m_o.minimum_chain_work.value_or(m_params.consensus.minimum_chain_work));
        const arith_uint256& work = m_chain.ChainWork().back();
        if (work < minimum) {
            Fail({NetErrc::Misbehaving, "the peer's best header chain (height " + std::to_string(m_chain.Height()) + ", work " +
                                            ArithToUint256(work).ToHex() + ") has less work than the network's minimum chain work " +
                                            ArithToUint256(minimum).ToHex() + ": not downloading it"});
        }
    }

    // A competing branch forking after height `fork`: its first headers in `branch`, more to ask for
    // while `more`. Every header must link and pass Core's header checks on its own branch's
    // ancestors (CheckHeaderOn). The branch replaces ours above the
    // fork only with more chain work (GetBlockProof summed); below the chainstate's tip `connected`
    // that is a reorganisation, which the engine carries out with the undo data (Reorganisation()).
    std::optional<Error> FollowBranch(int fork, int connected, std::vector<BlockHeader> branch, bool more)
    {
        // The branch's ancestry: ours up to the fork, then the branch's own headers as they pass.
        const HeaderAncestry below = m_chain.AncestryAt(fork);
        std::vector<HeaderInfo> ancestry(below.headers.begin(), below.headers.end());
        const int first_height = below.first_height;
        auto check = [&](std::size_t from) -> std::optional<std::string> {
            for (std::size_t k = from; k < branch.size(); ++k) {
                const BlockHash prev = k == 0 ? m_chain.Hash(fork) : branch[k - 1].GetHash();
                if (branch[k].hash_prev_block != prev) return "header " + branch[k].GetHash().ToHex() + " does not extend the branch it came in";
                const std::size_t take = std::min<std::size_t>(ancestry.size(), HEADER_ANCESTRY_NEEDED);
                const HeaderAncestry on{first_height + int(ancestry.size() - take),
                                        std::span<const HeaderInfo>(ancestry).last(take)};
                if (auto why = CheckHeaderOn(branch[k], on, m_params.consensus)) return why;
                ancestry.push_back(HeaderInfo{branch[k].time, branch[k].bits});
            }
            return std::nullopt;
        };
        if (auto why = check(0)) return Fail({NetErrc::Misbehaving, "peer sent an invalid header: " + *why});
        while (more && !Interrupted()) {
            LocatorMessage gh;
            gh.locator.push_back(branch.back().GetHash());
            for (const auto& hh : m_chain.Locator()) gh.locator.push_back(hh);
            if (gh.locator.size() > MAX_LOCATOR_SZ) gh.locator.resize(MAX_LOCATOR_SZ);
            if (auto e = m_peer.Send("getheaders", EncodeLocator(gh))) return Fail(*e);
            const auto deadline = NetClock::now() + m_o.timeout;
            std::optional<std::vector<BlockHeader>> next;
            while (!next) {
                auto m = m_peer.Receive(deadline);
                if (!m) {
                    if (m.error().code == NetErrc::Timeout) return Fail({NetErrc::Timeout, "peer stalled: no answer to getheaders within " + Secs(m_o.timeout)});
                    return Fail(m.error());
                }
                if (m->command != "headers") continue;
                auto hs = DecodeHeaders(Peer::Bytes(*m));
                if (!hs) return Fail({NetErrc::Misbehaving, "peer sent a malformed headers message: " + hs.error().message});
                next = std::move(*hs);
            }
            m_res.headers_received += next->size();
            more = next->size() == MAX_HEADERS_RESULTS;
            const std::size_t from = branch.size();
            branch.insert(branch.end(), next->begin(), next->end());
            if (auto why = check(from)) return Fail({NetErrc::Misbehaving, "peer sent an invalid header: " + *why});
        }
        arith_uint256 ours, theirs;
        for (int k = fork + 1; k <= m_chain.Height(); ++k) ours += GetBlockProof(m_chain.Header(k).bits);
        for (const auto& hdr : branch) theirs += GetBlockProof(hdr.bits);
        m_res.competing_branches++;
        if (theirs <= ours) return std::nullopt; // ours has at least as much work: keep it (Core keeps the first seen)
        if (fork < connected) {
            if (m_o.undo_dir.empty()) {
                return Fail({NetErrc::Misbehaving, "peer's chain forks from ours at height " + std::to_string(fork + 1) +
                                                       ", below the chainstate's tip " + std::to_string(connected) +
                                                       ", with more work: reorganising needs the undo data of the blocks above the fork "
                                                       "(sync with --undo)"});
            }
            engine::BlockSource::StaleBranch stale;
            stale.tip_height = connected;
            for (int k = connected; k > fork; --k) {
                stale.hashes.push_back(m_chain.Hash(k));
                m_stale.emplace(m_chain.Hash(k), k);
            }
            m_reorg = std::move(stale);
        }
        m_chain.Truncate(fork);
        for (const auto& hdr : branch) {
            if (auto why = m_chain.Append(hdr)) return Fail({NetErrc::Misbehaving, "peer sent an invalid header: " + *why});
        }
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

    // Core's assumevalid rule for the block at `height` of the header chain, whose tip is the
    // best header (in getblocks mode the headers are the blocks': each block is then the best
    // header, too recent to skip).
    std::optional<std::string_view> ScriptCheckReason(int height) const
    {
        const HeaderChainView best{0, m_chain.Hashes(), m_chain.ChainWork()};
        AssumeValidChain av{m_assumevalid, std::nullopt};
        if (!av.hash.IsNull()) {
            if (auto h = m_chain.HeightOf(av.hash)) av.chain = HeaderChainView{0, best.hashes.first(std::size_t(*h) + 1), {}};
        }
        return ibdkit::ScriptCheckReason(av, best, height, m_chain.Hash(height), m_av_params);
    }

    void ReportHeaders()
    {
        PublishHeights();
        if (!m_o.on_sync_progress) return;
        SyncProgress p;
        p.headers_phase = true;
        p.header_height = m_chain.Height();
        p.tip_height = m_target_height.load(std::memory_order_relaxed);
        m_o.on_sync_progress(p);
    }

    const SyncOptions& m_o;
    const ChainParams& m_params;
    HeaderChain& m_chain;
    std::filesystem::path m_headers_file;
    SyncResult& m_res;
    Peer m_peer;
    ConsensusParams m_av_params;  ///< the network's, with this run's minimum chain work
    BlockHash m_assumevalid;
    std::optional<engine::BlockSource::StaleBranch> m_reorg;
    std::unordered_map<BlockHash, int, Uint256Hasher> m_stale; ///< the stale branch's blocks by hash
    std::optional<int> m_persist_from; ///< headers to store once the reorganisation is done
    bool m_getblocks{false};
    std::deque<BlockHash> m_inflight; ///< blocks requested, in chain order (the download's; counted in progress)
    // Read by the engine's thread for progress.
    std::atomic<int> m_header_height{0}, m_target_height{0};
    std::atomic<std::size_t> m_in_flight{0};
};

} // namespace ibdkit::sync_detail

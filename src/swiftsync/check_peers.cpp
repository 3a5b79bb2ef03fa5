// SwiftSync over P2P (swiftsync/check_peers.h).
#include "swiftsync/check_peers.h"

#include <ibdkit/coins/undo.h>
#include <ibdkit/consensus/check.h>
#include <ibdkit/swiftsync/hints.h>
#include <ibdkit/threads.h>

#include "blockfile/datadir_writer.h"
#include "coins/budget.h"
#include "common/task_pool.h"
#include "consensus/merkle.h"
#include "swiftsync/block_walk.h"
#include "swiftsync/coins_block.h"
#include "swiftsync/range_internal.h"
#include "swiftsync/recent_coins.h"
#include "swiftsync/replay_internal.h"
#include "swiftsync/spent_coins.h"

#include <algorithm>
#include <cassert>
#include <deque>
#include <unordered_map>
#include <string_view>

namespace ibdkit::swiftsync {

namespace {

/// One block of a batch on its way through the check.
struct Slot {
    FetchedBlock f;
    std::optional<Block> block;    ///< decoded (and, with a cutoff, its merkle root checked)
    std::optional<BlockUndo> undo; ///< made from the bspent and the recent coins (with a cutoff)
    /// With a cutoff: the block's outputs a later block may spend (spendable, not hinted unspent).
    std::vector<std::pair<OutPoint, Coin>> spendable;
    BlockOutcome out;
    /// The length of the block at the front of f.block: its bytes, which the data directory
    /// being written gets with its header, transaction count and undo data as the spent coins give it.
    std::size_t block_size{0};
    std::vector<uint8_t> undo_record;
    BlockHeader header;
    uint32_t tx_count{0};
};

/// The check of the blocks the fetcher hands over, in height order, with a peer caught
/// misbehaving dropped and its block asked for again.
class PeerCheck {
public:
    /// A batch stops growing at `batch_bytes` of blocks and bspents (the budget's share).
    PeerCheck(BlockFetcher& fetcher, const HeaderChain& headers, ChainType chain, const Hints& hints, const CoinsBlockRules& rules,
              const CheckRangeOptions& options, AggregateMode mode, uint32_t recent_blocks, std::size_t batch_bytes,
              DatadirWriter* datadir, PeersRunResult& out)
        : m_fetcher(fetcher), m_headers(headers), m_chain(chain), m_hints(hints), m_rules(rules), m_options(options), m_mode(mode),
          m_recent_blocks(recent_blocks), m_batch_bytes(batch_bytes), m_datadir(datadir), m_out(out)
    {}

    Result<Partial> Run(uint32_t n)
    {
        const unsigned threads = ResolveThreads(m_options.threads);
        TaskPool pool(threads > 1 ? threads - 1 : 0);
        Partial partial;
        partial.from = 1;
        partial.to = n;
        partial.mode = m_mode;
        std::vector<Slot> batch;
        m_agg_in.assign(std::size_t(n) + 1, Aggregate{});
        m_peer_of.assign(std::size_t(n) + 1, NO_PEER);
        for (uint32_t h = 1; h <= n;) {
            if (auto e = TakeBatch(h, n, batch)) return *e;
            // Decoded on every thread; with a cutoff, the coins left out filled from the recent
            // coins in height order; then each block checked on every thread.
            pool.Run(batch.size(), [&](std::size_t i) { Decode(batch[i]); });
            if (m_recent_blocks) {
                for (Slot& slot : batch) {
                    if (auto e = FillFromRecent(slot)) return *e;
                }
            }
            pool.Run(batch.size(), [&](std::size_t i) {
                if (!batch[i].out.error) batch[i].out = CheckDecoded(batch[i]);
            });
            for (Slot& slot : batch) {
                if (auto e = Settle(slot)) return *e;
                const uint32_t at = slot.f.height;
                m_block_bytes += slot.f.block.size();
                m_out.spent_bytes += slot.f.spent_bytes;
                m_agg_in[at] = slot.out.partial.agg_in;
                m_peer_of[at] = slot.f.peer;
                if (auto e = MergeBlock(partial, slot.out.partial, m_options)) {
                    if (e->code == Errc::Ok) return partial; // refused: the verdict says so
                    return *e;
                }
                if (auto e = Store(slot)) return *e;
            }
            h += uint32_t(batch.size());
            m_through.push_back(m_block_bytes);
            m_through_height.push_back(h - 1);
            if (m_options.on_progress) m_options.on_progress(h - 1, n);
        }
        // Only spent coins can lie and still pass the block's hash: in outpoints mode an imbalance
        // is the history's (or the hints').
        if (m_mode == AggregateMode::Coins && partial.agg_in != partial.agg_out) {
            if (auto e = FindLiar(partial, n)) return *e;
        }
        if (m_mode == AggregateMode::Coins && partial.agg_in != partial.agg_out) {
            if (auto e = ProveByOnePeer(partial, n)) return *e;
        }
        return partial;
    }

    /// The bytes of blocks 1..h (h a height a progress call named).
    uint64_t BytesThrough(uint32_t h) const
    {
        auto it = std::lower_bound(m_through_height.begin(), m_through_height.end(), h);
        return it == m_through_height.end() ? m_block_bytes : m_through[std::size_t(it - m_through_height.begin())];
    }

private:
    /// Height h on: the blocks that have arrived in a row, at least one (waiting for it).
    std::optional<Error> TakeBatch(uint32_t h, uint32_t n, std::vector<Slot>& batch)
    {
        batch.clear();
        auto first = m_fetcher.Take(h);
        if (!first) return first.error();
        std::size_t bytes = first->block.size() + first->spent_bytes;
        batch.emplace_back().f = std::move(*first);
        while (h + batch.size() <= n && batch.size() < BATCH_BLOCKS && bytes < m_batch_bytes) {
            auto more = m_fetcher.TryTake(h + uint32_t(batch.size()));
            if (!more) break;
            bytes += more->block.size() + more->spent_bytes;
            batch.emplace_back().f = std::move(*more);
        }
        return std::nullopt;
    }

    /// The slot's block decoded; when recent coins are kept, its merkle root checked too (later
    /// blocks take its outputs on trust) and those outputs listed. A failure is the peer's.
    void Decode(Slot& slot) const
    {
        slot.out = BlockOutcome{};
        slot.undo.reset();
        auto fault = [&](Errc code, std::string why) {
            slot.block.reset();
            slot.out.error = Error{code, std::move(why)};
            slot.out.coins_unfit = true;
        };
        auto block = DecodeBlockMessage(slot.f.block.uchars(), &slot.block_size);
        if (!block) return fault(block.error().code, "its block does not decode: " + block.error().message);
        slot.block = std::move(*block);
        if (m_recent_blocks == 0) return; // nothing is kept: CheckBlock checks the merkle root
        bool mutated = false;
        if (BlockMerkleRoot(*slot.block, &mutated) != slot.block->header().hash_merkle_root || mutated) {
            return fault(Errc::InvalidValue, "a mutated block (bad-txnmrklroot)");
        }
        // What the recent coins will hold of it: an output unspent at n is spent by no block.
        const uint32_t h = slot.f.height;
        const std::vector<uint32_t> unspent = m_hints.Indices(h);
        auto next_unspent = unspent.begin();
        slot.spendable.clear();
        const Block& b = *slot.block;
        ForEachSpendableOutput(b, IsBip30Unspendable(m_chain, int(h), m_headers.Hash(int(h))), [&](std::size_t t, uint32_t o, uint32_t index) {
            if (next_unspent != unspent.end() && *next_unspent == index) {
                ++next_unspent;
                return;
            }
            slot.spendable.emplace_back(OutPoint{b.vtx[t].GetHash(), o}, Coin(b.vtx[t].vout()[o], h, t == 0));
        });
    }

    /// In height order: the block's outputs join the recent coins, and the coins its `bspent` left
    /// out come from them. A block or coins at fault are asked for again, whole, from another peer.
    std::optional<Error> FillFromRecent(Slot& slot)
    {
        const uint32_t h = slot.f.height;
        for (;;) {
            if (slot.block) {
                m_recent.Add(std::move(slot.spendable), h);
                if (slot.f.cutoff == 0) break; // a whole bspent, made into undo data in the check
                uint64_t saved = 0;
                auto undo = BlockUndoFromBspent(slot.f.spent, GetBspentMessage{m_headers.Hash(int(h)), slot.f.cutoff}, *slot.block,
                                                [&](const OutPoint& op) { return m_recent.Find(op); }, saved);
                if (undo) {
                    slot.undo = std::move(*undo);
                    m_out.spent_bytes_saved += saved;
                    break;
                }
                slot.out.error = Error{undo.error().code, "its bspent does not fit the block: " + undo.error().message};
                slot.out.coins_unfit = true;
            }
            m_fetcher.DropAndRefetch(slot.f.peer, What(h, slot.out.error->message), h);
            auto again = m_fetcher.Take(h);
            if (!again) return again.error();
            slot.f = std::move(*again);
            Decode(slot);
        }
        m_recent.KeepFrom(h + 1 > m_recent_blocks ? h + 1 - m_recent_blocks : 0);
        return std::nullopt;
    }

    BlockOutcome CheckDecoded(Slot& slot) const
    {
        const FetchedBlock& f = slot.f;
        if (m_mode == AggregateMode::OutPoints) return m_rules.Check(*slot.block, f.height, m_headers.Hash(int(f.height)), {});
        return m_rules.Check(*slot.block, f.height, m_headers.Hash(int(f.height)), [&](const Block& b) -> Result<BlockUndo> {
            Result<BlockUndo> undo = slot.undo ? Result<BlockUndo>(std::move(*slot.undo)) : BlockUndoFromBspent(f.spent, b);
            if (!undo) return Error{undo.error().code, "its bspent does not fit the block: " + undo.error().message};
            if (m_datadir) {
                // Kept now: the check consumes the block. Written once the block is settled.
                slot.header = b.header();
                slot.tx_count = uint32_t(b.vtx.size());
                slot.undo_record = SerializeBlockUndo(*undo);
            }
            return undo;
        });
    }

    /// The slot's block (fetched whole, no cutoff) checked on the calling thread.
    void CheckOne(Slot& slot) const
    {
        Decode(slot);
        if (!slot.out.error) slot.out = CheckDecoded(slot);
    }

    /// Appends the settled, accepted block with its undo data to the data directory being
    /// written; the index names it only once the aggregate accepts the run (before_write).
    std::optional<Error> Store(Slot& slot)
    {
        if (!m_datadir) return std::nullopt;
        try {
            m_datadir->Append(slot.f.block.uchars().first(slot.block_size), slot.header, slot.tx_count, int(slot.f.height), slot.undo_record);
        } catch (const DatadirWriteError& e) {
            return Error{Errc::Io, std::string("writing the data directory: ") + e.what()};
        }
        slot.undo_record = {};
        return std::nullopt;
    }

    std::string What(uint32_t h, const std::string& why) const
    {
        return "block " + m_headers.Hash(int(h)).ToHex() + " at height " + std::to_string(h) + ": " + why;
    }

    /// Why the block's outcome is the sending peer's fault, or nullopt.
    static std::optional<std::string> PeerFault(const BlockOutcome& o)
    {
        if (o.coins_unfit) return o.error->message;
        if (!o.partial.failure) return std::nullopt;
        const std::string& reason = o.partial.failure->reason;
        if (o.refused_on_coins) return "its spent coins fail " + reason;
        if (IsMutatedReason(reason)) return "a mutated block (" + reason + ")";
        return std::nullopt;
    }

    /// Drops peers and fetches the slot's block again until its outcome is no peer's fault, or no
    /// peer is left: then the run fails. A block whose spent coins failed a rule is not refused as
    /// invalid on their word: the coins are unproven until BIP 457's aggregate balances, so every
    /// peer that served it may have lied (Unproven says so).
    std::optional<Error> Settle(Slot& slot)
    {
        FetchedBlock& f = slot.f;
        BlockOutcome& out = slot.out;
        std::vector<std::pair<std::string, std::size_t>> refused; // each rule the coins failed, and whose
        while (auto why = PeerFault(out)) {
            if (out.refused_on_coins) refused.emplace_back(out.partial.failure->reason, f.peer);
            m_fetcher.DropAndRefetch(f.peer, What(f.height, *why), f.height);
            auto again = m_fetcher.Take(f.height);
            if (!again) {
                if (refused.empty() || again.error().code != Errc::NotFound) return again.error();
                return Unproven(f.height, refused);
            }
            f = std::move(*again);
            CheckOne(slot);
        }
        return out.error;
    }

    /// The failure of a run whose last peers' spent coins failed block h's rules (`refused`: each
    /// rule, Core's reason, with the peer): a fault of the peers or of the block, which only other
    /// peers' coins can tell apart.
    Error Unproven(uint32_t h, const std::vector<std::pair<std::string, std::size_t>>& refused) const
    {
        std::vector<std::pair<std::string, std::string>> by_rule; // a rule, and the peers whose coins failed it
        for (const auto& rp : refused) {
            const std::string& reason = rp.first;
            auto it = std::find_if(by_rule.begin(), by_rule.end(), [&](const auto& r) { return r.first == reason; });
            if (it == by_rule.end()) it = by_rule.insert(by_rule.end(), {reason, ""});
            it->second += (it->second.empty() ? "" : ", ") + m_out.peers[rp.second].address;
        }
        std::string failed;
        for (const auto& [reason, peers] : by_rule) failed += (failed.empty() ? "from " : " and from ") + peers + " fail " + reason;
        return Error{Errc::NotFound, What(h, "its spent coins " + failed +
                                                 ", and no peer is left to ask for other coins: either every peer that served the "
                                                 "block lied or the block is invalid (spent coins are unproven until BIP 457's "
                                                 "aggregate balances); no chainstate was written: connect other peers that serve "
                                                 "spent coins (BIP 434 feature blockspentcoinsv1) and run again")};
    }

    /// The spent coins did not balance: for each peer that served some, its blocks' coins asked
    /// for again from the others; where the aggregate then balances, that peer lied: it is dropped
    /// and the others' coins kept. One lying peer is found this way; when none is, the aggregate
    /// stays unbalanced and the verdict refuses the run.
    std::optional<Error> FindLiar(Partial& partial, uint32_t n)
    {
        for (std::size_t p = 0; p < m_out.peers.size(); ++p) {
            std::vector<uint32_t> served;
            for (uint32_t h = 1; h <= n; ++h) {
                if (m_peer_of[h] == p) served.push_back(h);
            }
            if (served.empty() || !m_fetcher.OthersAlive(p)) continue;
            Aggregate agg_in = partial.agg_in;
            std::vector<std::pair<uint32_t, Aggregate>> again;
            bool complete = true;
            Refetches refetches(*this, served, p, false);
            for (uint32_t h : served) {
                auto slot = refetches.Next();
                if (!slot) return slot.error();
                const BlockOutcome& out = slot->out;
                if (PeerFault(out) || out.error || out.partial.failure) {
                    complete = false; // the other peer's copy is no better: no verdict on p from it
                    break;
                }
                agg_in -= m_agg_in[h];
                agg_in += out.partial.agg_in;
                again.emplace_back(h, out.partial.agg_in);
                m_peer_of[h] = slot->f.peer; // kept only if p is found to have lied
            }
            if (!complete || agg_in != partial.agg_out) {
                for (uint32_t h : served) m_peer_of[h] = p;
                continue;
            }
            const std::string why = "its spent coins for " + std::to_string(served.size()) +
                                    " blocks did not balance BIP 457's aggregate; the other peers' coins for them do";
            m_fetcher.Drop(p, why);
            for (const auto& [h, agg] : again) m_agg_in[h] = agg;
            partial.agg_in = agg_in;
            return ReplaceUndo(again, NO_PEER);
        }
        return std::nullopt;
    }

    /// More than one liar (FindLiar weighs each peer against all the others): each live peer x in
    /// turn serves the coins of every height the others served; where x's coins alone balance the
    /// aggregate they are proven, and each peer whose coins differ from x's at a height is dropped.
    /// A download of the range's spent coins for each peer tried, paid only after a lie.
    std::optional<Error> ProveByOnePeer(Partial& partial, uint32_t n)
    {
        for (std::size_t x = 0; x < m_out.peers.size(); ++x) {
            if (!m_fetcher.Alive(x)) continue;
            Aggregate agg_in;
            std::vector<std::pair<uint32_t, Aggregate>> differ; // the heights whose coins from x differ
            std::vector<uint32_t> others;
            for (uint32_t h = 1; h <= n; ++h) {
                if (m_peer_of[h] != x) others.push_back(h);
            }
            Refetches refetches(*this, others, x, true);
            bool whole = true;
            for (uint32_t h = 1; h <= n && whole; ++h) {
                if (m_peer_of[h] == x) {
                    agg_in += m_agg_in[h];
                    continue;
                }
                auto slot = refetches.Next();
                if (!slot && slot.error().code != Errc::NotFound) return slot.error();
                const BlockOutcome* out = slot ? &slot->out : nullptr;
                whole = out && slot->f.peer == x && !PeerFault(*out) && !out->error && !out->partial.failure;
                if (!whole) break; // x is gone, or its coins fail a rule: they prove nothing
                agg_in += out->partial.agg_in;
                if (out->partial.agg_in != m_agg_in[h]) differ.emplace_back(h, out->partial.agg_in);
            }
            if (!whole || agg_in != partial.agg_out) continue;
            for (const auto& [h, agg] : differ) {
                if (m_fetcher.Alive(m_peer_of[h])) {
                    m_fetcher.Drop(m_peer_of[h], What(h, "its spent coins differ from those of a peer whose coins balance BIP 457's aggregate"));
                }
                m_agg_in[h] = agg;
                m_peer_of[h] = x;
            }
            partial.agg_in = agg_in;
            return ReplaceUndo(differ, x);
        }
        return std::nullopt;
    }

    /// Heights fetched again, in their order, and checked: from any peer but `peer`, or (`only`)
    /// from `peer` alone. REFETCH_AHEAD of them are asked for ahead of the one checked, so that the
    /// round trips overlap while a few blocks wait. A walk that stops early takes and drops what it
    /// still asked for: a later walk must not take those blocks as its own.
    class Refetches {
    public:
        static constexpr std::size_t REFETCH_AHEAD = 8;

        Refetches(PeerCheck& check, std::vector<uint32_t> heights, std::size_t peer, bool only)
            : m_check(check), m_heights(std::move(heights)), m_peer(peer), m_only(only)
        {}
        Refetches(const Refetches&) = delete;
        Refetches& operator=(const Refetches&) = delete;
        ~Refetches()
        {
            for (std::size_t i = m_taken; i < m_asked; ++i) (void)m_check.m_fetcher.Take(m_heights[i]);
        }

        /// The next height's block and coins, checked (assert: one is left).
        Result<Slot> Next()
        {
            assert(m_taken < m_heights.size());
            while (m_asked < m_heights.size() && m_asked - m_taken < REFETCH_AHEAD) {
                const uint32_t h = m_heights[m_asked++];
                if (m_only) {
                    m_check.m_fetcher.AskPeer(h, m_peer);
                } else {
                    m_check.m_fetcher.AskOthers(h, m_peer);
                }
            }
            return m_check.Checked(m_heights[m_taken++]);
        }

    private:
        PeerCheck& m_check;
        const std::vector<uint32_t> m_heights;
        const std::size_t m_peer;
        const bool m_only;
        std::size_t m_asked{0}, m_taken{0};
    };

    /// Height h, asked for again, taken and checked.
    Result<Slot> Checked(uint32_t h)
    {
        auto f = m_fetcher.Take(h);
        if (!f) return f.error();
        Slot slot;
        slot.f = std::move(*f);
        CheckOne(slot);
        m_out.spent_bytes += slot.f.spent_bytes;
        return slot;
    }

    /// With a data directory, the liars' undo data in it replaced by the coins that balanced, fetched
    /// once more from any peer (NO_PEER) or from `from` (holding every replaced block's undo data
    /// until the liar is known would take memory in proportion to what it served). Coins that
    /// differ from the ones the balance was found with end the run: the peers changed their answers.
    std::optional<Error> ReplaceUndo(const std::vector<std::pair<uint32_t, Aggregate>>& replaced, std::size_t from)
    {
        if (!m_datadir) return std::nullopt;
        std::vector<uint32_t> heights;
        for (const auto& r : replaced) heights.push_back(r.first);
        Refetches refetches(*this, std::move(heights), from, from != NO_PEER);
        for (const auto& [h, agg] : replaced) {
            auto slot = refetches.Next();
            if (!slot) return slot.error();
            if (PeerFault(slot->out) || slot->out.error || slot->out.partial.failure || slot->out.partial.agg_in != agg) {
                return Error{Errc::NotFound, What(h, "the peers served other spent coins the second time they were asked")};
            }
            try {
                m_datadir->ReplaceUndo(m_headers.Hash(int(h)), slot->undo_record);
            } catch (const DatadirWriteError& e) {
                return Error{Errc::Io, std::string("writing the data directory: ") + e.what()};
            }
        }
        return std::nullopt;
    }

    BlockFetcher& m_fetcher;
    const HeaderChain& m_headers;
    const ChainType m_chain;
    const Hints& m_hints;
    const CoinsBlockRules& m_rules;
    const CheckRangeOptions& m_options;
    const AggregateMode m_mode;
    const uint32_t m_recent_blocks;
    const std::size_t m_batch_bytes;
    DatadirWriter* const m_datadir;
    RecentCoins m_recent;
    PeersRunResult& m_out;
    uint64_t m_block_bytes{0};
    std::vector<Aggregate> m_agg_in;     ///< each height's spent side, as accepted
    std::vector<std::size_t> m_peer_of;  ///< the peer whose coins each height was checked with
    std::vector<uint64_t> m_through;
    std::vector<uint32_t> m_through_height;
};

} // namespace

Result<PeersRunResult> SwiftSyncFromPeers(const SwiftSyncOptions& options, const PeersRun& peers)
{
    if (auto bad = CheckRunSettings(options)) return *bad;
    SwiftSyncOptions o = options;
    o.threads = ResolveThreads(o.threads);
    o.mode = peers.mode;
    const bool coins = peers.mode == AggregateMode::Coins;
    if (!coins && peers.datadir) {
        return Error{Errc::InvalidValue, "a data directory's undo data comes from the peers' spent coins: write one in coins mode"};
    }
    if (peers.connect.empty()) return Error{Errc::InvalidValue, "give at least one peer to sync from"};
    const auto t0 = std::chrono::steady_clock::now();
    auto hints = Hints::Read(o.hints);
    if (!hints) return Error{hints.error().code, o.hints.string() + ": " + hints.error().message + " (a hintsfile comes from `ibdkit hints`)"};
    const ChainParams& params = GetChainParams(peers.chain);
    PeersRunResult out;
    auto connected = ConnectPeers(peers.connect, params, o.policy, peers.fetch.timeout, peers.fetch.interrupt, out.unreachable);
    if (!connected) return connected.error();
    if (connected->empty()) return Error{Errc::NotFound, NoPeerReached(out.unreachable, peers.chain)};
    auto headers = DownloadHeaders(*connected, params, o.MinimumChainWork(params.consensus.minimum_chain_work), peers.fetch.timeout, out.notes);
    if (!headers) return headers.error();
    out.headers.emplace(std::move(*headers));
    const uint32_t n = hints->height();
    if (n < 1 || int64_t(n) > int64_t(out.headers->Height())) {
        std::string why; // what the peers' headers said (a peer dropped for them, a branch left)
        for (const std::string& note : out.notes) why += (why.empty() ? " (" : "; ") + note;
        return Error{Errc::InvalidValue, "the hintsfile is for height " + std::to_string(n) + ", the peers' headers reach height " +
                                             std::to_string(out.headers->Height()) + (why.empty() ? "" : why + ")")};
    }
    // Only peers that serve spent coins take part; the others may still serve the classic rest.
    std::vector<ConnectedPeer> serving;
    for (ConnectedPeer& p : *connected) {
        if (!coins || p.peer->info().HasFeature(FEATURE_BLOCK_SPENT_COINS_V1)) {
            PeerSummary r;
            r.address = p.address;
            r.user_agent = SanitizePeerText(p.peer->info().version.user_agent);
            out.peers.push_back(std::move(r));
            serving.push_back(std::move(p));
        } else {
            out.unreachable.push_back(p.address + ": does not serve spent coins (no BIP 434 feature blockspentcoinsv1)");
        }
    }
    if (serving.empty()) { // coins mode: outpoints mode takes every peer connected
        std::string why;
        for (const std::string& u : out.unreachable) why += (why.empty() ? "" : "; ") + u;
        return Error{Errc::NotFound, "no peer serves spent coins (BIP 455) for SwiftSync (" + why +
                                         "): connect one that does (`ibdkit serve` over a datadir), or check blocks alone from any peer "
                                         "(--swiftsync-mode outpoints, which checks much less), or drop --swiftsync for the classic sync"};
    }
    // The blocks ahead, a batch under check and the sort share --dbcache (CacheBudget).
    const SwiftSyncShares shares = CacheBudget::FromMiB(o.dbcache_mib).SwiftSyncFromPeers();
    FetchOptions fetch = peers.fetch;
    fetch.max_ahead_bytes = shares.ahead;
    fetch.spent_coins = coins;
    if (!coins) fetch.recent_blocks = 0;
    BlockFetcher fetcher(std::move(serving), *out.headers, 1, n, fetch);
    std::optional<SaltedHasher> hasher;
    std::optional<CoinsBlockRules> rules;
    std::optional<PeerCheck> check;
    ChainRun run;
    run.chain = peers.chain;
    run.headers = &*out.headers;
    run.hints = &*hints;
    run.sort_bytes = shares.sort;
    run.interrupt = peers.fetch.interrupt;
    run.check = [&](const Salt& salt, const CheckRangeOptions& ro, const CoinsModeOptions& co) -> Result<Partial> {
        rules.emplace(*out.headers, peers.chain, *hints, hasher.emplace(salt), bool(ro.on_unspent), co);
        check.emplace(fetcher, *out.headers, peers.chain, *hints, *rules, ro, peers.mode, fetch.recent_blocks, shares.batch, peers.datadir,
                      out);
        return check->Run(n);
    };
    if (peers.datadir) {
        run.before_write = [&]() -> std::optional<Error> {
            try {
                peers.datadir->Sync();
            } catch (const DatadirWriteError& e) {
                return Error{Errc::Io, std::string("writing the data directory: ") + e.what()};
            }
            return std::nullopt;
        };
    }
    if (peers.before_keep) run.before_keep = [&] { return peers.before_keep(*out.headers); };
    run.bytes_through = [&](uint32_t h) { return check ? check->BytesThrough(h) : 0; };
    run.peers_alive = [&] {
        std::size_t alive = 0;
        for (std::size_t p = 0; p < out.peers.size(); ++p) alive += fetcher.Alive(p) ? 1 : 0;
        return alive;
    };
    auto res = CheckAndWrite(o, run);
    if (!res) return res.error();
    out.run = std::move(*res);
    out.run.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    const auto reports = fetcher.Reports();
    for (std::size_t i = 0; i < reports.size() && i < out.peers.size(); ++i) {
        out.peers[i] = reports[i];
        if (!reports[i].dropped.empty()) out.notes.push_back("dropped " + reports[i].address + ": " + reports[i].dropped);
    }
    if (out.run.verdict.kind == VerdictKind::AggregatesDiffer) {
        std::string served;
        for (const PeerSummary& r : out.peers) {
            if (r.blocks) served += (served.empty() ? "" : ", ") + r.address;
        }
        out.notes.push_back("the spent coins did not balance: at least one of the peers that served them lied (" + served +
                            "); no chainstate was written");
    }
    return out;
}

} // namespace ibdkit::swiftsync

// SwiftSync's range check in outpoints mode and the verdict over ranges (swiftsync/check_range.h).
#include <ibdkit/swiftsync/check_range.h>

#include <ibdkit/consensus/check.h>
#include <ibdkit/consensus/validation.h>

#include "swiftsync/block_walk.h"
#include "swiftsync/range_internal.h"

#include <algorithm>
#include <limits>

namespace ibdkit::swiftsync {

namespace {

uint64_t SaturatingAdd(uint64_t a, uint64_t b) noexcept
{
    return a > std::numeric_limits<uint64_t>::max() - b ? std::numeric_limits<uint64_t>::max() : a + b;
}

void Merge(Partial& into, Partial&& from)
{
    into.agg_in += from.agg_in;
    into.agg_out += from.agg_out;
    into.counts += from.counts;
    into.supply = SaturatingAdd(into.supply, from.supply);
    if (into.unspent.empty()) {
        into.unspent = std::move(from.unspent);
    } else {
        into.unspent.insert(into.unspent.end(), std::make_move_iterator(from.unspent.begin()),
                            std::make_move_iterator(from.unspent.end()));
    }
    if (!into.failure) into.failure = std::move(from.failure);
    into.script_checked_inputs += from.script_checked_inputs;
    into.bip30_coinbases.insert(into.bip30_coinbases.end(), from.bip30_coinbases.begin(), from.bip30_coinbases.end());
}

} // namespace

RangeCounts& RangeCounts::operator+=(const RangeCounts& o) noexcept
{
    blocks += o.blocks;
    transactions += o.transactions;
    inputs += o.inputs;
    outputs += o.outputs;
    unspent += o.unspent;
    unspendable += o.unspendable;
    return *this;
}

void AccumulateBlock(const Block& block, uint32_t height, const BlockHash& hash, ChainType chain,
                     std::span<const uint32_t> hints, const SaltedHasher& hasher, bool collect_unspent, Partial& partial,
                     const BlockUndo* spent)
{
    const AggregateMode mode = spent ? AggregateMode::Coins : AggregateMode::OutPoints;
    // Hints are strictly increasing (the decoder makes sure): the last one is the largest.
    const bool bip30 = IsBip30Unspendable(chain, int(height), hash);
    uint64_t spendable = 0, all_outputs = 0;
    for (const auto& tx : block.vtx) all_outputs += tx.vout().size();
    ForEachSpendableOutput(block, bip30, [&](std::size_t, uint32_t, uint32_t) { ++spendable; });
    if (!hints.empty() && hints.back() >= spendable) {
        partial.failure = BlockFailure{height, hash, std::string(HINT_OUT_OF_RANGE_REASON)};
        return;
    }
    Partial p;
    p.counts.blocks = 1;
    p.counts.transactions = block.vtx.size();
    p.counts.outputs = spendable;
    p.counts.unspendable = all_outputs - spendable;
    p.counts.unspent = hints.size();
    std::size_t next = 0;
    ForEachSpendableOutput(block, bip30, [&](std::size_t t, uint32_t vout, uint32_t index) {
        const OutPoint op{block.vtx[t].GetHash(), vout};
        if (next < hints.size() && hints[next] == index) {
            ++next;
            const TxOut& out = block.vtx[t].vout()[vout];
            p.supply = SaturatingAdd(p.supply, uint64_t(std::max<Amount>(out.value, 0)));
            if (collect_unspent) p.unspent.emplace_back(op, Coin(out, height, t == 0));
        } else if (mode == AggregateMode::Coins) {
            p.agg_out.Add(hasher.HashCoin(op, Coin(block.vtx[t].vout()[vout], height, t == 0)));
        } else {
            p.agg_out.Add(hasher.HashOutPoint(op));
        }
    });
    for (std::size_t t = 1; t < block.vtx.size(); ++t) {
        const auto& vin = block.vtx[t].vin();
        for (std::size_t i = 0; i < vin.size(); ++i) {
            p.agg_in.Add(spent ? hasher.HashCoin(vin[i].prevout, spent->vtxundo[t - 1].prevout[i]) : hasher.HashOutPoint(vin[i].prevout));
            ++p.counts.inputs;
        }
    }
    Merge(partial, std::move(p));
}

Result<Partial> CheckRange(const LocatedChain& blocks, const Hints& hints, const Salt& salt, uint32_t from, uint32_t to,
                           const CheckRangeOptions& options)
{
    if (from < 1 || from > to || to > hints.height()) {
        return Error{Errc::InvalidValue, "range " + std::to_string(from) + ".." + std::to_string(to) +
                                             " is not within the hintsfile's 1.." + std::to_string(hints.height())};
    }
    const SaltedHasher hasher(salt);
    const ConsensusParams& params = GetChainParams(blocks.chain).consensus;
    Partial partial;
    partial.from = from;
    partial.to = to;
    auto walked = WalkBlocks<Partial>(
        blocks, from, to, options.threads, options.on_progress,
        [&](const Block& block, uint32_t h, const BlockHash& hash) {
            Partial p;
            BlockValidationState state;
            if (!CheckBlockRules(block, state, params)) {
                p.failure = BlockFailure{h, hash, state.GetRejectReason()};
                return p;
            }
            const auto indices = hints.Indices(h);
            AccumulateBlock(block, h, hash, blocks.chain, indices, hasher, options.collect_unspent || bool(options.on_unspent), p);
            return p;
        },
        [&](uint32_t, Partial& p) { return MergeBlock(partial, p, options); }, {}, options.policy);
    if (!walked) return walked.error();
    return partial;
}

std::optional<Error> MergeBlock(Partial& partial, Partial& block, const CheckRangeOptions& options)
{
    if (options.interrupt && options.interrupt->load(std::memory_order_relaxed)) return Error{Errc::Io, "interrupted"};
    const bool failed = block.failure.has_value();
    if (options.on_unspent && !block.unspent.empty()) {
        if (auto e = options.on_unspent(block.unspent)) return e;
        block.unspent.clear();
    }
    Merge(partial, std::move(block));
    if (failed) return Error{Errc::Ok, {}}; // stops the walk: the range is refused
    return std::nullopt;
}

Verdict Combine(std::span<const Partial> partials, uint32_t height, ChainType chain)
{
    Verdict v;
    const ConsensusParams& params = GetChainParams(chain).consensus;
    for (uint32_t h = 1; h <= height; ++h) v.supply_bound = SaturatingAdd(v.supply_bound, uint64_t(GetBlockSubsidy(int(h), params)));
    std::vector<const Partial*> sorted;
    for (const Partial& p : partials) sorted.push_back(&p);
    std::sort(sorted.begin(), sorted.end(), [](const Partial* a, const Partial* b) { return a->from < b->from; });
    const BlockFailure* failure = nullptr;
    uint32_t next = 1;
    bool covered = true;
    for (const Partial* p : sorted) {
        covered = covered && p->from == next && p->to >= p->from;
        next = p->to + 1;
        v.agg_in += p->agg_in;
        v.agg_out += p->agg_out;
        v.counts += p->counts;
        v.supply = SaturatingAdd(v.supply, p->supply);
        v.script_checked_inputs += p->script_checked_inputs;
        if (p->failure && (!failure || p->failure->height < failure->height)) failure = &*p->failure;
    }
    // A coinbase repeated where BIP30 applies: Core refuses it only if the first still has an
    // unspent output, which the sums cannot tell.
    std::vector<std::pair<Txid, uint32_t>> coinbases;
    for (const Partial* p : sorted) coinbases.insert(coinbases.end(), p->bip30_coinbases.begin(), p->bip30_coinbases.end());
    std::sort(coinbases.begin(), coinbases.end());
    BlockFailure repeat;
    for (std::size_t i = 1; i < coinbases.size(); ++i) {
        if (coinbases[i].first == coinbases[i - 1].first && (repeat.height == 0 || coinbases[i].second < repeat.height)) {
            repeat.height = coinbases[i].second;
            repeat.reason = "swiftsync-bip30-undecided (coinbase " + coinbases[i].first.ToHex() + " repeats the one at height " +
                            std::to_string(coinbases[i - 1].second) + "; the classic replay decides whether that one was spent)";
        }
    }
    if (repeat.height != 0 && (!failure || repeat.height < failure->height)) failure = &repeat;
    covered = covered && next == height + 1;
    const bool one_mode = std::all_of(sorted.begin(), sorted.end(), [&](const Partial* p) { return p->mode == sorted.front()->mode; });
    if (!one_mode) {
        v.kind = VerdictKind::MixedModes;
        v.reason = "the ranges were checked in different modes (coins and outpoints): check every range in one mode";
    } else if (failure) {
        v.kind = failure == &repeat ? VerdictKind::Bip30Undecided
                 : failure->reason == HINT_OUT_OF_RANGE_REASON ? VerdictKind::HintsMismatch
                                                               : VerdictKind::BlockRefused;
        v.reason = (failure->hash.IsNull() ? "block" : "block " + failure->hash.ToHex()) + " at height " +
                   std::to_string(failure->height) + ": " + failure->reason;
        if (v.kind == VerdictKind::HintsMismatch) {
            v.reason += " (the hints are for another chain: make them with `ibdkit hints` on a node of this chain)";
        }
    } else if (!covered) {
        v.kind = VerdictKind::NotCovered;
        v.reason = "the ranges do not cover blocks 1.." + std::to_string(height) + " exactly once";
    } else if (v.agg_in != v.agg_out) {
        v.kind = VerdictKind::AggregatesDiffer;
        v.reason = "the aggregates differ: the inputs are not the outputs less the hinted-unspent ones";
    } else if (v.supply > v.supply_bound) {
        v.kind = VerdictKind::SupplyExceeded;
        v.reason = "the unspent outputs hold more than the subsidies of blocks 1.." + std::to_string(height);
    }
    v.ok = v.reason.empty();
    return v;
}

} // namespace ibdkit::swiftsync

#include "connect/connect.h"

#include "coins/coins_db_internal.h"
#include "connect/rules.h"

#include <ibdkit/consensus/check.h>
#include <ibdkit/consensus/tx_verify.h>
#include <ibdkit/error.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cassert>
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

namespace ibdkit {

using connect_rules::SpentInput;

struct ConnectScratch::Impl {
    /// Every input of the block, never shrunk, so that each coin keeps its script's storage for
    /// the next block's copy.
    std::vector<SpentInput> inputs;
    /// Per shard, the outputs whose BIP30 lookup on disk waits for a failure (Bip30::OnFailure).
    std::array<std::vector<OutPoint>, CoinsCache::SHARDS> not_in_cache;
    /// The plan of a block ConnectBlock was given none for.
    ConnectPlan plan;
    /// Per shard, whether the cache's side ran its operations for the block (a BIP30 violation
    /// leaves a shard alone): what a failed block puts back (RevertShard).
    std::array<bool, CoinsCache::SHARDS> applied{};
};

ConnectScratch::ConnectScratch() : m_impl(std::make_unique<Impl>()) {}
ConnectScratch::~ConnectScratch() = default;

namespace {

// Core's BIP34_IMPLIES_BIP30_LIMIT: from this height BIP30 is checked again (BIP34 no longer
// implies unique coinbases there).
constexpr int BIP34_IMPLIES_BIP30_LIMIT = 1'983'702;
// How ConnectBlock checks BIP30 (no unspent coin may be overwritten) for a block.
enum class Bip30 {
    Skip,      ///< not enforced here (Core's BIP34 exemption, or one of its two historical blocks)
    Check,     ///< every output looked up before the block (Core's way)
    OnFailure, ///< looked up in the cache before the block; on disk only if the block fails
};

// Inputs plus transactions below which ConnectBlock does not spread a block's work over threads.
constexpr std::size_t MIN_SPREAD_WORK = 64;


// Core's AddCoins as RollforwardBlock uses it: an existing coin may be overwritten.
void AddCoins(CoinsCache& view, const Transaction& tx, int height)
{
    const bool coinbase = tx.IsCoinBase();
    const Txid& txid = tx.GetHash();
    for (uint32_t i = 0; i < tx.vout().size(); ++i) {
        const OutPoint op{txid, i};
        view.AddCoin(op, Coin(tx.vout()[i], uint32_t(height), coinbase), /*possible_overwrite=*/view.HaveCoin(op));
    }
}

using ShardOp = ConnectPlan::Op;

// The cache's side of connecting a block for the outpoints of one shard (`ops`, its part of the
// plan): each input's coin is looked up and, if unspent, spent and moved to `inputs` with the
// input's sigop cost (counted here, while the coin's script is in the CPU's cache); each output
// is added. In block order, so every outpoint sees the operations a sequential ConnectBlock would
// apply to it, in the same order, whichever thread runs which shard. Nothing is checked here: the
// caller checks afterwards, in Core's order, from `inputs`, and takes the changes back if the
// block fails (RevertShard). An output that would overwrite an unspent coin is not added; the lowest such transaction
// index goes to `first_conflict` (Core asserts there: it cannot happen to a transaction whose
// inputs exist).
//
// With Bip30::Check, first Core's BIP30 check over the shard's outputs, against the cache as it
// stands before the block (nothing of the block has touched this shard yet): an existing unspent
// coin sets `bip30_violation` and the shard is left alone. Bip30::OnFailure does the same from the
// cache's entries alone, and puts the outputs the cache holds no entry for in `not_in_cache`
// (cleared first), for the caller to look up on disk should the block fail.
//
// Returns whether it applied the shard's operations (false: a BIP30 violation left it alone).
bool ApplyShard(const Block& block, int height, CoinsCache& view, std::span<SpentInput> inputs,
                std::span<const std::size_t> first_input, std::span<const ShardOp> ops, Bip30 bip30,
                std::span<const InputSigOps> input_sigops, SigOpFlags sigop_flags, std::vector<OutPoint>& not_in_cache,
                std::atomic<bool>& bip30_violation, std::atomic<std::size_t>& first_conflict)
{
    // Memory hints first: the slots of every outpoint the shard will look up (the BIP30 check's
    // too), then the nodes of the coins the inputs spend, so that their cache misses overlap (a
    // lookup that follows one waits for at most one of them).
    for (const ShardOp& op : ops) {
        const Transaction& tx = block.vtx[op.tx];
        if (op.input != ShardOp::OUTPUTS) {
            view.PrefetchSlot(tx.vin()[op.input].prevout);
        } else {
            for (uint32_t o = 0; o < tx.vout().size(); ++o) view.PrefetchSlot(OutPoint{tx.GetHash(), o});
        }
    }
    not_in_cache.clear();
    if (bip30 != Bip30::Skip) {
        for (const ShardOp& op : ops) {
            if (op.input != ShardOp::OUTPUTS) continue;
            const Transaction& tx = block.vtx[op.tx];
            for (uint32_t o = 0; o < tx.vout().size(); ++o) {
                const OutPoint out{tx.GetHash(), o};
                bool unspent;
                if (bip30 == Bip30::Check) {
                    unspent = view.HaveCoin(out);
                } else if (view.HasEntry(out)) {
                    unspent = view.HaveCoinInCache(out);
                } else {
                    not_in_cache.push_back(out);
                    unspent = false;
                }
                if (unspent) {
                    bip30_violation.store(true, std::memory_order_relaxed);
                    return false;
                }
            }
        }
    }
    for (const ShardOp& op : ops) {
        if (op.input != ShardOp::OUTPUTS) view.PrefetchNode(block.vtx[op.tx].vin()[op.input].prevout);
    }
    for (const ShardOp& op : ops) {
        const Transaction& tx = block.vtx[op.tx];
        if (op.input != ShardOp::OUTPUTS) {
            const std::size_t k = first_input[op.tx] + op.input;
            SpentInput& in = inputs[k];
            in.found = view.SpendCoin(tx.vin()[op.input].prevout, &in.coin);
            in.sigop_cost = 0;
            if (in.found) {
                in.sigop_cost = InputSigOpCost(input_sigops[k], in.coin.out.script_pubkey.span(), sigop_flags);
            }
            continue;
        }
        const bool coinbase = tx.IsCoinBase();
        for (uint32_t o = 0; o < tx.vout().size(); ++o) {
            if (!view.TryAddCoin(OutPoint{tx.GetHash(), o}, Coin(tx.vout()[o], uint32_t(height), coinbase),
                                 /*possible_overwrite=*/coinbase)) {
                const std::size_t t = op.tx;
                std::size_t cur = first_conflict.load(std::memory_order_relaxed);
                while (t < cur && !first_conflict.compare_exchange_weak(cur, t, std::memory_order_relaxed)) {
                }
            }
        }
    }
    return true;
}

// Takes back what ApplyShard did for a block that then failed, so that the cache is what it was
// before the block (as Core drops the view a failed ConnectBlock worked on, and flushes what came
// before): the shard's operations undone in reverse order, each outpoint thereby going back
// through the states it went through. An output is spent again where the cache holds the coin
// this block would have added (at this height: a coin left in place by a refused add is older,
// or the same transaction's earlier copy in this block, undone in its turn); each
// coin an input spent is added back from where the checks left it, the undo data for the
// transactions whose coins they kept (the first `kept` after the coinbase), the input otherwise.
// Not undone: a coinbase output that overwrote an unspent coin, which only Core's two BIP30
// exception blocks do (they connect).
void RevertShard(const Block& block, int height, CoinsCache& view, std::span<SpentInput> inputs,
                 std::span<const std::size_t> first_input, std::span<const ShardOp> ops, BlockUndo* undo)
{
    const std::size_t kept = undo ? undo->vtxundo.size() : 0;
    for (auto op = ops.rbegin(); op != ops.rend(); ++op) {
        const Transaction& tx = block.vtx[op->tx];
        if (op->input != ShardOp::OUTPUTS) {
            SpentInput& in = inputs[first_input[op->tx] + op->input];
            if (!in.found) continue;
            Coin& coin = op->tx <= kept ? undo->vtxundo[op->tx - 1].prevout[op->input] : in.coin;
            view.AddCoin(tx.vin()[op->input].prevout, std::move(coin), /*possible_overwrite=*/false);
            in.found = false;
            continue;
        }
        for (uint32_t o = uint32_t(tx.vout().size()); o-- > 0;) {
            const OutPoint out{tx.GetHash(), o};
            if (!view.HaveCoinInCache(out)) continue;
            if (view.AccessCoin(out) == Coin(tx.vout()[o], uint32_t(height), tx.IsCoinBase())) view.SpendCoin(out);
        }
    }
}

} // namespace

void ConnectPlan::Assign(const Block& block)
{
    // Two passes: each shard's count, then every step into its shard's place (a counting sort, so
    // each shard's steps stay in block order).
    std::array<std::size_t, CoinsCache::SHARDS> count{};
    m_vtx = block.vtx.data();
    m_first_input.resize(block.vtx.size() + 1);
    std::size_t inputs = 0;
    for (std::size_t t = 0; t < block.vtx.size(); ++t) {
        const Transaction& tx = block.vtx[t];
        m_first_input[t] = inputs;
        if (!tx.IsCoinBase()) {
            for (const TxIn& in : tx.vin()) ++count[CoinsCache::ShardOf(in.prevout)];
            inputs += tx.vin().size();
        }
        if (!tx.vout().empty()) ++count[CoinsCache::ShardOf(OutPoint{tx.GetHash(), 0})];
    }
    m_first_input.back() = inputs;
    std::array<std::size_t, CoinsCache::SHARDS> next{};
    m_shard_begin[0] = 0;
    for (std::size_t s = 0; s < CoinsCache::SHARDS; ++s) {
        next[s] = m_shard_begin[s];
        m_shard_begin[s + 1] = m_shard_begin[s] + count[s];
    }
    m_ops.resize(m_shard_begin[CoinsCache::SHARDS]);
    for (std::size_t t = 0; t < block.vtx.size(); ++t) {
        const Transaction& tx = block.vtx[t];
        if (!tx.IsCoinBase()) {
            for (std::size_t i = 0; i < tx.vin().size(); ++i) m_ops[next[CoinsCache::ShardOf(tx.vin()[i].prevout)]++] = {uint32_t(t), uint32_t(i)};
        }
        if (!tx.vout().empty()) m_ops[next[CoinsCache::ShardOf(OutPoint{tx.GetHash(), 0})]++] = {uint32_t(t), Op::OUTPUTS};
    }
}

bool Bip30Applies(const ConnectContext& ctx, const BlockHash& hash, const ConsensusParams& params) noexcept
{
    bool enforce_bip30 = !IsBIP30Repeat(ctx.height, hash);
    // Once BIP34 is active on this chain (its block at bip34_height is the one in the params), new
    // duplicate coinbases cannot be created, so BIP30 need not be checked, until the height where
    // BIP34 heights wrap into old coinbases' scriptSigs.
    if (ctx.bip34_ancestor && *ctx.bip34_ancestor == params.bip34_hash) enforce_bip30 = false;
    return enforce_bip30 || ctx.height >= BIP34_IMPLIES_BIP30_LIMIT;
}

bool IsBIP30Repeat(int height, const BlockHash& hash) noexcept
{
    static const BlockHash h91842 = *BlockHash::FromHex("00000000000a4d0a398161ffc163c503763b1f4360639393e0e4c8e300e0caec");
    static const BlockHash h91880 = *BlockHash::FromHex("00000000000743f190a18c5577a3c2d2a1f610ae9601ac046a38084ccb7cd721");
    return (height == 91842 && hash == h91842) || (height == 91880 && hash == h91880);
}

namespace {

/// How BIP30 is enforced for block `hash` at ctx.height.
Bip30 Bip30For(const ConnectContext& ctx, const BlockHash& hash, const ConsensusParams& params)
{
    if (!Bip30Applies(ctx, hash, params)) return Bip30::Skip;
    // Where BIP34 holds from height 1 (regtest, signet, testnet4), no block that connects can
    // break BIP30, so its lookups on disk (one LevelDB read per output) wait for a failure:
    // - every coinbase in the UTXO set starts its scriptSig with its own height, pushed in a
    //   self-delimiting encoding, so no two are the same transaction (the genesis coinbase,
    //   whose scriptSig is not of that form, never enters the set);
    // - then no transaction repeats an earlier txid: the first to do so would not be a
    //   coinbase, so it would spend the very inputs of the transaction it repeats, which that
    //   one spent, and which only an earlier repeat could have created again.
    // So a block with an output whose coin exists fails later in any case. Its reason is still
    // bad-txns-BIP30: the cache's entries before the block are checked at once, and on failure
    // the outputs it held no entry for are read from disk (which no block changes).
    return params.bip34_height <= 1 ? Bip30::OnFailure : Bip30::Check;
}

/// Where BIP30's reads on disk waited for a failure (Bip30::OnFailure): whether an output of the
/// failed block that the cache held no entry for has a coin on disk.
bool OverwritesCoinOnDisk(CoinsCache& view, std::span<const std::vector<OutPoint>> not_in_cache)
{
    for (const auto& outs : not_in_cache) {
        for (const OutPoint& out : outs) {
            auto r = ReadCoin(view.db(), out);
            if (!r) throw DecodeError(r.error().code, r.error().message.c_str());
            if (*r) return true;
        }
    }
    return false;
}

} // namespace

bool ConnectBlock(const CheckedBlock& checked, const ConnectContext& ctx, CoinsCache& view, const ConsensusParams& params,
                  BlockValidationState& state, const ConnectExtras& extras)
{
    BlockUndo* undo = extras.undo;
    const TaskRunner* runner = extras.runner;
    const ConnectPlan* plan = extras.plan;
    const Block& block = checked.block();
    const int height = ctx.height;
    IBDKIT_EXPECTS(ctx.prev.prev_height() == height - 1, "ConnectContext: prev ends at the previous block");

    // --- ContextualCheckBlock, in Core's order ---
    const bool csv_active = height >= params.csv_height;
    if (!connect_rules::CheckContextual(checked, height, csv_active ? GetMedianTimePast(ctx.prev) : block.GetBlockTime(), params, state)) return false;

    // --- ConnectBlock ---
    const BlockHash hash = block.GetHash();
    const Bip30 bip30 = Bip30For(ctx, hash, params); // (done with the cache's side below)
    const SigOpFlags sigop_flags = connect_rules::SigOpFlagsFor(hash, params);
    if (undo) {
        undo->vtxundo.clear();
        undo->vtxundo.reserve(block.vtx.size() - 1);
    }

    // The cache's side first, spread over the runner's threads by shard, and the sigop costs;
    // then the checks, in Core's order, from the coins each input found. A block that fails has
    // its changes taken back (RevertShard): the cache is left as it was before the block.
    std::unique_ptr<ConnectScratch> own_scratch;
    if (!extras.scratch) own_scratch = std::make_unique<ConnectScratch>();
    ConnectScratch::Impl& scratch = (extras.scratch ? *extras.scratch : *own_scratch).impl();
    if (!plan) {
        scratch.plan.Assign(block);
        plan = &scratch.plan;
    }
    IBDKIT_EXPECTS(plan->IsPlanOf(block), "ConnectBlock: the ConnectPlan given was made for this block");
    auto& all_inputs = scratch.inputs;
    const auto first_input = plan->FirstInput();
    const std::size_t n_inputs = plan->Inputs();
    if (all_inputs.size() < n_inputs) all_inputs.resize(n_inputs);
    assert(checked.input_sigops().size() == n_inputs && "CheckBlock read every input after the coinbase");
    // Its scripts are spread whatever the block's size: one input's signature check outweighs a
    // helper's wake-up.
    const TaskRunner* script_runner = runner;
    // A small block is done here: waking a helper would cost more than its work.
    if (n_inputs + block.vtx.size() < MIN_SPREAD_WORK) runner = nullptr;
    std::atomic<bool> bip30_violation{false};
    std::atomic<std::size_t> first_conflict{SIZE_MAX};
    auto& not_in_cache = scratch.not_in_cache;
    scratch.applied.fill(false);
    auto apply = [&](std::size_t s) {
        scratch.applied[s] = ApplyShard(block, height, view, all_inputs, first_input, plan->Shard(s), bip30, checked.input_sigops(),
                                        sigop_flags, not_in_cache[s], bip30_violation, first_conflict);
    };
    // A failed block's changes are taken back, shard by shard (only a failure pays for it).
    auto revert = [&] {
        for (std::size_t s = 0; s < CoinsCache::SHARDS; ++s) {
            if (scratch.applied[s]) RevertShard(block, height, view, all_inputs, first_input, plan->Shard(s), undo);
        }
    };
    if (runner) {
        (*runner)(CoinsCache::SHARDS, apply);
    } else {
        // One shard at a time here too: a shard's memory hints are few enough to still be in the
        // CPU's cache when its lookups reach them (a whole large block's are not).
        for (std::size_t s = 0; s < CoinsCache::SHARDS && !bip30_violation.load(std::memory_order_relaxed); ++s) apply(s);
    }
    if (bip30_violation.load(std::memory_order_relaxed)) {
        revert();
        return state.Invalid(BlockValidationResult::BLOCK_CONSENSUS, "bad-txns-BIP30", "tried to overwrite transaction");
    }

    // The checks, in Core's order, from what the cache's side found; then, where BIP30's lookups on
    // disk waited (Bip30::OnFailure), a failed block is looked for an overwritten coin first, as
    // Core's check before all others would have.
    connect_rules::SpendTotals totals;
    if (!connect_rules::CheckSpendsInOrder(checked, ctx, std::span<SpentInput>(all_inputs).first(n_inputs), first_input, params,
                            first_conflict.load(std::memory_order_relaxed), undo, script_runner, state, totals)) {
        const bool overwrites = bip30 == Bip30::OnFailure && OverwritesCoinOnDisk(view, not_in_cache);
        revert();
        if (overwrites) {
            state = BlockValidationState{};
            return state.Invalid(BlockValidationResult::BLOCK_CONSENSUS, "bad-txns-BIP30", "tried to overwrite transaction");
        }
        return false;
    }
    view.SetBestBlock(hash);
    connect_rules::AddTotals(extras.stats, totals, ctx.check_scripts);
    return true;
}

void RollforwardBlock(const Block& block, int height, CoinsCache& view)
{
    for (const auto& tx : block.vtx) {
        if (!tx.IsCoinBase()) {
            for (const auto& in : tx.vin()) view.SpendCoin(in.prevout);
        }
        AddCoins(view, tx, height);
    }
    view.SetBestBlock(block.GetHash());
}

} // namespace ibdkit

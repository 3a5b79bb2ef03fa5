#include <ibdkit/connect/connect.h>

#include "coins/coins_cache_access.h"

#include <ibdkit/consensus/check.h>
#include <ibdkit/consensus/script_flags.h>
#include <ibdkit/consensus/tx_verify.h>
#include <ibdkit/primitives/consensus_constants.h>
#include <ibdkit/script/interpreter.h>
#include <ibdkit/script/verify.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cassert>
#include <cstdint>
#include <span>
#include <stdexcept>
#include <vector>

namespace ibdkit {

namespace {

// Core's LOCKTIME_THRESHOLD: lock times below are heights, above are UNIX times.
constexpr uint32_t LOCKTIME_THRESHOLD = 500'000'000;
// Core's BIP34_IMPLIES_BIP30_LIMIT: from this height BIP30 is checked again (BIP34 no longer
// implies unique coinbases there).
constexpr int BIP34_IMPLIES_BIP30_LIMIT = 1'983'702;
// How ConnectBlock checks BIP30 (no unspent coin may be overwritten) for a block.
enum class Bip30 {
    Skip,      ///< not enforced here (Core's BIP34 exemption, or one of its two historical blocks)
    Check,     ///< every output looked up before the block (Core's way)
    OnFailure, ///< looked up in the cache before the block; on disk only if the block fails
};
// BIP68: an input whose nSequence has this bit set has no relative lock.
constexpr uint32_t SEQUENCE_LOCKTIME_DISABLE_FLAG = 1u << 31;

// One input of the block being connected: the coin it spends, moved out of the cache, if found,
// and the input's share of its transaction's sigop cost (InputSigOpCost, from the coin's script).
struct SpentInput {
    Coin coin;
    int64_t sigop_cost{0};
    bool found{false};
};

// Inputs plus transactions below which ConnectBlock does not spread a block's work over threads.
constexpr std::size_t MIN_SPREAD_WORK = 64;

// Reused across calls on the connecting thread (no allocation per block or transaction): every
// input of the block (never shrunk, so that each coin keeps its script's storage for the next
// block's copy), and their heights.
thread_local std::vector<SpentInput> t_inputs;
thread_local std::vector<int> t_heights;

// Core's GetBlockScriptFlags as far as sigop counting reads it: P2SH and witness on, except for
// the network's BIP16 exception blocks.
SigOpFlags SigOpFlagsFor(const BlockHash& hash, const ConsensusParams& params) noexcept
{
    const bool exception = std::find(params.bip16_exceptions.begin(), params.bip16_exceptions.end(), hash) !=
                           params.bip16_exceptions.end();
    return exception ? SigOpFlags{false, false} : SigOpFlags{true, true};
}

// Whether any input of a version ≥ 2 transaction has a relative lock (BIP68's disable flag clear):
// only then are the spent coins' heights gathered.
bool HasRelativeLock(const Transaction& tx) noexcept
{
    if (tx.version() < 2) return false; // unsigned comparison, as Core
    for (const auto& in : tx.vin()) {
        if (!(in.sequence & SEQUENCE_LOCKTIME_DISABLE_FLAG)) return true;
    }
    return false;
}

bool IsFinalTx(const Transaction& tx, int height, int64_t cutoff_time) noexcept
{
    if (tx.lock_time() == 0) return true;
    const int64_t lock = tx.lock_time();
    if (lock < (tx.lock_time() < LOCKTIME_THRESHOLD ? int64_t(height) : cutoff_time)) return true;
    for (const auto& in : tx.vin()) {
        if (in.sequence != TxIn::SEQUENCE_FINAL) return false;
    }
    return true;
}

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

// Inputs per script task: a few hundred microseconds of signature checks, so that a block's
// inputs spread over every thread and the last task to finish is short.
constexpr std::size_t SCRIPT_CHUNK = 8;
// Each transaction's precomputed hashes and spent outputs, for the block whose scripts are checked
// (reused across blocks on the connecting thread).
thread_local std::vector<PrecomputedTxData> t_txdata;

// Verifies the scripts of every input of `block` after its coinbase, in chunks of SCRIPT_CHUNK
// inputs over `runner`'s threads (here alone without it), each input against its transaction's
// `txdata` (spent outputs and hashes). Returns the error of the first failing input in block
// order, OK if none fails: a chunk stops at its first failure, and at any input past the first
// failure found so far, so the lowest failing input is always the one its chunk recorded.
ScriptError VerifyBlockScripts(const Block& block, std::span<const std::size_t> first_input, std::span<const PrecomputedTxData> txdata,
                               ScriptFlags flags, const TaskRunner* runner)
{
    const std::size_t n_inputs = first_input.back();
    if (n_inputs == 0) return ScriptError::OK;
    const std::size_t chunks = (n_inputs + SCRIPT_CHUNK - 1) / SCRIPT_CHUNK;
    std::atomic<std::size_t> first_failure{SIZE_MAX};
    std::vector<ScriptError> chunk_error(chunks, ScriptError::OK);
    auto task = [&](std::size_t c) {
        const std::size_t begin = c * SCRIPT_CHUNK, end = std::min(n_inputs, begin + SCRIPT_CHUNK);
        // The transaction holding input `begin`: the last whose first input is at or before it
        // (the coinbase counts no inputs, so it shares its first input with the next).
        std::size_t t = std::size_t(std::upper_bound(first_input.begin(), first_input.end() - 1, begin) - first_input.begin()) - 1;
        for (std::size_t k = begin; k < end; ++k) {
            while (k >= first_input[t + 1]) ++t;
            if (k > first_failure.load(std::memory_order_relaxed)) return;
            const Transaction& tx = block.vtx[t];
            const PrecomputedTxData& data = txdata[t];
            const InputVerdict v = VerifyInput(tx, uint32_t(k - first_input[t]), data.spent_outputs, flags, &data);
            if (!v.ok()) {
                chunk_error[c] = v.error;
                std::size_t cur = first_failure.load(std::memory_order_relaxed);
                while (k < cur && !first_failure.compare_exchange_weak(cur, k, std::memory_order_relaxed)) {
                }
                return;
            }
        }
    };
    RunTasks(chunks > 1 ? runner : nullptr, chunks, task);
    const std::size_t failed = first_failure.load(std::memory_order_relaxed);
    return failed == SIZE_MAX ? ScriptError::OK : chunk_error[failed / SCRIPT_CHUNK];
}

using ShardOp = ConnectPlan::Op;
// Per shard, the outputs of the block whose BIP30 lookup on disk waits for a failure (Bip30::OnFailure).
thread_local std::array<std::vector<OutPoint>, CoinsCache::SHARDS> t_not_in_cache;
// The plan of a block ConnectBlock was given none for.
thread_local ConnectPlan t_plan;

// The cache's side of connecting a block for the outpoints of one shard (`ops`, its part of the
// plan): each input's coin is looked up and, if unspent, spent and moved to `inputs` with the
// input's sigop cost (counted here, while the coin's script is in the CPU's cache); each output
// is added. In block order, so every outpoint sees the operations a sequential ConnectBlock would
// apply to it, in the same order, whichever thread runs which shard. Nothing is checked here: the
// caller checks afterwards, in Core's order, from `inputs`, and drops the cache if the block
// fails. An output that would overwrite an unspent coin is not added; the lowest such transaction
// index goes to `first_conflict` (Core asserts there: it cannot happen to a transaction whose
// inputs exist).
//
// With Bip30::Check, first Core's BIP30 check over the shard's outputs, against the cache as it
// stands before the block (nothing of the block has touched this shard yet): an existing unspent
// coin sets `bip30_violation` and the shard is left alone. Bip30::OnFailure does the same from the
// cache's entries alone, and puts the outputs the cache holds no entry for in `not_in_cache`
// (cleared first), for the caller to look up on disk should the block fail.
void ApplyShard(const Block& block, int height, CoinsCache& view, std::span<SpentInput> inputs,
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
            CoinsCacheAccess::PrefetchSlot(view, tx.vin()[op.input].prevout);
        } else {
            for (uint32_t o = 0; o < tx.vout().size(); ++o) CoinsCacheAccess::PrefetchSlot(view, OutPoint{tx.GetHash(), o});
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
                    return;
                }
            }
        }
    }
    for (const ShardOp& op : ops) {
        if (op.input != ShardOp::OUTPUTS) CoinsCacheAccess::PrefetchNode(view, block.vtx[op.tx].vin()[op.input].prevout);
    }
    for (const ShardOp& op : ops) {
        const Transaction& tx = block.vtx[op.tx];
        if (op.input != ShardOp::OUTPUTS) {
            const std::size_t k = first_input[op.tx] + op.input;
            SpentInput& in = inputs[k];
            auto it = CoinsCacheAccess::FetchCoin(view, tx.vin()[op.input].prevout);
            in.found = it != CoinsCacheAccess::End() && !it->second.IsSpent();
            in.sigop_cost = 0;
            if (in.found) {
                CoinsCacheAccess::SpendCoinAt(view, it, &in.coin);
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

bool IsBIP30Repeat(int height, const BlockHash& hash) noexcept
{
    static const BlockHash h91842 = *BlockHash::FromHex("00000000000a4d0a398161ffc163c503763b1f4360639393e0e4c8e300e0caec");
    static const BlockHash h91880 = *BlockHash::FromHex("00000000000743f190a18c5577a3c2d2a1f610ae9601ac046a38084ccb7cd721");
    return (height == 91842 && hash == h91842) || (height == 91880 && hash == h91880);
}

namespace {

/// ContextualCheckBlock's rules, in Core's order: every transaction final, BIP34's height in the
/// coinbase, the witness commitment, the weight limit.
bool CheckContextual(const CheckedBlock& checked, int height, int64_t lock_time_cutoff, const ConsensusParams& params,
                     BlockValidationState& state)
{
    const Block& block = checked.block();
    for (const auto& tx : block.vtx) {
        if (!IsFinalTx(tx, height, lock_time_cutoff)) {
            return state.Invalid(BlockValidationResult::BLOCK_CONSENSUS, "bad-txns-nonfinal", "non-final transaction");
        }
    }
    if (height >= params.bip34_height && !CheckCoinbaseHeight(block, height, state)) return false;
    if (!CheckWitnessMalleation(checked.witness_facts(), height >= params.segwit_height, state)) return false;
    return CheckBlockWeight(block, state);
}

/// How BIP30 is enforced for block `hash` at `height`.
Bip30 Bip30For(const ConnectContext& ctx, int height, const BlockHash& hash, const ConsensusParams& params)
{
    bool enforce_bip30 = !IsBIP30Repeat(height, hash);
    // Once BIP34 is active on this chain (its block at bip34_height is the one in the params), new
    // duplicate coinbases cannot be created, so BIP30 need not be checked, until the height where
    // BIP34 heights wrap into old coinbases' scriptSigs.
    if (ctx.bip34_ancestor && *ctx.bip34_ancestor == params.bip34_hash) enforce_bip30 = false;
    if (!enforce_bip30 && height < BIP34_IMPLIES_BIP30_LIMIT) return Bip30::Skip;
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

/// Core's CheckTxInputs for a transaction that is not a coinbase, from the coins its inputs found:
/// all inputs exist, then maturity and ranges; its fee is added to `fees`.
bool CheckTxInputs(const Transaction& tx, std::span<const SpentInput> ins, int height, Amount& fees, BlockValidationState& state)
{
    for (const SpentInput& in : ins) {
        if (!in.found) {
            return state.Invalid(BlockValidationResult::BLOCK_CONSENSUS, "bad-txns-inputs-missingorspent",
                                 "CheckTxInputs: inputs missing/spent in " + tx.GetHash().ToHex());
        }
    }
    Amount value_in = 0;
    for (const SpentInput& in : ins) {
        const Coin& coin = in.coin;
        if (coin.coinbase && height - int(coin.height) < COINBASE_MATURITY) {
            return state.Invalid(BlockValidationResult::BLOCK_CONSENSUS, "bad-txns-premature-spend-of-coinbase",
                                 "tried to spend coinbase at depth " + std::to_string(height - int(coin.height)));
        }
        value_in += coin.out.value;
        if (!MoneyRange(coin.out.value) || !MoneyRange(value_in)) {
            return state.Invalid(BlockValidationResult::BLOCK_CONSENSUS, "bad-txns-inputvalues-outofrange");
        }
    }
    const Amount value_out = tx.GetValueOut();
    if (value_in < value_out) {
        return state.Invalid(BlockValidationResult::BLOCK_CONSENSUS, "bad-txns-in-belowout",
                             "value in (" + std::to_string(value_in) + ") < value out (" + std::to_string(value_out) + ")");
    }
    const Amount fee = value_in - value_out;
    if (!MoneyRange(fee)) return state.Invalid(BlockValidationResult::BLOCK_CONSENSUS, "bad-txns-fee-outofrange");
    fees += fee;
    if (!MoneyRange(fees)) {
        return state.Invalid(BlockValidationResult::BLOCK_CONSENSUS, "bad-txns-accumulated-fee-outofrange",
                             "accumulated fee in the block out of range");
    }
    return true;
}

/// What connecting keeps of a transaction's spent coins: the outputs, for its scripts (checked
/// after the block's other rules) and BIP341's hashes, when `txdata` is given; then the coins
/// themselves for the undo data, in input order (Core's UpdateCoins).
void KeepSpentCoins(const Transaction& tx, std::span<SpentInput> ins, PrecomputedTxData* txdata, BlockUndo* undo)
{
    if (txdata) {
        // The outputs this transaction spends, for its scripts (checked after the block's other
        // rules) and BIP341's hashes; before the undo data takes the coins. The slot's vector from
        // an earlier block is refilled (no allocation once grown), unless it is more than twice the
        // size needed: then its memory is given back.
        std::vector<TxOut> spent = std::move(txdata->spent_outputs);
        if (spent.capacity() > 2 * ins.size()) spent = std::vector<TxOut>();
        spent.clear();
        spent.reserve(ins.size());
        for (const SpentInput& in : ins) spent.push_back(in.coin.out);
        txdata->Init(tx, std::move(spent));
    }
    if (undo) {
        auto& prevout = undo->vtxundo.emplace_back().prevout;
        prevout.resize(ins.size());
        for (std::size_t i = 0; i < ins.size(); ++i) prevout[i] = std::move(ins[i].coin);
    }
}

/// BIP68's relative locks of a transaction, once CSV is active: from the heights of the coins it
/// spends (Core's prevheights) and the median time past below each.
bool CheckRelativeLocks(const Transaction& tx, std::span<const SpentInput> ins, const ConnectContext& ctx, int64_t median_time_past,
                        BlockValidationState& state)
{
    if (!HasRelativeLock(tx)) return true;
    auto& heights = t_heights;
    heights.clear();
    for (const SpentInput& in : ins) heights.push_back(int(in.coin.height));
    // BIP68 time locks: the median time past of the block below a spent coin's.
    auto median_time_past_at = [&ctx](int h) {
        return GetMedianTimePast(HeaderAncestry{ctx.prev.first_height, ctx.prev.headers.first(std::size_t(h - ctx.prev.first_height + 1))});
    };
    return CheckSequenceLocks(tx, ctx.height, median_time_past, /*csv_active=*/true, heights, median_time_past_at, state);
}

/// The coinbase claims no more than the block's subsidy and fees (bad-cb-amount).
bool CheckCoinbaseClaim(const Block& block, int height, Amount fees, const ConsensusParams& params, BlockValidationState& state)
{
    const Amount reward = fees + GetBlockSubsidy(height, params);
    if (block.vtx[0].GetValueOut() > reward) {
        return state.Invalid(BlockValidationResult::BLOCK_CONSENSUS, "bad-cb-amount",
                             "coinbase pays too much (actual=" + std::to_string(block.vtx[0].GetValueOut()) +
                                 " vs limit=" + std::to_string(reward) + ")");
    }
    return true;
}

/// Where BIP30's reads on disk waited for a failure (Bip30::OnFailure): whether an output of the
/// failed block that the cache held no entry for has a coin on disk.
bool OverwritesCoinOnDisk(CoinsCache& view, std::span<const std::vector<OutPoint>> not_in_cache)
{
    for (const auto& outs : not_in_cache) {
        for (const OutPoint& out : outs) {
            auto r = view.db().GetCoin(out);
            if (!r) throw DecodeError(r.error().code, r.error().message.c_str());
            if (*r) return true;
        }
    }
    return false;
}

} // namespace

bool ConnectBlock(const CheckedBlock& checked, const ConnectContext& ctx, CoinsCache& view, const ConsensusParams& params,
                  BlockValidationState& state, ConnectStats* stats, BlockUndo* undo, const TaskRunner* runner,
                  const ConnectPlan* plan)
{
    const Block& block = checked.block();
    const int height = ctx.height;
    assert(ctx.prev.prev_height() == height - 1 && "ConnectContext: prev must end at the previous block");
    const int64_t median_time_past = GetMedianTimePast(ctx.prev);

    // --- ContextualCheckBlock, in Core's order ---
    const bool csv_active = height >= params.csv_height;
    if (!CheckContextual(checked, height, csv_active ? median_time_past : block.GetBlockTime(), params, state)) return false;

    // --- ConnectBlock ---
    const BlockHash hash = block.GetHash();
    const Bip30 bip30 = Bip30For(ctx, height, hash, params); // (done with the cache's side below)

    const SigOpFlags sigop_flags = SigOpFlagsFor(hash, params);
    Amount fees = 0;
    int64_t sigop_cost = 0;
    uint64_t inputs = 0, added = 0;
    if (undo) {
        undo->vtxundo.clear();
        undo->vtxundo.reserve(block.vtx.size() - 1);
    }
    const auto legacy_sigops = checked.legacy_sigops();

    // The cache's side first, spread over the runner's threads by shard, and the sigop costs;
    // then the checks, in Core's order, from the coins each input found. A block that fails
    // leaves the cache with part (or all) of its changes, as Core's does: the caller drops it.
    if (!plan) {
        t_plan.Assign(block);
        plan = &t_plan;
    }
    if (!plan->IsPlanOf(block)) throw std::invalid_argument("ConnectBlock: the ConnectPlan given was made for another block");
    auto& all_inputs = t_inputs;
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
    auto& not_in_cache = t_not_in_cache;
    auto apply = [&](std::size_t s) {
        ApplyShard(block, height, view, all_inputs, first_input, plan->Shard(s), bip30, checked.input_sigops(), sigop_flags,
                   not_in_cache[s], bip30_violation, first_conflict);
    };
    if (runner) {
        (*runner)(CoinsCache::SHARDS, apply);
    } else {
        // One shard at a time here too: a shard's memory hints are few enough to still be in the
        // CPU's cache when its lookups reach them (a whole large block's are not).
        for (std::size_t s = 0; s < CoinsCache::SHARDS && !bip30_violation.load(std::memory_order_relaxed); ++s) apply(s);
    }
    if (bip30_violation.load(std::memory_order_relaxed)) {
        return state.Invalid(BlockValidationResult::BLOCK_CONSENSUS, "bad-txns-BIP30", "tried to overwrite transaction");
    }

    auto& txdata = t_txdata;
    if (ctx.check_scripts && txdata.size() < block.vtx.size()) txdata.resize(block.vtx.size());

    // The checks, in Core's order, from what the cache's side found; then, where BIP30's lookups on
    // disk waited (Bip30::OnFailure), a failed block is looked for an overwritten coin first, as
    // Core's check before all others would have.
    auto check_spends = [&]() -> bool {
        for (std::size_t t = 0; t < block.vtx.size(); ++t) {
            const Transaction& tx = block.vtx[t];
            const std::span<SpentInput> ins =
                tx.IsCoinBase() ? std::span<SpentInput>() : std::span<SpentInput>(all_inputs).subspan(first_input[t], tx.vin().size());
            if (!tx.IsCoinBase()) {
                if (!CheckTxInputs(tx, ins, height, fees, state)) return false;
                if (csv_active && !CheckRelativeLocks(tx, ins, ctx, median_time_past, state)) return false;
            }
            if (first_conflict.load(std::memory_order_relaxed) == t) {
                throw std::logic_error("Attempted to overwrite an unspent coin (when possible_overwrite is false)");
            }
            // Core's GetTransactionSigOpCost: the legacy count × 4, then each input's share.
            int64_t tx_sigop_cost = int64_t(legacy_sigops[t]) * WITNESS_SCALE_FACTOR;
            for (const SpentInput& in : ins) tx_sigop_cost += in.sigop_cost;
            if (!AddSigOpCost(sigop_cost, tx_sigop_cost, state)) return false;
            if (!tx.IsCoinBase()) {
                KeepSpentCoins(tx, ins, ctx.check_scripts ? &txdata[t] : nullptr, undo);
                inputs += ins.size();
            }
            added += tx.vout().size();
        }
        if (!CheckCoinbaseClaim(block, height, fees, params, state)) return false;
        // Scripts last, as Core's script check queue completes after the coinbase claim.
        if (ctx.check_scripts) {
            const ScriptError error = VerifyBlockScripts(block, first_input, std::span<const PrecomputedTxData>(txdata).first(block.vtx.size()),
                                                         GetBlockScriptFlags(params, height, hash), script_runner);
            if (error != ScriptError::OK) {
                return state.Invalid(BlockValidationResult::BLOCK_CONSENSUS, InputVerdict{error}.BlockRejectReason());
            }
        }
        return true;
    };
    if (!check_spends()) {
        if (bip30 == Bip30::OnFailure && OverwritesCoinOnDisk(view, not_in_cache)) {
            state = BlockValidationState{};
            return state.Invalid(BlockValidationResult::BLOCK_CONSENSUS, "bad-txns-BIP30", "tried to overwrite transaction");
        }
        return false;
    }
    view.SetBestBlock(hash);
    if (stats) {
        stats->fees += fees;
        stats->inputs += inputs;
        stats->outputs_added += added;
        if (ctx.check_scripts) stats->script_checked_inputs += inputs;
    }
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

// ConnectBlock's rule checks in Core's order (src/connect/rules.h), and CheckBlockSpends
// (ibdkit/connect/connect.h): the rules over given spent coins.
#include "connect/rules.h"

#include <ibdkit/consensus/script_flags.h>
#include <ibdkit/error.h>
#include <ibdkit/primitives/consensus_constants.h>

#include "script/interpreter.h"
#include "script/verify.h"

#include <algorithm>
#include <atomic>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace ibdkit {

using connect_rules::SpentInput;
using connect_rules::SpendTotals;

namespace {

// Core's LOCKTIME_THRESHOLD: lock times below are heights, above are UNIX times.
constexpr uint32_t LOCKTIME_THRESHOLD = 500'000'000;
// BIP68: an input whose nSequence has this bit set has no relative lock.
constexpr uint32_t SEQUENCE_LOCKTIME_DISABLE_FLAG = 1u << 31;

// The spent coins' heights of the transaction whose relative locks are checked (reused).
thread_local std::vector<int> t_heights;

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

// For CheckBlockSpends: each input with its given coin (never shrunk, as ConnectBlock's), where
// each transaction's inputs start (as ConnectPlan::FirstInput), and the block's transaction ids
// sorted with their positions.
thread_local std::vector<SpentInput> t_given;
thread_local std::vector<std::size_t> t_first_input;
thread_local std::vector<std::pair<Txid, uint32_t>> t_txids;

} // namespace

namespace connect_rules {

/// Core's GetBlockScriptFlags as far as sigop counting reads it: P2SH and witness on, except for
/// the network's BIP16 exception blocks.
SigOpFlags SigOpFlagsFor(const BlockHash& hash, const ConsensusParams& params) noexcept
{
    const bool exception = std::find(params.bip16_exceptions.begin(), params.bip16_exceptions.end(), hash) !=
                           params.bip16_exceptions.end();
    return exception ? SigOpFlags{false, false} : SigOpFlags{true, true};
}

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

/// ConnectBlock's rules over the coins a block's inputs spent (`all_inputs`, in block order,
/// `first_input` per transaction), in Core's order: per transaction CheckTxInputs, BIP68 once CSV
/// is active and the sigop cost; then the coinbase claim; then, with ctx.check_scripts, the
/// scripts over `script_runner`. `first_conflict` is the first transaction whose output would have
/// overwritten an unspent coin (SIZE_MAX: none). With `undo`, the spent coins are moved into it.
bool CheckSpendsInOrder(const CheckedBlock& checked, const ConnectContext& ctx, std::span<SpentInput> all_inputs,
                        std::span<const std::size_t> first_input, const ConsensusParams& params, std::size_t first_conflict,
                        BlockUndo* undo, const TaskRunner* script_runner, BlockValidationState& state, SpendTotals& totals)
{
    const Block& block = checked.block();
    const int height = ctx.height;
    const int64_t median_time_past = GetMedianTimePast(ctx.prev);
    const bool csv_active = height >= params.csv_height;
    const auto legacy_sigops = checked.legacy_sigops();
    auto& txdata = t_txdata;
    if (ctx.check_scripts && txdata.size() < block.vtx.size()) txdata.resize(block.vtx.size());
    for (std::size_t t = 0; t < block.vtx.size(); ++t) {
        const Transaction& tx = block.vtx[t];
        const std::span<SpentInput> ins =
            tx.IsCoinBase() ? std::span<SpentInput>() : all_inputs.subspan(first_input[t], tx.vin().size());
        if (!tx.IsCoinBase()) {
            if (!CheckTxInputs(tx, ins, height, totals.fees, state)) return false;
            if (csv_active && !CheckRelativeLocks(tx, ins, ctx, median_time_past, state)) return false;
        }
        if (first_conflict == t) throw std::logic_error("Attempted to overwrite an unspent coin (when possible_overwrite is false)");
        // Core's GetTransactionSigOpCost: the legacy count × 4, then each input's share.
        int64_t tx_sigop_cost = int64_t(legacy_sigops[t]) * WITNESS_SCALE_FACTOR;
        for (const SpentInput& in : ins) tx_sigop_cost += in.sigop_cost;
        if (!AddSigOpCost(totals.sigop_cost, tx_sigop_cost, state)) return false;
        if (!tx.IsCoinBase()) {
            KeepSpentCoins(tx, ins, ctx.check_scripts ? &txdata[t] : nullptr, undo);
            totals.inputs += ins.size();
        }
        totals.added += tx.vout().size();
    }
    if (!CheckCoinbaseClaim(block, height, totals.fees, params, state)) return false;
    // Scripts last, as Core's script check queue completes after the coinbase claim.
    if (ctx.check_scripts) {
        const ScriptError error = VerifyBlockScripts(block, first_input, std::span<const PrecomputedTxData>(txdata).first(block.vtx.size()),
                                                     GetBlockScriptFlags(params, height, block.GetHash()), script_runner);
        if (error != ScriptError::OK) return state.Invalid(BlockValidationResult::BLOCK_CONSENSUS, InputVerdict{error}.BlockRejectReason());
    }
    return true;
}

void AddTotals(ConnectStats* stats, const SpendTotals& totals, bool scripts_checked)
{
    if (!stats) return;
    stats->fees += totals.fees;
    stats->inputs += totals.inputs;
    stats->outputs_added += totals.added;
    if (scripts_checked) stats->script_checked_inputs += totals.inputs;
}

} // namespace connect_rules

bool CheckBlockSpends(const CheckedBlock& checked, const ConnectContext& ctx, BlockUndo& spent, const ConsensusParams& params,
                      BlockValidationState& state, ConnectStats* stats, const TaskRunner* runner)
{
    const Block& block = checked.block();
    const int height = ctx.height;
    IBDKIT_EXPECTS(ctx.prev.prev_height() == height - 1, "ConnectContext: prev ends at the previous block");
    IBDKIT_EXPECTS(spent.vtxundo.size() + 1 == block.vtx.size(),
                   "CheckBlockSpends: the spent coins are one list per transaction after the coinbase");
    const bool csv_active = height >= params.csv_height;
    if (!connect_rules::CheckContextual(checked, height, csv_active ? GetMedianTimePast(ctx.prev) : block.GetBlockTime(), params, state)) {
        return false;
    }

    auto& first_input = t_first_input;
    first_input.assign(block.vtx.size() + 1, 0);
    std::size_t n_inputs = 0;
    for (std::size_t t = 1; t < block.vtx.size(); ++t) {
        IBDKIT_EXPECTS(spent.vtxundo[t - 1].prevout.size() == block.vtx[t].vin().size(),
                       "CheckBlockSpends: a transaction's spent coins are one per input");
        first_input[t] = n_inputs;
        n_inputs += block.vtx[t].vin().size();
    }
    first_input.back() = n_inputs;
    auto& all_inputs = t_given;
    if (all_inputs.size() < n_inputs) all_inputs.resize(n_inputs);

    // Whether `txid` is a transaction of this block before the one at `t`: the sorted ids are made
    // the first time a coin of this height is met.
    auto& txids = t_txids;
    txids.clear();
    auto earlier_in_block = [&](const Txid& txid, std::size_t t) {
        if (txids.empty()) {
            for (std::size_t j = 0; j < block.vtx.size(); ++j) txids.emplace_back(block.vtx[j].GetHash(), uint32_t(j));
            std::sort(txids.begin(), txids.end());
        }
        auto it = std::lower_bound(txids.begin(), txids.end(), std::pair<Txid, uint32_t>{txid, 0});
        return it != txids.end() && it->first == txid && it->second < t;
    };
    const SigOpFlags sigop_flags = connect_rules::SigOpFlagsFor(block.GetHash(), params);
    const auto input_sigops = checked.input_sigops();
    for (std::size_t t = 1; t < block.vtx.size(); ++t) {
        const auto& vin = block.vtx[t].vin();
        for (std::size_t i = 0; i < vin.size(); ++i) {
            const std::size_t k = first_input[t] + i;
            SpentInput& in = all_inputs[k];
            in.coin = std::move(spent.vtxundo[t - 1].prevout[i]);
            // A coin that exists for this input: older than the block, or made by an earlier
            // transaction of it (Core's view holds nothing else when the transaction connects).
            const int64_t coin_height = in.coin.height;
            in.found = coin_height < height || (coin_height == height && earlier_in_block(vin[i].prevout.hash, t));
            in.sigop_cost = in.found ? InputSigOpCost(input_sigops[k], in.coin.out.script_pubkey.span(), sigop_flags) : 0;
        }
    }
    SpendTotals totals;
    if (!connect_rules::CheckSpendsInOrder(checked, ctx, std::span<SpentInput>(all_inputs).first(n_inputs), first_input, params, SIZE_MAX,
                            nullptr, runner, state, totals)) {
        return false;
    }
    connect_rules::AddTotals(stats, totals, ctx.check_scripts);
    return true;
}

} // namespace ibdkit

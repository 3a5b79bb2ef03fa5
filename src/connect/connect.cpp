#include <ibdkit/connect/connect.h>

#include <ibdkit/consensus/check.h>
#include <ibdkit/consensus/consensus.h>
#include <ibdkit/consensus/tx_verify.h>

#include <algorithm>
#include <cassert>

namespace ibdkit {

namespace {

// Core's LOCKTIME_THRESHOLD: lock times below are heights, above are UNIX times.
constexpr uint32_t LOCKTIME_THRESHOLD = 500'000'000;
// Core's BIP34_IMPLIES_BIP30_LIMIT: from this height BIP30 is checked again (BIP34 no longer
// implies unique coinbases there).
constexpr int BIP34_IMPLIES_BIP30_LIMIT = 1'983'702;
// BIP68: an input whose nSequence has this bit set has no relative lock.
constexpr uint32_t SEQUENCE_LOCKTIME_DISABLE_FLAG = 1u << 31;

// Entries of one transaction's inputs, the outputs they hold and their heights (reused across
// calls: no allocation per transaction).
thread_local std::vector<CoinsMap::iterator> t_found;
thread_local std::vector<const TxOut*> t_spent;
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

void AddCoins(CoinsCache& view, const Transaction& tx, int height, bool check_for_overwrite, uint64_t* added)
{
    const bool coinbase = tx.IsCoinBase();
    const Txid& txid = tx.GetHash();
    for (uint32_t i = 0; i < tx.vout().size(); ++i) {
        const OutPoint op{txid, i};
        const bool overwrite = check_for_overwrite ? view.HaveCoin(op) : coinbase;
        view.AddCoin(op, Coin(tx.vout()[i], uint32_t(height), coinbase), overwrite);
        if (added) ++*added;
    }
}

} // namespace

bool IsBIP30Repeat(int height, const BlockHash& hash) noexcept
{
    static const BlockHash h91842 = *BlockHash::FromHex("00000000000a4d0a398161ffc163c503763b1f4360639393e0e4c8e300e0caec");
    static const BlockHash h91880 = *BlockHash::FromHex("00000000000743f190a18c5577a3c2d2a1f610ae9601ac046a38084ccb7cd721");
    return (height == 91842 && hash == h91842) || (height == 91880 && hash == h91880);
}

bool ConnectBlock(const CheckedBlock& checked, const ConnectContext& ctx, CoinsCache& view, const ConsensusParams& params,
                  BlockValidationState& state, ConnectStats* stats, BlockUndo* undo)
{
    const Block& block = checked.block();
    const int height = ctx.height;
    assert(ctx.prev.prev_height() == height - 1 && "ConnectContext: prev must end at the previous block");
    const int64_t median_time_past = GetMedianTimePast(ctx.prev);

    // --- ContextualCheckBlock, in Core's order ---
    const bool csv_active = height >= params.csv_height;
    const int64_t lock_time_cutoff = csv_active ? median_time_past : block.GetBlockTime();
    for (const auto& tx : block.vtx) {
        if (!IsFinalTx(tx, height, lock_time_cutoff)) {
            return state.Invalid(BlockValidationResult::BLOCK_CONSENSUS, "bad-txns-nonfinal", "non-final transaction");
        }
    }
    if (height >= params.bip34_height && !CheckCoinbaseHeight(block, height, state)) return false;
    if (!CheckWitnessMalleation(block, height >= params.segwit_height, state)) return false;
    if (!CheckBlockWeight(block, state)) return false;

    // --- ConnectBlock ---
    const BlockHash hash = block.GetHash();
    bool enforce_bip30 = !IsBIP30Repeat(height, hash);
    // Once BIP34 is active on this chain (its block at bip34_height is the one in the params), new
    // duplicate coinbases cannot be created, so BIP30 need not be checked, until the height where
    // BIP34 heights wrap into old coinbases' scriptSigs.
    if (ctx.bip34_ancestor && *ctx.bip34_ancestor == params.bip34_hash) enforce_bip30 = false;
    if (enforce_bip30 || height >= BIP34_IMPLIES_BIP30_LIMIT) {
        for (const auto& tx : block.vtx) {
            for (uint32_t o = 0; o < tx.vout().size(); ++o) {
                if (view.HaveCoin(OutPoint{tx.GetHash(), o})) {
                    return state.Invalid(BlockValidationResult::BLOCK_CONSENSUS, "bad-txns-BIP30",
                                         "tried to overwrite transaction");
                }
            }
        }
    }

    const SigOpFlags sigop_flags = SigOpFlagsFor(hash, params);
    // BIP68 time locks: the median time past of the block below a spent coin's.
    auto median_time_past_at = [&ctx](int h) {
        return GetMedianTimePast(HeaderAncestry{ctx.prev.first_height, ctx.prev.headers.first(std::size_t(h - ctx.prev.first_height + 1))});
    };
    Amount fees = 0;
    int64_t sigop_cost = 0;
    uint64_t inputs = 0, added = 0;
    if (undo) {
        undo->vtxundo.clear();
        undo->vtxundo.reserve(block.vtx.size() - 1);
    }
    const auto legacy_sigops = checked.legacy_sigops();
    for (std::size_t t = 0; t < block.vtx.size(); ++t) {
        const Transaction& tx = block.vtx[t];
        auto& spent = t_spent;
        spent.clear();
        if (!tx.IsCoinBase()) {
            // One lookup per input: the entries found here are checked, then spent in place.
            // Core's order of checks (all inputs exist, then maturity and ranges) is kept.
            auto& found = t_found;
            found.clear();
            for (const auto& in : tx.vin()) {
                auto it = view.FetchCoin(in.prevout);
                if (it == view.MapEnd() || it->second.coin.IsSpent()) {
                    return state.Invalid(BlockValidationResult::BLOCK_CONSENSUS, "bad-txns-inputs-missingorspent",
                                         "CheckTxInputs: inputs missing/spent in " + tx.GetHash().ToHex());
                }
                found.push_back(it); // stays valid while later fetches insert (coins/coins_map.h)
            }
            Amount value_in = 0;
            for (const auto& it : found) {
                const Coin& coin = it->second.coin;
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
            // BIP68, with the heights of the coins spent (Core's prevheights).
            if (csv_active && HasRelativeLock(tx)) {
                auto& heights = t_heights;
                heights.clear();
                for (const auto& it : found) heights.push_back(int(it->second.coin.height));
                if (!CheckSequenceLocks(tx, height, median_time_past, csv_active, heights, median_time_past_at, state)) return false;
            }
            for (const auto& it : found) spent.push_back(&it->second.coin.out);
        }
        // The sigop cost of every transaction, from the outputs it spends (read before they are).
        if (!AddSigOpCost(sigop_cost, GetTransactionSigOpCost(tx, legacy_sigops[t], spent, sigop_flags), state)) return false;
        if (!tx.IsCoinBase()) {
            // Erasing one entry never invalidates iterators to the others. The undo data takes the
            // spent coins in input order (Core's UpdateCoins).
            if (undo) {
                auto& prevout = undo->vtxundo.emplace_back().prevout;
                prevout.resize(t_found.size());
                for (std::size_t i = 0; i < t_found.size(); ++i) view.SpendCoinAt(t_found[i], &prevout[i]);
            } else {
                for (const auto& it : t_found) view.SpendCoinAt(it);
            }
            inputs += t_found.size();
        }
        AddCoins(view, tx, height, /*check_for_overwrite=*/false, &added);
    }
    const Amount reward = fees + GetBlockSubsidy(height, params);
    if (block.vtx[0].GetValueOut() > reward) {
        return state.Invalid(BlockValidationResult::BLOCK_CONSENSUS, "bad-cb-amount",
                             "coinbase pays too much (actual=" + std::to_string(block.vtx[0].GetValueOut()) +
                                 " vs limit=" + std::to_string(reward) + ")");
    }
    view.SetBestBlock(hash);
    if (stats) {
        stats->fees += fees;
        stats->inputs += inputs;
        stats->outputs_added += added;
    }
    return true;
}

void RollforwardBlock(const Block& block, int height, CoinsCache& view)
{
    for (const auto& tx : block.vtx) {
        if (!tx.IsCoinBase()) {
            for (const auto& in : tx.vin()) view.SpendCoin(in.prevout);
        }
        AddCoins(view, tx, height, /*check_for_overwrite=*/true, nullptr);
    }
    view.SetBestBlock(block.GetHash());
}

} // namespace ibdkit

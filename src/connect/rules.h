// src/connect/rules.h (internal) — ConnectBlock's rule checks in Core's order, over the coins a
// block's inputs spend, wherever they come from: the cache's side of ConnectBlock
// (src/connect/connect.cpp) or given undo data (CheckBlockSpends, src/connect/rules.cpp).
#pragma once

#include <ibdkit/chain/params.h>
#include <ibdkit/coins/coin.h>
#include <ibdkit/coins/undo.h>
#include <ibdkit/consensus/check.h>
#include <ibdkit/consensus/tx_verify.h>
#include <ibdkit/consensus/validation.h>

#include "common/executor.h"
#include "connect/connect.h"

#include <cstddef>
#include <cstdint>
#include <span>

namespace ibdkit::connect_rules {

/// One input of the block being connected: the coin it spends, moved out of the cache, if found,
/// and the input's share of its transaction's sigop cost (InputSigOpCost, from the coin's script).
struct SpentInput {
    Coin coin;
    int64_t sigop_cost{0};
    bool found{false};
};

/// Core's GetBlockScriptFlags as far as sigop counting reads it: P2SH and witness on, except for
/// the network's BIP16 exception blocks.
SigOpFlags SigOpFlagsFor(const BlockHash& hash, const ConsensusParams& params) noexcept;

/// ContextualCheckBlock's rules, in Core's order: every transaction final, BIP34's height in the
/// coinbase, the witness commitment, the weight limit.
bool CheckContextual(const CheckedBlock& checked, int height, int64_t lock_time_cutoff, const ConsensusParams& params,
                     BlockValidationState& state);

/// What the checks of a block add up as they go: the fees, the sigop cost, the inputs and outputs.
struct SpendTotals {
    Amount fees{0};
    int64_t sigop_cost{0};
    uint64_t inputs{0};
    uint64_t added{0};
};

/// ConnectBlock's rules over the coins a block's inputs spent (`all_inputs`, in block order,
/// `first_input` per transaction), in Core's order: per transaction CheckTxInputs, BIP68 once CSV
/// is active and the sigop cost; then the coinbase claim; then, with ctx.check_scripts, the
/// scripts over `script_runner`. `first_conflict` is the first transaction whose output would have
/// overwritten an unspent coin (SIZE_MAX: none). With `undo`, the spent coins are moved into it.
bool CheckSpendsInOrder(const CheckedBlock& checked, const ConnectContext& ctx, std::span<SpentInput> all_inputs,
                        std::span<const std::size_t> first_input, const ConsensusParams& params, std::size_t first_conflict,
                        BlockUndo* undo, const TaskRunner* script_runner, BlockValidationState& state, SpendTotals& totals);

/// Adds `totals` to `stats` (when given); the verified inputs too when the scripts were checked.
void AddTotals(ConnectStats* stats, const SpendTotals& totals, bool scripts_checked);

} // namespace ibdkit::connect_rules

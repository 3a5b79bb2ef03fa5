// ibdkit/consensus/tx_verify.h — transaction rules that need the spent outputs or the chain:
// the sigop cost (Core's GetTransactionSigOpCost, with P2SH and witness sigops counted from the
// spent outputs) and BIP68 relative lock-times (Core's CalculateSequenceLocks /
// EvaluateSequenceLocks). They take the spent coins' fields, not a coins cache, so replay and sync
// call them with whatever view they hold.
#pragma once

#include <ibdkit/consensus/validation.h>
#include <ibdkit/primitives/transaction.h>

#include <cstdint>
#include <functional>
#include <span>

namespace ibdkit {

/// Script rules that change how sigops are counted (Core's SCRIPT_VERIFY_P2SH / _WITNESS; both
/// on for every block except Core's script-flag exceptions, e.g. mainnet's BIP16 exception block).
struct SigOpFlags {
    bool p2sh{true};
    bool witness{true}; ///< requires p2sh (as Core asserts)
};

/// Core's GetP2SHSigOpCount: sigops of the redeem scripts of inputs spending P2SH outputs.
/// `spent[i]` is the output spent by tx.vin()[i]. Zero for a coinbase.
unsigned GetP2SHSigOpCount(const Transaction& tx, std::span<const TxOut> spent) noexcept;

/// Core's GetTransactionSigOpCost: legacy sigops × 4, plus P2SH sigops × 4, plus witness sigops
/// (P2WPKH 1; P2WSH the witness script's accurate count; also nested in P2SH). A coinbase counts
/// legacy sigops only and `spent` is ignored; otherwise precondition spent.size() == vin().size().
int64_t GetTransactionSigOpCost(const Transaction& tx, std::span<const TxOut> spent, SigOpFlags flags) noexcept;

/// What one input's sigop cost needs from the spending transaction alone, whatever it spends.
/// CheckBlock reads it on the thread that decoded the block (CheckedBlock::input_sigops), so that
/// connecting the block reads only the spent outputs' scripts, not the block's scriptSigs and
/// witnesses again.
struct InputSigOps {
    uint32_t redeem{0};         ///< P2SH: the redeem script's (last push's) accurate count; 0 unless push-only
    uint32_t redeem_witness{0}; ///< P2SH-wrapped witness program: its witness sigops
    uint32_t witness_script{0}; ///< P2WSH: the witness script's (last item's) accurate count
};
InputSigOps InputSigOpsOf(const TxIn& in) noexcept;

/// One input's share of the sigop cost beyond the legacy count (a transaction's cost is its legacy
/// sigops × 4 plus this summed over its inputs): the P2SH redeem script's sigops × 4 and the
/// witness sigops, from `script_pubkey`, the output the input spends. ConnectBlock counts it where
/// the shard task finds the coin, with the counts CheckBlock made (CheckedBlock::legacy_sigops and
/// input_sigops).
int64_t InputSigOpCost(const InputSigOps& in, std::span<const uint8_t> script_pubkey, SigOpFlags flags) noexcept;
int64_t InputSigOpCost(const TxIn& in, std::span<const uint8_t> script_pubkey, SigOpFlags flags) noexcept;

/// ConnectBlock's running limit: adds `cost` to `total`; false with "bad-blk-sigops"
/// (BLOCK_CONSENSUS, "too many sigops") once the total exceeds MAX_BLOCK_SIGOPS_COST.
bool AddSigOpCost(int64_t& total, int64_t cost, BlockValidationState& state);

/// The lowest height and median-time-past at which a transaction's relative locks are *not*
/// satisfied; -1 when there is none (Core's pair).
struct SequenceLocks {
    int min_height{-1};
    int64_t min_time{-1};
};

/// Core's CalculateSequenceLocks for a transaction in a block. `coin_heights[i]` is the height of
/// the block that created the output spent by tx.vin()[i]; `median_time_past_at(h)` the
/// median-time-past of the block at height h (read for time-based locks only, at the coin's
/// height - 1). `enforce_bip68`: CSV is active for the block (Core's LOCKTIME_VERIFY_SEQUENCE);
/// BIP68 applies to transactions of version ≥ 2 (unsigned).
SequenceLocks CalculateSequenceLocks(const Transaction& tx, bool enforce_bip68, std::span<const int> coin_heights,
                                     const std::function<int64_t(int)>& median_time_past_at);

/// Core's EvaluateSequenceLocks: the locks are satisfied in a block at `block_height` whose
/// parent's median-time-past is `prev_median_time_past`.
bool EvaluateSequenceLocks(int block_height, int64_t prev_median_time_past, const SequenceLocks& locks) noexcept;

/// Both, as ConnectBlock applies them to a non-coinbase transaction: false with
/// "bad-txns-nonfinal" (BLOCK_CONSENSUS, "contains a non-BIP68-final transaction <txid>", as Core).
bool CheckSequenceLocks(const Transaction& tx, int block_height, int64_t prev_median_time_past, bool csv_active,
                        std::span<const int> coin_heights, const std::function<int64_t(int)>& median_time_past_at,
                        BlockValidationState& state);

} // namespace ibdkit

#include <ibdkit/consensus/tx_verify.h>

#include <ibdkit/primitives/consensus_constants.h>
#include <ibdkit/primitives/script_ops.h>

#include "consensus/tx_check.h"

#include <algorithm>
#include <cassert>
#include <optional>

namespace ibdkit {

namespace {

/// BIP68 fields of nSequence (Core's CTxIn constants).
constexpr uint32_t SEQUENCE_LOCKTIME_DISABLE_FLAG = 1u << 31;
constexpr uint32_t SEQUENCE_LOCKTIME_TYPE_FLAG = 1u << 22;
constexpr uint32_t SEQUENCE_LOCKTIME_MASK = 0x0000ffff;
constexpr int SEQUENCE_LOCKTIME_GRANULARITY = 9;

/// The data of the last push of a push-only script (empty for OP_0..OP_16), or nullopt when the
/// script has an op above OP_16 or a malformed push (Core's loop in CScript::GetSigOpCount).
std::optional<std::span<const uint8_t>> LastPush(std::span<const uint8_t> script_sig) noexcept
{
    const uint8_t* pc = script_sig.data();
    const uint8_t* end = pc + script_sig.size();
    std::span<const uint8_t> data;
    while (pc < end) {
        uint8_t opcode = 0;
        if (!GetScriptOp(pc, end, opcode, &data)) return std::nullopt;
        if (opcode > OP_16) return std::nullopt;
    }
    return data;
}

/// Core's WitnessSigOps, given the witness script's accurate count (its last item's; 0 for an
/// empty witness): P2WPKH 1, P2WSH that count, anything else 0.
uint32_t WitnessSigOps(int version, std::span<const uint8_t> program, uint32_t witness_script) noexcept
{
    if (version != 0) return 0;
    if (program.size() == 20) return 1;
    return program.size() == 32 ? witness_script : 0;
}

} // namespace

InputSigOps InputSigOpsOf(const TxIn& in) noexcept
{
    InputSigOps s;
    // Core's GetP2SHSigOpCount reads the scriptSig's last push (push-only exactly when it can be
    // taken) and CountWitnessSigOps a P2SH-wrapped program there, or a P2WSH witness script.
    if (!in.witness.stack.empty()) {
        const auto& script = in.witness.stack.back();
        s.witness_script = GetSigOpCount(std::span<const uint8_t>(script.data(), script.size()), true);
    }
    if (const auto redeem = LastPush(in.script_sig.span())) {
        s.redeem = GetSigOpCount(*redeem, true);
        int version = 0;
        std::span<const uint8_t> program;
        if (IsWitnessProgram(*redeem, version, program)) s.redeem_witness = WitnessSigOps(version, program, s.witness_script);
    }
    return s;
}

int64_t InputSigOpCost(const InputSigOps& in, std::span<const uint8_t> script_pubkey, SigOpFlags flags) noexcept
{
    assert(flags.p2sh || !flags.witness); // as Core asserts
    if (!flags.p2sh) return 0;
    // A P2SH output or a witness program is told by its first bytes, without a walk.
    if (IsPayToScriptHash(script_pubkey)) return int64_t(in.redeem) * WITNESS_SCALE_FACTOR + (flags.witness ? in.redeem_witness : 0);
    int version = 0;
    std::span<const uint8_t> program;
    if (!flags.witness || !IsWitnessProgram(script_pubkey, version, program)) return 0;
    return WitnessSigOps(version, program, in.witness_script);
}

int64_t InputSigOpCost(const TxIn& in, std::span<const uint8_t> script_pubkey, SigOpFlags flags) noexcept
{
    return InputSigOpCost(InputSigOpsOf(in), script_pubkey, flags);
}

unsigned GetP2SHSigOpCount(const Transaction& tx, std::span<const TxOut> spent) noexcept
{
    if (tx.IsCoinBase()) return 0;
    assert(spent.size() == tx.vin().size());
    unsigned n = 0;
    for (std::size_t i = 0; i < tx.vin().size(); ++i) {
        if (IsPayToScriptHash(spent[i].script_pubkey.span())) n += InputSigOpsOf(tx.vin()[i]).redeem;
    }
    return n;
}

int64_t GetTransactionSigOpCost(const Transaction& tx, std::span<const TxOut> spent, SigOpFlags flags) noexcept
{
    assert(flags.p2sh || !flags.witness); // as Core asserts
    assert(tx.IsCoinBase() || spent.size() == tx.vin().size());
    int64_t cost = int64_t(GetLegacySigOpCount(tx)) * WITNESS_SCALE_FACTOR;
    if (tx.IsCoinBase()) return cost;
    for (std::size_t i = 0; i < tx.vin().size(); ++i) cost += InputSigOpCost(tx.vin()[i], spent[i].script_pubkey.span(), flags);
    return cost;
}

bool AddSigOpCost(int64_t& total, int64_t cost, BlockValidationState& state)
{
    total += cost;
    if (total > MAX_BLOCK_SIGOPS_COST) return state.Invalid(BlockValidationResult::BLOCK_CONSENSUS, "bad-blk-sigops", "too many sigops");
    return true;
}

SequenceLocks CalculateSequenceLocks(const Transaction& tx, bool enforce_bip68, std::span<const int> coin_heights,
                                     const std::function<int64_t(int)>& median_time_past_at)
{
    SequenceLocks locks;
    if (!enforce_bip68 || tx.version() < 2) return locks; // unsigned comparison, as Core
    assert(coin_heights.size() == tx.vin().size());
    for (std::size_t i = 0; i < tx.vin().size(); ++i) {
        const uint32_t seq = tx.vin()[i].sequence;
        if (seq & SEQUENCE_LOCKTIME_DISABLE_FLAG) continue;
        const int coin_height = coin_heights[i];
        if (seq & SEQUENCE_LOCKTIME_TYPE_FLAG) {
            const int64_t coin_time = median_time_past_at(std::max(coin_height - 1, 0));
            locks.min_time = std::max(locks.min_time,
                                      coin_time + (int64_t(seq & SEQUENCE_LOCKTIME_MASK) << SEQUENCE_LOCKTIME_GRANULARITY) - 1);
        } else {
            locks.min_height = std::max(locks.min_height, coin_height + int(seq & SEQUENCE_LOCKTIME_MASK) - 1);
        }
    }
    return locks;
}

bool EvaluateSequenceLocks(int block_height, int64_t prev_median_time_past, const SequenceLocks& locks) noexcept
{
    return !(locks.min_height >= block_height || locks.min_time >= prev_median_time_past);
}

bool CheckSequenceLocks(const Transaction& tx, int block_height, int64_t prev_median_time_past, bool csv_active,
                        std::span<const int> coin_heights, const std::function<int64_t(int)>& median_time_past_at,
                        BlockValidationState& state)
{
    const SequenceLocks locks = CalculateSequenceLocks(tx, csv_active, coin_heights, median_time_past_at);
    if (!EvaluateSequenceLocks(block_height, prev_median_time_past, locks)) {
        return state.Invalid(BlockValidationResult::BLOCK_CONSENSUS, "bad-txns-nonfinal",
                             "contains a non-BIP68-final transaction " + tx.GetHash().ToHex());
    }
    return true;
}

} // namespace ibdkit

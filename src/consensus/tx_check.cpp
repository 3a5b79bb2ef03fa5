#include <ibdkit/consensus/tx_check.h>

#include <ibdkit/consensus/consensus.h>
#include <ibdkit/primitives/script_ops.h>

#include <algorithm>
#include <vector>

namespace ibdkit {

namespace {
bool HasDuplicateInputs(std::span<const TxIn> vin)
{
    const std::size_t n = vin.size();
    if (n < 2) return false;
    if (n <= 16) {
        // Small transactions (almost all): pairwise beats allocating.
        for (std::size_t i = 1; i < n; ++i) {
            for (std::size_t j = 0; j < i; ++j) {
                if (vin[i].prevout == vin[j].prevout) return true;
            }
        }
        return false;
    }
    // One 64-bit key per input (a hash word mixed with the index) in an open-addressing table
    // twice the input count: linear time. Equal keys (a duplicate, or an astronomically rare
    // collision) fall back to an exact sort of the outpoints.
    std::size_t size = 64;
    while (size < 2 * n) size *= 2;
    std::vector<uint64_t> table(size, 0); // 0 = empty; a key of 0 is stored as 1
    const std::size_t mask = size - 1;
    bool collision = false;
    for (std::size_t i = 0; i < n && !collision; ++i) {
        const OutPoint& o = vin[i].prevout;
        uint64_t key = o.hash.ToUint256().GetUint64(0) ^ (uint64_t(o.n) * 0x9E3779B97F4A7C15ULL);
        if (key == 0) key = 1;
        for (std::size_t slot = std::size_t(key >> 7) & mask;; slot = (slot + 1) & mask) {
            if (table[slot] == 0) {
                table[slot] = key;
                break;
            }
            if (table[slot] == key) {
                collision = true;
                break;
            }
        }
    }
    if (!collision) return false;
    std::vector<OutPoint> all;
    all.reserve(n);
    for (const TxIn& in : vin) all.push_back(in.prevout);
    std::sort(all.begin(), all.end());
    return std::adjacent_find(all.begin(), all.end()) != all.end();
}
} // namespace

bool CheckTransaction(const Transaction& tx, TxValidationState& state)
{
    if (tx.vin().empty()) return state.Invalid(TxValidationResult::TX_CONSENSUS, "bad-txns-vin-empty");
    if (tx.vout().empty()) return state.Invalid(TxValidationResult::TX_CONSENSUS, "bad-txns-vout-empty");
    // Size limits (without the witness, which has not been checked for malleability).
    if (tx.GetStrippedSize() * WITNESS_SCALE_FACTOR > MAX_BLOCK_WEIGHT) {
        return state.Invalid(TxValidationResult::TX_CONSENSUS, "bad-txns-oversize");
    }
    // Negative or overflowing output values (CVE-2010-5139).
    Amount value_out = 0;
    for (const TxOut& out : tx.vout()) {
        if (out.value < 0) return state.Invalid(TxValidationResult::TX_CONSENSUS, "bad-txns-vout-negative");
        if (out.value > MAX_MONEY) return state.Invalid(TxValidationResult::TX_CONSENSUS, "bad-txns-vout-toolarge");
        value_out += out.value;
        if (!MoneyRange(value_out)) return state.Invalid(TxValidationResult::TX_CONSENSUS, "bad-txns-txouttotal-toolarge");
    }
    // Duplicate inputs (CVE-2018-17144).
    if (HasDuplicateInputs(tx.vin())) return state.Invalid(TxValidationResult::TX_CONSENSUS, "bad-txns-inputs-duplicate");
    if (tx.IsCoinBase()) {
        const std::size_t len = tx.vin()[0].script_sig.size();
        if (len < 2 || len > 100) return state.Invalid(TxValidationResult::TX_CONSENSUS, "bad-cb-length");
    } else {
        for (const TxIn& in : tx.vin()) {
            if (in.prevout.IsNull()) return state.Invalid(TxValidationResult::TX_CONSENSUS, "bad-txns-prevout-null");
        }
    }
    return true;
}

unsigned GetLegacySigOpCount(const Transaction& tx) noexcept
{
    unsigned n = 0;
    for (const TxIn& in : tx.vin()) n += GetSigOpCount(in.script_sig.span(), false);
    for (const TxOut& out : tx.vout()) n += GetSigOpCount(out.script_pubkey.span(), false);
    return n;
}

} // namespace ibdkit

#include "consensus/tx_check.h"

#include "consensus/tx_check_internal.h"

#include <ibdkit/primitives/consensus_constants.h>
#include <ibdkit/primitives/script_ops.h>

#include <algorithm>
#include <chrono>
#include <random>
#include <vector>

namespace ibdkit {

namespace detail {

uint64_t DuplicateInputSeed() noexcept
{
    static const uint64_t seed = [] {
        std::random_device rd;
        return (uint64_t(rd()) << 32 | rd()) ^ uint64_t(std::chrono::steady_clock::now().time_since_epoch().count());
    }();
    return seed;
}

bool HasDuplicateInputs(std::span<const TxIn> vin, uint64_t seed, DuplicateCheckWork* work)
{
    DuplicateCheckWork local;
    DuplicateCheckWork& w = work ? *work : local;
    const std::size_t n = vin.size();
    if (n < 2) return false;
    if (n <= 16) {
        // Small transactions (almost all): pairwise beats allocating.
        for (std::size_t i = 1; i < n; ++i) {
            for (std::size_t j = 0; j < i; ++j) {
                ++w.comparisons;
                if (vin[i].prevout == vin[j].prevout) return true;
            }
        }
        return false;
    }
    // One mixed 64-bit key per input in an open-addressing table twice the input count: linear
    // time. Equal keys (a duplicate, or a collision of the 64-bit keys, which anyone can craft)
    // and a probe count over budget (slots crowded by crafted keys) fall back to an exact sort.
    std::size_t size = 64;
    while (size < 2 * n) size *= 2;
    std::vector<uint64_t> table(size, 0); // 0 = empty; a key of 0 is stored as 1
    const std::size_t mask = size - 1;
    const std::size_t budget = DUPLICATE_PROBES_PER_INPUT * n;
    bool sort = false;
    for (std::size_t i = 0; i < n && !sort; ++i) {
        uint64_t key = MixDuplicateKey(DuplicateKey(vin[i].prevout), seed);
        if (key == 0) key = 1;
        for (std::size_t slot = std::size_t(key) & mask;; slot = (slot + 1) & mask) {
            if (++w.probes > budget || table[slot] == key) {
                sort = true;
                break;
            }
            if (table[slot] == 0) {
                table[slot] = key;
                break;
            }
        }
    }
    if (!sort) return false;
    w.sorted = true;
    std::vector<OutPoint> all;
    all.reserve(n);
    for (const TxIn& in : vin) all.push_back(in.prevout);
    std::size_t comparisons = 0;
    std::sort(all.begin(), all.end(), [&](const OutPoint& a, const OutPoint& b) {
        ++comparisons;
        return a < b;
    });
    w.comparisons += comparisons + n;
    return std::adjacent_find(all.begin(), all.end()) != all.end();
}

} // namespace detail

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
    if (detail::HasDuplicateInputs(tx.vin(), detail::DuplicateInputSeed())) return state.Invalid(TxValidationResult::TX_CONSENSUS, "bad-txns-inputs-duplicate");
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

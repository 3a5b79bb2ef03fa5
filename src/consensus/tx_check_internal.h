// The duplicate-input check behind CheckTransaction, with its work made visible to tests.
//
// Prevouts are chosen by whoever built the transaction, so the hash table over them is keyed
// with a per-process secret seed, and whatever the inputs (even built by someone who knows the
// seed) it gives up after a fixed probe budget and sorts instead: O(n log n) work at worst,
// never the O(n²) of linear probing over crafted keys.
#pragma once

#include <ibdkit/primitives/transaction.h>

#include <cstddef>
#include <cstdint>
#include <span>

namespace ibdkit::detail {

/// What one HasDuplicateInputs call did.
struct DuplicateCheckWork {
    std::size_t probes{0};      ///< table slots inspected
    std::size_t comparisons{0}; ///< outpoint comparisons (pairwise, or by the sort)
    bool sorted{false};         ///< fell back to sorting
};

/// Table probes allowed per input before the check sorts instead (honest inputs under a random
/// seed use about 1.5 at the table's load of at most one half).
inline constexpr std::size_t DUPLICATE_PROBES_PER_INPUT = 8;

/// A bijective 64-bit mixer (MurmurHash3's finaliser) of `key ^ seed`: slots come from it.
constexpr uint64_t MixDuplicateKey(uint64_t key, uint64_t seed) noexcept
{
    uint64_t k = key ^ seed;
    k ^= k >> 33;
    k *= 0xff51afd7ed558ccdULL;
    k ^= k >> 33;
    k *= 0xc4ceb9fe1a85ec53ULL;
    k ^= k >> 33;
    return k;
}

/// The 64-bit key of an outpoint before mixing: its hash's first word and its index.
inline uint64_t DuplicateKey(const OutPoint& o) noexcept
{
    return o.hash.ToUint256().GetUint64(0) ^ (uint64_t(o.n) * 0x9E3779B97F4A7C15ULL);
}

/// The per-process secret seed (random, drawn once).
uint64_t DuplicateInputSeed() noexcept;

/// True when two of `vin` spend the same outpoint. `work` (optional) receives what it took.
bool HasDuplicateInputs(std::span<const TxIn> vin, uint64_t seed, DuplicateCheckWork* work = nullptr);

} // namespace ibdkit::detail

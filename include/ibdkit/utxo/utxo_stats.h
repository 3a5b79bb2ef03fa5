// ibdkit/utxo/utxo_stats.h — what a UTXO set's statistics hold (Core's `gettxoutsetinfo`): the
// plain result type, which the results of a replay, sync or SwiftSync carry. Computing them:
// utxo/stats.h.
#pragma once

#include <ibdkit/coins/replay_range.h>
#include <ibdkit/primitives/amount.h>
#include <ibdkit/primitives/hash.h>

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>

namespace ibdkit {

/// Which set hashes to compute (Core's CoinStatsHashType; ibdkit can do both in one walk).
struct UtxoHashTypes {
    bool hash_serialized{true};
    bool muhash{false};
};

/// How many output script types the breakdown has: one per TxoutType (primitives/script_ops.h,
/// where Solver classifies a script; utxo/stats.h checks the two agree).
inline constexpr std::size_t TXOUT_TYPE_COUNT = 11;

struct ScriptTypeTotals {
    uint64_t count{0};
    Amount amount{0};
};

struct UtxoStats {
    uint32_t height{0};
    bool height_from_coins{true}; ///< height is the max coin height (not supplied by the caller)
    BlockHash best_block;
    std::optional<ReplayRange> interrupted_flush; ///< H present: the database needs a replay
    uint64_t txouts{0};
    uint64_t transactions{0};
    uint64_t bogosize{0};
    Amount total_amount{0};
    uint256 hash_serialized; ///< internal byte order; ToHex() gives Core's display form
    uint256 muhash;          ///< same byte order convention as hash_serialized
    UtxoHashTypes hashes;    ///< which of the two hashes were computed
    std::array<ScriptTypeTotals, TXOUT_TYPE_COUNT> by_type{}; ///< indexed by TxoutType

    /// True when the breakdown's counts and amounts sum to txouts and total_amount.
    bool BreakdownAddsUp() const noexcept
    {
        uint64_t n = 0;
        Amount a = 0;
        for (const auto& t : by_type) {
            n += t.count;
            a += t.amount;
        }
        return n == txouts && a == total_amount;
    }
};

} // namespace ibdkit

// ibdkit/swiftsync/check_range.h — SwiftSync's check of a range of blocks, in outpoints mode
// (BIP 457's extension to assume-valid) or coins mode (CheckRangeCoins: BIP 457's Coin elements
// and Core's full rules from a datadir's undo data), and the verdict over ranges that cover 1..n.
//
// For each block of the range: Core's context-free CheckBlock (proof of work, merkle root,
// transaction rules, sigop limit; Core's reject reasons); every input of a non-coinbase
// transaction adds H(outpoint) to agg_in; every spendable output (hints.h says which count) is
// either hinted unspent — it becomes a coin of the UTXO set at n — or adds H(outpoint) to agg_out.
// Ranges are independent: they may run in any order, on any machine, with the same salt; their
// partials combine by addition (aggregate.h). The verdict: the ranges cover 1..n once each, no
// block failed, agg_in = agg_out, and the UTXO set's value is at most the subsidies of 1..n.
//
// What this does NOT check (docs/swiftsync.md, *Trust*): scripts and signatures, amounts of the
// inputs (fees, the coinbase's claim), sigops of inputs, coinbase maturity, lock times, BIP 30/34,
// the witness commitment, block weight, header rules needing context (difficulty, time): much less
// than Core's assumevalid, which skips only scripts.
//
// Threads: the checks only read the located chain, the hints and the files, so several ranges may be
// checked at once; each spreads its blocks over `threads` and calls `on_progress` and `on_unspent` on
// the calling thread. Combine reads only its arguments.
#pragma once

#include <ibdkit/blockfile/locate.h>
#include <ibdkit/coins/coin.h>
#include <ibdkit/coins/undo.h>
#include <ibdkit/error.h>
#include <ibdkit/memory/policy_id.h>
#include <ibdkit/primitives/amount.h>
#include <ibdkit/swiftsync/aggregate.h>
#include <ibdkit/swiftsync/hints.h>

#include <atomic>
#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace ibdkit::swiftsync {

struct RangeCounts {
    uint64_t blocks{0};
    uint64_t transactions{0};
    uint64_t inputs{0};       ///< inputs of non-coinbase transactions (added to agg_in)
    uint64_t outputs{0};      ///< spendable outputs
    uint64_t unspent{0};      ///< of which hinted unspent
    uint64_t unspendable{0};  ///< outputs left out (OP_RETURN, oversized, BIP 30's two coinbases)

    /// Adds the counts of another range (of a disjoint one: nothing checks it).
    RangeCounts& operator+=(const RangeCounts& o) noexcept;
    friend bool operator==(const RangeCounts&, const RangeCounts&) = default;
};

/// The reason of a block whose hints name an output it does not have: the hints do not fit the
/// chain (Verdict::kind HintsMismatch), whatever the block holds.
inline constexpr std::string_view HINT_OUT_OF_RANGE_REASON = "swiftsync-hint-out-of-range";

/// Why a block of the range is refused.
struct BlockFailure {
    uint32_t height{0};
    BlockHash hash;
    std::string reason; ///< Core's reject reason, or HINT_OUT_OF_RANGE_REASON
};

/// What a range contributes to the verdict.
struct Partial {
    uint32_t from{0}, to{0};           ///< the range, inclusive
    Aggregate agg_in, agg_out;
    RangeCounts counts;
    uint64_t supply{0};                ///< value of the hinted-unspent outputs (saturating)
    /// The hinted-unspent coins (collected unless told not to), in block order.
    std::vector<std::pair<OutPoint, Coin>> unspent;
    std::optional<BlockFailure> failure; ///< the first refused block; the walk stops there
    AggregateMode mode{AggregateMode::OutPoints}; ///< how the range was checked (CheckRange or CheckRangeCoins)
    /// Coins mode only (a coins-mode partial's bytes carry them, partial.h): the inputs whose scripts
    /// were verified, and the coinbases BIP30 applies to (Core's rule below BIP34's activation) as
    /// (transaction id, height) in height order, for Combine to find a repeated one.
    uint64_t script_checked_inputs{0};
    std::vector<std::pair<Txid, uint32_t>> bip30_coinbases;
};

struct CheckRangeOptions {
    unsigned threads{0}; ///< 0: every core (ibdkit/threads.h)
    bool collect_unspent{true};
    std::function<void(uint32_t height, uint32_t to)> on_progress; ///< after each batch, on the calling thread
    /// If set, each block's hinted-unspent coins go here instead of into the partial, on the
    /// calling thread and in height order (a chainstate writer's feed); an error stops the check.
    std::function<std::optional<Error>(std::span<const std::pair<OutPoint, Coin>> coins)> on_unspent;
    PolicyId policy{PolicyId::Hardened}; ///< the buffer policy of each block's bytes as read (memory/policy.h)
    /// Ctrl-C: looked at before each block's outcome is taken; set, the check ends with the error
    /// "interrupted" (Errc::Io) within the batch being checked. Null: never.
    const std::atomic<bool>* interrupt{nullptr};
};

/// Checks blocks `from`..`to` (1 ≤ from ≤ to ≤ hints.height()) of `blocks` against `hints` with
/// `salt` in outpoints mode. A refused block is not an error (partial.failure says which and why);
/// errors are environment failures and blocks that are missing or do not decode. Codes: a range
/// outside the hints or the located chain (Errc::InvalidValue), an unreadable or undecodable block
/// (its code), a block that is not the chain's (Errc::Corrupt), an error from on_unspent.
Result<Partial> CheckRange(const LocatedChain& blocks, const Hints& hints, const Salt& salt, uint32_t from, uint32_t to,
                           const CheckRangeOptions& options = {});

/// What coins mode checks beyond outpoints mode, and from where.
struct CoinsModeOptions {
    /// The blocks' undo data: a Core data directory's rev files (LocateUndoInDatadir), each record
    /// checked against its block's parent hash, none trusted until the aggregates balance.
    const DatadirUndo* undo{nullptr};
    std::optional<BlockHash> assumevalid; ///< as RunSettings::assumevalid (settings/run_settings.h; nullopt: the network's)
    std::optional<uint256> minimum_chain_work; ///< as RunSettings::minimum_chain_work (nullopt: the network's)
    bool skip_scripts{false};             ///< trust every script (a benchmark, as replay --skip-scripts)
};

/// Checks blocks `from`..`to` as CheckRange does, in coins mode (BIP 457's Coin elements, the
/// spent coins from `coins.undo`), and with them every rule Core's ConnectBlock checks that does
/// not read the UTXO set (connect/connect.h, CheckBlockSpends): the header's contextual rules on
/// the located chain's headers, ContextualCheckBlock, amounts and fees, coinbase maturity, BIP68,
/// sigops, the order of spends inside a block, the coinbase claim, and the scripts wherever Core's
/// assumevalid rule checks them. Whether each spent coin existed and was unspent is what the
/// aggregates prove at the end (Combine). Errors as CheckRange's, and: a block of the range without
/// undo data (Errc::NotFound), undo data that fails its checksum or does not fit its block
/// (Errc::Corrupt, naming the block). No `coins.undo`, or a located chain that does not start at
/// the genesis, is Errc::InvalidValue; `coins.undo` is read during the call only.
Result<Partial> CheckRangeCoins(const LocatedChain& blocks, const Hints& hints, const Salt& salt, uint32_t from, uint32_t to,
                                const CheckRangeOptions& options, const CoinsModeOptions& coins);

/// Which check of the verdict refused the history: what a caller decides on (the exit code, whom
/// to blame), never the reason's words, which are for people.
enum class VerdictKind : uint8_t {
    Accepted,         ///< every check passed
    MixedModes,       ///< partials of both modes
    BlockRefused,     ///< a block broke one of Core's rules (its reason in the verdict's)
    HintsMismatch,    ///< a hint names an output its block does not have: the hints are another chain's
    Bip30Undecided,   ///< coins mode: a coinbase repeats where BIP30 applies (the classic replay decides)
    NotCovered,       ///< the ranges do not cover 1..n once each
    AggregatesDiffer, ///< agg_in != agg_out: the hints, or (coins mode) the spent coins, are not the chain's
    SupplyExceeded,   ///< the unspent outputs hold more than the subsidies
};

struct Verdict {
    bool ok{false};
    VerdictKind kind{VerdictKind::Accepted}; ///< Accepted exactly when ok
    std::string reason;                 ///< empty when ok
    Aggregate agg_in, agg_out;
    RangeCounts counts;
    uint64_t supply{0};
    uint64_t supply_bound{0};           ///< the subsidies of blocks 1..n
    uint64_t script_checked_inputs{0};  ///< coins mode: inputs whose scripts were verified
};

/// The verdict over `partials` for height n (the hintsfile's) on `chain`; partials checked in
/// different modes are refused (their elements never balance). In coins mode, a
/// coinbase transaction id that repeats where BIP30 applies refuses the history: whether the first
/// was spent by then is not known to SwiftSync ("swiftsync-bip30-undecided"; the classic replay
/// decides it). Mainnet's two repeats are Core's exceptions and never collected.
Verdict Combine(std::span<const Partial> partials, uint32_t height, ChainType chain);

} // namespace ibdkit::swiftsync

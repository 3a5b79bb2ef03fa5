// ibdkit/swiftsync/verify_snapshot.h — proving that an assumeutxo snapshot is exactly the UTXO set
// of a chain at its base block, with SwiftSync's aggregates and no UTXO set in memory
// (`ibdkit utxo verify-snapshot`).
//
// The snapshot is its own hints: every spendable output of blocks 1..n goes into agg_out, every
// input into agg_in, and every coin of the snapshot into agg_in too, as if spent at the end. The
// sums are equal exactly when the snapshot holds each output that no input spent, once, and
// nothing else (up to the salted hash's collisions). In coins mode (a Core data directory with
// its rev files) the elements are BIP 457's Coins — height, coinbase flag, amount and script are
// proven too — and every block passes Core's rules as in check_range.h's CheckRangeCoins; in
// outpoints mode only the outpoints are, and much less is checked (docs/swiftsync.md, *Trust*).
// Memory does not grow with the set: the snapshot is read as a stream.
#pragma once

#include <ibdkit/blockfile/source.h>
#include <ibdkit/chain/params.h>
#include <ibdkit/error.h>
#include <ibdkit/primitives/amount.h>
#include <ibdkit/primitives/hash.h>
#include <ibdkit/settings/run_settings.h>
#include <ibdkit/swiftsync/aggregate.h>
#include <ibdkit/swiftsync/check_range.h>

#include <cstdint>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>

namespace ibdkit::swiftsync {

/// The shared settings (settings/run_settings.h: threads, the blocks' buffer policy, and in coins
/// mode assumevalid and skip_scripts; dbcache_mib is not used, no UTXO set is held) and the check's own.
struct VerifySnapshotOptions : RunSettings {
    std::filesystem::path snapshot;   ///< Core's dumptxoutset format (`ibdkit utxo snapshot`)
    BlockFileSource source;           ///< the blocks, exactly one; coins mode needs a datadir (its rev files)
    AggregateMode mode{AggregateMode::Coins};
    std::function<void(uint32_t height, uint32_t n)> on_progress; ///< after each batch, on the calling thread
};

struct SnapshotVerdict {
    ChainType chain{ChainType::MAIN};
    AggregateMode mode{AggregateMode::Coins};
    BlockHash base;                   ///< the snapshot's base block
    uint32_t height{0};               ///< its height in the blocks' best chain
    Verdict verdict;                  ///< counts.unspent and supply are the snapshot's coins and value
    uint64_t script_checked_inputs{0};
    uint64_t bytes_cleansed{0};       ///< zeroed by the buffer policy's frees of the blocks' bytes
    double seconds{0};

    /// Whether the snapshot is proven to be the UTXO set at its base block: equal sums in coins
    /// mode. Equal sums in outpoints mode (verdict.ok) prove its outpoints only, never its coins.
    bool Certified() const noexcept { return verdict.ok && mode == AggregateMode::Coins; }
    /// Why the snapshot is not certified: the verdict's reason, or, when outpoints mode's sums
    /// matched, that they prove only the outpoints; empty when Certified().
    std::string Reason() const;
};

/// Checks the snapshot against blocks 1..n of the chain, n its base block's height. A snapshot
/// that is not the UTXO set, or a block that breaks a rule, is a verdict (ok false, the reason),
/// not an error; only Certified() vouches for the snapshot. Errors: options (InvalidValue), an unreadable or malformed snapshot (its
/// reader's errors, Core's messages), a base block not in the blocks' best chain (InvalidValue),
/// coins mode without undo data (NotFound), unreadable blocks. Only reads its inputs; blocks until
/// done.
Result<SnapshotVerdict> VerifySnapshot(const VerifySnapshotOptions& options);

} // namespace ibdkit::swiftsync

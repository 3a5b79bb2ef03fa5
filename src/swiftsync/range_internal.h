// src/swiftsync/range_internal.h (internal) — what the two modes' range checks share.
#pragma once

#include <ibdkit/blockfile/locate.h>
#include <ibdkit/error.h>
#include <ibdkit/swiftsync/check_range.h>

#include <filesystem>
#include <optional>

namespace ibdkit::swiftsync {

/// Adds one block at `height` to `partial` (aggregates, counts, supply, unspent coins) without
/// CheckBlock: the step CheckRange runs, for a driver whose blocks come from elsewhere. `hints`
/// are the block's unspent indices (Hints::Indices). An index past the block's spendable outputs
/// sets partial.failure ("swiftsync-hint-out-of-range") and adds nothing. Outpoints mode without
/// `spent`; coins mode with it: the block's spent coins (its undo data, one per input after the
/// coinbase, checked for shape by the caller) are the inputs' elements, each output's Coin its own.
/// `hints` must be strictly increasing (as Hints::Indices gives them).
void AccumulateBlock(const Block& block, uint32_t height, const BlockHash& hash, ChainType chain,
                     std::span<const uint32_t> hints, const SaltedHasher& hasher, bool collect_unspent, Partial& partial,
                     const BlockUndo* spent = nullptr);

/// Adds one block's partial to the range's, first handing its unspent coins to
/// options.on_unspent when set: the sink of a range's block walk. An error from on_unspent is
/// returned; a refused block stops the walk (an Error of code Errc::Ok, block_walk.h).
std::optional<Error> MergeBlock(Partial& partial, Partial& block, const CheckRangeOptions& options);

/// The chain a whole-chain run reads (replay.h, verify_snapshot.h): a source naming exactly one
/// directory, a data directory for coins mode (Errc::InvalidValue saying what to give otherwise);
/// then LocateBlocks' result.
Result<LocatedChain> LocateForMode(const BlockFileSource& source, AggregateMode mode);

/// Blocks 1..n of `loc` checked as one range in `mode`: CheckRangeCoins with the undo data of
/// `datadir` and `coins`' assumevalid and skip_scripts (coins.undo is ignored), or CheckRange.
Result<Partial> CheckFromGenesis(const LocatedChain& loc, const std::filesystem::path& datadir, const Hints& hints, const Salt& salt,
                                 uint32_t n, AggregateMode mode, const CheckRangeOptions& options, const CoinsModeOptions& coins);

} // namespace ibdkit::swiftsync

// src/swiftsync/range_internal.h (internal) — what the two modes' range checks share.
#pragma once

#include <ibdkit/blockfile/locate.h>
#include <ibdkit/error.h>
#include <ibdkit/swiftsync/check_range.h>

#include <filesystem>
#include <optional>

namespace ibdkit::swiftsync {

/// Adds one block's partial to the range's, first handing its unspent coins to
/// options.on_unspent when set: the sink of a range's block walk. An error from on_unspent is
/// returned; a refused block stops the walk (an Error of code Errc::Ok, block_walk.h).
std::optional<Error> MergeBlock(Partial& partial, Partial& block, const CheckRangeOptions& options);

/// The chain a whole-chain run reads (replay.h, verify_snapshot.h): exactly one of `datadir` and
/// `blocks_dir`, and a data directory for coins mode (Errc::InvalidValue saying what to give
/// otherwise); then LocateFromDatadir or LocateFromBlocksDir's result.
Result<LocatedChain> LocateForMode(const std::filesystem::path& datadir, const std::filesystem::path& blocks_dir,
                                   std::optional<ChainType> chain, AggregateMode mode);

/// Blocks 1..n of `loc` checked as one range in `mode`: CheckRangeCoins with the undo data of
/// `datadir` and `coins`' assumevalid and skip_scripts (coins.undo is ignored), or CheckRange.
Result<Partial> CheckFromGenesis(const LocatedChain& loc, const std::filesystem::path& datadir, const Hints& hints, const Salt& salt,
                                 uint32_t n, AggregateMode mode, const CheckRangeOptions& options, const CoinsModeOptions& coins);

} // namespace ibdkit::swiftsync

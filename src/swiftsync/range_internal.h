// src/swiftsync/range_internal.h (internal) — what the two modes' range checks share.
#pragma once

#include <ibdkit/error.h>
#include <ibdkit/swiftsync/check_range.h>

#include <optional>

namespace ibdkit::swiftsync {

/// Adds one block's partial to the range's, first handing its unspent coins to
/// options.on_unspent when set: the sink of a range's block walk. An error from on_unspent is
/// returned; a refused block stops the walk (an Error of code Errc::Ok, block_walk.h).
std::optional<Error> MergeBlock(Partial& partial, Partial& block, const CheckRangeOptions& options);

} // namespace ibdkit::swiftsync

// ibdkit/run/swiftsync_ranges.h — `ibdkit swiftsync` as one driver: blocks 1..n checked against a
// hintsfile range by range, as a distributed driver splits the work, then one verdict
// (swiftsync/check_range.h's CheckRange or CheckRangeCoins for each range, Combine over them).
//
// The salt is drawn inside, for this run, and never leaves it. Nothing is written. The ranges run
// one after another on the calling thread and `threads` workers; a driver that spreads them over
// machines calls CheckRange itself (Python's `ibdkit.swiftsync` under Dask does).
#pragma once

#include <ibdkit/blockfile/source.h>
#include <ibdkit/chain/chain_type.h>
#include <ibdkit/error.h>
#include <ibdkit/settings/run_settings.h>
#include <ibdkit/swiftsync/aggregate.h>
#include <ibdkit/swiftsync/check_range.h>

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <functional>

namespace ibdkit::run {

/// The shared settings (settings/run_settings.h: threads per range, the blocks' buffer policy, and
/// in coins mode assumevalid and skip_scripts; dbcache_mib is not used) and the check's own.
struct SwiftSyncRangesOptions : RunSettings {
    std::filesystem::path hints;  ///< the hintsfile (BIP 456, `ibdkit hints`); its height is n
    BlockFileSource source;       ///< the blocks, exactly one; coins mode needs a datadir (its rev files)
    swiftsync::AggregateMode mode{swiftsync::AggregateMode::OutPoints};
    unsigned ranges{4};           ///< 1..n split into this many (at least 1, at most n)
    std::function<void(uint32_t height, uint32_t n)> on_progress; ///< after each batch, on the calling thread
};

struct SwiftSyncRangesResult {
    ChainType chain{ChainType::MAIN};
    swiftsync::AggregateMode mode{swiftsync::AggregateMode::OutPoints};
    uint32_t height{0};           ///< n, the hintsfile's height
    std::size_t ranges{0};        ///< the ranges checked (none when n is 0)
    swiftsync::Verdict verdict;   ///< a refused history is a verdict (ok false, the reason), not an error
};

/// Checks blocks 1..n of `options.source` against `options.hints` in `options.mode`, in
/// `options.ranges` ranges, and combines them. Errors: an unreadable or malformed hintsfile (its
/// reader's), blocks that cannot be located or read (LocateBlocks', CheckRange's), coins mode
/// without a datadir (Errc::InvalidValue) or without its rev files (LocateUndoInDatadir's). Only
/// reads its inputs; blocks until done.
Result<SwiftSyncRangesResult> CheckSwiftSyncRanges(const SwiftSyncRangesOptions& options);

} // namespace ibdkit::run

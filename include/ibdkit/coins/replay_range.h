// ibdkit/coins/replay_range.h — the blocks a chainstate left mid-flush must roll forward
// (CoinsDB::NeedsReplay, coins/coins_db.h); a chainstate's statistics report it (utxo/utxo_stats.h).
#pragma once

#include <ibdkit/primitives/hash.h>

namespace ibdkit {

/// The blocks to replay after an interrupted flush: everything after `old_tip` up to `new_tip`.
struct ReplayRange {
    BlockHash new_tip;
    BlockHash old_tip; ///< null if the interrupted flush started from an empty database
};

} // namespace ibdkit

// ibdkit/wire/peer_summary.h — what one peer did in a sync from several (run/sync_peers.h,
// run/swiftsync_sync.h): the one record the download keeps per peer and the run reports.
#pragma once

#include <cstdint>
#include <string>

namespace ibdkit {

/// One peer of a run that downloaded from several. Plain data; filled by the download, read after.
struct PeerSummary {
    std::string address;    ///< HOST:PORT as given to --connect
    std::string user_agent; ///< sanitized as Core's getpeerinfo shows it (SanitizePeerText)
    uint64_t blocks{0};      ///< blocks it served that the run used
    uint64_t block_bytes{0}; ///< their bytes
    uint64_t spent_bytes{0}; ///< `bspent` bytes it served (BIP 455); 0 in a classic sync
    std::string dropped;    ///< why the run dropped it; empty when it served to the end
    /// The last height of the run's header chain it showed it holds (Core's getpeerinfo
    /// `synced_headers`; no block above it is asked of it), -1 when unknown.
    int64_t synced_headers{-1};
};

} // namespace ibdkit

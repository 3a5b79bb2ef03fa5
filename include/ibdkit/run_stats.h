// ibdkit/run_stats.h — counters a run reports beside its chainstate: what a scan of block files
// met (a replay's result), and throughput per tenth of the block bytes (replay --json and
// replay --swiftsync --json: throughput_by_decile).
#pragma once

#include <cstdint>

namespace ibdkit {

/// Counts of what a scan of block files (ScanBlockFiles) met besides good records.
struct BlockFileScanStats {
    uint64_t records{0};         ///< well-framed records found
    uint64_t bytes{0};           ///< bytes of block data in those records
    uint64_t skipped_bytes{0};   ///< bytes skipped while resynchronising on the magic
    uint64_t truncated{0};       ///< records whose declared size ran past the end of the file
    uint64_t zero_tail_bytes{0}; ///< pre-allocated zero bytes at file ends
    uint64_t bytes_read{0};      ///< bytes the scan read from disk (88 per record plus resync/tail reads)
};

/// Throughput over one slice of a run's block bytes.
struct ThroughputSlice {
    int height_from{0};
    int height_to{0};
    double blocks_per_s{0};
    double mb_per_s{0}; ///< 10^6 block bytes per second
};

} // namespace ibdkit

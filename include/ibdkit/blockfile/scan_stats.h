// ibdkit/blockfile/scan_stats.h — what a scan of block files met (ScanBlockFiles, blockfile.h):
// a replay's result carries it.
#pragma once

#include <cstdint>

namespace ibdkit {

/// Counts of what a scan met besides good records.
struct BlockFileScanStats {
    uint64_t records{0};         ///< well-framed records found
    uint64_t bytes{0};           ///< bytes of block data in those records
    uint64_t skipped_bytes{0};   ///< bytes skipped while resynchronising on the magic
    uint64_t truncated{0};       ///< records whose declared size ran past the end of the file
    uint64_t zero_tail_bytes{0}; ///< pre-allocated zero bytes at file ends
    uint64_t bytes_read{0};      ///< bytes the scan read from disk (88 per record plus resync/tail reads)
};

} // namespace ibdkit

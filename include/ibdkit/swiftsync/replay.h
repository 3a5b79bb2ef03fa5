// ibdkit/swiftsync/replay.h — a whole chain checked with SwiftSync (`ibdkit replay --swiftsync`):
// blocks 1..n against a hintsfile in one range over every thread, then the verdict, and the UTXO
// set at n — the hinted-unspent coins — written as a new chainstate in Core's format.
//
// Coins mode (the default) reads a Core data directory with its rev files and checks what Core's
// ConnectBlock checks (check_range.h, CheckRangeCoins); outpoints mode reads any blocks and checks
// much less (docs/swiftsync.md, *Trust*). Blocks are checked in any order: no coin is looked up,
// none deleted. The hinted-unspent coins are sorted into chainstate key order as they are found,
// within --dbcache (sorted runs beyond it spill to unlinked files in the chainstate's folder);
// only an accepted history is written, in one bulk load with block n as its best block. A refused
// one, or an error, removes the new chainstate.
#pragma once

#include <ibdkit/blockfile/source.h>
#include <ibdkit/chain/params.h>
#include <ibdkit/run_stats.h>
#include <ibdkit/error.h>
#include <ibdkit/primitives/hash.h>
#include <ibdkit/settings/run_settings.h>
#include <ibdkit/swiftsync/aggregate.h>
#include <ibdkit/swiftsync/check_range.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace ibdkit::swiftsync {

/// Where the check of blocks 1..n is, with what a rate and an ETA need (SwiftSyncOptions::on_progress).
struct SwiftSyncProgress {
    uint32_t height{0}, n{0}; ///< blocks 1..height checked of 1..n
    uint64_t bytes{0};        ///< their bytes
    double elapsed_s{0};      ///< since the check began (while writing: the check's time)
    std::size_t peers{0};     ///< over P2P: the peers still serving (0 from files)
    /// Once blocks 1..n are accepted the chainstate is written (when one is named): `writing`,
    /// coins_written of coins_to_write, reported at its start, about four times a second and at
    /// its end. Interrupting then discards the chainstate as during the check.
    bool writing{false};
    uint64_t coins_written{0}, coins_to_write{0};
};

/// The shared settings (settings/run_settings.h: dbcache_mib bounding the coins held while they
/// are sorted; assumevalid and skip_scripts in coins mode) and SwiftSync's own.
struct SwiftSyncOptions : RunSettings {
    BlockFileSource source;           ///< the blocks, exactly one; coins mode needs a datadir (its rev files)
    std::filesystem::path hints;      ///< the hintsfile (BIP 456) for height n
    /// The new chainstate (a folder that does not exist or is empty; common/write_guard.h's
    /// refusals apply). Empty: nothing is written, the verdict alone is the result.
    std::filesystem::path chainstate;
    AggregateMode mode{AggregateMode::Coins};
    std::function<void(const SwiftSyncProgress& progress)> on_progress; ///< on the calling thread
    /// Ctrl-C for SwiftSyncReplay (a sync from peers has SwiftSyncPeersOptions::interrupt): looked
    /// at within every batch of the check and while the chainstate is written; set, the run fails
    /// "interrupted" (Errc::Io) and the new chainstate is removed. Null: never.
    const std::atomic<bool>* interrupt{nullptr};
};

struct SwiftSyncResult {
    ChainType chain{ChainType::MAIN};
    AggregateMode mode{AggregateMode::Coins};
    Verdict verdict;
    uint32_t height{0};               ///< n, the hintsfile's height
    BlockHash tip;                    ///< the block at n
    uint64_t script_checked_inputs{0};
    /// The lowest height whose scripts were verified, and Core's reason (coins mode).
    std::optional<int> script_checks_from_height;
    std::string script_check_reason;
    uint64_t coins_written{0};        ///< into the chainstate (0 without one)
    uint64_t block_bytes{0};          ///< of blocks 1..n, read
    uint64_t bytes_cleansed{0};       ///< zeroed by the buffer policy's frees of the blocks' bytes
    double seconds{0};
    double check_seconds{0};          ///< of which the check of blocks 1..n (the rest: sorting's end, the write)
    /// The check's throughput per tenth of the blocks' bytes (common/throughput.h).
    std::vector<ThroughputSlice> throughput_by_decile;
};

/// Runs the check (and writes the chainstate). A refused history is not an error (verdict.ok is
/// false, verdict.reason says why, Core's reject reason for a block's rule). Errors: bad options
/// (Errc::InvalidValue), an unreadable hintsfile or blocks (their Errcs), a hintsfile above the
/// blocks' tip, coins mode without undo data for every block 1..n (Errc::NotFound, naming the
/// block), a chainstate the write guards refuse or that is not empty (Errc::Refused), a failed
/// write. Not thread-safe with another run on the same chainstate. Blocks until the run ends;
/// `on_progress` runs on the calling thread.
Result<SwiftSyncResult> SwiftSyncReplay(const SwiftSyncOptions& options);

/// The unspent runs of ranges that a verdict accepted (partial.h; from other machines, e.g. a Dask
/// run) written as a new chainstate at `dir` with `tip`, the block at n, as its best block: the
/// runs merged in key order into one bulk load, each record decoded (checked) and written again in
/// its canonical bytes, which are those that travelled. Returns the coins written. The caller vouches that Combine accepted these ranges; the runs are checked as they
/// are read. Errors: a run that does not decode, or an outpoint in two runs (Errc::InvalidValue,
/// and nothing is left), `dir` refused by the write guards or not empty (Errc::Refused), a failed
/// write. A failure removes what was written. `runs` is read during the call only.
Result<uint64_t> WriteUnspentRuns(std::span<const std::span<const uint8_t>> runs, const std::filesystem::path& dir, ChainType chain,
                                  const BlockHash& tip);

} // namespace ibdkit::swiftsync

// ibdkit/run/classic_run.h — the classic engine's runs as drivers, for the CLI and any library
// caller: `replay` over block files (engine/replay.h) and `sync` from one or several peers
// (engine/sync.h, run/sync_peers.h), each followed, when it connected every block it was given, by
// what the caller asked of the chainstate it leaves: the UTXO set at the height the run stopped at,
// exported and re-read (utxo/export.h, utxo/snapshot.h), and, after a replay, the SwiftSync
// hintsfile (BIP 456) for its tip, built from the same blocks (swiftsync/build_hints.h).
#pragma once

#include <ibdkit/chain/params.h>
#include <ibdkit/coins/coins_db.h>
#include <ibdkit/engine/replay.h>
#include <ibdkit/engine/sync.h>
#include <ibdkit/error.h>
#include <ibdkit/run/sync_peers.h>
#include <ibdkit/swiftsync/build_hints.h>
#include <ibdkit/utxo/address.h>
#include <ibdkit/utxo/export.h>
#include <ibdkit/utxo/snapshot.h>

#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace ibdkit::run {

/// The export formats by name: "csv", "jsonl", "sqlite" (utxo/export.h) and "snapshot" (Core's
/// dumptxoutset file, utxo/snapshot.h).
inline constexpr std::string_view EXPORT_FORMAT_NAMES[] = {"csv", "jsonl", "sqlite", "snapshot"};

/// What an export wrote and re-read: `dump` for csv, jsonl and sqlite, `snapshot` for a snapshot.
struct ChainstateExport {
    std::optional<ExportResult> dump;
    std::optional<SnapshotWriteResult> snapshot;
};

/// Writes `format` (EXPORT_FORMAT_NAMES) of `db` to `out` and re-reads it: ExportUtxoSet with
/// addresses of `net`, or WriteUtxoSnapshot with the metadata of `params`. `out` appears only once
/// verified. Errors: theirs, and Errc::InvalidValue for another format. Only reads `db`; `progress`
/// (a snapshot reports the phase "write") runs on the calling thread.
Result<ChainstateExport> ExportChainstate(const CoinsDB& db, std::string_view format, const std::filesystem::path& out,
                                          const ChainParams& params, AddressNetwork net, const ExportProgress& progress = {});

/// The UTXO set as it stood at `height`: the run stops there, then writes `format` to `out`.
struct HeightExport {
    int height{0};
    std::string format; ///< EXPORT_FORMAT_NAMES
    std::filesystem::path out;
};

/// What a classic run leaves besides its chainstate.
struct RunOutputs {
    /// Stops the run at its height (another `stop_height` is refused); without a chainstate
    /// named, the run goes into a temporary one, removed before the driver returns.
    std::optional<HeightExport> height_export;
    /// Replay only: the hintsfile for the chainstate's tip (empty: none); without a chainstate
    /// named, the run goes into a temporary one.
    std::filesystem::path write_hints;
    ExportProgress on_export_progress; ///< on the calling thread
    std::function<void(uint32_t height, uint32_t target)> on_hints_progress; ///< on the calling thread
};

/// What was written after a run that connected every block it was given (no reject, interrupt
/// or peer failure); both empty after any other run, whatever was asked.
struct RunOutputsResult {
    std::optional<ChainstateExport> exported;
    std::optional<swiftsync::BuildHintsResult> hints;
};

struct ReplayRunResult {
    ReplayResult replay;
    RunOutputsResult outputs;
};

/// Replays with `options`, then writes `outputs`. Errors: Replay's; an output file the write guard
/// refuses (Errc::Refused) or a `stop_height` other than the export's (Errc::InvalidValue), both
/// before any block is read; a clean run that stopped below or above the export's height (a
/// chainstate cannot go back), or an output that cannot be written: the output's error (the
/// chainstate stays as the run left it). Blocks until done; callbacks on the calling thread.
Result<ReplayRunResult> RunReplay(ReplayOptions options, const RunOutputs& outputs);

struct SyncRunResult {
    SyncPeersResult sync; ///< from one peer: its result, no peers listed
    RunOutputsResult outputs;
};

/// The classic sync from `connect` (HOST[:PORT] each, the network's port if omitted; at least
/// one): from one peer, Sync (engine/sync.h: the getblocks fallback and reorganisations below the
/// tip allowed; `options`' host and port are set here); from several, SyncFromPeers. Then the
/// height export (`outputs.write_hints` must be empty). Errors as for RunReplay, Sync's and
/// SyncFromPeers'. Blocks until done; callbacks on the calling thread.
Result<SyncRunResult> RunSync(SyncOptions options, const std::vector<std::string>& connect, const RunOutputs& outputs);

} // namespace ibdkit::run

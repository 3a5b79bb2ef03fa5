// ibdkit/run/result_fields.h — a run's result as named, typed fields.
//
// The one place a ReplayResult / SyncResult / SwiftSync run (and a UtxoStats) becomes the fields a
// user reads: the CLI's `--json` (replay, replay --swiftsync, sync) and the Python package's dicts
// (`ibdkit.replay`, `ibdkit.replay(swiftsync=...)`, `ibdkit.sync`, `Chainstate.stats`) both convert
// these lists, so the two name and type every field alike; another binding converts them too.
// gettxoutsetinfo's names where it has one (height, bestblock, txouts, transactions, bogosize,
// total_amount — a decimal string "21.00000000" as Core's FormatMoney writes it, beside the exact
// integer total_amount_sat — hash_serialized_3). The field list and the choices: docs/python.md,
// *Result fields*. Every function here is pure (it reads the result it is given) and thread-safe.
#pragma once

#include <ibdkit/engine/replay.h>
#include <ibdkit/engine/sync.h>
#include <ibdkit/memory/policy_id.h>
#include <ibdkit/run/block_export.h>
#include <ibdkit/run/swiftsync_ranges.h>
#include <ibdkit/run/swiftsync_run.h>
#include <ibdkit/run/swiftsync_sync.h>
#include <ibdkit/run/sync_peers.h>
#include <ibdkit/swiftsync/build_hints.h>
#include <ibdkit/swiftsync/verify_snapshot.h>
#include <ibdkit/utxo/stats.h>

#include <cstdint>
#include <filesystem>
#include <string>
#include <variant>
#include <vector>

namespace ibdkit {

struct ResultField;

/// One field's value: null, bool, signed or unsigned integer, double, string, a list of values or
/// an object (named fields in order).
struct ResultValue {
    using List = std::vector<ResultValue>;
    using Object = std::vector<ResultField>;
    std::variant<std::nullptr_t, bool, int64_t, uint64_t, double, std::string, List, Object> value;
};

/// A named value: one field of a result, or of an object inside it.
struct ResultField {
    std::string key;
    ResultValue value;
};

/// A result's fields, in the order the CLI prints them.
using ResultFields = std::vector<ResultField>;

/// A UTXO set's statistics under gettxoutsetinfo's names: height, bestblock, txouts,
/// transactions, bogosize, total_amount (string), total_amount_sat, hash_serialized_3,
/// height_source ("max-coin-height" or "argument"), and interrupted_flush ({new_tip, old_tip})
/// only when the database was left mid-flush.
ResultFields UtxoStatsFields(const UtxoStats& u);

/// Throughput per tenth (throughput_by_decile) as a list of {height_from, height_to,
/// blocks_per_s, mb_per_s}.
ResultValue DecilesValue(const std::vector<ThroughputSlice>& slices);

/// A replay's result: the network, the policy, the tip, the statistics (when computed), the run's
/// counters and timing, what the block source skipped, and reject_reason / reject_height (null
/// unless a block failed its checks).
ResultFields ReplayResultFields(const ReplayResult& r, PolicyId policy);

/// A sync's result: as a replay's, with the peer, the headers and the messages in place of the
/// block files' counts, failure (null unless the peer failed us) and peer_rejects.
ResultFields SyncResultFields(const SyncResult& r, PolicyId policy);

/// What a sync the peer failed says before the peer's reason, the CLI's error and Python's
/// exception alike: where the chainstate stays ("sync stopped at height N"), or that no block was
/// connected ("sync stopped before its first block").
std::string SyncStopped(const SyncResult& r);

/// A SwiftSync verdict (the `swiftsync` object of a SwiftSync run's result): ok, reason (null when
/// accepted), mode, the counts (blocks, transactions, inputs, outputs, unspent, unspendable),
/// supply_sat and supply_bound_sat.
ResultValue SwiftSyncVerdictValue(const swiftsync::Verdict& v, swiftsync::AggregateMode mode);

/// `replay --swiftsync`'s result: network, policy, the tip (height n, bestblock), the written
/// chainstate's statistics (when computed), the verdict (`swiftsync`), the timing, the script
/// counters under the replay's names, coins_written, peak_rss_bytes, and `fallback` (null unless
/// the classic replay ran: {valid, height, reject_reason, reject_height, hash_serialized_3, error}).
ResultFields SwiftSyncRunFields(const run::SwiftSyncRunResult& r, PolicyId policy);

/// `sync --swiftsync`'s result: network, policy, the final tip (after the continuation), the final
/// chainstate's statistics, the verdict (`swiftsync`) at swiftsync_height (swiftsync_resumed: an
/// earlier run's, this one resumed the classic rest), header_height, timing,
/// bytes (blocks 1..n), spent_bytes (their `bspent`s) and spent_bytes_saved (by the cutoff), the scripts, coins_written, `peers`
/// ({address, user_agent, synced_headers, blocks, block_bytes, spent_bytes, dropped}), `unreachable`, `notes`,
/// `continuation` (null, or {blocks, height, seconds, failure, reject_reason}), peak_rss_bytes.
ResultFields SwiftSyncPeersFields(const run::SwiftSyncPeersResult& r, PolicyId policy);

/// The classic `sync` from several peers: SyncResultFields, then `peers`, `unreachable` and `notes`
/// as SwiftSyncPeersFields has them.
ResultFields SyncPeersFields(const run::SyncPeersResult& r, PolicyId policy);

/// `utxo verify-snapshot`'s verdict: ok (Certified()), reason (null when certified), mode,
/// outpoints_proven (the sums matched), network, policy, base, height, the snapshot's coins and
/// amount_sat, the blocks' counts (blocks, inputs, outputs), script_checked_inputs,
/// bytes_cleansed, seconds.
ResultFields SnapshotVerdictFields(const swiftsync::SnapshotVerdict& r, PolicyId policy);

/// What SwiftSync counted over its ranges: {blocks, transactions, inputs, outputs, unspent,
/// unspendable} (a verdict's `counts`, and a Python Partial's).
ResultValue RangeCountsValue(const swiftsync::RangeCounts& c);

/// A verdict over ranges (Combine, swiftsync/check_range.h): ok, reason (null when accepted),
/// network, height (n), ranges, counts (RangeCountsValue), supply_sat, supply_bound_sat, mode,
/// script_checked_inputs. Python's `swiftsync.combine()` Verdict.
ResultFields RangesVerdictFields(const run::SwiftSyncRangesResult& r);

/// `ibdkit swiftsync`'s verdict: RangesVerdictFields with the policy after the network.
ResultFields SwiftSyncRangesFields(const run::SwiftSyncRangesResult& r, PolicyId policy);

/// A hintsfile built (`ibdkit hints`, and `replay --write-hints`'s `hints` object): network,
/// policy, height, tip, coins, outputs, bytes, key_bytes, attempts, out (the file written).
ResultFields HintsFields(const swiftsync::BuildHintsResult& r, PolicyId policy, const std::filesystem::path& out);

/// A table of blocks written (`ibdkit export`): out (the file), table, rows, blocks, from_height,
/// to_height (-1: no block), block_bytes, seconds.
ResultFields BlockExportFields(const run::BlockExportResult& r, BlockTable table, const std::filesystem::path& out);

} // namespace ibdkit

// A run's result as named, typed fields (include/ibdkit/run/result_fields.h).
#include <ibdkit/run/result_fields.h>

#include <optional>
#include <string>
#include <utility>

namespace ibdkit {
namespace {

ResultValue Null() { return ResultValue{nullptr}; }
ResultValue Int(int64_t v) { return ResultValue{v}; }
ResultValue UInt(uint64_t v) { return ResultValue{v}; }
ResultValue Real(double v) { return ResultValue{v}; }
ResultValue Bool(bool v) { return ResultValue{v}; }
ResultValue Str(std::string v) { return ResultValue{std::move(v)}; }

void Put(ResultFields& f, std::string key, ResultValue v) { f.push_back(ResultField{std::move(key), std::move(v)}); }

/// The statistics after height and bestblock (which the caller puts first).
void PutUtxoStats(ResultFields& f, const UtxoStats& u)
{
    Put(f, "txouts", UInt(u.txouts));
    Put(f, "transactions", UInt(u.transactions));
    Put(f, "bogosize", UInt(u.bogosize));
    Put(f, "total_amount", Str(FormatMoney(u.total_amount)));
    Put(f, "total_amount_sat", Int(u.total_amount));
    Put(f, "hash_serialized_3", Str(u.hash_serialized.ToHex()));
    Put(f, "height_source", Str(u.height_from_coins ? "max-coin-height" : "argument"));
    if (u.interrupted_flush) {
        Put(f, "interrupted_flush", ResultValue{ResultValue::Object{{"new_tip", Str(u.interrupted_flush->new_tip.ToHex())},
                                                                    {"old_tip", Str(u.interrupted_flush->old_tip.ToHex())}}});
    }
}

/// The tip (height -1 and bestblock null when nothing is connected) and the statistics when computed.
void PutTip(ResultFields& f, const EngineResult& r)
{
    Put(f, "height", Int(r.height));
    Put(f, "bestblock", r.height < 0 ? Null() : Str(r.tip.ToHex()));
    if (r.utxo) PutUtxoStats(f, *r.utxo);
}

/// How many inputs' scripts were verified, from which height and why (null: none was).
void PutScripts(ResultFields& f, uint64_t checked, const std::optional<int>& from_height, const std::string& reason)
{
    Put(f, "script_checked_inputs", UInt(checked));
    Put(f, "script_checks_from_height", from_height ? Int(*from_height) : Null());
    Put(f, "script_check_reason", from_height ? Str(reason) : Null());
}

/// What every block-connecting run reports.
void PutRun(ResultFields& f, const EngineResult& c)
{
    const double s = c.seconds;
    Put(f, "blocks_connected", UInt(c.blocks));
    Put(f, "start_height", Int(c.start_height));
    Put(f, "transactions_connected", UInt(c.txs));
    Put(f, "inputs", UInt(c.inputs));
    Put(f, "outputs", UInt(c.outputs));
    Put(f, "bytes", UInt(c.bytes));
    Put(f, "seconds", Real(s));
    Put(f, "total_seconds", Real(c.total_seconds));
    Put(f, "final_flush_seconds", Real(c.final_flush_seconds));
    Put(f, "blocks_per_s", Real(s > 0 ? double(c.blocks) / s : 0.0));
    Put(f, "mb_per_s", Real(s > 0 ? double(c.bytes) / 1e6 / s : 0.0));
    Put(f, "flushes", UInt(c.flushes));
    Put(f, "flush_seconds", Real(c.flush_seconds));
    Put(f, "cache_full_entries", UInt(c.cache_full_entries));
    Put(f, "cache_full_bytes", UInt(c.cache_full_bytes));
    Put(f, "recovered_blocks", UInt(c.recovered_blocks));
    Put(f, "interrupted", Bool(c.interrupted));
    Put(f, "kept_height", c.kept_height ? Int(*c.kept_height) : Null());
    Put(f, "threads", UInt(c.threads));
    Put(f, "bytes_cleansed", UInt(c.bytes_cleansed));
    Put(f, "coins_read_from_disk", UInt(c.coins_read_from_disk));
    Put(f, "coins_prefetched", UInt(c.coins_prefetched));
    Put(f, "blocks_disconnected", UInt(c.blocks_disconnected));
    Put(f, "reorg_fork_height", Int(c.reorg_fork_height));
    Put(f, "undo_records", UInt(c.undo_records));
    Put(f, "undo_bytes", UInt(c.undo_bytes));
    Put(f, "peak_rss_bytes", UInt(c.peak_rss_bytes));
    PutScripts(f, c.script_checked_inputs, c.script_checks_from_height, c.script_check_reason);
    Put(f, "throughput_by_decile", DecilesValue(c.throughput_by_decile));
}

/// The fields every run's result opens with: the network and the buffer policy.
ResultFields Begin(const EngineResult& r, PolicyId policy)
{
    ResultFields f;
    Put(f, "network", Str(std::string(ChainTypeName(r.chain))));
    Put(f, "policy", Str(std::string(PolicyName(policy))));
    return f;
}

void PutReject(ResultFields& f, const EngineResult& r)
{
    Put(f, "reject_reason", r.reject_reason ? Str(*r.reject_reason) : Null());
    Put(f, "reject_height", r.reject_reason ? Int(r.reject_height) : Null());
}

} // namespace

ResultValue DecilesValue(const std::vector<ThroughputSlice>& slices)
{
    ResultValue::List out;
    for (const auto& t : slices) {
        out.push_back(ResultValue{ResultValue::Object{{"height_from", Int(t.height_from)},
                                                      {"height_to", Int(t.height_to)},
                                                      {"blocks_per_s", Real(t.blocks_per_s)},
                                                      {"mb_per_s", Real(t.mb_per_s)}}});
    }
    return ResultValue{std::move(out)};
}

ResultFields UtxoStatsFields(const UtxoStats& u)
{
    ResultFields f;
    Put(f, "height", Int(u.height));
    Put(f, "bestblock", Str(u.best_block.ToHex()));
    PutUtxoStats(f, u);
    return f;
}

ResultFields ReplayResultFields(const ReplayResult& r, PolicyId policy)
{
    ResultFields f = Begin(r, policy);
    PutTip(f, r);
    PutRun(f, r);
    Put(f, "bytes_read", UInt(r.bytes_read));
    Put(f, "orphans", UInt(r.orphans));
    Put(f, "stale", UInt(r.stale));
    Put(f, "duplicates", UInt(r.duplicates));
    Put(f, "skipped_bytes", UInt(r.scan.skipped_bytes));
    Put(f, "scan_bytes_read", UInt(r.scan.bytes_read));
    Put(f, "truncated_records", UInt(r.scan.truncated));
    Put(f, "live_snapshot_height", r.live_height < 0 ? Null() : Int(r.live_height));
    PutReject(f, r);
    return f;
}

ResultValue SwiftSyncVerdictValue(const swiftsync::Verdict& v, swiftsync::AggregateMode mode)
{
    const auto& c = v.counts;
    return ResultValue{ResultValue::Object{{"ok", Bool(v.ok)},
                                           {"reason", v.ok ? Null() : Str(v.reason)},
                                           {"mode", Str(std::string(swiftsync::AggregateModeName(mode)))},
                                           {"blocks", UInt(c.blocks)},
                                           {"transactions", UInt(c.transactions)},
                                           {"inputs", UInt(c.inputs)},
                                           {"outputs", UInt(c.outputs)},
                                           {"unspent", UInt(c.unspent)},
                                           {"unspendable", UInt(c.unspendable)},
                                           {"supply_sat", UInt(v.supply)},
                                           {"supply_bound_sat", UInt(v.supply_bound)}}};
}

ResultFields SwiftSyncRunFields(const run::SwiftSyncRunResult& run, PolicyId policy)
{
    const swiftsync::SwiftSyncResult& r = run.swiftsync;
    ResultFields f;
    Put(f, "network", Str(std::string(ChainTypeName(r.chain))));
    Put(f, "policy", Str(std::string(PolicyName(policy))));
    Put(f, "height", Int(r.height));
    Put(f, "bestblock", Str(r.tip.ToHex()));
    if (run.utxo) PutUtxoStats(f, *run.utxo);
    Put(f, "swiftsync", SwiftSyncVerdictValue(r.verdict, r.mode));
    Put(f, "seconds", Real(r.seconds));
    Put(f, "check_seconds", Real(r.check_seconds));
    Put(f, "bytes", UInt(r.block_bytes));
    Put(f, "bytes_cleansed", UInt(r.bytes_cleansed));
    Put(f, "throughput_by_decile", DecilesValue(r.throughput_by_decile));
    PutScripts(f, r.script_checked_inputs, r.script_checks_from_height, r.script_check_reason);
    Put(f, "coins_written", UInt(r.coins_written));
    Put(f, "peak_rss_bytes", UInt(run.peak_rss_bytes));
    if (!run.fallback) {
        Put(f, "fallback", Null());
        return f;
    }
    const run::FallbackVerdict& fb = *run.fallback;
    Put(f, "fallback", ResultValue{ResultValue::Object{
                           {"valid", Bool(fb.valid)},
                           {"height", Int(fb.height)},
                           {"reject_reason", fb.reject_reason ? Str(*fb.reject_reason) : Null()},
                           {"reject_height", fb.reject_reason ? Int(fb.reject_height) : Null()},
                           {"hash_serialized_3", fb.hash_serialized ? Str(fb.hash_serialized->ToHex()) : Null()},
                           {"error", fb.error ? Str(*fb.error) : Null()}}});
    return f;
}

std::string SyncStopped(const SyncResult& r)
{
    if (r.height < 0) return "sync stopped before its first block";
    return "sync stopped at height " + std::to_string(r.height);
}

ResultFields SyncResultFields(const SyncResult& r, PolicyId policy)
{
    ResultFields f = Begin(r, policy);
    Put(f, "mode", Str(r.mode));
    Put(f, "peer", ResultValue{ResultValue::Object{{"user_agent", Str(r.peer_user_agent)},
                                                   {"version", Int(r.peer_version)},
                                                   {"start_height", Int(r.peer_height)},
                                                   {"services", UInt(r.peer_services)}}});
    PutTip(f, r);
    Put(f, "header_height", Int(r.header_height));
    Put(f, "headers_received", UInt(r.headers_received));
    Put(f, "competing_branches", UInt(r.competing_branches));
    PutRun(f, r);
    Put(f, "handshake_seconds", Real(r.handshake_seconds));
    Put(f, "headers_seconds", Real(r.headers_seconds));
    Put(f, "messages", UInt(r.messages));
    Put(f, "dropped_messages", UInt(r.dropped_messages));
    Put(f, "bytes_received", UInt(r.bytes_received));
    Put(f, "bytes_sent", UInt(r.bytes_sent));
    if (r.failure) {
        Put(f, "failure", ResultValue{ResultValue::Object{{"kind", Str(std::string(NetErrcName(r.failure->code)))},
                                                          {"message", Str(r.failure->message)}}});
    } else {
        Put(f, "failure", Null());
    }
    ResultValue::List rejects;
    for (const auto& s : r.peer_rejects) rejects.push_back(Str(s));
    Put(f, "peer_rejects", ResultValue{std::move(rejects)});
    PutReject(f, r);
    return f;
}

namespace {

/// The peers of a run from several: `peers` ({address, user_agent, synced_headers, blocks,
/// block_bytes, spent_bytes, dropped}), `unreachable`, `notes`.
void PutPeers(ResultFields& f, const std::vector<PeerSummary>& summaries, const std::vector<std::string>& unreachable_peers,
              const std::vector<std::string>& peer_notes)
{
    ResultValue::List peers;
    for (const PeerSummary& p : summaries) {
        peers.push_back(ResultValue{ResultValue::Object{{"address", Str(p.address)},
                                                        {"user_agent", Str(p.user_agent)},
                                                        {"synced_headers", Int(p.synced_headers)},
                                                        {"blocks", UInt(p.blocks)},
                                                        {"block_bytes", UInt(p.block_bytes)},
                                                        {"spent_bytes", UInt(p.spent_bytes)},
                                                        {"dropped", p.dropped.empty() ? Null() : Str(p.dropped)}}});
    }
    Put(f, "peers", ResultValue{std::move(peers)});
    ResultValue::List unreachable, notes;
    for (const auto& u : unreachable_peers) unreachable.push_back(Str(u));
    for (const auto& n : peer_notes) notes.push_back(Str(n));
    Put(f, "unreachable", ResultValue{std::move(unreachable)});
    Put(f, "notes", ResultValue{std::move(notes)});
}

} // namespace

ResultFields SwiftSyncPeersFields(const run::SwiftSyncPeersResult& run, PolicyId policy)
{
    const swiftsync::SwiftSyncResult& r = run.swiftsync;
    const SyncResult* c = run.continuation ? &*run.continuation : nullptr;
    ResultFields f;
    Put(f, "network", Str(std::string(ChainTypeName(r.chain))));
    Put(f, "policy", Str(std::string(PolicyName(policy))));
    Put(f, "height", Int(c ? int64_t(c->height) : int64_t(r.height)));
    Put(f, "bestblock", Str(c ? c->tip.ToHex() : r.tip.ToHex()));
    if (run.utxo) PutUtxoStats(f, *run.utxo);
    Put(f, "swiftsync", SwiftSyncVerdictValue(r.verdict, r.mode));
    Put(f, "swiftsync_height", Int(r.height));
    Put(f, "swiftsync_resumed", Bool(run.resumed));
    Put(f, "header_height", Int(run.header_height));
    Put(f, "seconds", Real(r.seconds + (c ? c->total_seconds : 0.0)));
    Put(f, "check_seconds", Real(r.check_seconds));
    Put(f, "bytes", UInt(r.block_bytes));
    Put(f, "spent_bytes", UInt(run.spent_bytes));
    Put(f, "spent_bytes_saved", UInt(run.spent_bytes_saved));
    Put(f, "throughput_by_decile", DecilesValue(r.throughput_by_decile));
    PutScripts(f, r.script_checked_inputs, r.script_checks_from_height, r.script_check_reason);
    Put(f, "coins_written", UInt(r.coins_written));
    PutPeers(f, run.peers, run.unreachable, run.notes);
    if (c) {
        Put(f, "continuation", ResultValue{ResultValue::Object{
                                   {"blocks", UInt(c->blocks)},
                                   {"height", Int(c->height)},
                                   {"seconds", Real(c->total_seconds)},
                                   {"failure", c->failure ? Str(c->failure->message) : Null()},
                                   {"reject_reason", c->reject_reason ? Str(*c->reject_reason) : Null()}}});
    } else {
        Put(f, "continuation", Null());
    }
    Put(f, "peak_rss_bytes", UInt(run.peak_rss_bytes));
    return f;
}

ResultFields SyncPeersFields(const run::SyncPeersResult& r, PolicyId policy)
{
    ResultFields f = SyncResultFields(r.sync, policy);
    PutPeers(f, r.peers, r.unreachable, r.notes);
    return f;
}

ResultFields SnapshotVerdictFields(const swiftsync::SnapshotVerdict& r, PolicyId policy)
{
    const auto& v = r.verdict;
    ResultFields f;
    Put(f, "ok", Bool(r.Certified()));
    Put(f, "reason", r.Certified() ? Null() : Str(r.Reason()));
    Put(f, "mode", Str(std::string(swiftsync::AggregateModeName(r.mode))));
    Put(f, "outpoints_proven", Bool(v.ok));
    Put(f, "network", Str(std::string(ChainTypeName(r.chain))));
    Put(f, "policy", Str(std::string(PolicyName(policy))));
    Put(f, "base", Str(r.base.ToHex()));
    Put(f, "height", UInt(r.height));
    Put(f, "coins", UInt(v.counts.unspent));
    Put(f, "amount_sat", UInt(v.supply));
    Put(f, "blocks", UInt(v.counts.blocks));
    Put(f, "inputs", UInt(v.counts.inputs));
    Put(f, "outputs", UInt(v.counts.outputs));
    Put(f, "script_checked_inputs", UInt(r.script_checked_inputs));
    Put(f, "bytes_cleansed", UInt(r.bytes_cleansed));
    Put(f, "seconds", Real(r.seconds));
    return f;
}

ResultValue RangeCountsValue(const swiftsync::RangeCounts& c)
{
    return ResultValue{ResultValue::Object{{"blocks", UInt(c.blocks)},
                                           {"transactions", UInt(c.transactions)},
                                           {"inputs", UInt(c.inputs)},
                                           {"outputs", UInt(c.outputs)},
                                           {"unspent", UInt(c.unspent)},
                                           {"unspendable", UInt(c.unspendable)}}};
}

ResultFields RangesVerdictFields(const run::SwiftSyncRangesResult& r)
{
    const auto& v = r.verdict;
    ResultFields f;
    Put(f, "ok", Bool(v.ok));
    Put(f, "reason", v.ok ? Null() : Str(v.reason));
    Put(f, "network", Str(std::string(ChainTypeName(r.chain))));
    Put(f, "height", UInt(r.height));
    Put(f, "ranges", UInt(r.ranges));
    Put(f, "counts", RangeCountsValue(v.counts));
    Put(f, "supply_sat", UInt(v.supply));
    Put(f, "supply_bound_sat", UInt(v.supply_bound));
    Put(f, "mode", Str(std::string(swiftsync::AggregateModeName(r.mode))));
    Put(f, "script_checked_inputs", UInt(v.script_checked_inputs));
    return f;
}

ResultFields SwiftSyncRangesFields(const run::SwiftSyncRangesResult& r, PolicyId policy)
{
    ResultFields f = RangesVerdictFields(r);
    f.insert(f.begin() + 3, ResultField{"policy", Str(std::string(PolicyName(policy)))}); // after the network
    return f;
}

ResultFields HintsFields(const swiftsync::BuildHintsResult& r, PolicyId policy, const std::filesystem::path& out)
{
    ResultFields f;
    Put(f, "network", Str(std::string(ChainTypeName(r.chain))));
    Put(f, "policy", Str(std::string(PolicyName(policy))));
    Put(f, "height", UInt(r.height));
    Put(f, "tip", Str(r.tip.ToHex()));
    Put(f, "coins", UInt(r.coins));
    Put(f, "outputs", UInt(r.outputs));
    Put(f, "bytes", UInt(r.bytes));
    Put(f, "key_bytes", UInt(r.key_bytes));
    Put(f, "attempts", UInt(r.attempts));
    Put(f, "out", Str(out.string()));
    return f;
}

ResultFields BlockExportFields(const run::BlockExportResult& r, BlockTable table, const std::filesystem::path& out)
{
    ResultFields f;
    Put(f, "out", Str(out.string()));
    Put(f, "table", Str(std::string(BlockTableName(table))));
    Put(f, "rows", UInt(r.rows));
    Put(f, "blocks", UInt(r.blocks));
    Put(f, "from_height", Int(r.from_height));
    Put(f, "to_height", Int(r.to_height));
    Put(f, "block_bytes", UInt(r.block_bytes));
    Put(f, "seconds", Real(r.seconds));
    return f;
}

} // namespace ibdkit

// cli/replay_cli.h — pieces shared by the commands that connect blocks (`replay`, `sync`, `run`).
#pragma once

#include "commands.h"
#include "progress.h"

#include <ibdkit/engine/replay.h>
#include <ibdkit/run/result_fields.h>
#include <ibdkit/run/swiftsync_run.h>
#include <ibdkit/run/swiftsync_sync.h>
#include <ibdkit/swiftsync/aggregate.h>
#include <ibdkit/swiftsync/replay.h>

#include <nlohmann/json.hpp>

#include <atomic>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace ibdkit::cli {

/// A result's fields (run/result_fields.h) as a JSON object (keys sorted, as nlohmann::json
/// keeps them); one value as JSON.
nlohmann::json ToJson(const ResultFields& fields);
nlohmann::json ToJson(const ResultValue& value);
/// The chainstate's tip and UTXO-set statistics for people (PrintHuman's last lines).
void PrintTip(const EngineResult& r);
/// A rejected block for people: its height and Core's reason, and the height the chainstate keeps
/// for a rerun (EngineResult::kept_height). Nothing when no block was rejected.
void PrintRejected(const EngineResult& r);
/// The options every block-connecting command (`replay`, `sync`) shares.
struct ConnectOutputArgs {
    bool no_stats{false}, json{false}, quiet{false};
};
/// Adds `--assumevalid` (into `run`), `--no-stats`, `--json` and `-q,--quiet` (AddQuietOption) to
/// `cmd`, into `args`.
void AddConnectOutputOptions(CLI::App* cmd, ConnectOutputArgs& args, RunSettingsArgs& run);
/// Adds the sizes and counts every block-connecting command takes, each checked (IntegerIn):
/// `--dbcache` and `--threads` (into `run`), `--stop-height`.
void AddEngineSizeOptions(CLI::App* cmd, RunSettingsArgs& run, int& stop_height);
/// Before any block is read: refuses (UsageError, saying what to do) a chainstate or undo folder
/// ibdkit may not write (common/write_guard.h), or the two in one folder.
void CheckEngineOutputs(const EngineOptions& o);
/// `--datadir DIR` of a run that writes a Bitcoin Core data directory: DIR into o.datadir_out, the
/// chainstate into DIR's folder of `chain` (unless --chainstate named one), DIR checked
/// (CheckDatadirWritable; a refusal is a UsageError). Nothing when `datadir` is empty.
void UseDatadirOut(EngineOptions& o, const std::string& datadir, ChainType chain);
/// The closing words of a run that wrote a data directory: how to hand it to bitcoind.
void PrintDatadirHandover(const EngineOptions& o, ChainType chain);
/// A line for each peer of a run from several (with what its spent coins took when `spent_coins`),
/// and one for each peer left out.
void PrintPeers(const std::vector<PeerSummary>& peers, const std::vector<std::string>& unreachable, bool spent_coins);
/// The line about scripts (for PrintHuman): how many inputs were verified from which height and
/// why, or that the assumevalid rule skipped them.
void PrintScripts(const EngineResult& r);
/// A run that stopped at a block breaking a rule: its height and Core's reject reason on stderr
/// (the result on stdout says it too), and exit code EXIT_INVALID_CHAIN. Nothing otherwise.
void ReportReject(const EngineResult& r);

/// SIGINT/SIGTERM for a block-connecting run: the first sets `flag` (the engine stops after the
/// block it is connecting and flushes), a second exits at once saying that a rerun on the same
/// chainstate finishes the flush. `chainstate` is the --chainstate given (empty: temporary).
void StopOnInterrupt(std::atomic<bool>* flag, const std::string& chainstate);
/// After a run that stopped on a signal: "ibdkit: interrupted: ..." with the state left (the
/// height flushed, how to resume); sets ExitCode() to EXIT_INTERRUPTED. Afterwards a signal exits
/// at once (InstallInterruptExit).
void ReportInterrupted(const EngineResult& r, const std::string& chainstate);

/// `replay --swiftsync`: runs the SwiftSync driver (run/swiftsync_run.h) with a progress line
/// (unless quiet or JSON), prints its result (JSON: SwiftSyncRunFields) and sets ExitCode() from its
/// outcome: EXIT_INVALID_CHAIN when refused, EXIT_FAILED when the fallback found the chain valid
/// (the hints or the rev data were wrong) or failed.
void RunSwiftSyncReplay(run::SwiftSyncRunOptions o, const ConnectOutputArgs& out);
/// `sync`'s `--swiftsync HINTS`, `--swiftsync-mode` and `--keep-recent N`.
struct SwiftSyncSyncArgs {
    std::string hints; ///< empty: the classic sync
    std::string mode{swiftsync::AggregateModeName(swiftsync::AggregateMode::Coins)};
    uint32_t keep_recent{0};
};
void AddSwiftSyncOptions(CLI::App* cmd, SwiftSyncSyncArgs& args);
/// `sync --swiftsync HINTS` from the peers `connect`, with the classic sync's options `classic`
/// (its settings, and the continuation after n): runs SyncSwiftSync, prints its result (or its
/// JSON), sets the exit code.
/// `sync --swiftsync … --policy all`: the same sync once per policy (CompareAllPolicies), each in a
/// child process into a temporary chainstate; the exit code.
int SwiftSyncPeersAllPolicies(const SyncOptions& classic, const std::vector<std::string>& connect, const SwiftSyncSyncArgs& args,
                              bool quiet, int rounds);
void RunSwiftSyncFromPeers(const SyncOptions& classic, const std::vector<std::string>& connect, const SwiftSyncSyncArgs& args,
                           const ConnectOutputArgs& out);

/// The result as JSON (ReplayResultFields): gettxoutsetinfo's field names plus timing and skip counts.
nlohmann::json ToJson(const ReplayResult& r, PolicyId policy);
/// The result for people.
void PrintHuman(const ReplayResult& r);
/// A progress callback drawing height, blocks/s, tx/s, MB/s, cache use and ETA on `bar`.
std::function<void(const ReplayProgress&)> ProgressPrinter(std::shared_ptr<ProgressLine> bar, std::string label);

struct PolicyRun {
    PolicyId policy;
    ReplayResult result;
    long peak_rss_kib{0};
    std::string error;
};
/// Runs `job` in a child process, so that each run's peak RSS is its own: the job returns the
/// run's result as JSON (the keys of replay --json: blocks_connected, bytes, transactions_connected,
/// seconds, bytes_cleansed, height; coins_read_from_disk, hash_serialized_3 and txouts if it has
/// them), or "!" and why it failed.
PolicyRun RunInChild(PolicyId policy, const std::function<std::string()>& job);
/// Runs one replay in a child process (RunInChild).
PolicyRun RunReplayInChild(ReplayOptions opts);
/// The side-by-side table of `--policy all`; `ratios` (per policy, per round) gives the "vs plain"
/// column as median [min–max]. Sets ExitCode() to 1 if the policies' UTXO hashes differ.
void PrintPolicyTable(const std::vector<PolicyRun>& runs, const std::vector<std::vector<double>>* ratios = nullptr);
/// Replays every policy `rounds` times, interleaved, each run in its own child process, and prints
/// the table (median run per policy). Returns the exit code.
int ReplayAllPolicies(const ReplayOptions& base, bool quiet, int rounds = 1);
/// The same for any job: `run(policy, label)` runs one (RunInChild) with `label` for its progress
/// line; every policy `rounds` times, interleaved; then the table. Returns the exit code.
int CompareAllPolicies(int rounds, const std::function<PolicyRun(PolicyId, const std::string& label)>& run);
/// `replay --swiftsync ... --policy all`: SwiftSyncReplay under every policy, each into a temporary
/// chainstate in a child process, and the table (the UTXO hash must be the same under each).
int SwiftSyncAllPolicies(const swiftsync::SwiftSyncOptions& base, bool quiet, int rounds);

} // namespace ibdkit::cli

// cli/commands.h — each subcommand registers itself on the CLI11 app; what every command shares:
// its exit code (cli/exit_codes.h) and its one way of saying what went wrong.
#pragma once

#include "exit_codes.h"

#include <CLI/CLI.hpp>

#include <ibdkit/chain/params.h>
#include <ibdkit/memory/policy_id.h>
#include <ibdkit/primitives/hash.h>
#include <ibdkit/settings/run_settings.h>
#include <ibdkit/threads.h>

#include <cstdint>
#include <filesystem>
#include <functional>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

namespace ibdkit::cli {

/// A subcommand's registration function: adds the subcommand and its callback to `app`.
using CommandRegistration = std::function<void(CLI::App& app)>;
std::vector<CommandRegistration>& Commands();
struct CommandRegistrar {
    explicit CommandRegistrar(CommandRegistration r) { Commands().push_back(std::move(r)); }
};

/// Registers every command, then makes every option that takes a value expand a leading `~` or
/// `~user` as Python's os.path.expanduser does (ExpandUser): a path quoted in a script reaches
/// ibdkit unexpanded.
void RegisterCommands(CLI::App& app);
/// `value` with a leading "~" (then the end or '/') replaced by $HOME (else the user's home from
/// the password database) and "~user" by that user's home; any other value, or one whose home is
/// not known, unchanged.
std::string ExpandUser(const std::string& value);
/// Exit code set by the command that ran (EXIT_OK by default).
int& ExitCode();

/// A wrong command line found in a command's callback (a combination of options, a value outside
/// what it names): main prints it with PrintError and exits with EXIT_USAGE. Thrown before any
/// block is read or any file written.
class UsageError : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

/// "ibdkit: error: MESSAGE" on stderr: the one form of every failure's line.
void PrintError(const std::string& message);
/// Whether PrintError has said something: main says a line of its own for a failing exit code
/// that none explains, so that no failure is silent on stderr.
bool ErrorPrinted();
/// "ibdkit: MESSAGE" on stderr: something the user should know that is not a failure.
void PrintNote(const std::string& message);
/// Bounds of the numbers options take (docs/cli.md): every size and count is positive and bounded,
/// so that a typo such as `--dbcache -5` is a usage error, never a wrapped-around value. The
/// library's own: MAX_DBCACHE_MIB (settings/run_settings.h).
inline constexpr long long MAX_HEIGHT = 100'000'000;
inline constexpr long long MAX_COUNT = 1'000'000'000'000LL;
inline constexpr long long MAX_THREADS = ibdkit::MAX_THREADS;
/// A CLI11 check: the value is a whole number (no sign other than a leading '-', no fraction, no
/// suffix) in [lo, hi]; one message for every option: "expected a whole number in [lo, hi], got 'v'".
/// `hi` reaches 2^64 - 1 (a seed).
CLI::Validator IntegerIn(long long lo, unsigned long long hi);
/// The same for a number that may have a fraction (seconds, megabytes): "expected a number in
/// [lo, hi], got 'v'".
CLI::Validator NumberIn(double lo, double hi);
/// An option naming a SwiftSync mode: one of swiftsync::AGGREGATE_MODE_NAMES (CLI11's IsMember over
/// that list, so its help and its error name them as the list spells them).
CLI::Validator SwiftSyncModeIn();

/// Adds `--network NAME` (main, test, testnet4, signet, regtest) to `cmd`; `default_from` says
/// where the network comes from when it is not given ("" when it must be). Returns the option.
CLI::Option* AddNetworkOption(CLI::App* cmd, std::string& network, const std::string& default_from);
/// The network named by a `--network` value; nullopt for "". Throws CLI::ValidationError if unknown.
std::optional<ChainType> ParseNetworkOption(const std::string& network);
/// Adds `-q,--quiet` (no progress line, no notes: PrintNote's lines), `--progress` (ProgressForced) and, hidden, the older spelling
/// of --quiet, `--no-progress`.
void AddQuietOption(CLI::App* cmd, bool& quiet);
/// Adds `--threads N` (0..MAX_THREADS, its default shown): `what` says what the threads do; the
/// help adds what 0 and 1 mean (ibdkit/threads.h, ResolveThreads).
void AddThreadsOption(CLI::App* cmd, unsigned& threads, const std::string& what);
/// Progress lines are drawn on a terminal only; `--progress` (ProgressForced) draws them on any stderr.
bool& ProgressForced();
/// Refuses (UsageError) an output file ibdkit may not write (common/write_guard.h): inside a Core data
/// directory, in a folder that does not exist, or a folder itself. Called before any work.
void CheckOutput(const std::string& file);
/// Refuses (UsageError) a command line that names both --datadir and --blocks-dir, or neither: every
/// command that reads blocks says so in these words.
void RequireOneBlockSource(const std::string& datadir, const std::string& blocks_dir);
/// RunSettings::assumevalid from `--assumevalid`'s text: nullopt when not given (the network's
/// default), a null hash for "0", the block hash otherwise. Throws CLI::ValidationError if malformed.
std::optional<BlockHash> ParseAssumeValid(const std::string& value);

/// The settings every run shares (RunSettings) as a command line gives them. A command binds the
/// options it takes to these fields, each with its own help and default, and SettingsOf reads them
/// in one place: no command fills a RunSettings field by field.
struct RunSettingsArgs {
    std::size_t dbcache{450};       ///< --dbcache, MiB
    unsigned threads{0};            ///< --threads (0: every core the process may run on)
    std::string policy{"hardened"}; ///< --policy: a policy's name, or "all" where the command compares them
    std::string assumevalid;        ///< --assumevalid HASH|0 as given; "" for the network's default
    bool skip_scripts{false};       ///< --skip-scripts
    std::string minimum_chain_work; ///< --minimum-chain-work HEX as given; "" for the network's
    bool AllPolicies() const noexcept { return policy == "all"; }
};
/// The policy a `--policy` value names. Throws CLI::ValidationError for an unknown name.
PolicyId PolicyOf(const std::string& policy);
/// Adds `--policy NAME` (its default shown) to a command that runs once, so not `all`: the buffer
/// policy of the blocks' bytes as the command reads them. The name is checked when the line is
/// parsed (a usage error naming the policies).
void AddOneRunPolicyOption(CLI::App* cmd, std::string& policy);
/// The RunSettings `a` names; with AllPolicies() the default policy (each run of the comparison sets
/// its own). Throws CLI::ValidationError for an unknown policy, a malformed --assumevalid or
/// --minimum-chain-work, and UsageError with the library's words for settings no run takes
/// (CheckRunSettings: --skip-scripts beside --assumevalid, …).
RunSettings SettingsOf(const RunSettingsArgs& a);

/// The subcommand path that was parsed ("utxo stats "), for the hint after a usage error.
std::string UsageCommand(const CLI::App& app);
/// After a failed parse: "unknown command 'utxo frob' (one of: stats, get, …)" when a word stands
/// where a command was expected and names none; nullopt otherwise.
std::optional<std::string> UnknownCommand(const CLI::App& app);

} // namespace ibdkit::cli

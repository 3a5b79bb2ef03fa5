#include "commands.h"
#include "json_output.h"

#include <ibdkit/common/write_guard.h>
#include <ibdkit/memory/policy_id.h>
#include <ibdkit/swiftsync/aggregate.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <stdexcept>
#include <system_error>

#include <pwd.h>
#include <stdlib.h>
#include <unistd.h>

namespace ibdkit::cli {

std::vector<CommandRegistration>& Commands()
{
    static std::vector<CommandRegistration> commands;
    return commands;
}

namespace {

// A path quoted in a script or given as `--datadir=~/dd` reaches us with its `~` unexpanded by the
// shell; every value that can be a path gets what Python's os.path.expanduser would give it.
void ExpandUserInValues(CLI::App& app)
{
    for (CLI::Option* opt : app.get_options()) {
        if (opt->get_type_size() == 0) continue; // a flag takes no value
        opt->transform([](std::string value) { return ExpandUser(value); }, "", "ExpandUser");
    }
    for (CLI::App* sub : app.get_subcommands([](CLI::App*) { return true; })) ExpandUserInValues(*sub);
}

bool WholeNumberIn(const std::string& value, long long lo, unsigned long long hi)
{
    const bool negative = !value.empty() && value[0] == '-';
    const std::string digits = negative ? value.substr(1) : value;
    if (digits.empty() || digits.find_first_not_of("0123456789") != std::string::npos || (negative && lo >= 0)) return false;
    errno = 0;
    const unsigned long long magnitude = std::strtoull(digits.c_str(), nullptr, 10);
    if (errno == ERANGE) return false;
    if (negative) return magnitude <= 1 + (unsigned long long)(-(lo + 1)); // |lo|, without overflowing at LLONG_MIN
    return magnitude <= hi && (lo <= 0 || magnitude >= (unsigned long long)lo);
}

// The fewest digits that read back as `v` (0.001, not 0.00100000000000000002); whole numbers in
// full (4000000, not 4e+06). snprintf, not std::to_chars: libc++ 14 has no floating-point one.
std::string Shortest(double v)
{
    if (v == double(int64_t(v)) && v < 1e15) return std::to_string(int64_t(v));
    char text[32];
    for (int digits = 1; digits <= 17; ++digits) {
        std::snprintf(text, sizeof text, "%.*g", digits, v);
        if (std::strtod(text, nullptr) == v) break;
    }
    return text;
}

} // namespace

void RegisterCommands(CLI::App& app)
{
    for (auto& r : Commands()) r(app);
    ExpandUserInValues(app);
}

std::string ExpandUser(const std::string& value)
{
    if (value.empty() || value[0] != '~') return value;
    const std::size_t slash = value.find('/');
    const std::string user = value.substr(1, slash == std::string::npos ? std::string::npos : slash - 1);
    std::string home;
    if (user.empty()) {
        if (const char* h = std::getenv("HOME")) {
            home = h;
        } else if (const passwd* pw = ::getpwuid(::getuid())) {
            home = pw->pw_dir;
        } else {
            return value;
        }
    } else if (const passwd* pw = ::getpwnam(user.c_str())) {
        home = pw->pw_dir;
    } else {
        return value;
    }
    while (!home.empty() && home.back() == '/') home.pop_back();
    const std::string expanded = home + (slash == std::string::npos ? "" : value.substr(slash));
    return expanded.empty() ? "/" : expanded;
}

int& ExitCode()
{
    static int code = EXIT_OK;
    return code;
}

namespace {
bool g_error_printed = false;
} // namespace

void PrintError(const std::string& message)
{
    g_error_printed = true;
    std::fprintf(stderr, "ibdkit: error: %s\n", message.c_str());
    NoteJsonError(message);
}

bool ErrorPrinted() { return g_error_printed; }

void PrintNote(const std::string& message) { std::fprintf(stderr, "ibdkit: %s\n", message.c_str()); }

CLI::Validator IntegerIn(long long lo, unsigned long long hi)
{
    const std::string range = "[" + std::to_string(lo) + ", " + std::to_string(hi) + "]";
    return CLI::Validator(
        [lo, hi, range](std::string& value) -> std::string {
            if (!WholeNumberIn(value, lo, hi)) return "expected a whole number in " + range + ", got '" + value + "'";
            return {};
        },
        "INT in " + range, "IntegerIn");
}

CLI::Validator NumberIn(double lo, double hi)
{
    const std::string range = "[" + Shortest(lo) + ", " + Shortest(hi) + "]";
    return CLI::Validator(
        [lo, hi, range](std::string& value) -> std::string {
            // strtod, not std::from_chars (libc++ 14 has none for double); no leading space or sign
            // but '-', no hex or infinity.
            errno = 0;
            char* end = nullptr;
            const double v = value.empty() ? 0 : std::strtod(value.c_str(), &end);
            const bool plain = !value.empty() && value.find_first_not_of("0123456789.eE+-") == std::string::npos &&
                               value[0] != '+';
            if (!plain || *end != '\0' || errno == ERANGE || !(v >= lo && v <= hi)) {
                return "expected a number in " + range + ", got '" + value + "'";
            }
            return {};
        },
        "NUMBER in " + range, "NumberIn");
}

CLI::Validator SwiftSyncModeIn()
{
    return CLI::IsMember(std::vector<std::string>(swiftsync::AGGREGATE_MODE_NAMES.begin(), swiftsync::AGGREGATE_MODE_NAMES.end()));
}

CLI::Option* AddNetworkOption(CLI::App* cmd, std::string& network, const std::string& default_from)
{
    return cmd->add_option("--network", network,
                           "main, test, testnet4, signet or regtest" + (default_from.empty() ? std::string() : " (default: " + default_from + ")"))
        ->check([](const std::string& v) -> std::string {
            return ParseChainType(v) ? std::string() : "unknown network '" + v + "' (main, test, testnet4, signet, regtest)";
        });
}

std::optional<ChainType> ParseNetworkOption(const std::string& network)
{
    if (network.empty()) return std::nullopt;
    auto c = ParseChainType(network);
    if (!c) throw CLI::ValidationError("--network", "unknown network '" + network + "' (main, test, testnet4, signet, regtest)");
    return c;
}

bool& ProgressForced()
{
    static bool forced = false;
    return forced;
}

void AddThreadsOption(CLI::App* cmd, unsigned& threads, const std::string& what)
{
    cmd->add_option("--threads", threads, what + "; 0: every core the process may run on, 1: all on one thread")
        ->check(IntegerIn(0, MAX_THREADS))
        ->capture_default_str();
}

void AddQuietOption(CLI::App* cmd, bool& quiet)
{
    cmd->add_flag("-q,--quiet", quiet, "No progress line (drawn only when stderr is a terminal, unless --progress) and no notes on stderr");
    cmd->add_flag("--no-progress", quiet, "Older spelling of --quiet")->group("");
    cmd->add_flag("--progress", ProgressForced(), "Draw the progress line even when stderr is not a terminal (a line every few seconds)");
}

void CheckOutput(const std::string& file)
{
    if (auto refused = CheckOutputFile(file)) throw UsageError(refused->message);
}

void RequireOneBlockSource(const std::string& datadir, const std::string& blocks_dir)
{
    if (datadir.empty() == blocks_dir.empty()) {
        throw UsageError("give --datadir DIR (a Bitcoin Core data directory) or --blocks-dir DIR (its blk files), exactly one");
    }
}

std::optional<BlockHash> ParseAssumeValid(const std::string& value)
{
    if (value.empty()) return std::nullopt;
    if (value == "0") return BlockHash{};
    auto h = BlockHash::FromHex(value);
    if (!h) throw CLI::ValidationError("--assumevalid", "expected a block hash (64 hex digits) or 0, got '" + value + "'");
    return *h;
}

PolicyId PolicyOf(const std::string& policy)
{
    auto id = ParsePolicy(policy);
    if (!id) throw CLI::ValidationError("--policy", "unknown policy '" + policy + "' (" + PolicyNameList() + ", all)");
    return *id;
}

void AddOneRunPolicyOption(CLI::App* cmd, std::string& policy)
{
    cmd->add_option("--policy", policy, "Buffer policy of the blocks' bytes: " + PolicyNameList())
        ->check([](const std::string& name) -> std::string {
            if (ParsePolicy(name)) return "";
            if (name == "all") return "all compares runs of replay and sync: name one policy";
            return "unknown policy '" + name + "' (" + PolicyNameList() + ")";
        })
        ->capture_default_str();
}

RunSettings SettingsOf(const RunSettingsArgs& a)
{
    RunSettings s;
    if (!a.AllPolicies()) s.policy = PolicyOf(a.policy);
    s.dbcache_mib = a.dbcache;
    s.threads = a.threads;
    s.assumevalid = ParseAssumeValid(a.assumevalid);
    s.skip_scripts = a.skip_scripts;
    if (!a.minimum_chain_work.empty()) {
        auto work = ParseMinimumChainWork(a.minimum_chain_work);
        if (!work) throw CLI::ValidationError("--minimum-chain-work", work.error().message);
        s.minimum_chain_work = *work;
    }
    if (auto bad = CheckRunSettings(s)) throw UsageError(bad->message);
    return s;
}

namespace {
const CLI::App& DeepestParsed(const CLI::App& app)
{
    const CLI::App* a = &app;
    while (!a->get_subcommands().empty()) a = a->get_subcommands().front();
    return *a;
}
} // namespace

std::string UsageCommand(const CLI::App& app)
{
    std::string path;
    for (const CLI::App* a = &app;;) {
        const auto subs = a->get_subcommands();
        if (subs.empty()) break;
        a = subs.front();
        path += a->get_name() + " ";
    }
    return path;
}

std::optional<std::string> UnknownCommand(const CLI::App& app)
{
    const CLI::App& last = DeepestParsed(app);
    const auto known = last.get_subcommands([](const CLI::App*) { return true; });
    const auto extra = last.remaining();
    if (known.empty() || extra.empty() || extra.front().starts_with("-")) return std::nullopt;
    std::string names;
    for (const CLI::App* sub : known) {
        if (sub->get_group().empty()) continue; // hidden
        names += (names.empty() ? "" : ", ") + sub->get_name();
    }
    return "unknown command '" + UsageCommand(app) + extra.front() + "' (one of: " + names + ")";
}

} // namespace ibdkit::cli

#include "commands.h"

#include "common/write_guard.h"

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <stdexcept>
#include <system_error>

#include <stdlib.h>

namespace ibdkit::cli {

std::vector<CommandRegistration>& Commands()
{
    static std::vector<CommandRegistration> commands;
    return commands;
}

void RegisterCommands(CLI::App& app)
{
    for (auto& r : Commands()) r(app);
}

int& ExitCode()
{
    static int code = EXIT_OK;
    return code;
}

void PrintError(const std::string& message) { std::fprintf(stderr, "ibdkit: error: %s\n", message.c_str()); }

void PrintNote(const std::string& message) { std::fprintf(stderr, "ibdkit: %s\n", message.c_str()); }

CLI::Validator IntegerIn(long long lo, long long hi)
{
    const std::string range = "[" + std::to_string(lo) + ", " + std::to_string(hi) + "]";
    return CLI::Validator(
        [lo, hi, range](std::string& value) -> std::string {
            errno = 0;
            char* end = nullptr;
            const long long v = std::strtoll(value.c_str(), &end, 10);
            if (value.empty() || *end != '\0' || errno == ERANGE || v < lo || v > hi) {
                return "expected a whole number in " + range + ", got '" + value + "'";
            }
            return {};
        },
        "INT in " + range, "IntegerIn");
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

TemporaryDir::TemporaryDir(const std::string& what)
{
    std::string tmpl = (std::filesystem::temp_directory_path() / ("ibdkit-" + what + "-XXXXXX")).string();
    if (::mkdtemp(tmpl.data()) == nullptr) {
        throw std::runtime_error("cannot make a temporary folder in " + std::filesystem::temp_directory_path().string() +
                                 " (TMPDIR chooses another)");
    }
    m_path = tmpl;
}

TemporaryDir::~TemporaryDir()
{
    std::error_code ec;
    std::filesystem::remove_all(m_path, ec);
}

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

} // namespace ibdkit::cli

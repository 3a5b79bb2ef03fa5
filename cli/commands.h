// cli/commands.h — each subcommand registers itself on the CLI11 app.
#pragma once

#include <CLI/CLI.hpp>

#include <functional>
#include <vector>

namespace ibdkit::cli {

/// A subcommand's registration function: adds the subcommand and its callback to `app`.
using CommandRegistration = std::function<void(CLI::App& app)>;
std::vector<CommandRegistration>& Commands();
struct CommandRegistrar {
    explicit CommandRegistrar(CommandRegistration r) { Commands().push_back(std::move(r)); }
};

void RegisterCommands(CLI::App& app);
/// Exit code set by the command that ran (0 by default).
int& ExitCode();

} // namespace ibdkit::cli

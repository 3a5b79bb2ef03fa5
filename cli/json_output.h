// cli/json_output.h — `--json`'s one shape, on success and on failure: the command's result object,
// printed once the command has ended, and on a failure (an exit code other than 0) the same
// object with "error" (what `ibdkit: error:` said, every line joined) and "exit_code" added, or
// those two alone when the command had no result to print (docs/cli.md, *Exit codes*).
#pragma once

#include <CLI/CLI.hpp>

#include <nlohmann/json.hpp>

#include <string>

namespace ibdkit::cli {

/// The result of a command run with --json, held until FinishJson prints it.
void PrintJsonResult(nlohmann::json result);
/// Records a line PrintError printed, for the failure object.
void NoteJsonError(const std::string& message);
/// At the end of main: when the command that ran was given --json, prints its result and, when
/// `exit_code` is not EXIT_OK, the failure's fields (a failure object alone if it had no result).
/// Without --json, prints a held result only (none is held then).
void FinishJson(const CLI::App& app, int exit_code);

} // namespace ibdkit::cli

// cli/hints_cli.h — a SwiftSync hintsfile (BIP 456) written by `ibdkit hints` or at the end of a
// `replay` (`--write-hints FILE`), and its summary for people and for --json.
#pragma once

#include "commands.h"

#include <ibdkit/engine/replay.h>
#include <ibdkit/swiftsync/build_hints.h>

#include <nlohmann/json.hpp>

#include <optional>
#include <string>

namespace ibdkit::cli {

/// BuildHints with a progress line (unless `quiet`); the error's message on failure.
Result<swiftsync::BuildHintsResult> BuildHintsWithProgress(swiftsync::BuildHintsOptions o, bool quiet);
/// The result as JSON: HintsFields (run/result_fields.h).
nlohmann::json HintsJson(const swiftsync::BuildHintsResult& r, PolicyId policy, const std::string& out);
/// The result for people.
void PrintHints(const swiftsync::BuildHintsResult& r, const std::string& out);

/// `replay --write-hints FILE`: after a run that ends cleanly, the hintsfile for the chainstate it
/// leaves, built from the same blocks (a second pass over blocks 1..n, as `ibdkit hints`).
class HintsAfterRun {
public:
    /// Adds --write-hints to `cmd`.
    void AddOption(CLI::App* cmd);
    bool Enabled() const noexcept { return !m_out.empty(); }
    /// Before the run: refuses a FILE ibdkit may not write (CheckOutput) and, without --chainstate,
    /// points the run at a temporary one (removed afterwards).
    void Prepare(ReplayOptions& o);
    /// After the run: when it connected every block it was given (no reject, no interrupt), writes
    /// the hintsfile and returns its summary; nullopt, after a note, when the run did not end
    /// cleanly (said even under --quiet, as replay says its notes). Throws std::runtime_error when the
    /// hintsfile cannot be built. `quiet`: no progress line.
    std::optional<swiftsync::BuildHintsResult> Finish(const ReplayOptions& o, const EngineResult& r, bool quiet);
    const std::string& Out() const noexcept { return m_out; }

private:
    std::string m_out;
    std::optional<TemporaryDir> m_temporary;
};

} // namespace ibdkit::cli

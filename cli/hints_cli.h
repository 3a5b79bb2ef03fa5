// cli/hints_cli.h — a SwiftSync hintsfile (BIP 456) written by `ibdkit hints` or at the end of a
// `replay` (`--write-hints FILE`), and its summary for people and for --json.
#pragma once

#include "commands.h"
#include "progress.h"

#include <ibdkit/engine/replay.h>
#include <ibdkit/run/classic_run.h>
#include <ibdkit/swiftsync/build_hints.h>

#include <nlohmann/json.hpp>

#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <string>

namespace ibdkit::cli {

/// BuildHints' progress on `bar` (the line it held before ends): the height reached of the target.
std::function<void(uint32_t, uint32_t)> HintsProgressPrinter(std::shared_ptr<ProgressLine> bar);
/// The result as JSON: HintsFields (run/result_fields.h).
nlohmann::json HintsJson(const swiftsync::BuildHintsResult& r, PolicyId policy, const std::string& out);
/// The result for people.
void PrintHints(const swiftsync::BuildHintsResult& r, const std::string& out);

/// `replay --write-hints FILE`: after a run that ends cleanly, the hintsfile for the chainstate it
/// leaves, built by the driver from the same blocks (run/classic_run.h; a second pass over blocks
/// 1..n, as `ibdkit hints`).
class HintsAfterRun {
public:
    /// Adds --write-hints to `cmd`.
    void AddOption(CLI::App* cmd);
    bool Enabled() const noexcept { return !m_out.empty(); }
    /// The file asked for (empty: none), refused before the run when ibdkit may not write it (CheckOutput).
    std::filesystem::path Request() const;
    /// After the run: a note when a hintsfile was asked for and the run did not connect every block
    /// (said even under --quiet, as replay says its notes).
    void NoteIfMissing(const run::RunOutputsResult& written) const;
    const std::string& Out() const noexcept { return m_out; }

private:
    std::string m_out;
};

} // namespace ibdkit::cli

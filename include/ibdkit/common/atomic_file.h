// ibdkit/common/atomic_file.h — a result file appears whole or not at all.
//
// Every file ibdkit produces as a result (UTXO exports and snapshots, block tables, balances,
// gen-chain's summary) is written under a temporary name beside its final one
// (`NAME.partial-PID`), made durable (fsync) and renamed over the final name only once complete
// (and, for the exports, re-read and checked); the directory is synced after the rename. A
// failure, an exception or an interruption (AbandonAtomicFilesFromSignal) removes the temporary, so
// the final name holds either its previous file (or nothing) or the complete new one. A kill that
// gives no chance to clean up (SIGKILL, power loss) can leave a temporary behind, never a partial
// file under the final name; the next AtomicFile for the same final name removes the temporaries
// of processes that no longer run. docs/formats.md §11, *Result files*.
//
// A program that embeds the library and ends itself on SIGINT or SIGTERM calls
// AbandonAtomicFilesFromSignal from its handler (as the CLI does, cli/interrupt.cpp): without it an
// interrupted export leaves its temporary until the next AtomicFile for the same name. One thread
// uses an AtomicFile; several threads may each hold their own (the registration is thread-safe;
// beyond 16 living at once, the others are still published whole but not cleaned on a signal).
#pragma once

#include <ibdkit/error.h>

#include <filesystem>
#include <optional>

namespace ibdkit {

/// One result file being written. Write to Temp() (create or truncate it), then Commit().
/// Not copyable or movable: it stays registered for cleanup on a signal while it lives.
class AtomicFile {
public:
    /// Prepares writing `final_path`: chooses Temp() beside it (removing a file left there by an
    /// earlier run of this process) and removes temporaries for the same final name left by dead
    /// processes. Creates nothing; the directory must exist by the time Temp() is opened. A
    /// symbolic link is followed (the file it names is replaced, the link stays). A final path
    /// that is a device (such as /dev/stdout), a pipe or a socket is never replaced: then Temp()
    /// is the final path itself, written in place (Direct()).
    explicit AtomicFile(std::filesystem::path final_path);
    /// Removes Temp() unless Commit() succeeded.
    ~AtomicFile();
    AtomicFile(const AtomicFile&) = delete;
    AtomicFile& operator=(const AtomicFile&) = delete;

    /// Where the bytes go until Commit(): `FINAL.partial-PID` in the final name's directory.
    const std::filesystem::path& Temp() const noexcept { return m_temp; }
    const std::filesystem::path& Final() const noexcept { return m_final; }

    /// Publishes the file: fsyncs Temp(), renames it over Final() (replacing a previous file) and
    /// fsyncs the directory. The caller has closed every descriptor it wrote through. On failure
    /// an error naming both paths; Temp() is removed then too, and Final() is as it was.
    std::optional<Error> Commit();
    /// Whether Commit() succeeded.
    bool Committed() const noexcept { return m_committed; }
    /// Whether the final path is written in place (not a regular file: nothing to rename or remove).
    bool Direct() const noexcept { return m_direct; }

private:
    std::filesystem::path m_final;
    std::filesystem::path m_temp;
    int m_slot{-1}; ///< registration for AbandonAtomicFilesFromSignal, -1 if the table was full
    bool m_committed{false};
    bool m_direct{false};
};

/// For a SIGINT/SIGTERM handler that is about to end the process (async-signal-safe: unlink(2)
/// and write(2) only): removes the temporary of every AtomicFile of this process that is not
/// committed yet and writes one line per result to `fd`: "PREFIX FINAL: not written (any previous
/// file there is unchanged)", or "PREFIX FINAL: complete" when its rename had already happened.
/// Returns the number of results reported.
int AbandonAtomicFilesFromSignal(int fd, const char* prefix) noexcept;

} // namespace ibdkit

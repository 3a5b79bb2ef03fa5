// cli/interrupt.h — what SIGINT (Ctrl-C) and SIGTERM do to a command: it says what state it
// leaves ("ibdkit: interrupted: ...") and exits with EXIT_INTERRUPTED. Result files are never left
// partial under their final names (common/atomic_file.h): the signal removes their temporaries.
#pragma once

#include "exit_codes.h"

#include <atomic>
#include <string_view>

namespace ibdkit::cli {

/// The default of every command (main installs it): a signal removes the temporaries of results
/// not complete yet, prints one "ibdkit: interrupted: FILE: ..." line for each of them and the
/// note (SetInterruptNote), or "nothing written" when there is neither, and exits at once.
void InstallInterruptExit();
/// A sentence about other state the command leaves when interrupted (a directory being filled,
/// a chainstate): printed after "ibdkit: interrupted: ". Empty: none. Call it before the work.
void SetInterruptNote(std::string_view note);
/// For commands that stop cleanly by themselves (the engine flushes and returns): the first
/// signal only sets `flag`; a second one exits as InstallInterruptExit's handler does.
void InstallInterruptFlag(std::atomic<bool>* flag);

} // namespace ibdkit::cli

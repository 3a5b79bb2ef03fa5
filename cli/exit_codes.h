// cli/exit_codes.h — the exit codes of every ibdkit command (docs/cli.md, *Exit codes*).
#pragma once

namespace ibdkit::cli {

inline constexpr int EXIT_OK = 0;            ///< done as asked
inline constexpr int EXIT_FAILED = 1;        ///< could not be done: a file, a database, a peer (the message says)
inline constexpr int EXIT_INVALID_CHAIN = 2; ///< a block breaks a consensus rule (Core's reject reason printed)
inline constexpr int EXIT_USAGE = 64;        ///< the command line is wrong: nothing was read or written (BSD's EX_USAGE)
inline constexpr int EXIT_INTERRUPTED = 130; ///< Ctrl-C or SIGTERM: stopped cleanly, run again to resume

} // namespace ibdkit::cli

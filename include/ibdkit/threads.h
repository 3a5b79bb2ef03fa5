// ibdkit/threads.h — what `threads` means in every run's options (replay, sync, SwiftSync, hints,
// snapshots' proofs, range checks), the CLI's `--threads` and Python's `threads=`: 0 is every core
// the process may run on, N is N (the calling thread counts as one of them).
#pragma once

namespace ibdkit {

/// The most threads any run takes; more is refused where the count is given (Errc::InvalidValue).
inline constexpr unsigned MAX_THREADS = 1024;

/// The cores this process may run on: its CPU affinity mask's count on Linux (taskset, a cgroup's
/// cpuset, a container's limit), else std::thread::hardware_concurrency(); at least 1.
/// Thread-safe.
unsigned UsableCores() noexcept;

/// The thread count `threads` means: 0 → UsableCores(), else `threads`. Thread-safe.
unsigned ResolveThreads(unsigned threads) noexcept;

} // namespace ibdkit

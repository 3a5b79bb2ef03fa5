// ibdkit/threads.h — what `threads` means in every run's options (replay, sync, SwiftSync, hints,
// snapshots' proofs, range checks), the CLI's `--threads` and Python's `threads=`: 0 is every core
// the machine has, N is N (the calling thread counts as one of them).
#pragma once

namespace ibdkit {

/// The most threads any run takes; more is refused where the count is given (Errc::InvalidValue).
inline constexpr unsigned MAX_THREADS = 1024;

/// The thread count `threads` means: 0 → std::thread::hardware_concurrency() (at least 1), else
/// `threads`. Pure; thread-safe.
unsigned ResolveThreads(unsigned threads) noexcept;

} // namespace ibdkit

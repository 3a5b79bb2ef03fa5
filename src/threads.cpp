// What a run's `threads` means (include/ibdkit/threads.h).
#include <ibdkit/threads.h>

#include <algorithm>
#include <thread>

#if defined(__linux__)
#include <sched.h>
#endif

namespace ibdkit {

unsigned UsableCores() noexcept
{
#if defined(__linux__)
    // hardware_concurrency counts the machine's cores; a process pinned by taskset, a cgroup's
    // cpuset or a container may run on fewer, and threads beyond those only take turns.
    cpu_set_t set;
    CPU_ZERO(&set);
    if (sched_getaffinity(0, sizeof(set), &set) == 0) {
        const int n = CPU_COUNT(&set);
        if (n > 0) return unsigned(n);
    }
#endif
    return std::max(1u, std::thread::hardware_concurrency());
}

unsigned ResolveThreads(unsigned threads) noexcept
{
    if (threads != 0) return threads;
    return UsableCores();
}

} // namespace ibdkit

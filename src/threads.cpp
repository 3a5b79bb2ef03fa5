// What a run's `threads` means (include/ibdkit/threads.h).
#include <ibdkit/threads.h>

#include <algorithm>
#include <thread>

namespace ibdkit {

unsigned ResolveThreads(unsigned threads) noexcept
{
    if (threads != 0) return threads;
    return std::max(1u, std::thread::hardware_concurrency());
}

} // namespace ibdkit

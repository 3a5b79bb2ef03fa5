// A cap on the bytes per second many connections send together (src/wire/rate_limit.h).
#include "wire/rate_limit.h"

#include <algorithm>
#include <cassert>
#include <thread>

namespace ibdkit {
namespace {

/// How long one sleep of Take lasts at most, so that a stop is seen soon.
constexpr std::chrono::milliseconds INTERRUPT_POLL{20};

} // namespace

SendRateLimit::SendRateLimit(uint64_t bytes_per_second)
    : m_rate(bytes_per_second), m_burst(std::max<uint64_t>(bytes_per_second / BURST_DIVISOR, SEND_CHUNK))
{
    assert(bytes_per_second > 0);
}

SendRateLimit::Clock::duration SendRateLimit::Cost(uint64_t bytes) const
{
    // In nanoseconds through a double: exact enough, and no product of two large integers to overflow.
    const double ns = double(bytes) * 1e9 / double(m_rate);
    return std::chrono::duration_cast<Clock::duration>(std::chrono::nanoseconds(int64_t(ns)));
}

SendRateLimit::Clock::time_point SendRateLimit::Reserve(std::size_t bytes, Clock::time_point now)
{
    const Clock::duration burst = Cost(m_burst);
    std::lock_guard lock(m_mutex);
    // An idle bucket fills up to the burst and no further: what was not sent then is not saved up.
    m_paid_until = std::max(m_paid_until, now - burst) + Cost(bytes);
    return m_paid_until;
}

bool SendRateLimit::Take(std::size_t bytes, const std::atomic<bool>* interrupt)
{
    const auto start = Clock::now();
    const auto until = Reserve(bytes, start);
    auto now = start;
    bool interrupted = false;
    while (now < until && !interrupted) {
        std::this_thread::sleep_for(std::min<Clock::duration>(until - now, INTERRUPT_POLL));
        now = Clock::now();
        interrupted = interrupt && interrupt->load();
    }
    m_waited_ns.fetch_add(std::chrono::duration_cast<std::chrono::nanoseconds>(now - start).count());
    return !interrupted;
}

} // namespace ibdkit

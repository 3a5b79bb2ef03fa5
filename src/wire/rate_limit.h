// src/wire/rate_limit.h — a cap on the bytes per second that many connections send together
// (`ibdkit serve --max-upload-rate`): one token bucket, shared by every connection's thread.
//
// The bucket is kept as the time by which the rate has paid for every byte reserved so far (a
// virtual clock, as in the generic cell rate algorithm), never earlier than a burst's worth of time
// before now (a full bucket): reserving n bytes moves it on by n / rate, and the caller may send
// them from then on. Callers are served in the order they reserve, so that peers which send in
// small pieces (Peer sends a message in SEND_CHUNK pieces) share the rate piece by piece, and a
// large block is paced rather than sent in one burst and then followed by a long pause. A bucket
// that sat idle holds at most the burst.
#pragma once

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <mutex>

namespace ibdkit {

class SendRateLimit {
public:
    using Clock = std::chrono::steady_clock;

    /// The size of the pieces a limited message is sent in, and the smallest burst.
    static constexpr std::size_t SEND_CHUNK = 16 * 1024;
    /// The burst is this fraction of a second's bytes (at least SEND_CHUNK).
    static constexpr uint64_t BURST_DIVISOR = 10;

    /// `bytes_per_second` > 0.
    explicit SendRateLimit(uint64_t bytes_per_second);

    SendRateLimit(const SendRateLimit&) = delete;
    SendRateLimit& operator=(const SendRateLimit&) = delete;

    /// Reserves `bytes` at `now`: the time from which they may be sent (at or before `now` when the
    /// bucket holds them). The arithmetic alone, without waiting: tests drive it with their own clock.
    Clock::time_point Reserve(std::size_t bytes, Clock::time_point now);

    /// Reserves `bytes` and sleeps until they may be sent. False when `interrupt` was set meanwhile
    /// (looked at every few milliseconds); the bytes stay reserved then.
    bool Take(std::size_t bytes, const std::atomic<bool>* interrupt);

    uint64_t bytes_per_second() const noexcept { return m_rate; }
    uint64_t burst_bytes() const noexcept { return m_burst; }
    /// The time callers have slept in Take, summed over them (threads waiting at once each count).
    std::chrono::nanoseconds waited() const noexcept { return std::chrono::nanoseconds(m_waited_ns.load()); }

private:
    /// How long `bytes` take at the rate.
    Clock::duration Cost(uint64_t bytes) const;

    const uint64_t m_rate;
    const uint64_t m_burst;
    std::mutex m_mutex;
    /// When the rate has paid for every byte reserved so far; never further back than a burst before now.
    Clock::time_point m_paid_until{};
    std::atomic<int64_t> m_waited_ns{0};
};

} // namespace ibdkit

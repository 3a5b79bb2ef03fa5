// SendRateLimit (src/wire/rate_limit.h), the token bucket behind `serve --max-upload-rate`: its
// arithmetic on a clock of the test's own (the burst, the pace, an idle bucket holding no more than
// the burst), the interrupt, several threads sharing one bucket, and a Peer that sends a message in
// pieces through it, received whole on the other end of a socket pair.
#include <ibdkit/chain/params.h>

#include "wire/peer.h"
#include "wire/rate_limit.h"

#include <gtest/gtest.h>

#include <sys/socket.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <optional>
#include <thread>
#include <vector>

namespace ibdkit {
namespace {

using Clock = SendRateLimit::Clock;
using std::chrono::duration;

double Seconds(Clock::duration d) { return duration<double>(d).count(); }

TEST(RateLimit, TheBurstIsATenthOfASecondAndAtLeastOnePiece)
{
    EXPECT_EQ(SendRateLimit(110'000'000).burst_bytes(), 11'000'000u);
    EXPECT_EQ(SendRateLimit(1'000).burst_bytes(), SendRateLimit::SEND_CHUNK);
}

TEST(RateLimit, AnIdleBucketSendsItsBurstAtOnceThenPaces)
{
    SendRateLimit limit(1'000'000); // a burst of 100,000 bytes
    const Clock::time_point t0 = Clock::now();
    uint64_t reserved = 0;
    while (reserved + 10'000 <= limit.burst_bytes()) {
        EXPECT_LE(limit.Reserve(10'000, t0), t0) << reserved;
        reserved += 10'000;
    }
    // Past the burst every byte costs a microsecond, in the order reserved.
    for (int i = 1; i <= 5; ++i) {
        const auto at = limit.Reserve(10'000, t0);
        EXPECT_NEAR(Seconds(at - t0), 0.01 * i, 1e-6) << i;
    }
}

TEST(RateLimit, ABigReservationWaitsItsBytesLessTheBurst)
{
    SendRateLimit limit(2'000'000);
    const Clock::time_point t0 = Clock::now();
    EXPECT_NEAR(Seconds(limit.Reserve(4'200'000, t0) - t0), (4'200'000.0 - 200'000.0) / 2e6, 1e-6);
    // The next one queues behind it.
    EXPECT_NEAR(Seconds(limit.Reserve(20'000, t0) - t0), 2.01, 1e-6);
}

TEST(RateLimit, AnIdleBucketHoldsNoMoreThanTheBurst)
{
    SendRateLimit limit(1'000'000);
    const Clock::time_point t0 = Clock::now();
    limit.Reserve(500'000, t0);
    // A minute later: what was not sent meanwhile is not owed, and not saved up beyond the burst.
    const Clock::time_point later = t0 + std::chrono::minutes(1);
    EXPECT_LE(limit.Reserve(limit.burst_bytes(), later), later);
    EXPECT_NEAR(Seconds(limit.Reserve(50'000, later) - later), 0.05, 1e-6);
}

TEST(RateLimit, TakeSleepsForTheBytesBeyondTheBurstAndCountsIt)
{
    SendRateLimit limit(1'000'000);
    const auto start = Clock::now();
    EXPECT_TRUE(limit.Take(limit.burst_bytes(), nullptr));
    EXPECT_TRUE(limit.Take(100'000, nullptr));
    EXPECT_GE(Seconds(Clock::now() - start), 0.099);
    EXPECT_GE(Seconds(limit.waited()), 0.099);
}

TEST(RateLimit, TakeReturnsFalseWhenInterrupted)
{
    SendRateLimit limit(1'000); // 16 kB beyond the burst: 16 seconds
    const std::atomic<bool> interrupt{true};
    EXPECT_TRUE(limit.Take(limit.burst_bytes(), &interrupt)); // within the burst: no wait to interrupt
    EXPECT_FALSE(limit.Take(limit.burst_bytes(), &interrupt));
}

TEST(RateLimit, ThreadsShareOneRate)
{
    constexpr uint64_t RATE = 4'000'000;
    constexpr int THREADS = 4, PIECES = 20;
    SendRateLimit limit(RATE);
    const auto start = Clock::now();
    std::vector<std::thread> threads;
    for (int t = 0; t < THREADS; ++t) {
        threads.emplace_back([&limit] {
            for (int i = 0; i < PIECES; ++i) limit.Take(SendRateLimit::SEND_CHUNK, nullptr);
        });
    }
    for (auto& t : threads) t.join();
    const double bytes = double(THREADS) * PIECES * SendRateLimit::SEND_CHUNK;
    EXPECT_GE(Seconds(Clock::now() - start), (bytes - double(limit.burst_bytes())) / RATE * 0.99);
}

TEST(RateLimit, APeerSendsAMessageInPiecesThatArriveWhole)
{
    int fds[2];
    ASSERT_EQ(::socketpair(AF_UNIX, SOCK_STREAM, 0, fds), 0);
    const ChainParams& params = GetChainParams(ChainType::REGTEST);
    Peer sender(Socket(fds[0]), params);
    Peer receiver(Socket(fds[1]), params);
    SendRateLimit limit(2'000'000);
    sender.LimitSendRate(&limit);
    std::vector<uint8_t> payload(1'000'000);
    for (std::size_t i = 0; i < payload.size(); ++i) payload[i] = uint8_t(i * 7 + i / 251);
    const auto start = Clock::now();
    std::optional<NetError> sent;
    std::thread t([&] { sent = sender.Send("block", payload, std::chrono::seconds(30)); });
    auto got = receiver.Receive(NetClock::now() + std::chrono::seconds(30));
    t.join();
    ASSERT_FALSE(sent) << sent->message;
    ASSERT_TRUE(got) << got.error().message;
    EXPECT_EQ(got->command, "block");
    const auto bytes = Peer::Bytes(*got);
    EXPECT_TRUE(std::equal(bytes.begin(), bytes.end(), payload.begin(), payload.end()));
    EXPECT_EQ(sender.bytes_sent(), payload.size() + 24);
    // 1 MB at 2 MB/s, less the burst of 200 kB.
    EXPECT_GE(Seconds(Clock::now() - start), 0.8 * 0.4);
}

} // namespace
} // namespace ibdkit

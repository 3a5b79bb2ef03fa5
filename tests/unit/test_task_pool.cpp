// TaskPool (src/common/task_pool.h): every task runs exactly once per Run, on the caller, the
// helpers and threads helping from outside (Help, OnPost); the first exception reaches the caller
// and the pool stays usable; the helpers' cleansed bytes are counted.
#include "common/task_pool.h"

#include "memory/cleanse.h"

#include <gtest/gtest.h>

#include <array>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <set>
#include <stdexcept>
#include <system_error>
#include <thread>
#include <vector>

#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

namespace ibdkit {
namespace {

TEST(TaskPool, RunsEveryTaskOnce)
{
    for (unsigned helpers : {0u, 1u, 3u}) {
        TaskPool pool(helpers);
        for (int round = 0; round < 200; ++round) {
            std::array<std::atomic<int>, 8> runs{};
            pool.Run(runs.size(), [&](std::size_t i) { runs[i].fetch_add(1); });
            for (const auto& r : runs) EXPECT_EQ(r.load(), 1) << "helpers " << helpers << " round " << round;
        }
        pool.Run(0, [](std::size_t) { ADD_FAILURE() << "no task to run"; });
    }
}

TEST(TaskPool, HelpersTakeTasksTheCallerDidNotClaim)
{
    // A first task that waits until some other task has run on another thread: only a helper can
    // free it (the caller is busy inside it), so this ends only if the helpers claim work.
    TaskPool pool(1);
    std::atomic<bool> other_ran{false};
    std::set<std::thread::id> threads;
    std::mutex mu;
    pool.Run(2, [&](std::size_t i) {
        {
            std::lock_guard lk(mu);
            threads.insert(std::this_thread::get_id());
        }
        if (i == 0) {
            while (!other_ran.load()) std::this_thread::yield();
        } else {
            other_ran = true;
        }
    });
    EXPECT_EQ(threads.size(), 2u);
}

TEST(TaskPool, AThreadOfItsOwnHelpsBetweenItsWork)
{
    // No helper threads: task 0 waits until task 1 ran elsewhere, so the set ends only if the
    // outside thread, woken by OnPost, claims task 1 through Help().
    TaskPool pool(0);
    EXPECT_FALSE(pool.Help()); // no set yet
    EXPECT_FALSE(pool.Pending());
    std::mutex mu;
    std::condition_variable cv;
    bool posted = false, stop = false;
    pool.OnPost([&] {
        {
            std::lock_guard lk(mu);
            posted = true;
        }
        cv.notify_all();
    });
    std::atomic<int> helped_sets{0};
    std::thread outside([&] {
        std::unique_lock lk(mu);
        while (true) {
            cv.wait(lk, [&] { return stop || posted; });
            if (stop) return;
            posted = false;
            lk.unlock();
            if (pool.Help()) ++helped_sets;
            lk.lock();
        }
    });
    std::atomic<bool> other_ran{false};
    const std::thread::id caller = std::this_thread::get_id();
    std::atomic<bool> ran_outside{false};
    pool.Run(2, [&](std::size_t i) {
        if (std::this_thread::get_id() != caller) ran_outside = true;
        if (i == 0) {
            while (!other_ran.load()) std::this_thread::yield();
        } else {
            other_ran = true;
        }
    });
    EXPECT_TRUE(ran_outside.load());
    EXPECT_FALSE(pool.Pending()); // every task claimed
    {
        std::lock_guard lk(mu);
        stop = true;
    }
    cv.notify_all();
    outside.join();
    EXPECT_GE(helped_sets.load(), 1);
}

TEST(TaskPool, AHelperOfAnEndedSetClaimsNothingOfTheNext)
{
    // More threads than cores, helping in a loop, meet sets as they start and end: a thread
    // preempted between reading a set and claiming from it wakes up during a later set. Each task
    // of each set must still run exactly once, from its own set (a claim carries its set's number).
    TaskPool pool(3);
    std::atomic<bool> stop{false};
    std::vector<std::thread> outside;
    for (int t = 0; t < 2; ++t) {
        outside.emplace_back([&] {
            while (!stop.load()) pool.Help();
        });
    }
    // A claim from the wrong set can also leave Run waiting for ever: fail loudly instead.
    std::atomic<bool> finished{false};
    std::thread watchdog([&] {
        for (int i = 0; i < 1200 && !finished.load(); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(50));
        if (!finished.load()) {
            std::fprintf(stderr, "TaskPool.AHelperOfAnEndedSetClaimsNothingOfTheNext: Run did not return in 60 s\n");
            std::abort();
        }
    });
    // Sets of 1 to 6 tasks: a claim from the wrong set would also run an index beyond its set.
    bool once = true;
    for (int round = 0; round < 20000 && once; ++round) {
        std::array<std::atomic<int>, 8> runs{};
        const std::size_t n = 1 + std::size_t(round % 6);
        pool.Run(n, [&runs](std::size_t i) {
            volatile int spin = 0;
            for (int k = 0; k < 50; ++k) spin = spin + k;
            if (i < runs.size()) runs[i].fetch_add(1);
        });
        for (std::size_t i = 0; i < runs.size(); ++i) once = once && runs[i].load() == (i < n ? 1 : 0);
        EXPECT_TRUE(once) << "round " << round;
        EXPECT_FALSE(pool.Pending());
    }
    finished = true;
    stop = true;
    watchdog.join();
    for (auto& t : outside) t.join(); // before any failure returns: a joinable thread would terminate
}

TEST(TaskPool, RethrowsTheFirstExceptionAndStaysUsable)
{
    TaskPool pool(2);
    std::atomic<int> ran{0};
    EXPECT_THROW(pool.Run(6,
                          [&](std::size_t i) {
                              ++ran;
                              if (i % 2) throw std::runtime_error("task failed");
                          }),
                 std::runtime_error);
    EXPECT_EQ(ran.load(), 6); // the others still ran: Run returns once every task is done
    ran = 0;
    pool.Run(4, [&](std::size_t) { ++ran; });
    EXPECT_EQ(ran.load(), 4);
}

TEST(TaskPool, CountsTheHelpersCleansedBytes)
{
    TaskPool pool(1);
    std::atomic<bool> helper_ran{false};
    const std::thread::id caller = std::this_thread::get_id();
    uint64_t by_caller = 0;
    // Repeat until the helper took a task (it may wake after the caller claimed every one).
    for (int round = 0; round < 1000 && !helper_ran; ++round) {
        const uint64_t before = CleansedBytes();
        pool.Run(4, [&](std::size_t) {
            std::vector<char> mine(100);
            Cleanse(mine.data(), mine.size());
            if (std::this_thread::get_id() != caller) helper_ran = true;
            std::this_thread::sleep_for(std::chrono::microseconds(200));
        });
        by_caller += CleansedBytes() - before;
    }
    ASSERT_TRUE(helper_ran.load());
    EXPECT_EQ(pool.Cleansed() % 100, 0u);
    EXPECT_GT(pool.Cleansed(), 0u);
    EXPECT_EQ((pool.Cleansed() + by_caller) % 400, 0u); // every task's 100 bytes counted once
}

// A child process with an address space too small for the stacks of 100,000 threads: the pool's
// constructor must throw std::system_error after joining the threads it started (the child exits
// 0), never leave them joinable (std::terminate: SIGABRT). Sanitizers reserve address space of
// their own at start, so the limit would starve them instead.
TEST(TaskPool, ThreadsTheSystemCannotStartAreAnException)
{
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
    GTEST_SKIP() << "a sanitizer runtime needs more address space than the limit leaves";
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
    GTEST_SKIP() << "a sanitizer runtime needs more address space than the limit leaves";
#endif
#endif
    const pid_t child = ::fork();
    ASSERT_GE(child, 0);
    if (child == 0) {
        const rlimit limit{rlim_t(1) << 30, rlim_t(1) << 30};
        if (::setrlimit(RLIMIT_AS, &limit) != 0) ::_exit(3);
        try {
            TaskPool pool(100000);
        } catch (const std::system_error&) {
            ::_exit(0);
        }
        ::_exit(2); // every thread started: the limit did not hold
    }
    int status = 0;
    ASSERT_EQ(::waitpid(child, &status, 0), child);
    ASSERT_TRUE(WIFEXITED(status)) << "the child died of signal " << WTERMSIG(status);
    EXPECT_EQ(WEXITSTATUS(status), 0);
}

} // namespace
} // namespace ibdkit

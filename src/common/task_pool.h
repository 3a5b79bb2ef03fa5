// src/common/task_pool.h (internal) — helper threads that join the calling thread in running a
// small set of independent tasks, then sleep until the next set.
//
// Run(n, task) posts task(0) ... task(n - 1); the caller and the helpers claim them one at a time
// until none is left, and Run returns once every claimed task has finished. The caller never waits
// for a task nobody started: a helper that wakes late finds nothing left to claim, and the caller
// has done the work itself. Used by the engine to spread ConnectBlock's cache work over the
// cache's shards (connect/connect.h); not a general executor (one set at a time, from one thread).
#pragma once

#include <ibdkit/memory/cleanse.h>

#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <functional>
#include <mutex>
#include <thread>
#include <utility>
#include <vector>

namespace ibdkit {

class TaskPool {
public:
    using Task = std::function<void(std::size_t)>;

    explicit TaskPool(unsigned helpers)
    {
        m_threads.reserve(helpers);
        for (unsigned i = 0; i < helpers; ++i) m_threads.emplace_back([this] { Help(); });
    }
    TaskPool(const TaskPool&) = delete;
    TaskPool& operator=(const TaskPool&) = delete;
    ~TaskPool()
    {
        {
            std::lock_guard lk(m_mu);
            m_stop = true;
        }
        m_posted.notify_all();
        for (auto& t : m_threads) t.join();
    }

    /// Runs task(0) ... task(n - 1) on this thread and the helpers; rethrows the first exception.
    void Run(std::size_t n, const Task& task)
    {
        std::unique_lock lk(m_mu);
        m_task = &task;
        m_n = n;
        m_next = 0;
        m_done = 0;
        m_error = nullptr;
        if (!m_threads.empty()) m_posted.notify_all();
        Drain(lk);
        m_finished.wait(lk, [&] { return m_done == m_n; });
        m_task = nullptr;
        if (m_error) std::rethrow_exception(std::exchange(m_error, nullptr));
    }

    /// Bytes the helpers' buffer frees cleansed (their threads' counts, which the caller's own
    /// CleansedBytes() does not see).
    uint64_t Cleansed() const noexcept { return m_cleansed.load(std::memory_order_relaxed); }

private:
    // Claims and runs tasks until none is left; `lk` is held on entry and on return.
    void Drain(std::unique_lock<std::mutex>& lk)
    {
        while (m_task && m_next < m_n) {
            const std::size_t i = m_next++;
            const Task* task = m_task;
            lk.unlock();
            std::exception_ptr error;
            try {
                (*task)(i);
            } catch (...) {
                error = std::current_exception();
            }
            lk.lock();
            if (error && !m_error) m_error = error;
            if (++m_done == m_n) m_finished.notify_all();
        }
    }

    void Help()
    {
        uint64_t counted = CleansedBytes();
        std::unique_lock lk(m_mu);
        while (true) {
            m_posted.wait(lk, [&] { return m_stop || (m_task && m_next < m_n); });
            if (m_stop) break;
            Drain(lk);
            const uint64_t now = CleansedBytes();
            m_cleansed.fetch_add(now - counted, std::memory_order_relaxed);
            counted = now;
        }
    }

    std::mutex m_mu;
    std::condition_variable m_posted, m_finished;
    const Task* m_task{nullptr};
    std::size_t m_n{0}, m_next{0}, m_done{0};
    std::exception_ptr m_error;
    bool m_stop{false};
    std::atomic<uint64_t> m_cleansed{0};
    std::vector<std::thread> m_threads;
};

} // namespace ibdkit

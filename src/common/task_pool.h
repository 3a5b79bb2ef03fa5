// src/common/task_pool.h (internal) — helper threads that join the calling thread in running a
// small set of independent tasks, then sleep until the next set.
//
// Run(n, task) posts task(0) ... task(n - 1); the caller and the helpers claim them one at a time
// (a compare-and-swap, no lock per task) until none is left, and Run returns once every claimed
// task has finished. The caller never waits for a task nobody started: a helper that wakes late
// finds nothing left to claim, and the caller has done the work itself. A thread of someone else's
// can help too, between its own work (Help, Pending, OnPost): the engine's block reader does, so
// that two threads on two cores share the work without a third competing for them. Used by the
// engine to spread ConnectBlock's cache work over the cache's shards (connect/connect.h); not a
// general executor (one set at a time, from one thread).
#pragma once

#include "memory/cleanse.h"

#include <atomic>
#include <cassert>
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

    /// Starts `helpers` threads. Throws std::system_error when the system cannot start one (too
    /// many threads for its limits), after stopping those it started: a thread count is the user's
    /// to choose, so its failure must reach them as an error, never as std::terminate.
    explicit TaskPool(unsigned helpers)
    {
        try {
            m_threads.reserve(helpers);
            for (unsigned i = 0; i < helpers; ++i) m_threads.emplace_back([this] { Serve(); });
        } catch (...) {
            StopHelpers();
            throw;
        }
    }
    TaskPool(const TaskPool&) = delete;
    TaskPool& operator=(const TaskPool&) = delete;
    ~TaskPool() { StopHelpers(); }

    /// Runs task(0) ... task(n - 1) on this thread and the helpers; rethrows the first exception.
    void Run(std::size_t n, const Task& task)
    {
        if (n == 0) return;
        assert(n <= UINT32_MAX);
        uint32_t set = 0;
        {
            std::lock_guard lk(m_mu);
            m_task = &task;
            m_n = n;
            m_done.store(0, std::memory_order_relaxed);
            set = ++m_set;
            m_pending.store(true); // before the set can be claimed: its last claim clears it
            m_claim.store(uint64_t(set) << 32, std::memory_order_release);
        }
        // Notified outside the lock: a helper woken while the caller holds it would only block on it.
        if (!m_threads.empty()) m_posted.notify_all();
        if (m_on_post) m_on_post();
        Drain(set, task, n, /*count_cleansed=*/false);
        if (m_done.load(std::memory_order_acquire) != n) {
            std::unique_lock lk(m_mu);
            m_finished.wait(lk, [&] { return m_done.load(std::memory_order_acquire) == n; });
        }
        std::exception_ptr error;
        {
            std::lock_guard lk(m_mu);
            m_task = nullptr; // a helper waking now finds nothing to claim
            error = std::exchange(m_error, nullptr);
        }
        if (error) std::rethrow_exception(error);
    }

    /// Runs what is left of the set being run, if any, on the calling thread: a thread that is not
    /// one of the pool's, between its own work. Returns whether it found a set to help with.
    bool Help()
    {
        const Task* task = nullptr;
        std::size_t n = 0;
        uint32_t set = 0;
        {
            std::lock_guard lk(m_mu);
            if (!m_task) return false;
            task = m_task;
            n = m_n;
            set = m_set;
        }
        Drain(set, *task, n, /*count_cleansed=*/false);
        return true;
    }
    /// Whether a set has tasks nobody claimed yet. Sequentially consistent: a thread that announces
    /// it is about to sleep, then finds no set pending, is seen by the next OnPost callback.
    bool Pending() const noexcept { return m_pending.load(); }
    /// Called on Run's thread after each set is posted: wakes a thread that helps from outside.
    /// Set or cleared on that thread, between sets.
    void OnPost(std::function<void()> f) { m_on_post = std::move(f); }

    /// Bytes the helpers' buffer frees cleansed (their threads' counts, which the caller's own
    /// CleansedBytes() does not see).
    uint64_t Cleansed() const noexcept { return m_cleansed.load(std::memory_order_relaxed); }

private:
    void StopHelpers()
    {
        {
            std::lock_guard lk(m_mu);
            m_stop = true;
        }
        m_posted.notify_all();
        for (auto& t : m_threads) t.join();
    }

    // Claims and runs tasks of set `set` until none is left. A claim is one compare-and-swap of the
    // set's number and its next task, so no thread takes a lock per task, and a thread holding a
    // stale set (it woke after that set ended) claims nothing. A helper thread (`count_cleansed`)
    // adds the bytes its task's frees cleansed to Cleansed() before the task counts as done, so
    // that they are there once Run returns.
    void Drain(uint32_t set, const Task& task, std::size_t n, bool count_cleansed)
    {
        uint64_t claim = m_claim.load(std::memory_order_acquire);
        while (uint32_t(claim >> 32) == set && (claim & UINT32_MAX) < n) {
            if (!m_claim.compare_exchange_weak(claim, claim + 1, std::memory_order_acq_rel, std::memory_order_acquire)) continue;
            if ((claim & UINT32_MAX) + 1 == n) m_pending.store(false); // the last task is claimed
            const uint64_t cleansed = count_cleansed ? CleansedBytes() : 0;
            try {
                task(std::size_t(claim & UINT32_MAX));
            } catch (...) {
                std::lock_guard lk(m_mu);
                if (!m_error) m_error = std::current_exception();
            }
            if (count_cleansed) m_cleansed.fetch_add(CleansedBytes() - cleansed, std::memory_order_relaxed);
            if (m_done.fetch_add(1, std::memory_order_acq_rel) + 1 == n) {
                { std::lock_guard lk(m_mu); } // the caller is now waiting, or will see m_done first
                m_finished.notify_one();
            }
            claim = m_claim.load(std::memory_order_acquire);
        }
    }

    // A helper thread: sleeps until a set is posted, claims its tasks, and again.
    void Serve()
    {
        uint32_t seen = 0;
        std::unique_lock lk(m_mu);
        while (true) {
            m_posted.wait(lk, [&] { return m_stop || (m_task && m_set != seen); });
            if (m_stop) break;
            seen = m_set;
            const Task* task = m_task;
            const std::size_t n = m_n;
            lk.unlock();
            Drain(seen, *task, n, /*count_cleansed=*/true);
            lk.lock();
        }
    }

    std::mutex m_mu;
    std::condition_variable m_posted, m_finished;
    // Under m_mu: the set being run (a helper reads them when it wakes) and its first exception.
    const Task* m_task{nullptr};
    std::size_t m_n{0};
    uint32_t m_set{0};
    std::exception_ptr m_error;
    bool m_stop{false};
    std::atomic<uint64_t> m_claim{0}; ///< the set's number << 32 | the next task to claim
    std::atomic<std::size_t> m_done{0};
    std::atomic<bool> m_pending{false};
    std::function<void()> m_on_post;
    std::atomic<uint64_t> m_cleansed{0};
    std::vector<std::thread> m_threads;
};

} // namespace ibdkit

// src/common/handoff.h (internal) — two stages of one job on two threads: the calling thread fills
// batches, a second thread consumes them in the same order. A fixed set of Batch objects is
// recycled between the two, so the memory in flight is bounded and a batch keeps its capacity.
//
// Used where one walk feeds one sink: a UTXO export (chainstate walk | row writer) and a flush
// (serializing coins | LevelDB writes). Not for fan-out: the engine's pipeline has its own queues.
#pragma once

#include <algorithm>
#include <condition_variable>
#include <cstddef>
#include <deque>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <utility>
#include <vector>

namespace ibdkit {

template <typename Batch>
class Handoff {
public:
    /// Called on the second thread with each handed batch, in order; false stops the job (the
    /// producer sees it at its next Hand). It must leave the batch ready to be filled again.
    using Consume = std::function<bool(Batch&)>;

    /// `in_flight` (at least 2) batches, each constructed from `args`. With `threaded` false,
    /// Hand() consumes inline on the calling thread (a one-core machine, or --threads 1).
    template <typename... Args>
    Handoff(std::size_t in_flight, Consume consume, bool threaded, const Args&... args)
        : m_consume(std::move(consume)), m_threaded(threaded)
    {
        for (std::size_t i = 0; i < std::max<std::size_t>(in_flight, 2); ++i) m_batches.push_back(std::make_unique<Batch>(args...));
        for (std::size_t i = 1; i < m_batches.size(); ++i) m_free.push_back(i);
        if (m_threaded) m_thread = std::thread([this] { Run(); });
    }
    Handoff(const Handoff&) = delete;
    Handoff& operator=(const Handoff&) = delete;
    ~Handoff()
    {
        try {
            (void)Finish();
        } catch (...) { // only on an early return that already reports an error
        }
    }

    /// The batch the producer fills.
    Batch& Current() noexcept { return *m_batches[m_cur]; }

    /// Hands Current() to the consumer and makes another batch current (waiting for one to come
    /// back when all are in flight). False once the consumer has stopped.
    bool Hand()
    {
        if (!m_threaded) {
            if (!m_stopped && !m_consume(*m_batches[m_cur])) m_stopped = true;
            return !m_stopped;
        }
        std::unique_lock lk(m_mu);
        m_full.push_back(m_cur);
        m_cv.notify_all();
        m_cv.wait(lk, [&] { return !m_free.empty() || m_stopped; });
        if (m_stopped) return false;
        m_cur = m_free.front();
        m_free.pop_front();
        return true;
    }

    /// Waits until every handed batch is consumed (Current() is not handed: hand it first). True
    /// unless the consumer stopped early; an exception it threw is rethrown here.
    bool Finish()
    {
        if (!m_finished) {
            m_finished = true;
            if (m_threaded) {
                {
                    std::lock_guard lk(m_mu);
                    m_closed = true;
                }
                m_cv.notify_all();
                m_thread.join();
            }
        }
        if (m_error) std::rethrow_exception(std::exchange(m_error, nullptr));
        return !m_stopped;
    }

private:
    void Run()
    {
        std::unique_lock lk(m_mu);
        while (true) {
            m_cv.wait(lk, [&] { return !m_full.empty() || m_closed; });
            if (m_full.empty()) return;
            const std::size_t idx = m_full.front();
            m_full.pop_front();
            lk.unlock();
            bool ok = false;
            try {
                ok = m_consume(*m_batches[idx]);
            } catch (...) {
                m_error = std::current_exception();
            }
            lk.lock();
            m_free.push_back(idx);
            if (!ok) m_stopped = true;
            m_cv.notify_all();
            if (!ok) return;
        }
    }

    Consume m_consume;
    const bool m_threaded;
    std::vector<std::unique_ptr<Batch>> m_batches; ///< never move: Current() references stay valid
    std::size_t m_cur{0};
    std::mutex m_mu;
    std::condition_variable m_cv;
    std::deque<std::size_t> m_free, m_full;
    bool m_closed{false}, m_stopped{false}, m_finished{false};
    std::exception_ptr m_error;
    std::thread m_thread;
};

} // namespace ibdkit

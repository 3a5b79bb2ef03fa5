// src/common/executor.h — how a step hands independent tasks to threads it does not own.
//
// A TaskRunner runs task(0), ..., task(n - 1) and returns when all have run. The UTXO cache
// (coins/), ConnectBlock's script checks (connect/) and the engine take one, so the thread pool
// (the engine's, src/common/task_pool.h) is chosen by whoever runs the work, never by the code that
// splits it. Thread safety is the tasks' business: a runner only promises that each index runs once.
#pragma once

#include <cstddef>
#include <functional>

namespace ibdkit {

/// Runs task(0), ..., task(n - 1), each once, on the calling thread and any helper threads, and
/// returns when all have run; the first exception a task threw is rethrown then.
using TaskRunner = std::function<void(std::size_t n, const std::function<void(std::size_t)>& task)>;

/// task(0), ..., task(n - 1) on `runner`, or one after another on this thread when it is null.
inline void RunTasks(const TaskRunner* runner, std::size_t n, const std::function<void(std::size_t)>& task)
{
    if (runner) {
        (*runner)(n, task);
    } else {
        for (std::size_t i = 0; i < n; ++i) task(i);
    }
}

} // namespace ibdkit

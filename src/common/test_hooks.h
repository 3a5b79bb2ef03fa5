// src/common/test_hooks.h — the points where tests stop or kill a run to prove that recovery
// works. Private: the public options hold only a pointer to it (`test_hooks`, null by default),
// so a user of the API never sees a hook, and a run without one does exactly what it would do
// without this struct; nothing outside tests sets them.
#pragma once

#include <functional>
#include <memory>

namespace ibdkit {

struct TestHooks {
    /// The engine (engine/engine.h, EngineOptions): after each connected block, with its height,
    /// on the connecting thread, before any flush the block triggers.
    std::function<void(int height)> after_block;
    /// The chainstate (coins/coins_db.h, CoinsDBOptions): after each batch of a flush but the last
    /// (on the flush's writing thread when it has several); in a bulk load, once, after its tables
    /// are written and before they become the database.
    std::function<void()> after_partial_batch;
    /// A sync (engine/sync.h): a connected stream socket's descriptor to talk to instead of
    /// connecting to host:port (the sync owns it); -1 fails the connect.
    std::function<int()> connect;

    /// The options' pointer to hooks with only `after_block` (`after_partial_batch`, `connect`) set.
    static std::shared_ptr<const TestHooks> AfterBlock(std::function<void(int height)> f)
    {
        return std::make_shared<const TestHooks>(TestHooks{std::move(f), {}, {}});
    }
    static std::shared_ptr<const TestHooks> AfterPartialBatch(std::function<void()> f)
    {
        return std::make_shared<const TestHooks>(TestHooks{{}, std::move(f), {}});
    }
    static std::shared_ptr<const TestHooks> Connect(std::function<int()> f)
    {
        return std::make_shared<const TestHooks>(TestHooks{{}, {}, std::move(f)});
    }
};

} // namespace ibdkit

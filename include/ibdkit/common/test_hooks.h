// ibdkit/common/test_hooks.h — the points where tests stop or kill a run to prove that recovery
// works. Every hook is empty by default, and a run with no hook set does exactly what it would do
// without this struct; nothing outside tests sets them. One struct, so the public options say
// plainly which of their fields are for tests.
#pragma once

#include <functional>

namespace ibdkit {

struct TestHooks {
    /// The engine (engine/engine.h, EngineOptions): after each connected block, with its height,
    /// on the connecting thread, before any flush the block triggers.
    std::function<void(int height)> after_block;
    /// The chainstate (coins/coins_db.h, CoinsDBOptions): after each batch of a flush but the last
    /// (on the flush's writing thread when it has several); in a bulk load, once, after its tables
    /// are written and before they become the database.
    std::function<void()> after_partial_batch;
};

} // namespace ibdkit

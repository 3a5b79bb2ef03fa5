// Helpers shared by the tests that run whole replays (engine, replay, undo): a generated chain made
// once per process, a replay that must succeed, and the UTXO hash of its result.
#pragma once

#include "test_util.h"

#include <ibdkit/engine/replay.h>

#include "gen/chain_gen.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <string>

namespace ibdkit::test {

/// A small generated chain with spends in most blocks and witness blocks (220 blocks, ~6 MB, in
/// several xor'd blk files of 1 MiB), made once.
inline const std::filesystem::path& GeneratedBlocks()
{
    static TempDir dir;
    static const std::filesystem::path blocks = [] {
        auto o = TinyChainGenOptions();
        o.blocks = 220;
        o.target_bytes = 6'000'000;
        o.start_time = DefaultStartTime(o.blocks, 1'700'000'000);
        ChainWriteOptions w;
        w.xor_files = true;
        w.max_file_size = 1 << 20; // several blk files
        auto r = WriteGeneratedChain(dir.path, o, w);
        EXPECT_TRUE(r.ok()) << (r.ok() ? "" : r.error().message);
        return dir.path / "blocks";
    }();
    return blocks;
}

/// Replay(o), which must succeed (a failed expectation otherwise, and an empty result).
inline ReplayResult MustReplay(const ReplayOptions& o)
{
    auto r = Replay(o);
    EXPECT_TRUE(r.ok()) << (r.ok() ? "" : r.error().message);
    return r.ok() ? *r : ReplayResult{};
}

/// The result's hash_serialized_3 in hex, "none" without statistics.
inline std::string HashOf(const ReplayResult& r) { return r.utxo ? r.utxo->hash_serialized.ToHex() : "none"; }

} // namespace ibdkit::test

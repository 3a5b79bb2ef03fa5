// Helpers shared by the tests that run whole replays (engine, replay, undo): a generated chain made
// once per process, a replay that must succeed, and the UTXO hash of its result.
#pragma once

#include "test_util.h"

#include <ibdkit/chain/params.h>
#include <ibdkit/consensus/pow.h>
#include <ibdkit/encoding/endian.h>
#include <ibdkit/engine/replay.h>

#include "gen/chain_gen.h"
#include "stream/streams.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <string>
#include <vector>

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

/// Blocks 0..`at` of a small generated chain, block `at` changed by `breakit` (given the blocks
/// below it) and mined again, written as one blk file: the chain ends at the broken block.
inline std::filesystem::path BrokenChain(const std::filesystem::path& dir, int at,
                                         const std::function<void(Block&, const std::vector<Block>&)>& breakit)
{
    auto o = TinyChainGenOptions();
    o.blocks = at;
    o.target_bytes = 1'000'000;
    o.start_time = DefaultStartTime(o.blocks, 1'700'000'000);
    ChainGenerator gen(o);
    std::vector<Block> blocks{gen.Genesis()};
    while (!gen.Done()) blocks.push_back(gen.Next());
    Block& b = blocks.back();
    breakit(b, blocks);
    const auto& params = GetChainParams(ChainType::REGTEST);
    b.nonce = 0;
    while (!CheckProofOfWork(b.GetHash().ToUint256(), b.bits, params.consensus)) ++b.nonce;
    std::vector<uint8_t> out;
    for (const auto& block : blocks) {
        std::vector<uint8_t> bytes;
        VectorWriter w(bytes, 0);
        Serialize(w, block);
        out.insert(out.end(), params.message_start.begin(), params.message_start.end());
        uint8_t size[4];
        WriteLE32(size, uint32_t(bytes.size()));
        out.insert(out.end(), size, size + 4);
        out.insert(out.end(), bytes.begin(), bytes.end());
    }
    std::filesystem::create_directories(dir);
    std::ofstream(dir / "blk00000.dat", std::ios::binary).write(reinterpret_cast<const char*>(out.data()), std::streamsize(out.size()));
    return dir;
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

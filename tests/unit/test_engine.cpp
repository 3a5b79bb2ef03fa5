// The IBD engine: every thread count gives the same chainstate, the same UTXO hash, and the same
// rejection height and reason; prevouts are read ahead once the cache is smaller than the set; the
// bytes cleansed by the policy are counted on every thread.
#include "replay_test_util.h"

#include "engine/connect_loop.h"
#include "engine/pipeline.h"

#include <ibdkit/chain/params.h>
#include <ibdkit/consensus/header_check.h>
#include <ibdkit/consensus/pow.h>
#include <ibdkit/encoding/endian.h>
#include <ibdkit/blockfile/blockfile.h>
#include <ibdkit/engine/replay.h>

#include "gen/chain_gen.h"
#include "stream/streams.h"

#include <gtest/gtest.h>

#include <unistd.h>

#include <atomic>
#include <chrono>
#include <ctime>
#include <fstream>
#include <functional>
#include <thread>

using namespace ibdkit;
namespace fs = std::filesystem;

namespace {

using TempDir = ibdkit::test::TempDir;

using ibdkit::test::BrokenChain;
using ibdkit::test::GeneratedBlocks;
using ibdkit::test::HashOf;
using ibdkit::test::MustReplay;

} // namespace

TEST(Engine, EveryThreadCountGivesTheSameChainstate)
{
    ReplayOptions o;
    o.source.blocks_dir = GeneratedBlocks();
    o.dbcache_mib = 1; // flushes along the way, and coins read back from the chainstate
    o.threads = 1;
    const auto one = MustReplay(o);
    ASSERT_EQ(one.height, 220);
    ASSERT_EQ(one.threads, 1u);
    ASSERT_GT(one.inputs, 0u);
    ASSERT_GT(one.flushes, 1u);
    ASSERT_GT(one.flush_seconds, 0.0);
    ASSERT_GT(one.coins_read_from_disk, 0u); // the cache is smaller than the UTXO set
    EXPECT_EQ(one.coins_prefetched, 0u);     // one thread: no workers to read ahead
    uint64_t prefetched = 0;
    for (unsigned threads : {2u, 3u, 8u}) {
        o.threads = threads;
        for (bool via_p2p : {false, true}) {
            o.via_p2p = via_p2p;
            const auto r = MustReplay(o);
            EXPECT_EQ(r.threads, threads);
            EXPECT_EQ(r.height, one.height);
            EXPECT_EQ(r.tip, one.tip);
            EXPECT_EQ(HashOf(r), HashOf(one)) << threads << " threads";
            EXPECT_EQ(r.blocks, one.blocks);
            EXPECT_EQ(r.txs, one.txs);
            EXPECT_EQ(r.inputs, one.inputs);
            EXPECT_EQ(r.outputs, one.outputs);
            EXPECT_EQ(r.flushes, one.flushes);
            // Workers read prevouts ahead (how many depends on timing); every coin read from disk,
            // ahead or not, is one the single-threaded run read too.
            EXPECT_LE(r.coins_prefetched, r.coins_read_from_disk);
            EXPECT_EQ(r.coins_read_from_disk, one.coins_read_from_disk) << threads << " threads";
            prefetched += r.coins_prefetched;
        }
    }
    std::printf("coins read ahead by the workers, all threaded runs: %llu\n", (unsigned long long)prefetched);
}

// What the cache counts (its nodes, slot tables, scripts and the flush's index) does not depend on
// the thread count, so a cache that is neither flushed after every block nor large enough for the
// whole set fills at the same blocks for every --threads.
TEST(Engine, EveryThreadCountFlushesAtTheSameBlocks)
{
    ReplayOptions o;
    o.source.blocks_dir = GeneratedBlocks();
    o.dbcache_mib = 3;
    o.threads = 1;
    const auto one = MustReplay(o);
    ASSERT_GT(one.flushes, 2u);
    ASSERT_LT(one.flushes, one.blocks / 2);
    for (unsigned threads : {2u, 8u}) {
        o.threads = threads;
        const auto r = MustReplay(o);
        EXPECT_EQ(HashOf(r), HashOf(one)) << threads << " threads";
        EXPECT_EQ(r.flushes, one.flushes) << threads << " threads";
        EXPECT_EQ(r.coins_read_from_disk, one.coins_read_from_disk) << threads << " threads";
    }
}

TEST(Engine, StopHeightAndResumeWithThreads)
{
    TempDir cs;
    ReplayOptions o;
    o.source.blocks_dir = GeneratedBlocks();
    o.chainstate = cs.path / "chainstate";
    o.threads = 4;
    o.stop_height = 150;
    auto first = MustReplay(o);
    ASSERT_EQ(first.height, 150);
    o.stop_height.reset();
    auto second = MustReplay(o);
    EXPECT_EQ(second.start_height, 151);
    EXPECT_EQ(second.height, 220);
    ReplayOptions whole;
    whole.source.blocks_dir = GeneratedBlocks();
    whole.threads = 1;
    EXPECT_EQ(HashOf(second), HashOf(MustReplay(whole)));
}

TEST(Engine, BytesCleansedAreCountedOnEveryThread)
{
    ReplayOptions o;
    o.source.blocks_dir = GeneratedBlocks();
    o.policy = PolicyId::ZeroAfterFree;
    o.threads = 1;
    const auto one = MustReplay(o);
    o.threads = 3;
    const auto three = MustReplay(o);
    // Every block's buffer is cleansed once, whichever thread frees it.
    ASSERT_GT(one.bytes_cleansed, one.bytes);
    EXPECT_GE(three.bytes_cleansed, one.bytes);
}

// One kind of break per chain: the rejection height and Core's reason are the same with every
// thread count (what the chainstate keeps: tests/unit/test_engine_failure.cpp).
TEST(Engine, EveryThreadCountRejectsAtTheSameHeightWithTheSameReason)
{
    // Copy the generated files, then change the last byte of block 180 (its last transaction's
    // lock time): the block still decodes and links, but its merkle root no longer matches.
    const auto src = GeneratedBlocks();
    ReplayOptions probe;
    probe.source.blocks_dir = src;
    probe.stop_height = 179;
    probe.threads = 1;
    const auto before = MustReplay(probe);
    ASSERT_EQ(before.height, 179);

    // Find block 180's record: scan the (xor'd) files for its position.
    std::optional<BlockRecordPos> pos;
    std::vector<fs::path> files = ListBlockFiles(src).value();
    auto key = ReadXorKey(src);
    ASSERT_TRUE(key.ok());
    ChainOrderer orderer(GetChainParams(ChainType::REGTEST).consensus.hash_genesis_block);
    auto scan = ScanBlockFiles(files, std::span<const uint8_t, 4>(GetChainParams(ChainType::REGTEST).message_start), *key,
                               [&](const BlockRecordPos& p, std::span<const uint8_t> b) { orderer.Add(p, b.first<80>()); });
    ASSERT_TRUE(scan.ok());
    const auto order = orderer.Finish();
    ASSERT_GT(order.blocks.size(), 180u);
    pos = order.blocks[180];

    TempDir bad;
    for (const auto& f : files) fs::copy_file(f, bad.path / f.filename());
    fs::copy_file(src / "xor.dat", bad.path / "xor.dat");
    {
        std::fstream f(bad.path / files[pos->file].filename(), std::ios::binary | std::ios::in | std::ios::out);
        const uint64_t at = pos->offset + pos->size - 1;
        f.seekg(std::streamoff(at));
        char c = 0;
        f.read(&c, 1);
        c = char(c ^ 0x01);
        f.seekp(std::streamoff(at));
        f.write(&c, 1);
    }
    ReplayOptions o;
    o.source.blocks_dir = bad.path;
    std::optional<std::string> reason;
    for (unsigned threads : {1u, 2u, 5u}) {
        o.threads = threads;
        const auto r = MustReplay(o);
        ASSERT_TRUE(r.reject_reason) << threads << " threads";
        EXPECT_EQ(r.reject_height, 180);
        if (!reason) reason = r.reject_reason;
        EXPECT_EQ(*r.reject_reason, *reason) << threads << " threads";
    }
    EXPECT_EQ(*reason, "bad-txnmrklroot");
}

namespace {

// The median of the 11 timestamps below the last block.
uint32_t MedianBelow(const std::vector<Block>& blocks)
{
    std::vector<HeaderInfo> info;
    for (std::size_t i = 0; i + 1 < blocks.size(); ++i) info.push_back({blocks[i].time, blocks[i].bits});
    return uint32_t(GetMedianTimePast(HeaderAncestry{0, info}));
}

} // namespace

// Core's ContextualCheckBlockHeader runs on every block before it is connected: a header that
// breaks one of its rules is rejected at its height with Core's reason, with every thread count,
// and after a resume (the ancestry then comes from the chain's headers, not from this run).
TEST(Engine, ContextualHeaderRulesRejectWithCoreReason)
{
    constexpr int AT = 120;
    struct Case {
        const char* reason;
        std::function<void(Block&, const std::vector<Block>&)> breakit;
    };
    const Case cases[] = {
        {"time-too-old", [](Block& b, const std::vector<Block>& c) { b.time = MedianBelow(c); }},
        {"bad-diffbits", [](Block& b, const std::vector<Block>&) { b.bits = 0x207ffffe; }}, // regtest wants its pow limit
        {"time-too-new", [](Block& b, const std::vector<Block>&) { b.time = uint32_t(std::time(nullptr) + 2 * 60 * 60 + 600); }},
        {"bad-version(0x00000003)", [](Block& b, const std::vector<Block>&) { b.version = 3; }}, // BIP65 from height 1
    };
    for (const auto& c : cases) {
        TempDir dir;
        const auto blocks = BrokenChain(dir.path / "blocks", AT, c.breakit);
        ReplayOptions o;
        o.source.blocks_dir = blocks;
        for (unsigned threads : {1u, 2u}) {
            o.threads = threads;
            const auto r = MustReplay(o);
            ASSERT_TRUE(r.reject_reason) << c.reason << ", " << threads << " threads";
            EXPECT_EQ(*r.reject_reason, c.reason) << threads << " threads";
            EXPECT_EQ(r.reject_height, AT) << c.reason;
            EXPECT_EQ(r.height, AT - 1) << c.reason;
        }
        // Resumed just below the bad block: the same verdict from the headers in the files.
        TempDir cs;
        o.chainstate = cs.path;
        o.threads = 2;
        o.stop_height = AT - 1;
        ASSERT_EQ(MustReplay(o).height, AT - 1);
        o.stop_height.reset();
        const auto r = MustReplay(o);
        EXPECT_EQ(r.start_height, AT);
        ASSERT_TRUE(r.reject_reason) << c.reason;
        EXPECT_EQ(*r.reject_reason, c.reason);
        EXPECT_EQ(r.reject_height, AT);
    }
}

// The pipeline's bound on blocks in flight: raw bytes up to MAX_BYTES_IN_FLIGHT, except that
// MIN_BLOCKS_IN_FLIGHT always move (a worker decodes the next block while this one connects,
// however large). Decoded blocks hold several times their raw bytes, so this bound is part of the
// fixed memory beside the cache (the peak-RSS test in python/tests/test_memory_budget.py).
TEST(Engine, PipelineBoundsTheBlocksInFlight)
{
    using engine::Pipeline;
    constexpr std::size_t MiB = std::size_t(1) << 20;
    for (const std::size_t block_bytes : {MiB / 2, 3 * MiB}) {
        const ConsensusParams& params = GetChainParams(ChainType::REGTEST).consensus;
        Pipeline pipe(params, 2, nullptr);
        std::atomic<int> pushed{0};
        constexpr int BLOCKS = 24;
        pipe.Start([&](const engine::BlockSource::Emit& emit) -> std::optional<Error> {
            for (int h = 1; h <= BLOCKS; ++h) {
                engine::RawBlock raw;
                raw.height = h;
                DataStream<policy::Plain> bytes;
                bytes.resize(block_bytes); // zeros: does not decode, which the pipeline reports
                raw.bytes = OwnedBytes(std::move(bytes));
                if (!emit(std::move(raw))) break;
                pushed.fetch_add(1);
            }
            return std::nullopt;
        });
        // The producer runs ahead of a connector that has not taken anything yet (waited for, not
        // assumed: under a sanitizer on a busy machine making a block can take longer than the
        // connector's sleep below).
        const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
        while (pushed.load() < int(Pipeline::MIN_BLOCKS_IN_FLIGHT) && std::chrono::steady_clock::now() < deadline) {
            std::this_thread::sleep_for(std::chrono::milliseconds(1));
        }
        EXPECT_GE(pushed.load(), int(Pipeline::MIN_BLOCKS_IN_FLIGHT)) << "the producer did not run ahead";
        int popped = 0, most_in_flight = 0;
        while (auto rb = pipe.Pop()) {
            ++popped;
            EXPECT_EQ(rb->height, popped); // in emission order
            EXPECT_TRUE(rb->decode_error.has_value());
            std::this_thread::sleep_for(std::chrono::milliseconds(5)); // a slow connector
            // Blocks in the pipeline while this one is connected (each counted once emit returned).
            most_in_flight = std::max(most_in_flight, pushed.load() - popped);
        }
        EXPECT_EQ(popped, BLOCKS);
        EXPECT_FALSE(pipe.Stop().has_value());
        const int by_bytes = int(Pipeline::MAX_BYTES_IN_FLIGHT / block_bytes);
        const int bound = std::max(int(Pipeline::MIN_BLOCKS_IN_FLIGHT), by_bytes);
        EXPECT_LE(most_in_flight, bound) << block_bytes << "-byte blocks";
    }
}

// The tenths of `throughput_by_decile` end with the last block connected, wherever the log's
// spacing left its last point: the final flush that follows is no block's.
TEST(Engine, ThroughputTenthsEndWithTheLastBlock)
{
    ThroughputLog log;
    constexpr uint64_t MiB = uint64_t(1) << 20;
    // 100 blocks of 3/4 MiB at one second each: the log keeps a point per MiB (blocks 1, 3, ..., 99
    // here), so the last block is not one of its points.
    for (int h = 1; h <= 100; ++h) log.Add(h, uint64_t(h) * MiB * 3 / 4, double(h));
    const auto tenths = log.Deciles();
    ASSERT_EQ(tenths.size(), 10u);
    EXPECT_EQ(tenths.front().height_from, 1);
    EXPECT_EQ(tenths.back().height_to, 100);
    for (const auto& t : tenths) {
        EXPECT_NEAR(t.blocks_per_s, 1.0, 1e-9) << t.height_from << ".." << t.height_to;
        EXPECT_NEAR(t.mb_per_s, 0.75 * double(MiB) / 1e6, 1e-9);
    }
}

// Added a batch at a time (SwiftSync's walk), the tenths start after the block given to Start.
TEST(Engine, ThroughputTenthsOfBatchesStartWhereTheRunStarts)
{
    ThroughputLog log;
    log.Start(0);
    constexpr uint64_t MiB = uint64_t(1) << 20;
    for (int batch = 1; batch <= 20; ++batch) log.Add(batch * 10, uint64_t(batch) * 8 * MiB, double(batch)); // 10 blocks, 8 MiB a second
    const auto tenths = log.Deciles();
    ASSERT_EQ(tenths.size(), 10u);
    EXPECT_EQ(tenths.front().height_from, 1);
    EXPECT_EQ(tenths.front().height_to, 20);
    EXPECT_EQ(tenths.back().height_to, 200);
    for (const auto& t : tenths) EXPECT_NEAR(t.mb_per_s, 8.0 * double(MiB) / 1e6, 1e-9);
}

// Every flush, the full cache's along the way and the final one, is announced to the progress
// callback before it starts (the CLI's line says the chainstate is being written).
TEST(Engine, EveryFlushIsAnnouncedToTheProgressCallback)
{
    for (unsigned threads : {1u, 2u}) {
        ReplayOptions o;
        o.source.blocks_dir = GeneratedBlocks();
        o.dbcache_mib = 3;
        o.threads = threads;
        uint64_t announced = 0;
        o.on_progress = [&](const ReplayProgress& p) {
            if (!p.flushing) return;
            EXPECT_EQ(p.flushes, announced) << "announced before the flush is counted";
            ++announced;
        };
        const auto r = MustReplay(o);
        ASSERT_GT(r.flushes, 2u);
        EXPECT_EQ(announced, r.flushes) << threads << " threads";
    }
}

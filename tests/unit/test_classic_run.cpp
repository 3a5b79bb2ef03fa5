// The classic runs' driver (include/ibdkit/run/classic_run.h): the export at a height and the
// hintsfile written after a clean replay, from the chainstate it left; nothing after any other run.
#include "replay_test_util.h"

#include <ibdkit/run/classic_run.h>

#include "consensus/merkle.h"

#include <gtest/gtest.h>

#include <filesystem>

using namespace ibdkit;
namespace fs = std::filesystem;
using ibdkit::test::GeneratedBlocks;
using ibdkit::test::HashOf;
using ibdkit::test::MustReplay;
using ibdkit::test::TempDir;

namespace {

ReplayOptions Blocks(const fs::path& dir)
{
    ReplayOptions o;
    o.source.blocks_dir = dir;
    return o;
}

} // namespace

TEST(ClassicRun, TheExportAtAHeightIsTheUtxoSetAReplayStoppedThereHolds)
{
    TempDir t;
    auto stopped = Blocks(GeneratedBlocks());
    stopped.stop_height = 120;
    const ReplayResult ref = MustReplay(stopped);
    ASSERT_EQ(ref.height, 120);

    for (const char* format : {"csv", "snapshot"}) {
        run::RunOutputs out;
        out.height_export = run::HeightExport{.height = 120, .format = format, .out = t.path / format};
        auto r = run::RunReplay(Blocks(GeneratedBlocks()), out); // no chainstate named: a temporary one
        ASSERT_TRUE(r.ok()) << r.error().message;
        EXPECT_EQ(r->replay.height, 120) << "the export stops the run at its height";
        ASSERT_TRUE(r->outputs.exported);
        EXPECT_FALSE(r->outputs.hints);
        const UtxoStats& written = r->outputs.exported->dump ? r->outputs.exported->dump->file_stats
                                                             : r->outputs.exported->snapshot->file_stats;
        EXPECT_EQ(written.hash_serialized.ToHex(), HashOf(ref)) << format;
        EXPECT_TRUE(fs::exists(t.path / format));
    }
}

TEST(ClassicRun, AnExportTheRunCannotReachIsAnErrorAndWritesNothing)
{
    TempDir t;
    run::RunOutputs out;
    out.height_export = run::HeightExport{.height = 500, .format = "csv", .out = t.path / "past.csv"};
    auto r = run::RunReplay(Blocks(GeneratedBlocks()), out);
    ASSERT_FALSE(r.ok());
    EXPECT_NE(r.error().message.find("stands at height 220"), std::string::npos) << r.error().message;
    EXPECT_FALSE(fs::exists(t.path / "past.csv"));

    // Refused before any block is read: another stop height, an unknown format.
    auto o = Blocks(GeneratedBlocks());
    o.stop_height = 50;
    out.height_export->height = 100;
    r = run::RunReplay(o, out);
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.error().code, Errc::InvalidValue);
    out.height_export->format = "xml";
    r = run::RunReplay(Blocks(GeneratedBlocks()), out);
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.error().code, Errc::InvalidValue);
    EXPECT_FALSE(fs::exists(t.path / "past.csv"));
}

TEST(ClassicRun, TheHintsfileIsWrittenAfterACleanReplayOnly)
{
    TempDir t;
    run::RunOutputs out;
    out.write_hints = t.path / "chain.hints";
    auto r = run::RunReplay(Blocks(GeneratedBlocks()), out);
    ASSERT_TRUE(r.ok()) << r.error().message;
    ASSERT_TRUE(r->outputs.hints);
    EXPECT_EQ(r->outputs.hints->height, 220u);
    EXPECT_EQ(r->outputs.hints->coins, r->replay.utxo->txouts);
    EXPECT_TRUE(fs::exists(out.write_hints));

    // A chain whose last block is invalid: the replay rejects it, and neither output is written.
    const fs::path broken = ibdkit::test::BrokenChain(t.path / "broken", 30, [](Block& b, const std::vector<Block>&) {
        MutableTransaction cb = b.vtx[0].ToMutable(); // the coinbase claims more than the subsidy and fees
        cb.vout[0].value += 1;
        b.vtx[0] = Transaction(std::move(cb));
        b.hash_merkle_root = BlockMerkleRoot(b);
    });
    out.write_hints = t.path / "broken.hints";
    out.height_export = run::HeightExport{.height = 30, .format = "csv", .out = t.path / "broken.csv"};
    r = run::RunReplay(Blocks(broken), out);
    ASSERT_TRUE(r.ok()) << r.error().message;
    ASSERT_TRUE(r->replay.reject_reason);
    EXPECT_FALSE(r->outputs.hints);
    EXPECT_FALSE(r->outputs.exported);
    EXPECT_FALSE(fs::exists(t.path / "broken.hints"));
    EXPECT_FALSE(fs::exists(t.path / "broken.csv"));
}

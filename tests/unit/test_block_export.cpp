// The block-table export's driver (include/ibdkit/run/block_export.h): every block a row of the
// blocks table, a range, progress after each block, and no file at all when a block cannot be read.
#include "replay_test_util.h"

#include <ibdkit/run/block_export.h>

#include "consensus/merkle.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>

using namespace ibdkit;
namespace fs = std::filesystem;
using ibdkit::test::GeneratedBlocks;
using ibdkit::test::TempDir;

namespace {

run::BlockExportOptions Export(const fs::path& blocks, const fs::path& out)
{
    run::BlockExportOptions o;
    o.reader.source.blocks_dir = blocks;
    o.reader.dbcache_mib = 16;
    o.table = BlockTable::Blocks;
    o.format = TableFormat::Csv;
    o.out = out;
    return o;
}

std::size_t Lines(const fs::path& file)
{
    std::ifstream in(file);
    std::size_t n = 0;
    for (std::string line; std::getline(in, line);) ++n;
    return n;
}

} // namespace

TEST(BlockExport, WritesARowPerBlockOfTheRangeAndReportsEachBlock)
{
    TempDir t;
    auto o = Export(GeneratedBlocks(), t.path / "blocks.csv");
    o.reader.from_height = 10;
    o.reader.to_height = 40;
    int calls = 0, last = -1;
    uint64_t rows = 0;
    o.on_progress = [&](const run::BlockExportProgress& p) {
        ++calls;
        EXPECT_EQ(p.height, last < 0 ? 10 : last + 1);
        EXPECT_EQ(p.first_height, 10);
        EXPECT_GT(p.rows, rows);
        last = p.height;
        rows = p.rows;
    };
    auto r = run::ExportBlockTable(o);
    ASSERT_TRUE(r.ok()) << r.error().message;
    EXPECT_EQ(r->blocks, 31u);
    EXPECT_EQ(r->rows, 31u);
    EXPECT_EQ(r->from_height, 10);
    EXPECT_EQ(r->to_height, 40);
    EXPECT_GT(r->block_bytes, 0u);
    EXPECT_EQ(calls, 31);
    EXPECT_EQ(Lines(o.out), 32u) << "the header, then a row per block";
}

TEST(BlockExport, ABlockThatCannotBeReadLeavesNoFile)
{
    TempDir t;
    // The chain's last block claims more than its subsidy and fees: the replay under the reader refuses it.
    const fs::path broken = ibdkit::test::BrokenChain(t.path / "broken", 30, [](Block& b, const std::vector<Block>&) {
        MutableTransaction cb = b.vtx[0].ToMutable();
        cb.vout[0].value += 1;
        b.vtx[0] = Transaction(std::move(cb));
        b.hash_merkle_root = BlockMerkleRoot(b);
    });
    auto o = Export(broken, t.path / "broken.csv");
    auto r = run::ExportBlockTable(o);
    ASSERT_FALSE(r.ok());
    EXPECT_NE(r.error().message.find("bad-cb-amount"), std::string::npos) << r.error().message;
    EXPECT_NE(r.error().message.find("(nothing written to " + o.out.string() + ")"), std::string::npos) << r.error().message;
    EXPECT_FALSE(fs::exists(o.out));

    o = Export(t.path / "nothing-here", t.path / "none.csv");
    r = run::ExportBlockTable(o);
    ASSERT_FALSE(r.ok());
    EXPECT_FALSE(fs::exists(o.out));
}

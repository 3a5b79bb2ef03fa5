// The data directory writer (blockfile/datadir_writer.h): what it writes, ibdkit's readers of Core's
// datadirs read back — the chain through the block index, every block's bytes, every undo record
// with its checksum — across several blk files; undo data replaced before the index names it; a
// reopened folder continues where its index ends; a folder of blocks ibdkit did not write is refused.
#include "replay_test_util.h"

#include <ibdkit/blockfile/blockfile.h>
#include <ibdkit/blockfile/locate.h>
#include <ibdkit/coins/undo.h>
#include <ibdkit/engine/replay.h>

#include "blockfile/block_index.h"
#include "blockfile/datadir_writer.h"
#include "blockfile/undo_file.h"
#include "kv/store.h"

#include <gtest/gtest.h>

#include <fstream>

using namespace ibdkit;
namespace fs = std::filesystem;
using ibdkit::test::GeneratedBlocks;
using ibdkit::test::MustReplay;
using ibdkit::test::TempDir;

namespace {

struct Connected {
    Block block;
    std::vector<uint8_t> bytes;
    std::vector<uint8_t> undo;
};

/// The generated chain's blocks as a replay connects them, with their undo data.
const std::vector<Connected>& ConnectedChain()
{
    static const std::vector<Connected> chain = [] {
        std::vector<Connected> out;
        ReplayOptions o;
        o.source.blocks_dir = GeneratedBlocks();
        o.statistics = false;
        o.on_connected = [&](const Block& b, int height, const BlockUndo& undo) {
            EXPECT_EQ(height, int(out.size()) + 1);
            out.push_back({b, SerializeToVector(b), SerializeBlockUndo(undo)});
        };
        MustReplay(o);
        return out;
    }();
    return chain;
}

const ChainParams& Regtest() { return GetChainParams(ChainType::REGTEST); }

/// Appends blocks [from, to] (heights) of the chain.
void AppendRange(DatadirWriter& w, int from, int to)
{
    const auto& chain = ConnectedChain();
    for (int h = from; h <= to; ++h) w.Append(chain[std::size_t(h - 1)].block, h, chain[std::size_t(h - 1)].undo);
}

/// Reads the datadir back through the readers of Core's datadirs and checks every block and undo
/// record against the chain up to `tip`.
void ExpectReadsBack(const fs::path& datadir, int tip)
{
    const auto& chain = ConnectedChain();
    auto located = LocateFromDatadir(datadir, ChainType::REGTEST);
    ASSERT_TRUE(located.ok()) << located.error().message;
    ASSERT_EQ(located->TipHeight(), tip);
    EXPECT_FALSE(located->key.IsNull()) << "the files are obfuscated with a random key";
    EXPECT_GT(located->files.size(), 2u) << "the chain spans several blk files";
    BlockFileReader blk(located->files, located->key);
    auto genesis = blk.Read(located->order.blocks[0]);
    ASSERT_TRUE(genesis.ok());
    EXPECT_EQ(*genesis, SerializeToVector(Regtest().genesis));
    for (int h = 1; h <= tip; ++h) {
        auto bytes = blk.Read(located->order.blocks[std::size_t(h)]);
        ASSERT_TRUE(bytes.ok()) << h;
        ASSERT_EQ(*bytes, chain[std::size_t(h - 1)].bytes) << h;
    }
    auto undo = LocateUndoInDatadir(datadir, ChainType::REGTEST);
    ASSERT_TRUE(undo.ok()) << undo.error().message;
    ASSERT_EQ(undo->blocks.size(), std::size_t(tip));
    EXPECT_EQ(undo->without_undo, 0u);
    UndoFileReader rev(undo->blocks_dir, undo->key, Regtest().message_start);
    for (const auto& b : undo->blocks) {
        auto bytes = rev.ReadBytes(b.file, b.undo_pos, b.prev); // the checksum is checked here
        ASSERT_TRUE(bytes.ok()) << b.height << ": " << bytes.error().message;
        ASSERT_EQ(*bytes, chain[std::size_t(b.height - 1)].undo) << b.height;
    }
    // Core's status of a connected block, its block-file records.
    auto index = ReadBlockIndex(datadir / "regtest" / "blocks" / "index");
    ASSERT_TRUE(index.ok());
    for (const auto& e : index->entries) {
        const uint32_t want = e.height == 0 ? (BLOCK_VALID_TRANSACTIONS | BLOCK_HAVE_DATA | BLOCK_OPT_WITNESS)
                                            : (BLOCK_VALID_SCRIPTS | BLOCK_HAVE_DATA | BLOCK_HAVE_UNDO | BLOCK_OPT_WITNESS);
        EXPECT_EQ(e.status, want) << e.height;
        EXPECT_EQ(e.client_version, BLOCK_INDEX_DUMMY_VERSION);
    }
}

} // namespace

TEST(DatadirWriter, BlockFileInfoAndIndexEntriesRoundTrip)
{
    BlockFileInfo info;
    info.AddBlock(7, 1'700'000'100);
    info.AddBlock(5, 1'700'000'000);
    info.size = 123456;
    info.undo_size = 789;
    EXPECT_EQ(info.height_first, 5u);
    EXPECT_EQ(info.height_last, 7u);
    EXPECT_EQ(info.time_first, 1'700'000'000u);
    auto back = DecodeBlockFileInfo(EncodeBlockFileInfo(info));
    ASSERT_TRUE(back.ok());
    EXPECT_EQ(*back, info);
    BlockIndexEntry e;
    e.client_version = BLOCK_INDEX_DUMMY_VERSION;
    e.height = 300;
    e.status = BLOCK_VALID_SCRIPTS | BLOCK_HAVE_DATA | BLOCK_HAVE_UNDO;
    e.tx_count = 12;
    e.file = 3;
    e.data_pos = 1000;
    e.undo_pos = 2000;
    e.header[0] = 1;
    auto d = DecodeBlockIndexEntry(e.hash, EncodeBlockIndexEntry(e));
    ASSERT_TRUE(d.ok());
    EXPECT_EQ(EncodeBlockIndexEntry(*d), EncodeBlockIndexEntry(e));
    EXPECT_EQ(d->undo_pos, 2000u);
}

TEST(DatadirWriter, ReadersOfCoresDatadirsReadWhatItWrote)
{
    TempDir t;
    const fs::path datadir = t.path / "node";
    {
        auto w = DatadirWriter::Open(datadir / "regtest", Regtest(), 1 << 20);
        ASSERT_TRUE(w.ok()) << w.error().message;
        AppendRange(**w, 1, 100);
        (*w)->Sync();
        AppendRange(**w, 101, 220);
        (*w)->Sync();
    }
    ExpectReadsBack(datadir, 220);
    std::ifstream key(datadir / "regtest" / "blocks" / "xor.dat", std::ios::binary | std::ios::ate);
    EXPECT_EQ(int(key.tellg()), 8);
}

TEST(DatadirWriter, UndoDataReplacedBeforeTheIndexNamesItIsWhatIsRead)
{
    // SwiftSync's path: blocks appended as they were serialized, and a lying peer's undo data
    // replaced (in the open rev file and in earlier, closed ones) before the index is written.
    TempDir t;
    const fs::path datadir = t.path / "node";
    const auto& chain = ConnectedChain();
    {
        auto w = DatadirWriter::Open(datadir / "regtest", Regtest(), 1 << 20);
        ASSERT_TRUE(w.ok()) << w.error().message;
        for (int h = 1; h <= 220; ++h) {
            const Connected& c = chain[std::size_t(h - 1)];
            const std::vector<uint8_t> wrong(c.undo.size() + 1, 0x5a);
            (*w)->Append(c.bytes, c.block.header(), uint32_t(c.block.vtx.size()), h, h % 3 == 0 ? wrong : c.undo);
        }
        for (int h = 3; h <= 220; h += 3) (*w)->ReplaceUndo(chain[std::size_t(h - 1)].block.GetHash(), chain[std::size_t(h - 1)].undo);
        (*w)->Sync();
        EXPECT_THROW((*w)->ReplaceUndo(chain[2].block.GetHash(), chain[2].undo), DatadirWriteError) << "indexed already";
    }
    ExpectReadsBack(datadir, 220);
}

TEST(DatadirWriter, AReopenedFolderContinuesWhereItsIndexEnds)
{
    TempDir t;
    const fs::path datadir = t.path / "node";
    {
        auto w = DatadirWriter::Open(datadir / "regtest", Regtest(), 1 << 20);
        ASSERT_TRUE(w.ok()) << w.error().message;
        AppendRange(**w, 1, 150);
        (*w)->Sync();
        AppendRange(**w, 151, 170); // never synced: as if the process died here
    }
    // A blk file shorter than its index says is damage, never extended with zeros.
    const fs::path last = BlockFilePath(datadir / "regtest" / "blocks", int(ListBlockFiles(datadir / "regtest" / "blocks")->size()) - 1);
    const auto full = fs::file_size(last);
    fs::copy_file(last, t.path / "saved");
    fs::resize_file(last, 10);
    auto damaged = DatadirWriter::Open(datadir / "regtest", Regtest(), 1 << 20);
    ASSERT_FALSE(damaged.ok());
    EXPECT_NE(damaged.error().message.find("fewer bytes than the block index records"), std::string::npos) << damaged.error().message;
    EXPECT_EQ(fs::file_size(last), 10u);
    fs::copy_file(t.path / "saved", last, fs::copy_options::overwrite_existing);
    ASSERT_EQ(fs::file_size(last), full);

    auto w = DatadirWriter::Open(datadir / "regtest", Regtest(), 1 << 20);
    ASSERT_TRUE(w.ok()) << w.error().message;
    EXPECT_EQ((*w)->TipHeight(), 150);
    AppendRange(**w, 100, 220); // the blocks it holds are skipped
    (*w)->Sync();
    w->reset();
    ExpectReadsBack(datadir, 220);
}

TEST(DatadirWriter, AFolderKilledBeforeItsFirstIndexBatchStartsOver)
{
    TempDir t;
    const fs::path blocks = t.path / "node" / "regtest" / "blocks";
    fs::create_directories(blocks);
    std::ofstream(blocks / DATADIR_MARKER).flush();
    std::ofstream(blocks / "blk00000.dat") << "a torn record";
    {
        StoreStatus st;
        StoreOptions so;
        so.obfuscate = false;
        ASSERT_TRUE(Store::Open(blocks / "index", so, &st)) << st.message; // an index with no record
    }
    auto w = DatadirWriter::Open(t.path / "node" / "regtest", Regtest(), 1 << 20);
    ASSERT_TRUE(w.ok()) << w.error().message;
    EXPECT_EQ((*w)->TipHeight(), 0);
    AppendRange(**w, 1, 220);
    (*w)->Sync();
    w->reset();
    ExpectReadsBack(t.path / "node", 220);
}

TEST(DatadirWriter, RefusesBlocksItDidNotWriteAndBlocksThatDoNotFollow)
{
    TempDir t;
    fs::create_directories(t.path / "core" / "regtest" / "blocks" / "index");
    std::ofstream(t.path / "core" / "regtest" / "blocks" / "blk00000.dat") << "x";
    auto refused = DatadirWriter::Open(t.path / "core" / "regtest", Regtest());
    ASSERT_FALSE(refused.ok());
    EXPECT_EQ(refused.error().code, Errc::Refused);
    EXPECT_NE(refused.error().message.find("Bitcoin Core data directory"), std::string::npos) << refused.error().message;
    fs::create_directories(t.path / "other" / "regtest" / "blocks");
    std::ofstream(t.path / "other" / "regtest" / "blocks" / "notes.txt") << "x";
    EXPECT_EQ(DatadirWriter::Open(t.path / "other" / "regtest", Regtest()).error().code, Errc::Refused);

    auto w = DatadirWriter::Open(t.path / "new" / "regtest", Regtest());
    ASSERT_TRUE(w.ok()) << w.error().message;
    const auto& chain = ConnectedChain();
    EXPECT_THROW((*w)->Append(chain[1].block, 2, chain[1].undo), DatadirWriteError);
    AppendRange(**w, 1, 2);
    EXPECT_THROW((*w)->Append(chain[2].block, 2, chain[2].undo), DatadirWriteError) << "another block at a stored height";
}

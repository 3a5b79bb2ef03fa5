// Where ibdkit may write (common/write_guard.h): never into a Core data directory, a LevelDB it did
// not create, or a folder holding other files; the refusals leave everything byte-identical.
#include "test_util.h"

#include <ibdkit/blockfile/locate.h>
#include <ibdkit/chain/params.h>
#include <ibdkit/coins/coins_db.h>
#include <ibdkit/engine/sync.h>
#include <ibdkit/tabular/table.h>

#include "blockfile/undo_file.h"
#include "common/write_guard_internal.h"
#include "kv/store.h"
#include "coins/coins_db_internal.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

namespace ibdkit {
namespace {

namespace fs = std::filesystem;
using test::TempDir;

void WriteText(const fs::path& p, const std::string& text)
{
    fs::create_directories(p.parent_path());
    std::ofstream(p, std::ios::binary) << text;
}

std::string ReadText(const fs::path& p)
{
    std::ifstream f(p, std::ios::binary);
    std::stringstream s;
    s << f.rdbuf();
    return s.str();
}

/// A data directory in Core's layout: DATADIR/regtest/{blocks/index,chainstate}.
fs::path MakeCoreDatadir(const fs::path& root)
{
    const fs::path dd = root / "core";
    WriteText(dd / "regtest" / "blocks" / "index" / "CURRENT", "MANIFEST-000002\n");
    WriteText(dd / "regtest" / "chainstate" / "CURRENT", "MANIFEST-000002\n");
    return dd;
}

TEST(WriteGuard, RecognisesACoreDataDirectoryByItsLayoutFromAnyPathInside)
{
    TempDir t;
    const fs::path dd = MakeCoreDatadir(t.path);
    EXPECT_EQ(CoreDataDirAround(dd / "regtest" / "chainstate"), fs::canonical(dd / "regtest"));
    EXPECT_EQ(CoreDataDirAround(dd), fs::canonical(dd));
    EXPECT_EQ(CoreDataDirAround(dd / "new" / "deeper"), fs::canonical(dd)) << "a path that does not exist yet";
    EXPECT_EQ(CoreDataDirAround(dd / "regtest" / "blocks"), fs::canonical(dd / "regtest"));
    EXPECT_FALSE(CoreDataDirAround(t.path / "elsewhere"));
    WriteText(t.path / "conf" / "bitcoin.conf", "regtest=1\n");
    EXPECT_TRUE(CoreDataDirAround(t.path / "conf" / "cs"));
    // A blocks directory on its own (index/ beside blk files), as tests/data holds them.
    WriteText(t.path / "blocks" / "index" / "CURRENT", "x");
    WriteText(t.path / "blocks" / "blk00000.dat", "x");
    EXPECT_TRUE(CoreDataDirAround(t.path / "blocks" / "undo"));
    // gen-chain's output (blk files without an index) is no Core directory.
    TempDir g;
    WriteText(g.path / "gen" / "blocks" / "blk00000.dat", "x");
    EXPECT_FALSE(CoreDataDirAround(g.path / "gen" / "chainstate"));
}

TEST(WriteGuard, ADatadirIbdkitWroteIsItsOwnUntilBitcoindHasRunOnIt)
{
    TempDir t;
    const fs::path dd = MakeCoreDatadir(t.path);
    EXPECT_EQ(CheckDatadirWritable(dd, dd / "regtest")->code, Errc::Refused) << "Core's datadir";
    EXPECT_TRUE(CheckDatadirWritable(dd / "regtest", dd / "regtest" / "regtest")) << "Core's network folder";
    EXPECT_FALSE(CheckDatadirWritable(t.path / "new", t.path / "new" / "regtest"));
    // What a sync leaves before its first block: the network folder with ibdkit's chainstate.
    const fs::path ours = t.path / "ours";
    WriteText(ours / "regtest" / "chainstate" / CHAINSTATE_MARKER, "");
    EXPECT_FALSE(CheckDatadirWritable(ours, ours / "regtest"));
    EXPECT_TRUE(CheckDatadirWritable(ours, ours / "signet")) << "another network's folder is not ours to start";
    WriteText(ours / "regtest" / "blocks" / "index" / "CURRENT", "MANIFEST-000002\n");
    EXPECT_TRUE(CoreDataDirAround(ours / "regtest" / "chainstate")) << "an index without ibdkit's marker is Core's";
    WriteText(ours / "regtest" / "blocks" / DATADIR_MARKER, "");
    EXPECT_FALSE(CoreDataDirAround(ours / "regtest" / "chainstate"));
    EXPECT_FALSE(CheckDatadirWritable(ours, ours / "regtest"));
    EXPECT_FALSE(CheckChainstateWritable(ours / "regtest" / "chainstate"));
    // bitcoind has run on it: the folder is Core's.
    WriteText(ours / "regtest" / "peers.dat", "x");
    EXPECT_TRUE(CheckDatadirWritable(ours, ours / "regtest"));
    EXPECT_TRUE(CheckChainstateWritable(ours / "regtest" / "chainstate"));
    const fs::path notes = t.path / "notes";
    WriteText(notes / "todo.txt", "x");
    auto refused = CheckDatadirWritable(notes, notes / "regtest");
    ASSERT_TRUE(refused);
    EXPECT_NE(refused->message.find("holds other files"), std::string::npos) << refused->message;
}

TEST(WriteGuard, ChainstateWritesOnlyIntoNewEmptyOrMarkedFolders)
{
    TempDir t;
    EXPECT_FALSE(CheckChainstateWritable(t.path / "new"));
    EXPECT_FALSE(CheckChainstateWritable(t.path)) << "an empty folder";
    const fs::path dd = MakeCoreDatadir(t.path);
    for (const fs::path& p : {dd / "regtest" / "chainstate", dd, dd / "regtest" / "mine"}) {
        auto e = CheckChainstateWritable(p);
        ASSERT_TRUE(e) << p;
        EXPECT_EQ(e->code, Errc::Refused);
        EXPECT_NE(e->message.find("inside the Bitcoin Core data directory"), std::string::npos) << e->message;
    }
    WriteText(t.path / "notes" / "todo.txt", "my notes");
    auto notes = CheckChainstateWritable(t.path / "notes");
    ASSERT_TRUE(notes);
    EXPECT_NE(notes->message.find("not a chainstate"), std::string::npos) << notes->message;
    WriteText(t.path / "afile", "x");
    ASSERT_TRUE(CheckChainstateWritable(t.path / "afile"));
    EXPECT_NE(CheckChainstateWritable(t.path / "afile")->message.find("is a file"), std::string::npos);
    // A LevelDB database without the marker (a copy of Core's chainstate): refused, saying how to mark it.
    WriteText(t.path / "copy" / "CURRENT", "MANIFEST-000002\n");
    auto copy = CheckChainstateWritable(t.path / "copy");
    ASSERT_TRUE(copy);
    EXPECT_NE(copy->message.find(std::string("touch ") + (t.path / "copy" / CHAINSTATE_MARKER).string()), std::string::npos)
        << copy->message;
    ASSERT_FALSE(MarkChainstate(t.path / "copy"));
    EXPECT_FALSE(CheckChainstateWritable(t.path / "copy"));
}

TEST(WriteGuard, CoinsDBRefusesAFolderOfNotesAndLeavesItAlone)
{
    TempDir t;
    WriteText(t.path / "notes" / "todo.txt", "my notes");
    CoinsDBOptions o;
    StoreStatus st;
    EXPECT_FALSE(OpenCoinsDB(t.path / "notes", o, &st));
    EXPECT_EQ(st.code, StoreStatus::Code::Refused);
    EXPECT_EQ(ReadText(t.path / "notes" / "todo.txt"), "my notes");
    std::size_t files = 0;
    for ([[maybe_unused]] const auto& e : fs::directory_iterator(t.path / "notes")) ++files;
    EXPECT_EQ(files, 1u);
    // A new chainstate is marked, and opens again for writing.
    ASSERT_TRUE(OpenCoinsDB(t.path / "cs", o, &st)) << st.message;
    EXPECT_TRUE(fs::exists(t.path / "cs" / CHAINSTATE_MARKER));
    EXPECT_TRUE(OpenCoinsDB(t.path / "cs", o, &st)) << st.message;
    // Read-only opens need no marker and write none.
    o.read_only = true;
    auto ro = OpenCoinsDB(t.path / "cs", o, &st);
    EXPECT_TRUE(ro) << st.message;
}

TEST(WriteGuard, AChainstateIbdkitWroteBeforeTheMarkerIsRecognisedByItsTableBlocks)
{
    TempDir t;
    const fs::path dir = t.path / "legacy";
    {
        StoreStatus st;
        auto store = Store::Open(dir, StoreOptions{}, &st);
        ASSERT_TRUE(store) << st.message;
        auto load = store->BeginBulkLoad(1, {}, false);
        ASSERT_TRUE(load);
        const std::string value(1000, 'v');
        for (int i = 0; i < 200; ++i) {
            char key[16];
            std::snprintf(key, sizeof key, "C%08d", i);
            ASSERT_TRUE(load->Add(0, std::as_bytes(std::span<const char>(key, 9)),
                                  std::as_bytes(std::span<const char>(value.data(), value.size())))
                            .ok());
        }
        ASSERT_TRUE(store->CommitBulkLoad(std::move(load)).ok());
    }
    ASSERT_FALSE(fs::exists(dir / CHAINSTATE_MARKER));
    EXPECT_FALSE(CheckChainstateWritable(dir)) << CheckChainstateWritable(dir)->message;
    StoreStatus st;
    ASSERT_TRUE(OpenCoinsDB(dir, CoinsDBOptions{}, &st)) << st.message;
    EXPECT_TRUE(fs::exists(dir / CHAINSTATE_MARKER)) << "marked once recognised";
}

TEST(WriteGuard, OutputFilesAndUndoFolders)
{
    TempDir t;
    EXPECT_FALSE(CheckOutputFile(t.path / "u.csv"));
    auto nodir = CheckOutputFile(t.path / "nodir" / "u.csv");
    ASSERT_TRUE(nodir);
    EXPECT_EQ(nodir->code, Errc::Refused);
    EXPECT_NE(nodir->message.find("does not exist"), std::string::npos);
    EXPECT_TRUE(CheckOutputFile(t.path)) << "a folder";
    const fs::path dd = MakeCoreDatadir(t.path);
    EXPECT_TRUE(CheckOutputFile(dd / "u.csv"));
    EXPECT_FALSE(TableWriter::Create(dd / "u.csv", TableFormat::Csv, "t", std::span<const Column>{}));
    EXPECT_FALSE(fs::exists(dd / "u.csv"));

    EXPECT_FALSE(CheckUndoDirWritable(t.path / "undo"));
    EXPECT_TRUE(CheckUndoDirWritable(dd / "undo"));
    WriteText(t.path / "notes" / "todo.txt", "my notes");
    EXPECT_TRUE(CheckUndoDirWritable(t.path / "notes"));
    auto w = UndoFileWriter::Open(dd / "regtest" / "undo", GetChainParams(ChainType::REGTEST).message_start);
    ASSERT_FALSE(w);
    EXPECT_EQ(w.error().code, Errc::Refused);
    EXPECT_FALSE(fs::exists(dd / "regtest" / "undo"));
}

TEST(WriteGuard, LocateChainstateFindsADatadirsNetworkAndSaysWhatIsWrong)
{
    TempDir t;
    const fs::path dd = MakeCoreDatadir(t.path);
    auto loc = LocateChainstate(dd, std::nullopt);
    ASSERT_TRUE(loc) << loc.error().message;
    EXPECT_EQ(loc->dir, dd / "regtest" / "chainstate");
    EXPECT_EQ(loc->chain, ChainType::REGTEST);
    auto direct = LocateChainstate(dd / "regtest" / "chainstate", std::nullopt);
    ASSERT_TRUE(direct);
    EXPECT_EQ(direct->chain, ChainType::REGTEST) << "the layout names the network";
    auto wrong = LocateChainstate(dd, ChainType::MAIN);
    ASSERT_FALSE(wrong);
    EXPECT_EQ(wrong.error().code, Errc::InvalidValue);
    EXPECT_NE(wrong.error().message.find("is a regtest data directory, not main"), std::string::npos) << wrong.error().message;
    auto missing = LocateChainstate(t.path / "missing", std::nullopt);
    ASSERT_FALSE(missing);
    EXPECT_EQ(missing.error().code, Errc::NotFound);
    WriteText(t.path / "afile", "x");
    auto file = LocateChainstate(t.path / "afile", std::nullopt);
    ASSERT_FALSE(file);
    EXPECT_NE(file.error().message.find("is a file, not a folder"), std::string::npos);
    // What ibdkit recorded in its own chainstate names the network.
    StoreStatus st;
    ASSERT_TRUE(OpenCoinsDB(t.path / "cs", CoinsDBOptions{}, &st)) << st.message;
    ASSERT_FALSE(RecordChainstateNetwork(t.path / "cs", "signet"));
    EXPECT_EQ(ChainstateNetworkRecord(t.path / "cs"), "signet");
    auto recorded = LocateChainstate(t.path / "cs", std::nullopt);
    ASSERT_TRUE(recorded);
    EXPECT_EQ(recorded->chain, ChainType::SIGNET);
    EXPECT_FALSE(CheckChainstateWritable(t.path / "cs")) << "the record keeps the marker";
}

TEST(WriteGuard, LocateChainstateNamesAnUnfinishedChainstateBeforeLevelDbsFirstFile)
{
    // A `replay --swiftsync` killed after its marker and before LevelDB's CURRENT: a reader is told
    // the folder is unfinished, not that it holds no chainstate.
    TempDir t;
    fs::create_directories(t.path / "cs");
    ASSERT_FALSE(MarkUnfinishedChainstate(t.path / "cs"));
    ASSERT_FALSE(fs::exists(t.path / "cs" / "CURRENT"));
    auto direct = LocateChainstate(t.path / "cs", std::nullopt);
    ASSERT_FALSE(direct);
    EXPECT_EQ(direct.error().code, Errc::Refused);
    EXPECT_NE(direct.error().message.find("is an unfinished chainstate"), std::string::npos) << direct.error().message;
    StoreStatus st;
    EXPECT_FALSE(OpenCoinsDB(t.path / "cs", CoinsDBOptions{}, &st)) << "a classic writer does not take it over";
    EXPECT_NE(st.message.find("is an unfinished chainstate"), std::string::npos) << st.message;
    fs::create_directories(t.path / "dd" / "regtest" / "chainstate");
    ASSERT_FALSE(MarkUnfinishedChainstate(t.path / "dd" / "regtest" / "chainstate"));
    auto datadir = LocateChainstate(t.path / "dd", std::nullopt);
    ASSERT_FALSE(datadir);
    EXPECT_NE(datadir.error().message.find("is an unfinished chainstate"), std::string::npos) << datadir.error().message;
}

TEST(SyncNetwork, TheGivenOneThenTheChainstatesRecordThenTheDatadirsThenRegtest)
{
    // What `ibdkit sync` and Python's sync() run on when no network is named: a resumed chainstate's
    // or a written datadir's, so that a rerun needs no --network.
    TempDir t;
    EXPECT_EQ(SyncNetwork(std::nullopt, "", ""), ChainType::REGTEST);
    EXPECT_EQ(SyncNetwork(std::nullopt, t.path / "new", t.path / "new-datadir"), ChainType::REGTEST);
    StoreStatus st;
    ASSERT_TRUE(OpenCoinsDB(t.path / "cs", CoinsDBOptions{}, &st)) << st.message;
    ASSERT_FALSE(RecordChainstateNetwork(t.path / "cs", "signet"));
    const fs::path dd_cs = t.path / "dd" / "testnet4" / "chainstate";
    ASSERT_TRUE(OpenCoinsDB(dd_cs, CoinsDBOptions{}, &st)) << st.message;
    ASSERT_FALSE(RecordChainstateNetwork(dd_cs, "testnet4"));
    EXPECT_EQ(SyncNetwork(std::nullopt, "", t.path / "dd"), ChainType::TESTNET4);
    EXPECT_EQ(SyncNetwork(std::nullopt, t.path / "cs", t.path / "dd"), ChainType::SIGNET) << "the chainstate resumed first";
    EXPECT_EQ(SyncNetwork(ChainType::MAIN, t.path / "cs", t.path / "dd"), ChainType::MAIN) << "a named network wins";
}

} // namespace
} // namespace ibdkit

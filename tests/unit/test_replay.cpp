// Replay pipeline: equal results for reordered/obfuscated files, and crash safety under SIGKILL.
#include "replay_test_util.h"

#include <ibdkit/coins/coins_db.h>
#include <ibdkit/encoding/endian.h>
#include <ibdkit/blockfile/blockfile.h>
#include <ibdkit/engine/replay.h>

#include "coins/coins_db_internal.h"
#include "common/write_guard_internal.h"

#include <gtest/gtest.h>

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <thread>

using namespace ibdkit;
namespace fs = std::filesystem;

namespace {

using TempDir = ibdkit::test::TempDir;

std::optional<fs::path> MainnetDir() { return ibdkit::test::TestData("mainnet/blk_0-599"); }

using ibdkit::test::HashOf;
using ibdkit::test::MustReplay;

} // namespace

TEST(Replay, ShuffledAndXoredFilesReplayIdentically)
{
    auto dir = MainnetDir();
    if (!dir) FAIL() << "tests/data is incomplete";
    ReplayOptions o;
    o.source.blocks_dir = *dir;
    const auto plain = MustReplay(o);
    ASSERT_EQ(plain.height, 599);

    // Every record of both files, shuffled, split over three files, XORed with a random key.
    std::vector<std::vector<uint8_t>> recs;
    const std::array<uint8_t, 4> magic{0xf9, 0xbe, 0xb4, 0xd9};
    std::vector<BlockRecordPos> where;
    auto st = ScanBlockFiles(ListBlockFiles(*dir).value(), magic, ObfuscationKey{}, [&](const BlockRecordPos& pos, std::span<const uint8_t, 80>) {
        where.push_back(pos);
    });
    ASSERT_TRUE(st.ok());
    BlockFileReader reader(ListBlockFiles(*dir).value(), ObfuscationKey{});
    for (const auto& pos : where) {
        auto b = reader.Read(pos);
        ASSERT_TRUE(b.ok());
        recs.push_back(std::move(*b));
    }
    std::mt19937_64 rng(ibdkit::test::TestSeed());
    std::shuffle(recs.begin(), recs.end(), rng);
    TempDir t;
    ObfuscationKey key;
    for (auto& b : key.bytes) b = std::byte(rng() | 0x10);
    std::ofstream(t.path / "xor.dat", std::ios::binary).write(reinterpret_cast<const char*>(key.bytes.data()), 8);
    for (int f = 0; f < 3; ++f) {
        std::vector<uint8_t> file;
        for (std::size_t i = std::size_t(f); i < recs.size(); i += 3) {
            file.insert(file.end(), magic.begin(), magic.end());
            uint8_t len[4];
            WriteLE32(len, uint32_t(recs[i].size()));
            file.insert(file.end(), len, len + 4);
            file.insert(file.end(), recs[i].begin(), recs[i].end());
        }
        XorBytes(MakeWritableByteSpan(file), key, 0);
        std::ofstream(BlockFilePath(t.path, f), std::ios::binary).write(reinterpret_cast<const char*>(file.data()), std::streamsize(file.size()));
    }
    o.source.blocks_dir = t.path;
    const auto shuffled = MustReplay(o);
    EXPECT_EQ(shuffled.height, 599);
    EXPECT_EQ(HashOf(shuffled), HashOf(plain));
    o.via_p2p = true;
    o.policy = PolicyId::ZeroAfterFree;
    EXPECT_EQ(HashOf(MustReplay(o)), HashOf(plain));
}

TEST(Replay, AKeptChainstateRecordsItsNetworkWhoeverRanTheReplay)
{
    auto dir = MainnetDir();
    if (!dir) FAIL() << "tests/data is incomplete";
    TempDir t;
    ReplayOptions o;
    o.source.blocks_dir = *dir;
    o.chainstate = t.path / "cs";
    o.statistics = false;
    o.stop_height = 10;
    ASSERT_EQ(MustReplay(o).height, 10);
    EXPECT_EQ(ChainstateNetworkRecord(o.chainstate), "main") << "a new chainstate: recorded when it was opened";
    // A chainstate marked by hand (a copy of Core's, `touch IBDKIT_CHAINSTATE`) records its network
    // once a run has accepted its blocks as this network's: the library does it, not its callers.
    std::ofstream(o.chainstate / CHAINSTATE_MARKER, std::ios::trunc).flush();
    ASSERT_FALSE(ChainstateNetworkRecord(o.chainstate));
    o.stop_height = 20;
    ASSERT_EQ(MustReplay(o).height, 20);
    EXPECT_EQ(ChainstateNetworkRecord(o.chainstate), "main");
}

TEST(Replay, SigkillAtRandomMomentsThenResumeGivesTheSameUtxoHash)
{
    auto dir_blocks = MainnetDir();
    if (!dir_blocks) FAIL() << "tests/data is incomplete";
    ReplayOptions ref;
    ref.source.blocks_dir = *dir_blocks;
    const std::string expected = HashOf(MustReplay(ref));

    const bool long_mode = std::getenv("IBDKIT_LONG_TESTS") != nullptr;
    const int rounds = long_mode ? 40 : 4; // up to 3 kills each: >= 100 kills in long mode
    std::mt19937_64 rng(ibdkit::test::TestSeed());

    // A child that replays into `dir` with a flush after every block, written in batches of 64
    // bytes (Core's -dbbatchsize): every flush writes H (synced) in a batch of its own, then its
    // coins, then B (synced), so most of a run is spent between H and B and most kills land
    // there — the window the crash protocol exists for. The child execs the CLI: a fork of this
    // process could inherit a lock held by LevelDB's background thread and deadlock.
    const std::string blocks = dir_blocks->string();
    auto spawn = [&](const fs::path& dir) {
        const std::string cs = dir.string();
        const pid_t pid = fork();
        if (pid == 0) {
            execl(IBDKIT_CLI_PATH, "ibdkit", "replay", "-q", "--blocks-dir", blocks.c_str(), "--chainstate", cs.c_str(),
                  "--dbcache", "0", "--dbbatchsize", "64", static_cast<char*>(nullptr));
            _exit(127);
        }
        return pid;
    };
    // Calibrate: kill delays are drawn within the time one uninterrupted run takes on this machine.
    std::chrono::microseconds full{};
    {
        TempDir t;
        const auto t0 = std::chrono::steady_clock::now();
        const pid_t pid = spawn(t.path / "chainstate");
        ASSERT_GE(pid, 0);
        int status = 0;
        waitpid(pid, &status, 0);
        ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
        full = std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::steady_clock::now() - t0);
    }
    // Whether a kill left a flush in progress: H written, B not restored (read-only look).
    const auto inside_flush = [](const fs::path& cs) {
        std::error_code ec;
        if (!fs::exists(cs, ec)) return false;
        CoinsDBOptions o;
        o.read_only = true;
        StoreStatus st;
        auto db = OpenCoinsDB(cs, o, &st);
        if (!db) return false;
        auto replay = db->NeedsReplay();
        return replay.ok() && replay->has_value();
    };
    int kills = 0, kills_in_flush = 0;
    // More rounds (at most 10) until a kill has landed between H and B: about one in four does.
    for (int round = 0; round < rounds || (kills_in_flush == 0 && round < rounds + 10); ++round) {
        TempDir t;
        // Up to three kills per round, then a run to the end.
        for (int attempt = 0; attempt < 4; ++attempt) {
            const bool kill_it = attempt < 3;
            const pid_t pid = spawn(t.path / "chainstate");
            ASSERT_GE(pid, 0);
            if (kill_it) {
                // The first kill of a round lands for sure (a fresh run, killed within its first
                // half); later ones may find the resumed run already done.
                const uint64_t span = uint64_t(full.count()) * (attempt == 0 ? 5 : 9) / 10 + 1;
                std::this_thread::sleep_for(std::chrono::microseconds(rng() % span));
                kill(pid, SIGKILL);
            }
            int status = 0;
            waitpid(pid, &status, 0);
            if (WIFSIGNALED(status)) {
                ++kills;
                kills_in_flush += inside_flush(t.path / "chainstate");
                continue;
            }
            ASSERT_TRUE(WIFEXITED(status));
            ASSERT_EQ(WEXITSTATUS(status), 0) << "a run after " << attempt << " kills failed (seed " << ibdkit::test::TestSeed() << ")";
            if (!kill_it) break;
        }
        ReplayOptions fin;
        fin.source.blocks_dir = *dir_blocks;
        fin.chainstate = t.path / "chainstate";
        const auto r = MustReplay(fin);
        ASSERT_EQ(r.height, 599);
        ASSERT_EQ(HashOf(r), expected) << "round " << round << " seed " << ibdkit::test::TestSeed();
    }
    RecordProperty("kills", kills);
    RecordProperty("kills_in_flush", kills_in_flush);
    std::printf("replay crash test: %d kills, %d with H on disk (inside a multi-batch flush)\n", kills, kills_in_flush);
    EXPECT_GT(kills, 0) << "no kill landed: the test did not test anything";
    EXPECT_GT(kills_in_flush, 0) << "no kill landed between H and B: the recovery path was not exercised";
}

TEST(Replay, UndoAndChainstateInOneFolderAreRefusedBeforeAnythingIsWritten)
{
    auto dir = MainnetDir();
    if (!dir) FAIL() << "tests/data is incomplete";
    TempDir t;
    ReplayOptions o;
    o.source.blocks_dir = *dir;
    o.statistics = false;
    o.stop_height = 5;
    // The same folder, the undo folder inside the chainstate, the chainstate inside the undo folder.
    const std::pair<fs::path, fs::path> shared[] = {
        {t.path / "a", t.path / "a"}, {t.path / "b", t.path / "b" / "rev"}, {t.path / "c" / "cs", t.path / "c"}};
    for (const auto& [chainstate, undo] : shared) {
        o.chainstate = chainstate;
        o.undo_dir = undo;
        const auto r = Replay(o);
        ASSERT_FALSE(r.ok()) << chainstate << " and " << undo;
        EXPECT_EQ(r.error().code, Errc::Refused) << r.error().message;
        EXPECT_NE(r.error().message.find("share a folder"), std::string::npos) << r.error().message;
        EXPECT_FALSE(fs::exists(chainstate / CHAINSTATE_MARKER)) << "refused before the chainstate was created";
    }
}

TEST(Replay, AChainstateItMayNotWriteIsRefusedBeforeTheBlocksAreRead)
{
    // Locating the blocks (a scan of every blk file without a block index) takes minutes at
    // mainnet's size: a refused chainstate is said first, not after it.
    TempDir t;
    std::ofstream(t.path / "notes.txt") << "mine";
    ReplayOptions o;
    o.source.blocks_dir = t.path / "no-such-blocks";
    o.chainstate = t.path;
    const auto r = Replay(o);
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.error().code, Errc::Refused) << r.error().message;
}

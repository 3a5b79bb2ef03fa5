// Reading a LevelDB directory another process writes (src/kv/snapshot.h): the private snapshot
// taken again when a file vanishes or the MANIFEST changes during the copy, a torn log record
// dropped, and a chainstate snapshot taken mid-flush (head-blocks marker) refused.
#include "lock_holder.h"
#include "test_util.h"

#include "kv/snapshot.h"

#include <ibdkit/coins/coins_db.h>

#include "coins/coins_cache.h"
#include "common/test_hooks.h"
#include "common/write_guard_internal.h"
#include "kv/store.h"
#include "coins/coins_db_internal.h"

#include <gtest/gtest.h>

#include <sys/stat.h>
#include <unistd.h>

#include <array>
#include <cstring>
#include <random>

using namespace ibdkit;
namespace fs = std::filesystem;

namespace {

using test::LockHolder;
using test::TempDir;

std::span<const std::byte> Bytes(const std::string& s) { return std::as_bytes(std::span<const char>(s.data(), s.size())); }

std::string Key(int i) { return "key" + std::to_string(1000 + i); }
std::string Value(int i) { return std::string(100, char('a' + i % 26)) + std::to_string(i); }

/// Writes keys [from, to), one synced batch each (one log record each).
void Put(Store& s, int from, int to)
{
    for (int i = from; i < to; ++i) {
        KvBatch b;
        b.Put(Bytes(Key(i)), Bytes(Value(i)));
        ASSERT_TRUE(s.WriteBatch(b, true).ok());
    }
}

std::unique_ptr<Store> OpenWritable(const fs::path& dir)
{
    StoreOptions o;
    o.obfuscate = false;
    StoreStatus st;
    auto s = Store::Open(dir, o, &st);
    EXPECT_TRUE(s) << st.message;
    return s;
}

std::unique_ptr<Store> OpenSnapshot(const fs::path& dir, StoreStatus* st)
{
    StoreOptions o;
    o.read_only = true;
    o.snapshot = true;
    return Store::Open(dir, o, st);
}

/// Keys [0, n) present with their values, and key n absent.
void ExpectKeys(const Store& s, int n)
{
    for (int i = 0; i < n; ++i) {
        auto v = s.ReadRaw(Bytes(Key(i)));
        ASSERT_TRUE(v) << Key(i);
        EXPECT_EQ(*v, Value(i));
    }
    EXPECT_FALSE(s.ReadRaw(Bytes(Key(n))));
}

/// A database with tables (compacted keys 0..199) and a log (keys 200..259).
void MakeDatabase(const fs::path& dir)
{
    auto s = OpenWritable(dir);
    ASSERT_TRUE(s);
    Put(*s, 0, 200);
    s->CompactAll();
    Put(*s, 200, 260);
}

std::vector<std::string> Named(const fs::path& dir, const char* suffix)
{
    std::vector<std::string> out;
    for (const auto& e : fs::directory_iterator(dir)) {
        const auto n = e.path().filename().string();
        if (n.size() > std::strlen(suffix) && n.ends_with(suffix)) out.push_back(n);
    }
    return out;
}

} // namespace

TEST(LiveSnapshot, CopiesTablesLogsAndManifestButNoLock)
{
    TempDir d;
    MakeDatabase(d.path / "db");
    ASSERT_FALSE(Named(d.path / "db", ".ldb").empty());
    kv::SnapshotInfo info;
    ASSERT_TRUE(kv::SnapshotDatabase(d.path / "db", d.path / "snap", 3, &info).ok());
    EXPECT_EQ(info.attempts, 1);
    EXPECT_EQ(info.linked, Named(d.path / "db", ".ldb").size()) << "same file system: tables are hard links";
    EXPECT_FALSE(fs::exists(d.path / "snap" / "LOCK"));
    for (const auto& t : Named(d.path / "db", ".ldb")) {
        struct stat a, b;
        ASSERT_EQ(::stat((d.path / "db" / t).c_str(), &a), 0);
        ASSERT_EQ(::stat((d.path / "snap" / t).c_str(), &b), 0);
        EXPECT_EQ(a.st_ino, b.st_ino) << t;
    }
    StoreStatus st;
    auto s = OpenSnapshot(d.path / "snap", &st);
    ASSERT_TRUE(s) << st.message;
    EXPECT_TRUE(s->FromSnapshot());
    ExpectKeys(*s, 260);
}

TEST(LiveSnapshot, AVanishingTableMeansAnotherAttempt)
{
    TempDir d;
    MakeDatabase(d.path / "db");
    const auto tables = Named(d.path / "db", ".ldb");
    ASSERT_FALSE(tables.empty());
    const fs::path table = d.path / "db" / tables.front(), away = d.path / "away";
    // The first attempt finds the table gone when it comes to it (a compaction deleted it); the
    // second finds it back.
    kv::SnapshotHooks hooks;
    hooks.before_file = [&](int attempt, const std::string& name) {
        if (attempt == 1 && name == tables.front()) fs::rename(table, away);
        if (attempt == 2 && fs::exists(away)) fs::rename(away, table);
    };
    kv::SnapshotInfo info;
    const StoreStatus st = kv::SnapshotDatabase(d.path / "db", d.path / "snap", 3, &info, hooks);
    ASSERT_TRUE(st.ok()) << st.message;
    EXPECT_EQ(info.attempts, 2);
    StoreStatus ost;
    auto s = OpenSnapshot(d.path / "snap", &ost);
    ASSERT_TRUE(s) << ost.message;
    ExpectKeys(*s, 260);
}

TEST(LiveSnapshot, AManifestChangedDuringTheCopyMeansAnotherAttemptAndEveryAttemptFailingAnError)
{
    TempDir d;
    auto w = OpenWritable(d.path / "db");
    ASSERT_TRUE(w);
    Put(*w, 0, 200);
    w->CompactAll();
    Put(*w, 200, 260);
    // The writer compacts while the first attempt copies the log: the MANIFEST grows.
    int written = 260;
    kv::SnapshotHooks hooks;
    hooks.before_file = [&](int attempt, const std::string& name) {
        if (attempt == 1 && name.ends_with(".log")) {
            Put(*w, written, written + 10);
            written += 10;
            w->CompactAll();
        }
    };
    kv::SnapshotInfo info;
    StoreStatus st = kv::SnapshotDatabase(d.path / "db", d.path / "snap", 3, &info, hooks);
    ASSERT_TRUE(st.ok()) << st.message;
    EXPECT_EQ(info.attempts, 2);
    {
        StoreStatus ost;
        auto s = OpenSnapshot(d.path / "snap", &ost);
        ASSERT_TRUE(s) << ost.message;
        ExpectKeys(*s, written);
    }
    // A writer that compacts during every attempt: a clear error, no half copy read.
    hooks.before_file = [&](int, const std::string& name) {
        if (name.ends_with(".log")) {
            Put(*w, written, written + 1);
            ++written;
            w->CompactAll();
        }
    };
    st = kv::SnapshotDatabase(d.path / "db", d.path / "snap2", 3, &info, hooks);
    EXPECT_FALSE(st.ok());
    EXPECT_EQ(info.attempts, 3);
    EXPECT_NE(st.message.find("changed during each of 3 attempts"), std::string::npos) << st.message;
}

TEST(LiveSnapshot, ATornLastLogRecordIsDropped)
{
    TempDir d;
    MakeDatabase(d.path / "db");
    ASSERT_TRUE(kv::SnapshotDatabase(d.path / "db", d.path / "snap", 1).ok());
    const auto logs = Named(d.path / "snap", ".log");
    ASSERT_EQ(logs.size(), 1u);
    const fs::path log = d.path / "snap" / logs.front();
    const auto size = fs::file_size(log);
    // The last record (key 259) is cut in the middle of its value, as a copy taken while the
    // writer appends it can be.
    fs::resize_file(log, size - 40);
    {
        StoreStatus st;
        auto s = OpenSnapshot(d.path / "snap", &st);
        ASSERT_TRUE(s) << st.message;
        ExpectKeys(*s, 259);
    }
    // The same record whole in length but with its last bytes not yet written (zeros): its checksum
    // fails. LevelDB's paranoid open refuses the database; the snapshot's open drops the record.
    fs::resize_file(log, size);
    {
        std::vector<uint8_t> bytes = test::ReadFile(log);
        std::fill(bytes.end() - 40, bytes.end(), uint8_t{0});
        std::ofstream(log, std::ios::binary | std::ios::trunc).write(reinterpret_cast<const char*>(bytes.data()), std::streamsize(bytes.size()));
    }
    {
        StoreOptions plain;
        plain.read_only = true;
        StoreStatus st;
        EXPECT_FALSE(Store::Open(d.path / "snap", plain, &st)) << "paranoid checks refuse a bad log record";
        auto s = OpenSnapshot(d.path / "snap", &st);
        ASSERT_TRUE(s) << st.message;
        ExpectKeys(*s, 259);
    }
}

TEST(LiveSnapshot, AChainstateMidFlushIsRefusedAndReadOnceFlushed)
{
    TempDir d;
    const fs::path chainstate = d.path / "chainstate";
    LockHolder running(d.path / ".lock"); // the datadir's lock, as bitcoind holds it
    CoinsDBOptions o;
    o.bulk_load_new = false;
    o.batch_write_bytes = 16 << 10;
    int checked = 0;
    std::string refusal, ibdkit_refusal;
    o.test_hooks = TestHooks::AfterPartialBatch([&] {
        if (checked++ != 1) return;
        // Between H and B of the writer's flush.
        auto read = [&] {
            CoinsDBOptions ro;
            ro.read_only = true;
            StoreStatus st;
            auto r = OpenCoinsDB(chainstate, ro, &st);
            EXPECT_FALSE(r) << "a chainstate mid-flush must not be read";
            EXPECT_EQ(st.code, StoreStatus::Code::Locked);
            return st.message;
        };
        // The writer is ibdkit (its marker), then, the marker set aside, a chainstate as Core's.
        ibdkit_refusal = read();
        fs::rename(chainstate / CHAINSTATE_MARKER, d.path / "marker");
        refusal = read();
        fs::rename(d.path / "marker", chainstate / CHAINSTATE_MARKER);
    });
    StoreStatus st;
    auto db = OpenCoinsDB(chainstate, o, &st);
    ASSERT_TRUE(db) << st.message;
    std::mt19937_64 rng(7);
    std::array<uint8_t, 32> raw{1};
    const BlockHash tip{uint256(std::span<const uint8_t, 32>(raw))};
    {
        CoinsCache cache(*db, 1 << 30);
        for (int i = 0; i < 2000; ++i) {
            for (auto& b : raw) b = uint8_t(rng());
            OutPoint op;
            op.hash = Txid(uint256(std::span<const uint8_t, 32>(raw)));
            op.n = uint32_t(i);
            cache.AddCoin(op, Coin(TxOut{Amount(1000 + i), Script()}, 5, false), false);
        }
        cache.SetBestBlock(tip);
        ASSERT_TRUE(cache.Flush().ok());
    }
    EXPECT_GE(checked, 2);
    EXPECT_EQ(refusal, CHAINSTATE_FLUSHING);
    EXPECT_EQ(ibdkit_refusal, IBDKIT_CHAINSTATE_FLUSHING);
    // Flushed (B written, H erased): the snapshot is read, at the writer's best block.
    CoinsDBOptions ro;
    ro.read_only = true;
    auto r = OpenCoinsDB(chainstate, ro, &st);
    ASSERT_TRUE(r) << st.message;
    EXPECT_TRUE(r->store().FromSnapshot());
    auto best = r->GetBestBlock();
    ASSERT_TRUE(best.ok());
    EXPECT_EQ(*best, tip);
}

// Crash safety of the flush protocol: a child process flushes generation after generation and is
// killed with SIGKILL at random moments; after each kill the database, reopened and recovered by
// replaying the interrupted generation, must equal exactly the model state of one generation.
//
// The child is this test binary re-executed (fork + exec) with IBDKIT_COINS_CRASH_CHILD set:
// LevelDB's background thread does not survive a bare fork.
//
// Default: 10 kills. IBDKIT_LONG_TESTS=1: 120 kills.
#include "test_util.h"

#include <ibdkit/coins/coins_db.h>

#include "coins/coins_cache.h"
#include "common/test_hooks.h"
#include "coins/coins_db_internal.h"

#include <gtest/gtest.h>

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <random>
#include <thread>

namespace ibdkit {
namespace {

namespace fs = std::filesystem;

constexpr int ADDS_PER_GEN = 300;
constexpr uint64_t MAX_GEN = 1'000'000;

uint64_t Mix(uint64_t x)
{
    x += 0x9e3779b97f4a7c15ULL;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
    return x ^ (x >> 31);
}

OutPoint OutPointOf(uint64_t g, int i)
{
    std::array<uint8_t, 32> b;
    for (int w = 0; w < 4; ++w) {
        const uint64_t v = Mix(g * 1'000'003 + uint64_t(i) * 31 + uint64_t(w));
        std::memcpy(b.data() + 8 * w, &v, 8);
    }
    return OutPoint{Txid(uint256(b)), uint32_t(Mix(g + uint64_t(i)) % 3)};
}

Coin CoinOf(uint64_t g, int i, uint64_t version)
{
    const uint64_t r = Mix(g * 7 + uint64_t(i) * 13 + version * 1'000'000'007ULL);
    std::vector<uint8_t> script(20 + r % 40, uint8_t(r >> 8));
    script[0] = 0x51;
    return Coin(TxOut{Amount(r % uint64_t(MAX_MONEY)), Script(script.data(), script.size())}, uint32_t(g), (r & 1) != 0);
}

BlockHash TipOfGen(uint64_t g)
{
    std::array<uint8_t, 32> b{};
    for (int i = 0; i < 8; ++i) b[i] = uint8_t(g >> (8 * i));
    b[31] = 0xc7;
    return BlockHash(uint256(b));
}

uint64_t GenOfTip(const BlockHash& h)
{
    if (h.IsNull()) return 0;
    uint64_t g = 0;
    for (int i = 0; i < 8; ++i) g |= uint64_t(h.data()[i]) << (8 * i);
    return g;
}

/// The operations of generation g, applied to any "view" with add/spend: adds ADDS_PER_GEN
/// coins, overwrites a fifth of gen g-3's coins, spends half of gen g-5's. Every operation is a
/// "set" (add with overwrite) or an erase, so re-applying a generation over a partial write gives
/// the same result.
template <typename Add, typename Spend>
void ApplyGen(uint64_t g, Add add, Spend spend)
{
    for (int i = 0; i < ADDS_PER_GEN; ++i) add(OutPointOf(g, i), CoinOf(g, i, 0));
    if (g > 3) {
        for (int i = 0; i < ADDS_PER_GEN; i += 5) add(OutPointOf(g - 3, i), CoinOf(g - 3, i, g));
    }
    if (g > 5) {
        for (int i = 0; i < ADDS_PER_GEN; i += 2) spend(OutPointOf(g - 5, i));
    }
}

void ApplyGenToCache(CoinsCache& cache, uint64_t g)
{
    ApplyGen(
        g, [&](const OutPoint& op, Coin c) { cache.AddCoin(op, std::move(c), true); },
        [&](const OutPoint& op) { cache.SpendCoin(op); });
}

CoinsDBOptions CrashOptions()
{
    CoinsDBOptions o;
    o.batch_write_bytes = 3000; // several batches per generation
    o.cache_bytes = 1 << 20;
    return o;
}

/// Opens the database and, if a flush was interrupted, replays it (Core's ReplayBlocks: re-apply
/// the blocks after the old tip up to the new tip, then flush). Returns the generation reached.
uint64_t OpenAndRecover(const fs::path& dir, std::unique_ptr<CoinsDB>& db, const CoinsDBOptions& options = CrashOptions())
{
    StoreStatus st;
    db = OpenCoinsDB(dir, options, &st);
    if (!db) throw std::runtime_error("open: " + st.message);
    auto replay = db->NeedsReplay();
    if (!replay) throw std::runtime_error("replay: " + replay.error().message);
    if (!replay->has_value()) {
        auto best = db->GetBestBlock();
        if (!best) throw std::runtime_error(best.error().message);
        return GenOfTip(*best);
    }
    const uint64_t from = GenOfTip((*replay)->old_tip), to = GenOfTip((*replay)->new_tip);
    CoinsCache cache(*db, 64 << 20);
    for (uint64_t g = from + 1; g <= to; ++g) ApplyGenToCache(cache, g);
    cache.SetBestBlock((*replay)->new_tip);
    StoreStatus fst = cache.Flush();
    if (!fst.ok()) throw std::runtime_error("recovery flush: " + fst.message);
    return to;
}

// The crash test's child process: opens and recovers the store, then flushes generations until it
// is killed.
void RunCrashChild(const char* dir)
{
    // A targeted kill: after the N-th intermediate batch of a flush (H written, B not yet), or in
    // the first flush's bulk load before its switch, tell the parent through the inherited pipe
    // and wait there to be killed.
    CoinsDBOptions options = CrashOptions();
    const char* fd = std::getenv("IBDKIT_COINS_CRASH_SIGNAL_FD");
    const char* at = std::getenv("IBDKIT_COINS_CRASH_AT_BATCH");
    if (fd && at) {
        options.test_hooks = TestHooks::AfterPartialBatch([fd = std::atoi(fd), at = std::atol(at), n = 0L]() mutable {
            if (++n != at) return;
            const char c = 'F';
            if (::write(fd, &c, 1) != 1) std::_Exit(4);
            for (;;) ::pause();
        });
    }
    std::unique_ptr<CoinsDB> db;
    uint64_t g = OpenAndRecover(dir, db, options);
    CoinsCache cache(*db, 64 << 20);
    while (++g < MAX_GEN) {
        ApplyGenToCache(cache, g);
        cache.SetBestBlock(TipOfGen(g));
        if (!cache.Flush().ok()) std::_Exit(3);
    }
    std::_Exit(0);
}

class CrashChild : public testing::Test {
    void TestBody() override { RunCrashChild(std::getenv("IBDKIT_COINS_CRASH_CHILD")); }
};

// Registered only inside the child process (its environment names the store), so the suite never
// lists, runs or skips it otherwise.
[[maybe_unused]] const bool g_crash_child_registered = [] {
    if (!std::getenv("IBDKIT_COINS_CRASH_CHILD")) return false;
    testing::RegisterTest("CoinsCrashChild", "Main", nullptr, nullptr, __FILE__, __LINE__,
                          []() -> testing::Test* { return new CrashChild; });
    return true;
}();

using Model = std::map<OutPoint, Coin>;

TEST(CoinsCrash, SigkillDuringFlushLeavesOldOrNewState)
{
    const bool long_mode = std::getenv("IBDKIT_LONG_TESTS") != nullptr;
    const int kills = long_mode ? 120 : 10;
    const uint64_t seed = test::TestSeed();
    SCOPED_TRACE("IBDKIT_TEST_SEED=" + std::to_string(seed));
    std::mt19937_64 rng(seed);

    std::string t = (fs::temp_directory_path() / "ibdkit-crash-XXXXXX").string();
    const fs::path dir = ::mkdtemp(t.data());
    const std::string self = fs::read_symlink("/proc/self/exe").string();

    Model model;
    uint64_t model_gen = 0;
    auto advance_model = [&](uint64_t to) {
        for (uint64_t g = model_gen + 1; g <= to; ++g) {
            ApplyGen(
                g, [&](const OutPoint& op, Coin c) { model[op] = std::move(c); },
                [&](const OutPoint& op) { model.erase(op); });
        }
        model_gen = to;
    };

    // Every other kill is targeted: the child stops inside a flush (after its N-th intermediate
    // batch) and says so, and the kill lands there for certain; the others land at random moments.
    int with_h = 0, total_gens = 0, targeted = 0, targeted_bulk = 0;
    uint64_t last_gen = 0;
    for (int k = 0; k < kills; ++k) {
        const bool target = k % 2 == 0;
        int fds[2];
        ASSERT_EQ(::pipe(fds), 0);
        const std::string at = std::to_string(1 + rng() % 6);
        pid_t pid = fork();
        ASSERT_GE(pid, 0);
        if (pid == 0) {
            ::close(fds[0]);
            setenv("IBDKIT_COINS_CRASH_CHILD", dir.c_str(), 1);
            if (target) {
                setenv("IBDKIT_COINS_CRASH_SIGNAL_FD", std::to_string(fds[1]).c_str(), 1);
                setenv("IBDKIT_COINS_CRASH_AT_BATCH", at.c_str(), 1);
            }
            execl(self.c_str(), self.c_str(), "--gtest_filter=CoinsCrashChild.Main", "--gtest_brief=1", (char*)nullptr);
            std::_Exit(127);
        }
        ::close(fds[1]);
        if (target) {
            char c = 0;
            const ssize_t got = ::read(fds[0], &c, 1); // returns when the child is inside a flush
            if (got != 1) kill(pid, SIGKILL);
            ASSERT_EQ(got, 1) << "the child never reached intermediate batch " << at << " of a flush";
        } else {
            // Let it run long enough to open, recover and flush a few generations.
            std::this_thread::sleep_for(std::chrono::microseconds(20'000 + rng() % 150'000));
        }
        ::close(fds[0]);
        kill(pid, SIGKILL);
        int status = 0;
        waitpid(pid, &status, 0);
        ASSERT_TRUE(WIFSIGNALED(status)) << "child exited on its own with status " << status;

        // Inspect before recovery: either B names a generation, or H = [g, g'] with g' < g.
        {
            StoreStatus st;
            auto db = OpenCoinsDB(dir, CrashOptions(), &st);
            ASSERT_TRUE(db) << st.message;
            auto replay = db->NeedsReplay();
            ASSERT_TRUE(replay.ok());
            if (replay->has_value()) {
                ++with_h;
                EXPECT_TRUE(db->GetBestBlock()->IsNull());
                EXPECT_LT(GenOfTip((*replay)->old_tip), GenOfTip((*replay)->new_tip));
            }
            if (target && !replay->has_value()) {
                // The first flush into the new database is a bulk load (no H): stopped before its
                // switch, the database is still empty.
                EXPECT_TRUE(db->GetBestBlock()->IsNull()) << "kill " << k;
                EXPECT_EQ(*db->ForEachCoin([](const OutPoint&, const Coin&) { return true; }), 0u) << "kill " << k;
                ++targeted_bulk;
            } else if (target) {
                ++targeted; // between H written and B restored: the database says so
            }
        }
        std::unique_ptr<CoinsDB> db;
        uint64_t g = 0;
        ASSERT_NO_THROW(g = OpenAndRecover(dir, db));
        ASSERT_GE(g, last_gen) << "state went backwards";
        total_gens += int(g - last_gen);
        last_gen = g;
        advance_model(g);
        Model got;
        auto r = db->ForEachCoin([&](const OutPoint& op, const Coin& c) {
            got.emplace(op, c);
            return true;
        });
        ASSERT_TRUE(r.ok()) << r.error().message;
        ASSERT_EQ(got.size(), model.size()) << "kill " << k << " generation " << g;
        ASSERT_TRUE(got == model) << "kill " << k << ": database is a mix of generations (at " << g << ")";
    }
    std::printf("crash test: %d kills (%d targeted inside a flush, %d inside the first flush's bulk load), %d "
                "generations flushed, %d interrupted flushes recovered via H\n",
                kills, targeted, targeted_bulk, total_gens, with_h);
    EXPECT_GT(total_gens, 0);
    EXPECT_GE(with_h, targeted);
    EXPECT_EQ(targeted + targeted_bulk, (kills + 1) / 2) << "kills inside a flush are what this test is about";
    std::error_code ec;
    fs::remove_all(dir, ec);
}

} // namespace
} // namespace ibdkit

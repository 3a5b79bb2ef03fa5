// The external sort (src/common/external_sort.h): the same sorted, folded output whatever the
// memory budget (spills forced by a tiny one, many runs merged in several passes), equal keys
// folded across runs, empty input, and a damaged run file reported as Errc::Corrupt.
#include "common/external_sort.h"

#include "test_util.h"

#include <gtest/gtest.h>

#include <dirent.h>

#include <map>
#include <random>
#include <string>
#include <vector>

namespace ibdkit {
namespace {

using Bytes = std::vector<uint8_t>;

/// Records are `count u32 LE | key bytes`; ordered by key, equal keys add their counts.
struct KeyLess {
    bool operator()(std::span<const uint8_t> a, std::span<const uint8_t> b) const
    {
        return std::lexicographical_compare(a.begin() + 4, a.end(), b.begin() + 4, b.end());
    }
};
struct AddCounts {
    void operator()(std::span<uint8_t> acc, std::span<const uint8_t> r) const
    {
        uint32_t x, y;
        std::memcpy(&x, acc.data(), 4);
        std::memcpy(&y, r.data(), 4);
        x += y;
        std::memcpy(acc.data(), &x, 4);
    }
};

Bytes Record(uint32_t count, const std::string& key)
{
    Bytes r(4 + key.size());
    std::memcpy(r.data(), &count, 4);
    std::memcpy(r.data() + 4, key.data(), key.size());
    return r;
}

std::size_t OpenFiles()
{
    std::size_t n = 0;
    if (DIR* d = ::opendir("/proc/self/fd")) {
        while (::readdir(d)) ++n;
        ::closedir(d);
    }
    return n;
}

struct Sorted {
    std::vector<std::pair<std::string, uint32_t>> rows;
    uint64_t runs{0};
};

Sorted SortAll(const std::vector<Bytes>& input, std::size_t memory, std::size_t fan_in, const std::filesystem::path& dir)
{
    ExternalSorter<KeyLess, AddCounts> s({dir, memory, fan_in}, 64);
    for (const auto& r : input) {
        auto e = s.Add(r);
        EXPECT_FALSE(e) << e->message;
    }
    Sorted out;
    auto e = s.Finish([&](std::span<const uint8_t> r) {
        uint32_t c;
        std::memcpy(&c, r.data(), 4);
        out.rows.emplace_back(std::string(r.begin() + 4, r.end()), c);
        return true;
    });
    EXPECT_FALSE(e) << e->message;
    out.runs = s.Runs();
    return out;
}

TEST(ExternalSort, EmptyInputGivesNothingAndWritesNoRun)
{
    test::TempDir d;
    const Sorted s = SortAll({}, 1 << 20, 4, d.path);
    EXPECT_TRUE(s.rows.empty());
    EXPECT_EQ(s.runs, 0u);
}

TEST(ExternalSort, AnyBudgetGivesTheSortedFoldedRecords)
{
    const uint64_t seed = test::TestSeed();
    std::mt19937_64 rng(seed);
    std::vector<Bytes> input;
    std::map<std::string, uint32_t> expect;
    for (int i = 0; i < 20000; ++i) {
        // Keys of 0..12 bytes over a small alphabet: many repeats, prefixes of one another, the empty key.
        std::string key(rng() % 13, 'a');
        for (auto& c : key) c = char('a' + rng() % 3);
        const uint32_t count = uint32_t(rng() % 1000);
        input.push_back(Record(count, key));
        expect[key] += count;
    }
    const std::vector<std::pair<std::string, uint32_t>> want(expect.begin(), expect.end());
    test::TempDir d;
    const std::size_t files_before = OpenFiles();
    // In memory; a few runs; many runs merged in several passes (fan-in 3); one record per run.
    for (const auto& [memory, fan_in] : std::vector<std::pair<std::size_t, std::size_t>>{
             {64 << 20, 64}, {64 << 10, 64}, {4 << 10, 3}, {200, 2}}) {
        const Sorted s = SortAll(input, memory, fan_in, d.path);
        EXPECT_EQ(s.rows, want) << "memory " << memory << " fan_in " << fan_in << " seed " << seed;
        if (memory < (1 << 20)) {
            EXPECT_GT(s.runs, 3u) << memory;
        } else {
            EXPECT_EQ(s.runs, 0u);
        }
    }
    // Every run file is gone: nothing left in the directory, no descriptor left open.
    EXPECT_TRUE(std::filesystem::is_empty(d.path));
    EXPECT_EQ(OpenFiles(), files_before);
}

TEST(ExternalSort, EqualKeysInEveryRunFoldIntoOne)
{
    test::TempDir d;
    std::vector<Bytes> input;
    for (int i = 0; i < 5000; ++i) input.push_back(Record(1, i % 2 ? "same" : "other"));
    const Sorted s = SortAll(input, 256, 4, d.path);
    EXPECT_GT(s.runs, 10u);
    const std::vector<std::pair<std::string, uint32_t>> want{{"other", 2500}, {"same", 2500}};
    EXPECT_EQ(s.rows, want);
}

TEST(ExternalSort, WithoutCombineEveryRecordComesOutAndEmitCanStop)
{
    test::TempDir d;
    ExternalSorter<KeyLess> s({d.path, 128, 2}, 64);
    for (int i = 0; i < 300; ++i) ASSERT_FALSE(s.Add(Record(uint32_t(i), std::string(1, char('a' + i % 7)))));
    std::vector<std::string> keys;
    ASSERT_FALSE(s.Finish([&](std::span<const uint8_t> r) {
        keys.emplace_back(r.begin() + 4, r.end());
        return keys.size() < 250;
    }));
    EXPECT_GT(s.Runs(), 10u);
    ASSERT_EQ(keys.size(), 250u);
    EXPECT_TRUE(std::is_sorted(keys.begin(), keys.end()));
    EXPECT_EQ(keys.front(), "a");
    EXPECT_EQ(std::count(keys.begin(), keys.end(), "a"), 43);
}

/// KeyLess with an order prefix (the first key byte only, so that ties are common and the full
/// comparison still decides them).
struct KeyLessWithPrefix : KeyLess {
    uint64_t Prefix(std::span<const uint8_t> r) const { return r.size() > 4 ? r[4] : 0; }
};

// A Less with a Prefix sorts the same as without it, folding included, in memory and across runs.
TEST(ExternalSort, AnOrderPrefixChangesNothingButTheSpeed)
{
    test::TempDir d;
    std::mt19937 rng(7);
    std::vector<Bytes> input;
    for (int i = 0; i < 4000; ++i) {
        std::string key(1 + rng() % 6, 'a');
        for (char& c : key) c = char('a' + rng() % 3);
        input.push_back(Record(1, key));
    }
    for (const std::size_t memory : {std::size_t(1) << 20, std::size_t(512)}) {
        auto sort = [&](auto less) {
            ExternalSorter<decltype(less), AddCounts> s({d.path, memory, 4}, 64, less);
            for (const auto& r : input) EXPECT_FALSE(s.Add(r));
            std::vector<std::pair<std::string, uint32_t>> rows;
            EXPECT_FALSE(s.Finish([&](std::span<const uint8_t> r) {
                uint32_t n;
                std::memcpy(&n, r.data(), 4);
                rows.emplace_back(std::string(r.begin() + 4, r.end()), n);
                return true;
            }));
            return rows;
        };
        const auto plain = sort(KeyLess{});
        EXPECT_EQ(sort(KeyLessWithPrefix{}), plain) << memory;
        EXPECT_TRUE(std::is_sorted(plain.begin(), plain.end()));
    }
}

TEST(ExternalSort, ADamagedRunIsCorrupt)
{
    using namespace external_sort_detail;
    test::TempDir d;
    for (const int damage : {0, 1, 2, 3}) {
        auto run = CreateRun(d.path);
        ASSERT_TRUE(run.ok());
        {
            RunWriter w(*run);
            for (int i = 0; i < 10; ++i) ASSERT_TRUE(w.Put(Record(7, "key" + std::to_string(i))));
            ASSERT_FALSE(w.Finish());
        }
        std::size_t max_record = 8;
        if (damage == 0) { // inside a record
            ASSERT_EQ(::ftruncate(run->fd, off_t(run->bytes - 3)), 0);
        }
        if (damage == 1) { // at a record boundary
            ASSERT_EQ(::ftruncate(run->fd, off_t(run->bytes - 12)), 0);
        }
        if (damage == 2) {
            const uint8_t huge[4] = {0xff, 0xff, 0xff, 0x7f}; // a length far above any record
            ASSERT_EQ(::pwrite(run->fd, huge, 4, 0), 4);
        }
        if (damage == 3) max_record = 7; // a record longer than the reader allows
        RunReader r(*run, max_record, 4096);
        ASSERT_FALSE(r.Start());
        Result<bool> more = true;
        int n = 0;
        while (more.ok() && *more) {
            more = r.Next();
            ++n;
        }
        ASSERT_FALSE(more.ok()) << "damage " << damage << " read " << n;
        EXPECT_EQ(more.error().code, Errc::Corrupt);
    }
    EXPECT_TRUE(std::filesystem::is_empty(d.path));
}

} // namespace
} // namespace ibdkit

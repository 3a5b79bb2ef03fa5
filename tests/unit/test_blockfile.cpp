#include "test_util.h"

#include <ibdkit/blockfile/blockfile.h>
#include <ibdkit/blockfile/locate.h>
#include <ibdkit/encoding/endian.h>
#include <ibdkit/span.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <fstream>
#include <set>

using namespace ibdkit;
namespace fs = std::filesystem;

namespace {

constexpr std::array<uint8_t, 4> MAINNET_MAGIC{0xf9, 0xbe, 0xb4, 0xd9};
constexpr std::array<uint8_t, 4> REGTEST_MAGIC{0xfa, 0xbf, 0xb5, 0xda};
constexpr std::array<uint8_t, 4> SIGNET_MAGIC{0x0a, 0x03, 0xcf, 0x40};
const char* MAINNET_GENESIS = "000000000019d6689c085ae165831e934ff763ae46a2a6c172b3f1b60a8ce26f";
const char* REGTEST_GENESIS = "0f9188f13cb7b2c71f2a335e3a4fc328bf5beb436012afca590b1a11466e2206";

struct Scanned {
    std::vector<std::vector<uint8_t>> blocks;
    BlockFileScanStats stats;
    ChainOrder order;
};

Scanned Scan(const fs::path& dir_or_file, std::span<const uint8_t, 4> magic, const char* genesis)
{
    Scanned s;
    auto key = ReadXorKey(fs::is_directory(dir_or_file) ? dir_or_file : dir_or_file.parent_path());
    EXPECT_TRUE(key.ok());
    ChainOrderer orderer(*BlockHash::FromHex(genesis));
    const auto files = ListBlockFiles(dir_or_file).value();
    auto st = ScanBlockFiles(files, magic, *key, [&](const BlockRecordPos& pos, std::span<const uint8_t, 80> hdr) {
        orderer.Add(pos, hdr);
    });
    EXPECT_TRUE(st.ok()) << (st.ok() ? "" : st.error().message);
    s.stats = *st;
    // The scan reads 88 bytes per record, plus what resynchronisation and zero tails need.
    if (s.stats.skipped_bytes == 0 && s.stats.zero_tail_bytes == 0 && s.stats.truncated == 0) {
        EXPECT_EQ(s.stats.bytes_read, s.stats.records * RECORD_PREFIX_SIZE) << "clean files: only record prefixes are read";
    }
    s.order = orderer.Finish();
    // Re-read every block of the chain by position (exercises BlockFileReader + xor offsets).
    BlockFileReader reader(files, *key);
    uint64_t want = 0;
    for (const auto& pos : s.order.blocks) {
        auto b = reader.Read(pos);
        EXPECT_TRUE(b.ok());
        s.blocks.push_back(*b);
        want += pos.size;
    }
    EXPECT_EQ(reader.bytes_read(), want) << "each block's bytes are read once";
    return s;
}

std::vector<std::vector<uint8_t>> Records(const fs::path& file, std::span<const uint8_t, 4> magic)
{
    std::vector<BlockRecordPos> where;
    auto st = ScanBlockFiles({file}, magic, ObfuscationKey{}, [&](const BlockRecordPos& pos, std::span<const uint8_t, 80>) {
        where.push_back(pos);
    });
    EXPECT_TRUE(st.ok());
    BlockFileReader reader({file}, ObfuscationKey{});
    std::vector<std::vector<uint8_t>> out;
    for (const auto& pos : where) {
        auto b = reader.Read(pos);
        EXPECT_TRUE(b.ok());
        if (b.ok()) out.push_back(std::move(*b));
    }
    return out;
}

void AppendRecord(std::vector<uint8_t>& file, std::span<const uint8_t, 4> magic, const std::vector<uint8_t>& block)
{
    file.insert(file.end(), magic.begin(), magic.end());
    uint8_t len[4];
    WriteLE32(len, uint32_t(block.size()));
    file.insert(file.end(), len, len + 4);
    file.insert(file.end(), block.begin(), block.end());
}

void WriteFile(const fs::path& p, const std::vector<uint8_t>& bytes)
{
    std::ofstream f(p, std::ios::binary);
    f.write(reinterpret_cast<const char*>(bytes.data()), std::streamsize(bytes.size()));
}

using TempDir = ibdkit::test::TempDir;

} // namespace

TEST(BlockFile, MainnetZeroTo599InOrder)
{
    auto dir = ibdkit::test::TestData("mainnet/blk_0-599");
    if (!dir) FAIL() << "tests/data is incomplete";
    auto before0 = ibdkit::test::ReadFile(*dir / "blk00000.dat");
    auto s = Scan(*dir, MAINNET_MAGIC, MAINNET_GENESIS);
    EXPECT_EQ(s.stats.records, 600u);
    ASSERT_EQ(s.order.blocks.size(), 600u);
    EXPECT_EQ(s.order.hashes.front().ToHex(), MAINNET_GENESIS);
    EXPECT_EQ(s.order.orphans, 0u);
    EXPECT_EQ(s.order.stale, 0u);
    EXPECT_EQ(ibdkit::test::ReadFile(*dir / "blk00000.dat"), before0) << "read-only";
}

TEST(BlockFile, RegtestWithoutGenesisRecordAndSignet)
{
    if (auto f = ibdkit::test::TestData("regtest/core_kernel_blocks_1-206.blk")) {
        auto s = Scan(*f, REGTEST_MAGIC, REGTEST_GENESIS);
        EXPECT_EQ(s.order.blocks.size(), 206u) << "heights 1..206 chain onto the (absent) regtest genesis";
        EXPECT_EQ(s.order.orphans, 0u);
    }
    if (auto f = ibdkit::test::TestData("signet/blk00000.dat")) {
        auto s = Scan(*f, SIGNET_MAGIC, "00000008819873e925422c1ff0f99f7cc9bbb232af63a077a480a3633bee1ef6");
        EXPECT_EQ(s.order.blocks.size(), 71u);
    }
}

TEST(BlockFile, XorShuffledPaddedTruncatedGarbageAllGiveTheSameChain)
{
    auto f = ibdkit::test::TestData("mainnet/blk_0-599/blk00000.dat");
    if (!f) FAIL() << "tests/data is incomplete";
    auto recs = Records(*f, MAINNET_MAGIC);
    ASSERT_EQ(recs.size(), 300u);
    const auto plain = Scan(*f, MAINNET_MAGIC, MAINNET_GENESIS);

    // Shuffled order, a duplicate, garbage between records, a zero tail, split over two files.
    std::mt19937_64 rng(ibdkit::test::TestSeed());
    auto shuffled = recs;
    std::shuffle(shuffled.begin(), shuffled.end(), rng);
    std::vector<uint8_t> f0, f1;
    for (std::size_t i = 0; i < shuffled.size(); ++i) {
        auto& out = i < 150 ? f0 : f1;
        if (i % 37 == 5) out.insert(out.end(), {0xde, 0xad, 0xf9, 0xbe, 0x00});
        AppendRecord(out, MAINNET_MAGIC, shuffled[i]);
    }
    AppendRecord(f1, MAINNET_MAGIC, recs[10]); // duplicate
    f1.insert(f1.end(), 4096, 0);              // pre-allocated tail
    TempDir d;
    ObfuscationKey key;
    for (auto& b : key.bytes) b = std::byte(rng() | 1);
    std::vector<uint8_t> kb(8);
    std::memcpy(kb.data(), key.bytes.data(), 8);
    WriteFile(d.path / "xor.dat", kb);
    auto x0 = f0, x1 = f1;
    XorBytes(MakeWritableByteSpan(x0), key, 0);
    XorBytes(MakeWritableByteSpan(x1), key, 0);
    WriteFile(d.path / "blk00000.dat", x0);
    WriteFile(d.path / "blk00001.dat", x1);
    WriteFile(d.path / "rev00000.dat", {1, 2, 3}); // ignored

    auto s = Scan(d.path, MAINNET_MAGIC, MAINNET_GENESIS);
    EXPECT_EQ(s.order.hashes, plain.order.hashes);
    EXPECT_EQ(s.blocks, plain.blocks);
    EXPECT_EQ(s.order.duplicates, 1u);
    EXPECT_EQ(s.stats.zero_tail_bytes, 4096u);
    EXPECT_GT(s.stats.skipped_bytes, 0u);

    // Truncated tail: the last record loses bytes; the chain ends one block earlier.
    std::vector<uint8_t> t;
    for (const auto& r : recs) AppendRecord(t, MAINNET_MAGIC, r);
    t.resize(t.size() - 10);
    TempDir d2;
    WriteFile(d2.path / "blk00000.dat", t);
    auto s2 = Scan(d2.path, MAINNET_MAGIC, MAINNET_GENESIS);
    EXPECT_EQ(s2.stats.truncated, 1u);
    EXPECT_EQ(s2.order.blocks.size(), 299u);
}

TEST(BlockFile, OrphansAndStaleForks)
{
    auto f = ibdkit::test::TestData("mainnet/blk_0-599/blk00000.dat");
    if (!f) FAIL() << "tests/data is incomplete";
    auto recs = Records(*f, MAINNET_MAGIC);
    // Keep 0..99, drop 100 (so 101..149 become orphans), and add a stale fork block: block 50 with a
    // different nonce (same parent, same work, seen later: loses the tie).
    std::vector<uint8_t> out;
    for (std::size_t i = 0; i < 150; ++i) {
        if (i != 100) AppendRecord(out, MAINNET_MAGIC, recs[i]);
    }
    auto fork = recs[50];
    fork[76] ^= 1;
    AppendRecord(out, MAINNET_MAGIC, fork);
    TempDir d;
    WriteFile(d.path / "blk00000.dat", out);
    auto s = Scan(d.path, MAINNET_MAGIC, MAINNET_GENESIS);
    EXPECT_EQ(s.order.blocks.size(), 100u);
    EXPECT_EQ(s.order.orphans, 49u);
    EXPECT_EQ(s.order.stale, 1u);
}

TEST(BlockFile, BadXorKeyFileIsAnError)
{
    TempDir d;
    WriteFile(d.path / "xor.dat", {1, 2, 3});
    auto k = ReadXorKey(d.path);
    ASSERT_FALSE(k.ok());
    EXPECT_EQ(k.error().code, Errc::Corrupt);
    TempDir empty;
    auto none = ReadXorKey(empty.path);
    ASSERT_TRUE(none.ok());
    EXPECT_TRUE(none->IsNull());
}

TEST(BlockFile, ListingTakesCoresNamesInNumberOrderAndPassesOverTheRest)
{
    TempDir d;
    for (const char* name : {"blk00002.dat", "blk00000.dat", "blk100000.dat", "rev00000.dat", "blk0001.dat",
                             "blk99999999999999999999999999999.dat"}) // the last: more digits than 64 bits hold
        WriteFile(d.path / name, {0});
    std::filesystem::create_directory(d.path / "blk00001.dat"); // a folder, not a file
    std::vector<std::string> names;
    auto listed = ListBlockFiles(d.path);
    ASSERT_TRUE(listed.ok()) << listed.error().message;
    for (const auto& p : *listed) names.push_back(p.filename().string());
    EXPECT_EQ(names, (std::vector<std::string>{"blk00000.dat", "blk00002.dat", "blk100000.dat"}));
    auto missing = ListBlockFiles(d.path / "missing");
    ASSERT_TRUE(missing.ok());
    EXPECT_TRUE(missing->empty());
    // A folder that cannot be listed is an error, never an empty or shorter listing (a name too
    // long for the file system: root reads any folder whatever its permissions).
    auto unlistable = ListBlockFiles(d.path / std::string(300, 'b'));
    ASSERT_FALSE(unlistable.ok());
    EXPECT_EQ(unlistable.error().code, Errc::Io);
    EXPECT_NE(unlistable.error().message.find("cannot list the blk files of"), std::string::npos) << unlistable.error().message;
    auto located = LocateFromBlocksDir(d.path / std::string(300, 'b'), ChainType::REGTEST);
    ASSERT_FALSE(located.ok());
    EXPECT_EQ(located.error().code, Errc::Io) << located.error().message;
}

TEST(BlockFile, ScanReadsRecordPrefixesOnlyAndResyncIsLinear)
{
    std::mt19937_64 rng(ibdkit::test::TestSeed());
    // 20 records of 100 kB (random bytes: the scan does not decode) and a 1000-byte zero tail.
    std::vector<uint8_t> file;
    uint64_t body = 0;
    for (int i = 0; i < 20; ++i) {
        std::vector<uint8_t> block(100'000);
        for (auto& b : block) b = uint8_t(rng());
        AppendRecord(file, MAINNET_MAGIC, block);
        body += block.size();
    }
    file.insert(file.end(), 1000, 0);
    TempDir d;
    WriteFile(d.path / "blk00000.dat", file);
    uint64_t seen = 0;
    auto st = ScanBlockFiles({d.path / "blk00000.dat"}, MAINNET_MAGIC, ObfuscationKey{},
                             [&](const BlockRecordPos& pos, std::span<const uint8_t, 80>) { seen += pos.size; });
    ASSERT_TRUE(st.ok());
    EXPECT_EQ(st->records, 20u);
    EXPECT_EQ(seen, body);
    EXPECT_EQ(st->zero_tail_bytes, 1000u);
    // 88 bytes per record, then the tail: one 88-byte probe and the 1000 bytes checked for zeros.
    EXPECT_EQ(st->bytes_read, 20 * RECORD_PREFIX_SIZE + 88 + 1000);

    // 4 MB of magics declaring impossible sizes: every position fails and resyncs, yet the file is
    // read about once (a re-read per failed position would be quadratic).
    std::vector<uint8_t> bad;
    while (bad.size() < (4u << 20)) {
        bad.insert(bad.end(), MAINNET_MAGIC.begin(), MAINNET_MAGIC.end());
        bad.insert(bad.end(), {0xff, 0xff, 0xff, 0xff});
    }
    WriteFile(d.path / "blk00001.dat", bad);
    auto st2 = ScanBlockFiles({d.path / "blk00001.dat"}, MAINNET_MAGIC, ObfuscationKey{},
                              [&](const BlockRecordPos&, std::span<const uint8_t, 80>) { FAIL() << "no record here"; });
    ASSERT_TRUE(st2.ok());
    EXPECT_EQ(st2->records, 0u);
    EXPECT_EQ(st2->skipped_bytes, bad.size());
    EXPECT_LE(st2->bytes_read, 2 * bad.size());
}

// A server reads the whole chain once per connection: without a bound each reader would hold every
// blk file it reached open (thousands on mainnet, times the peers).
TEST(BlockFile, ReaderKeepsAtMostTheFilesItIsToldOpenTheLeastRecentlyReadClosedFirst)
{
    TempDir t;
    std::vector<fs::path> files;
    for (int i = 0; i < 6; ++i) {
        files.push_back(fs::canonical(t.path) / ("blk0000" + std::to_string(i) + ".dat"));
        WriteFile(files.back(), std::vector<uint8_t>(100, uint8_t(i)));
    }
    auto read = [&](BlockFileReader& r, uint32_t i) {
        std::array<std::byte, 4> got{};
        ASSERT_TRUE(r.ReadInto(i, 10, got).ok());
        EXPECT_EQ(got[3], std::byte(i)) << "file " << i;
    };
    {
        BlockFileReader all(files, ObfuscationKey{});
        for (uint32_t i = 0; i < 6; ++i) read(all, i);
        EXPECT_EQ(test::OpenFilesUnder(t.path).size(), 6u) << "without a bound every file read stays open";
    }
    EXPECT_TRUE(test::OpenFilesUnder(t.path).empty());
    BlockFileReader two(files, ObfuscationKey{});
    two.KeepOpenAtMost(2);
    for (uint32_t i : {0u, 1u, 0u, 2u}) read(two, i);
    EXPECT_EQ(test::OpenFilesUnder(t.path), (std::set<fs::path>{files[0], files[2]})) << "file 1 was read least recently";
    for (uint32_t i = 0; i < 6; ++i) read(two, i);
    EXPECT_EQ(test::OpenFilesUnder(t.path), (std::set<fs::path>{files[4], files[5]}));
    two.KeepOpenAtMost(1);
    EXPECT_EQ(test::OpenFilesUnder(t.path), (std::set<fs::path>{files[5]}));
    read(two, 3);
    EXPECT_EQ(test::OpenFilesUnder(t.path), (std::set<fs::path>{files[3]}));
    EXPECT_EQ(two.bytes_read(), 11u * 4);
}

// A replay of a mainnet datadir reads thousands of blk files, under a common limit of 1,024
// descriptors: a reader keeps at most 64 open unless told otherwise.
TEST(BlockFile, ReaderKeepsAtMost64FilesOpenByDefault)
{
    TempDir t;
    std::vector<fs::path> files;
    for (int i = 0; i < 70; ++i) {
        files.push_back(fs::canonical(t.path) / ("blk" + std::to_string(10000 + i) + ".dat"));
        WriteFile(files.back(), std::vector<uint8_t>(16, uint8_t(i)));
    }
    BlockFileReader reader(files, ObfuscationKey{});
    for (uint32_t i = 0; i < 70; ++i) {
        std::array<std::byte, 1> got{};
        ASSERT_TRUE(reader.ReadInto(i, 3, got).ok()) << i;
        EXPECT_EQ(got[0], std::byte(i));
    }
    const auto open = test::OpenFilesUnder(t.path);
    EXPECT_EQ(open.size(), 64u);
    EXPECT_FALSE(open.contains(files[5])) << "the files read least recently were closed";
    EXPECT_TRUE(open.contains(files[69]));
}

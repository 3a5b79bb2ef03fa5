// BIP 456's hintsfile: the Elias-Fano vectors, round trips, every decoding error, the file's
// header and block count, the atomic writer, and which outputs an index counts.
#include "test_util.h"

#include <ibdkit/swiftsync/hints.h>

#include <gtest/gtest.h>

#include <unistd.h>
#include <nlohmann/json.hpp>

#include <fstream>
#include <random>

using namespace ibdkit;
using namespace ibdkit::swiftsync;
using ibdkit::test::ParseHex;
using ibdkit::test::TempDir;
using ibdkit::test::ToHex;

namespace {

Result<std::vector<uint32_t>> DecodeAll(const std::vector<uint8_t>& bytes)
{
    std::size_t used = 0;
    auto r = DecodeEliasFano(bytes, &used);
    if (r && used != bytes.size()) return Error{Errc::TrailingData, "not all bytes used"};
    return r;
}

Errc CodeOf(const std::vector<uint8_t>& bytes)
{
    std::size_t used = 0;
    auto r = DecodeEliasFano(bytes, &used);
    return r ? Errc::Ok : r.error().code;
}

std::vector<uint8_t> FileOf(uint32_t height, const std::vector<std::vector<uint32_t>>& lists)
{
    std::vector<uint8_t> out(HINTS_MAGIC.begin(), HINTS_MAGIC.end());
    out.push_back(HINTS_VERSION);
    for (int i = 0; i < 4; ++i) out.push_back(uint8_t(height >> (8 * i)));
    for (const auto& l : lists) AppendEliasFano(out, l);
    return out;
}

} // namespace

TEST(SwiftSyncHints, Bip456EliasFanoVectors)
{
    auto path = ibdkit::test::TestData("bips/bip-0456/elias_fano.json");
    ASSERT_TRUE(path) << "tests/data/bips is incomplete";
    std::ifstream f(*path);
    const auto vectors = nlohmann::json::parse(f);
    ASSERT_EQ(vectors.size(), 3u);
    for (const auto& v : vectors) {
        const auto indices = v[0].get<std::vector<uint32_t>>();
        const std::string hex = v[1].get<std::string>();
        EXPECT_EQ(ToHex(EncodeEliasFano(indices)), hex);
        auto back = DecodeAll(ParseHex(hex));
        ASSERT_TRUE(back.ok()) << back.error().message;
        EXPECT_EQ(*back, indices);
    }
}

TEST(SwiftSyncHints, WorkedExampleAndEdges)
{
    // BIP 456's worked example: [3, 7, 12], ℓ = 2, L = 111100, H = 101001.
    EXPECT_EQ(ToHex(EncodeEliasFano(std::vector<uint32_t>{3, 7, 12})), "030c" "f0" "a4");
    EXPECT_EQ(ToHex(EncodeEliasFano(std::vector<uint32_t>{})), "00");
    for (const std::vector<uint32_t>& v : std::vector<std::vector<uint32_t>>{
             {0}, {0, 1, 2, 3, 4, 5, 6, 7, 8}, {UINT32_MAX}, {0, UINT32_MAX}, {UINT32_MAX - 1, UINT32_MAX}, {1000000}}) {
        auto back = DecodeAll(EncodeEliasFano(v));
        ASSERT_TRUE(back.ok()) << back.error().message;
        EXPECT_EQ(*back, v);
    }
}

TEST(SwiftSyncHints, RandomRoundTrips)
{
    std::mt19937_64 rng(ibdkit::test::TestSeed());
    std::printf("seed %llu\n", (unsigned long long)ibdkit::test::TestSeed());
    for (int round = 0; round < 300; ++round) {
        const uint32_t range = uint32_t(1 + rng() % (round % 3 == 0 ? 50 : 100000));
        const double density = double(rng() % 1000) / 1000.0;
        std::vector<uint32_t> v;
        for (uint32_t i = 0; i < range && v.size() < 5000; ++i) {
            if (double(rng() % 1000) / 1000.0 < density) v.push_back(i);
        }
        const auto bytes = EncodeEliasFano(v);
        auto back = DecodeAll(bytes);
        ASSERT_TRUE(back.ok()) << back.error().message;
        ASSERT_EQ(*back, v);
        // Every proper prefix is truncated.
        for (std::size_t cut = 0; cut < bytes.size(); cut += 1 + bytes.size() / 7) {
            EXPECT_EQ(CodeOf(std::vector<uint8_t>(bytes.begin(), bytes.begin() + long(cut))), Errc::EndOfData);
        }
    }
}

TEST(SwiftSyncHints, MalformedListsAreTypedErrors)
{
    // Non-minimal CompactSize for N = 3.
    EXPECT_EQ(CodeOf(ParseHex("fd0300" "0c" "f0a4")), Errc::NonCanonicalCompactSize);
    // N above M + 1: four indices up to 2.
    EXPECT_EQ(CodeOf(ParseHex("0402" "00" "ff")), Errc::InvalidValue);
    // N and M above 2^32 - 1.
    EXPECT_EQ(CodeOf(ParseHex("ff0000000001000000" "00")), Errc::InvalidValue);
    EXPECT_EQ(CodeOf(ParseHex("01" "ff0000000001000000")), Errc::InvalidValue);
    // A padding bit set in L, then in H.
    EXPECT_EQ(CodeOf(ParseHex("030c" "f1" "a4")), Errc::InvalidValue);
    EXPECT_EQ(CodeOf(ParseHex("030c" "f0" "a5")), Errc::InvalidValue);
    // Two equal indices: N = 2, M = 3, ℓ = 1; lows 1,1; highs 1,1 (H = 01 1) → [3, 3].
    EXPECT_EQ(CodeOf(ParseHex("0203" "c0" "60")), Errc::InvalidValue);
    // The last index differs from M: N = 2, M = 3, ℓ = 1, indices [0, 2] (lows 0,0; highs 0,1: H = 1 01).
    EXPECT_EQ(CodeOf(ParseHex("0203" "00" "a0")), Errc::InvalidValue);
    // H with too few 1 bits: N = 3, M = 12, H = 10000000.
    EXPECT_EQ(CodeOf(ParseHex("030c" "f0" "80")), Errc::InvalidValue);
    // A huge N with the bytes it promises missing allocates nothing and is truncated.
    EXPECT_EQ(CodeOf(ParseHex("fefffffffffeffffffff")), Errc::EndOfData);
}

TEST(SwiftSyncHints, FileParsesAndCountsBlocks)
{
    const std::vector<std::vector<uint32_t>> lists{{0}, {}, {1, 4, 9}, {0, 1}};
    auto bytes = FileOf(4, lists);
    EXPECT_EQ(ToHex(std::vector<uint8_t>(bytes.begin(), bytes.begin() + 9)), "5554584f" "00" "04000000");
    auto h = Hints::Parse(bytes);
    ASSERT_TRUE(h.ok()) << h.error().message;
    EXPECT_EQ(h->height(), 4u);
    EXPECT_EQ(h->total(), 6u);
    for (uint32_t i = 1; i <= 4; ++i) EXPECT_EQ(h->Indices(i), lists[i - 1]);

    // Fewer lists than the height, more lists than the height.
    EXPECT_EQ(Hints::Parse(FileOf(5, lists)).error().code, Errc::EndOfData);
    EXPECT_EQ(Hints::Parse(FileOf(3, lists)).error().code, Errc::TrailingData);
    EXPECT_TRUE(Hints::Parse(FileOf(0, {})).ok());
    // A huge height over a few bytes: no allocation from it, a typed error.
    EXPECT_EQ(Hints::Parse(FileOf(UINT32_MAX, lists)).error().code, Errc::EndOfData);
    auto bad = bytes;
    bad[0] ^= 1;
    EXPECT_EQ(Hints::Parse(bad).error().code, Errc::BadMagic);
    bad = bytes;
    bad[4] = 1;
    EXPECT_EQ(Hints::Parse(bad).error().code, Errc::InvalidValue);
    EXPECT_EQ(Hints::Parse(std::vector<uint8_t>(bytes.begin(), bytes.begin() + 8)).error().code, Errc::EndOfData);
    // A malformed list names its block.
    bad = FileOf(2, {{0}, {}});
    bad.back() = 0xfd;
    auto r = Hints::Parse(bad);
    ASSERT_FALSE(r.ok());
    EXPECT_NE(r.error().message.find("block 2"), std::string::npos) << r.error().message;
}

TEST(SwiftSyncHints, WriterIsAtomicAndByteExact)
{
    TempDir t;
    const auto out = t.path / "h.hints";
    const std::vector<std::vector<uint32_t>> lists{{0}, {}, {1, 4, 9}};
    {
        auto w = HintsWriter::Create(out, 3);
        ASSERT_TRUE(w.ok()) << w.error().message;
        for (const auto& l : lists) ASSERT_FALSE((*w)->Append(l));
        EXPECT_FALSE(std::filesystem::exists(out)) << "nothing under the final name before Finish";
        auto size = (*w)->Finish();
        ASSERT_TRUE(size.ok()) << size.error().message;
        EXPECT_EQ(*size, FileOf(3, lists).size());
    }
    EXPECT_EQ(ibdkit::test::ReadFile(out), FileOf(3, lists));
    EXPECT_FALSE(std::filesystem::exists(t.path / ("h.hints.partial-" + std::to_string(::getpid()))));
    auto h = Hints::Read(out);
    ASSERT_TRUE(h.ok());
    EXPECT_EQ(h->Indices(3), lists[2]);

    // Too few lists: Finish refuses, and the partial file goes with the writer.
    const auto out2 = t.path / "short.hints";
    {
        auto w = HintsWriter::Create(out2, 3);
        ASSERT_TRUE(w.ok());
        ASSERT_FALSE((*w)->Append(lists[0]));
        EXPECT_FALSE((*w)->Finish().ok());
    }
    EXPECT_FALSE(std::filesystem::exists(out2));
    EXPECT_FALSE(std::filesystem::exists(t.path / ("short.hints.partial-" + std::to_string(::getpid()))));
    EXPECT_EQ(Hints::Read(t.path / "absent").error().code, Errc::Corrupt);
}

// The library refuses what the CLI refuses: a hintsfile inside a Bitcoin Core data directory.
TEST(SwiftSyncHints, WriterRefusesACoreDatadir)
{
    TempDir t;
    std::filesystem::create_directories(t.path / "core" / "blocks" / "index");
    auto w = HintsWriter::Create(t.path / "core" / "utxo.hints", 1);
    ASSERT_FALSE(w);
    EXPECT_EQ(w.error().code, Errc::Refused);
    EXPECT_FALSE(std::filesystem::exists(t.path / "core" / "utxo.hints.partial"));
}

TEST(SwiftSyncHints, IndexCountsSpendableOutputsOnly)
{
    auto script = [](std::vector<uint8_t> b) { return Script(std::span<const uint8_t>(b)); };
    MutableTransaction cb, tx;
    cb.vin.resize(1);
    cb.vout = {TxOut{50, script({0x51})}, TxOut{0, script({0x6a, 0x01, 0x02})}};
    tx.vin.resize(1);
    tx.vin[0].prevout.n = 0;
    tx.vout = {TxOut{1, script(std::vector<uint8_t>(10'001, 0x51))}, TxOut{2, script({0x52})}, TxOut{3, script({})},
               TxOut{4, script(std::vector<uint8_t>(10'000, 0x51))}};
    Block b;
    b.vtx = {Transaction(cb), Transaction(tx)};
    std::vector<std::array<uint32_t, 3>> seen;
    ForEachSpendableOutput(b, false, [&](std::size_t t, uint32_t o, uint32_t i) { seen.push_back({uint32_t(t), o, i}); });
    const std::vector<std::array<uint32_t, 3>> want{{0, 0, 0}, {1, 1, 1}, {1, 2, 2}, {1, 3, 3}};
    EXPECT_EQ(seen, want);
    seen.clear();
    ForEachSpendableOutput(b, true, [&](std::size_t t, uint32_t o, uint32_t i) { seen.push_back({uint32_t(t), o, i}); });
    EXPECT_EQ(seen, (std::vector<std::array<uint32_t, 3>>{{1, 1, 0}, {1, 2, 1}, {1, 3, 2}}));

    const auto h91722 = *BlockHash::FromHex("00000000000271a2dc26e7667f8419f2e15416dc6955e5a6c6cdf3f2574dd08e");
    const auto h91812 = *BlockHash::FromHex("00000000000af0aed4792b1acee3d966af36cf5def14935db8de83d6f9306f2f");
    EXPECT_TRUE(IsBip30Unspendable(ChainType::MAIN, 91722, h91722));
    EXPECT_TRUE(IsBip30Unspendable(ChainType::MAIN, 91812, h91812));
    EXPECT_FALSE(IsBip30Unspendable(ChainType::MAIN, 91812, h91722));
    EXPECT_FALSE(IsBip30Unspendable(ChainType::TESTNET, 91722, h91722));
    EXPECT_FALSE(IsBip30Unspendable(ChainType::MAIN, 91842, h91722));
}

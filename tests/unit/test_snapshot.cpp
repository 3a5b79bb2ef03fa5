// assumeutxo snapshots: Core's byte layout (metadata, groups, key order past vout 127), round trip
// chainstate → snapshot → chainstate → snapshot, and every malformed file the loader must refuse
// with a typed error (network, magic, version, truncation, trailing bytes, counts that lie,
// duplicate and unordered coins, bad amounts, a wrong hash) without allocating by a count.
#include <ibdkit/coins/coins_db.h>
#include <ibdkit/utxo/snapshot.h>
#include <ibdkit/utxo/stats.h>

#include "coins/coins_cache.h"
#include "stream/streams.h"

#include "test_util.h"
#include "coins/coins_db_internal.h"

#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <iostream>
#include <random>

namespace ibdkit {
namespace {

namespace fs = std::filesystem;
using test::ToHex;

using TempDir = ibdkit::test::TempDir;

Coin MakeCoin(std::mt19937_64& rng)
{
    std::vector<uint8_t> script(rng() % 2 ? 22 : 25);
    for (auto& b : script) b = uint8_t(rng());
    if (script.size() == 22) { script[0] = 0; script[1] = 20; }
    else { script[0] = 0x76; script[1] = 0xa9; script[2] = 20; script[23] = 0x88; script[24] = 0xac; }
    return Coin(TxOut{Amount(rng() % (50 * COIN)), Script(script.data(), script.size())}, uint32_t(rng() % 1000),
                (rng() & 1) != 0);
}

Txid TxidOf(uint8_t fill)
{
    std::array<uint8_t, 32> b{};
    b.fill(fill);
    return Txid(uint256(b));
}

const BlockHash BASE = [] {
    std::array<uint8_t, 32> b{};
    b[0] = 0x77;
    return BlockHash(uint256(b));
}();

using Group = std::pair<Txid, std::vector<std::pair<uint32_t, Coin>>>;

/// A snapshot written independently of ibdkit's writer (groups as given, count as given).
std::vector<uint8_t> Craft(const std::vector<Group>& groups, uint64_t count, const MessageStart& magic)
{
    std::vector<uint8_t> out;
    SnapshotMetadata m{magic, BASE, count};
    const auto head = SerializeSnapshotMetadata(m);
    out.assign(head.begin(), head.end());
    VectorWriter w(out, out.size());
    for (const auto& [txid, coins] : groups) {
        w << txid;
        WriteCompactSize(w, coins.size());
        for (const auto& [n, c] : coins) {
            WriteCompactSize(w, n);
            w << c;
        }
    }
    return out;
}

void WriteBytes(const fs::path& p, const std::vector<uint8_t>& b)
{
    std::ofstream f(p, std::ios::binary);
    f.write(reinterpret_cast<const char*>(b.data()), std::streamsize(b.size()));
}

std::vector<uint8_t> ReadBytes(const fs::path& p) { return test::ReadFile(p); }

/// A chainstate with outputs whose VARINT key order differs from numeric order.
void FillChainstate(const fs::path& dir, std::vector<Group>* key_order)
{
    StoreStatus st;
    auto db = OpenCoinsDB(dir, {}, &st);
    ASSERT_TRUE(db) << st.message;
    std::mt19937_64 rng(7);
    CoinsCache cache(*db, 1 << 20);
    const std::vector<uint32_t> ns{0, 1, 127, 128, 255, 256, 16383, 16384, 65535, 70000};
    for (uint8_t t : {uint8_t(0x10), uint8_t(0x20), uint8_t(0xf0)}) {
        for (uint32_t n : ns) cache.AddCoin(OutPoint{TxidOf(t), n}, MakeCoin(rng), false);
    }
    cache.SetBestBlock(BASE);
    ASSERT_TRUE(cache.Flush().ok());
    if (key_order) {
        key_order->clear();
        auto r = db->ForEachCoin([&](const OutPoint& op, const Coin& c) {
            if (key_order->empty() || key_order->back().first != op.hash) key_order->push_back({op.hash, {}});
            key_order->back().second.emplace_back(op.n, c);
            return true;
        });
        ASSERT_TRUE(r.ok());
    }
}

const MessageStart REGTEST{0xfa, 0xbf, 0xb5, 0xda};

TEST(Snapshot, MetadataLayoutIsCores)
{
    SnapshotMetadata m{REGTEST, BASE, 0x0102030405060708ULL};
    const auto b = SerializeSnapshotMetadata(m);
    EXPECT_EQ(ToHex(std::span<const uint8_t>(b).first(11)), "7574786fff0200fabfb5da");
    EXPECT_EQ(b[11], 0x77);
    EXPECT_EQ(ToHex(std::span<const uint8_t>(b).last(8)), "0807060504030201");
}

TEST(Snapshot, WriterFollowsKeyOrderAndRoundTripsByteIdentical)
{
    TempDir d;
    std::vector<Group> expect;
    FillChainstate(d.path / "cs", &expect);
    // Key order within a txid is VARINT byte order: 16383 (fe 7f) comes after 65535 (82 fe 7f).
    std::vector<uint32_t> order;
    for (const auto& [n, c] : expect[0].second) order.push_back(n);
    EXPECT_EQ(order, (std::vector<uint32_t>{0, 1, 127, 128, 255, 256, 65535, 70000, 16383, 16384}));

    const ChainParams& params = GetChainParams(ChainType::REGTEST);
    StoreStatus st;
    CoinsDBOptions ro;
    ro.read_only = true;
    auto db = OpenCoinsDB(d.path / "cs", ro, &st);
    ASSERT_TRUE(db);
    auto w = WriteUtxoSnapshot(*db, params, d.path / "a.snap");
    ASSERT_TRUE(w.ok()) << w.error().message;
    EXPECT_EQ(w->metadata.coins_count, 30u);
    // Byte-identical to an independently serialized file in key order (dumptxoutset's layout).
    EXPECT_EQ(ReadBytes(d.path / "a.snap"), Craft(expect, 30, REGTEST));

    auto stats = ComputeUtxoStats(*db);
    ASSERT_TRUE(stats.ok());
    SnapshotLoadOptions lo;
    lo.expected_hash = stats->hash_serialized;
    lo.batch_coins = 7; // several intermediate flushes
    auto l = LoadUtxoSnapshot(d.path / "a.snap", params, d.path / "cs2", lo);
    ASSERT_TRUE(l.ok()) << l.error().message;
    EXPECT_EQ(l->stats.hash_serialized, stats->hash_serialized);
    EXPECT_EQ(l->stats.best_block, BASE);
    auto db2 = OpenCoinsDB(d.path / "cs2", ro, &st);
    ASSERT_TRUE(db2);
    auto w2 = WriteUtxoSnapshot(*db2, params, d.path / "b.snap");
    ASSERT_TRUE(w2.ok());
    EXPECT_EQ(ReadBytes(d.path / "a.snap"), ReadBytes(d.path / "b.snap"));
}

TEST(Snapshot, EmptySet)
{
    TempDir d;
    {
        StoreStatus st;
        auto db = OpenCoinsDB(d.path / "cs", {}, &st);
        ASSERT_TRUE(db);
        CoinsCache cache(*db, 1 << 20);
        cache.SetBestBlock(BASE);
        ASSERT_TRUE(cache.Flush().ok());
    }
    StoreStatus st;
    CoinsDBOptions ro;
    ro.read_only = true;
    auto db = OpenCoinsDB(d.path / "cs", ro, &st);
    auto w = WriteUtxoSnapshot(*db, GetChainParams(ChainType::REGTEST), d.path / "e.snap");
    ASSERT_TRUE(w.ok()) << w.error().message;
    EXPECT_EQ(ReadBytes(d.path / "e.snap").size(), SNAPSHOT_METADATA_SIZE);
}

struct BadCase {
    const char* name;
    std::vector<uint8_t> bytes;
    Errc code;
    std::string message_part;
};

TEST(Snapshot, LoaderRefusesMalformedFilesWithTypedErrors)
{
    TempDir d;
    std::vector<Group> good;
    FillChainstate(d.path / "cs", &good);
    const auto ok = Craft(good, 30, REGTEST);
    std::vector<BadCase> cases;
    {
        auto b = ok;
        b[0] = 'U';
        cases.push_back({"magic", b, Errc::BadMagic, "Invalid UTXO set snapshot magic bytes"});
    }
    {
        auto b = ok;
        b[5] = 1;
        cases.push_back({"version", b, Errc::InvalidValue, "Version of snapshot 1 does not match"});
    }
    cases.push_back({"network", Craft(good, 30, {0xf9, 0xbe, 0xb4, 0xd9}), Errc::BadMagic,
                     "The network of the snapshot (main) does not match the network of this node (regtest)."});
    cases.push_back({"unknown network", Craft(good, 30, {1, 2, 3, 4}), Errc::BadMagic, "unrecognized network"});
    cases.push_back({"short metadata", std::vector<uint8_t>(ok.begin(), ok.begin() + 20), Errc::EndOfData, "metadata"});
    cases.push_back({"truncated", std::vector<uint8_t>(ok.begin(), ok.end() - 3), Errc::EndOfData,
                     "Bad snapshot format or truncated snapshot after deserializing 29 coins"});
    {
        auto b = ok;
        b.push_back(0);
        cases.push_back({"trailing byte", b, Errc::TrailingData, "Bad snapshot - coins left over after deserializing 30 coins"});
    }
    cases.push_back({"count too small", Craft(good, 29, REGTEST), Errc::SizeTooLarge,
                     "Mismatch in coins count in snapshot metadata and actual snapshot data"});
    cases.push_back({"count too large", Craft(good, 31, REGTEST), Errc::EndOfData, "truncated snapshot after deserializing 30"});
    // A count of 2^63 must not allocate anything: it fails at the end of the data.
    cases.push_back({"huge count", Craft(good, uint64_t(1) << 63, REGTEST), Errc::EndOfData, "truncated"});
    {
        auto g = good;
        g[0].second[3] = g[0].second[2]; // duplicate output index
        cases.push_back({"duplicate coin", Craft(g, 30, REGTEST), Errc::InvalidValue, "is a duplicate"});
    }
    {
        auto g = good;
        std::swap(g[0].second[6], g[0].second[8]); // numeric order instead of key order
        cases.push_back({"numeric order", Craft(g, 30, REGTEST), Errc::InvalidValue, "out of key order"});
    }
    {
        auto g = good;
        std::swap(g[0], g[1]);
        cases.push_back({"unordered txids", Craft(g, 30, REGTEST), Errc::InvalidValue, "unordered"});
    }
    {
        auto g = good;
        auto tail = g[1].second;
        g[1].second.resize(5);
        g.insert(g.begin() + 2, Group{g[1].first, {tail.begin() + 5, tail.end()}});
        cases.push_back({"split group (duplicate txid)", Craft(g, 30, REGTEST), Errc::InvalidValue, "duplicate"});
    }
    {
        auto g = good;
        g[2].second[0].second.out.value = MAX_MONEY + 1;
        cases.push_back({"bad amount", Craft(g, 30, REGTEST), Errc::InvalidValue, "bad tx out value"});
    }
    {
        auto g = good;
        g.push_back({TxidOf(0xfe), {}});
        cases.push_back({"empty group", Craft(g, 30, REGTEST), Errc::TrailingData, "coins left over"});
        auto g2 = good;
        g2.insert(g2.begin() + 1, Group{TxidOf(0x18), {}});
        cases.push_back({"empty group inside", Craft(g2, 30, REGTEST), Errc::InvalidValue, "empty coin group"});
    }
    const ChainParams& params = GetChainParams(ChainType::REGTEST);
    SnapshotLoadOptions lo;
    lo.expected_hash = uint256(); // never reached for these files
    for (const auto& c : cases) {
        SCOPED_TRACE(c.name);
        WriteBytes(d.path / "bad.snap", c.bytes);
        auto r = LoadUtxoSnapshot(d.path / "bad.snap", params, d.path / "out", lo);
        ASSERT_FALSE(r.ok());
        EXPECT_EQ(r.error().code, c.code) << ErrcName(r.error().code) << ": " << r.error().message;
        EXPECT_NE(r.error().message.find(c.message_part), std::string::npos) << r.error().message;
        EXPECT_FALSE(fs::exists(d.path / "out")) << "a failed load leaves no chainstate behind";
    }
}

TEST(Snapshot, LoaderChecksTheHashAndRefusesUnknownBases)
{
    TempDir d;
    std::vector<Group> good;
    FillChainstate(d.path / "cs", &good);
    WriteBytes(d.path / "a.snap", Craft(good, 30, REGTEST));
    const ChainParams& params = GetChainParams(ChainType::REGTEST);
    auto unknown = LoadUtxoSnapshot(d.path / "a.snap", params, d.path / "out", {});
    ASSERT_FALSE(unknown.ok());
    EXPECT_NE(unknown.error().message.find("not recognized"), std::string::npos);
    SnapshotLoadOptions lo;
    lo.expected_hash = *uint256::FromHex("b952555c8ab81fec46f3d4253b7af256d766ceb39fb7752b9d18cdf4a0141327");
    auto wrong = LoadUtxoSnapshot(d.path / "a.snap", params, d.path / "out", lo);
    ASSERT_FALSE(wrong.ok());
    EXPECT_NE(wrong.error().message.find("Bad snapshot content hash: expected "
                                         "b952555c8ab81fec46f3d4253b7af256d766ceb39fb7752b9d18cdf4a0141327, got"),
              std::string::npos)
        << wrong.error().message;
    EXPECT_FALSE(fs::exists(d.path / "out"));
    // A folder that was there, empty, stays (emptied again) after a failed load.
    fs::create_directory(d.path / "empty");
    auto into_empty = LoadUtxoSnapshot(d.path / "a.snap", params, d.path / "empty", lo);
    ASSERT_FALSE(into_empty.ok());
    ASSERT_TRUE(fs::is_directory(d.path / "empty")) << "a failed load removed a folder it did not make";
    EXPECT_TRUE(fs::is_empty(d.path / "empty")) << "a failed load left its files behind";
    // An existing, non-empty directory is never overwritten.
    auto busy = LoadUtxoSnapshot(d.path / "a.snap", params, d.path / "cs", lo);
    ASSERT_FALSE(busy.ok());
    EXPECT_TRUE(fs::exists(d.path / "cs" / "CURRENT"));
}

TEST(Snapshot, RandomCorruptionsFailTypedOrReadInOrder)
{
    TempDir d;
    std::vector<Group> good;
    FillChainstate(d.path / "cs", &good);
    const auto ok = Craft(good, 30, REGTEST);
    const uint64_t seed = test::TestSeed();
    std::cout << "seed " << seed << "\n";
    std::mt19937_64 rng(seed);
    for (int iter = 0; iter < 400; ++iter) {
        auto b = ok;
        const int edits = 1 + int(rng() % 3);
        for (int e = 0; e < edits; ++e) {
            const std::size_t pos = SNAPSHOT_METADATA_SIZE + rng() % (b.size() - SNAPSHOT_METADATA_SIZE);
            switch (rng() % 3) {
            case 0: b[pos] ^= uint8_t(1u << (rng() % 8)); break;
            case 1: b.resize(pos); break;
            default: b.insert(b.begin() + std::ptrdiff_t(pos), uint8_t(rng())); break;
            }
            if (b.size() <= SNAPSHOT_METADATA_SIZE) break;
        }
        WriteBytes(d.path / "f.snap", b);
        auto r = SnapshotReader::Open(d.path / "f.snap", REGTEST);
        ASSERT_TRUE(r.ok());
        OutPoint op, prev;
        Coin c;
        uint64_t n = 0;
        while (true) {
            auto more = (*r)->Next(op, c);
            if (!more) {
                EXPECT_NE(more.error().code, Errc::Ok);
                EXPECT_FALSE(more.error().message.empty());
                break;
            }
            if (!*more) {
                EXPECT_EQ(n, 30u); // a file that reads to the end holds exactly the announced coins
                break;
            }
            if (n > 0) {
                EXPECT_TRUE(prev.hash < op.hash || (prev.hash == op.hash && !(prev == op)));
            }
            prev = op;
            ++n;
        }
    }
}

TEST(Snapshot, CoresPinnedParameters)
{
    const auto au = AssumeutxoForBlockHash(
        ChainType::MAIN, *BlockHash::FromHex("0000000000000000000320283a032748cef8227873ff4872689bf23f1cda83a5"));
    ASSERT_TRUE(au);
    EXPECT_EQ(au->height, 840000);
    EXPECT_EQ(au->hash_serialized.ToHex(), "a2a5521b1b5ab65f67818e5e8eccabb7171a517f9e2382208f77687310768f96");
    EXPECT_FALSE(AssumeutxoForBlockHash(ChainType::REGTEST, au->blockhash));
}

} // namespace
} // namespace ibdkit

// UTXO exports (CSV, JSON lines, SQLite): rows as written, the re-read check that makes a dump
// trustworthy, and that a tampered file is caught by that check (Errc::Corrupt, never a warning).
#include <ibdkit/coins/coins_db.h>
#include <ibdkit/utxo/export.h>

#include "coins/coins_cache.h"

#include "test_util.h"
#include "coins/coins_db_internal.h"

#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>

namespace ibdkit {
namespace {

namespace fs = std::filesystem;

using TempDir = ibdkit::test::TempDir;

Script S(const std::string& hex)
{
    auto v = test::ParseHex(hex);
    return Script(v.data(), v.size());
}

std::unique_ptr<CoinsDB> MakeChainstate(const fs::path& dir, int txs = 300)
{
    {
        StoreStatus st;
        auto db = OpenCoinsDB(dir, {}, &st);
        EXPECT_TRUE(db) << st.message;
        CoinsCache cache(*db, 1 << 20);
        std::mt19937_64 rng(3);
        const std::string scripts[] = {
            "76a91462e907b15cbf27d5425399ebf6f0fb50ebb88f1888ac", "0014751e76e8199196d454941c45d1b3a323f1433bd6",
            "a914e9c3dd0c07aac76179ebc76a6c78d4d67c6c160a87", "51024e73", "5120" + std::string(64, '1'), "51"};
        for (int i = 0; i < txs; ++i) {
            std::array<uint8_t, 32> t{};
            for (auto& b : t) b = uint8_t(rng());
            for (uint32_t n : {0u, 1u, 200u, 300u}) {
                cache.AddCoin(OutPoint{Txid(uint256(t)), n},
                              Coin(TxOut{Amount(rng() % (21 * COIN)), S(scripts[rng() % 6])}, uint32_t(rng() % 500), n == 0),
                              false);
            }
        }
        std::array<uint8_t, 32> tip{};
        tip[0] = 9;
        cache.SetBestBlock(BlockHash(uint256(tip)));
        EXPECT_TRUE(cache.Flush().ok());
    }
    StoreStatus st;
    CoinsDBOptions ro;
    ro.read_only = true;
    return OpenCoinsDB(dir, ro, &st);
}

std::string Slurp(const fs::path& p)
{
    std::ifstream f(p, std::ios::binary);
    std::stringstream ss;
    ss << f.rdbuf();
    return ss.str();
}

void Spit(const fs::path& p, const std::string& s) { std::ofstream(p, std::ios::binary) << s; }

TEST(Export, EveryFormatVerifiesAgainstTheChainstate)
{
    TempDir d;
    auto db = MakeChainstate(d.path / "cs");
    ASSERT_TRUE(db);
    auto stats = ComputeUtxoStats(*db);
    ASSERT_TRUE(stats.ok());
    for (auto f : {ExportFormat::Csv, ExportFormat::Jsonl, ExportFormat::Sqlite}) {
        const fs::path out = d.path / ("dump" + std::to_string(int(f)));
        auto r = ExportUtxoSet(*db, f, out, AddressNetwork::Main);
        ASSERT_TRUE(r.ok()) << r.error().message;
        EXPECT_EQ(r->file_stats.txouts, 1200u);
        EXPECT_EQ(r->file_stats.hash_serialized, stats->hash_serialized);
        EXPECT_EQ(r->file_stats.total_amount, stats->total_amount);
    }
    const std::string csv = Slurp(d.path / "dump0");
    EXPECT_EQ(csv.substr(0, CSV_HEADER.size() + 1), std::string(CSV_HEADER) + "\n");
    EXPECT_NE(csv.find(",pubkeyhash,1A1zP1eP5QGefi2DMPTfTL5SLmv7DivfNa,76a91462e907b15cbf27d5425399ebf6f0fb50ebb88f1888ac\n"),
              std::string::npos);
    EXPECT_NE(csv.find(",anchor,bc1pfeessrawgf,51024e73\n"), std::string::npos);
    EXPECT_NE(csv.find(",nonstandard,,51\n"), std::string::npos); // no address: empty field
    const std::string jsonl = Slurp(d.path / "dump1");
    EXPECT_NE(jsonl.find("\"script_type\":\"nonstandard\",\"address\":null,\"script_pubkey\":\"51\"}"), std::string::npos);
}

// Many batches through the writer's second thread (4,096 coins each), and a writer that fails
// half-way: the export stops with the cause of the failed write, whatever thread saw it.
TEST(Export, ManyBatchesAndAFullDisk)
{
    TempDir d;
    auto db = MakeChainstate(d.path / "cs", 9000); // 36,000 coins
    ASSERT_TRUE(db);
    auto stats = ComputeUtxoStats(*db);
    ASSERT_TRUE(stats.ok());
    ASSERT_EQ(stats->txouts, 36000u);
    for (auto f : {ExportFormat::Csv, ExportFormat::Sqlite}) {
        auto r = ExportUtxoSet(*db, f, d.path / ("many" + std::to_string(int(f))), AddressNetwork::Main);
        ASSERT_TRUE(r.ok()) << r.error().message;
        EXPECT_EQ(r->file_stats.hash_serialized, stats->hash_serialized);
        EXPECT_EQ(r->file_stats.txouts, 36000u);
    }
    if (fs::exists("/dev/full")) {
        auto r = ExportUtxoSet(*db, ExportFormat::Csv, "/dev/full", AddressNetwork::Main);
        ASSERT_FALSE(r.ok());
        EXPECT_NE(r.error().message.find("No space left on device"), std::string::npos) << r.error().message;
    }
}

TEST(Export, TamperedFilesAreCaught)
{
    TempDir d;
    auto db = MakeChainstate(d.path / "cs");
    ASSERT_TRUE(db);
    auto stats = ComputeUtxoStats(*db);
    ASSERT_TRUE(stats.ok());
    ASSERT_TRUE(ExportUtxoSet(*db, ExportFormat::Csv, d.path / "a.csv", AddressNetwork::Main).ok());
    const std::string good = Slurp(d.path / "a.csv");
    auto check = [&](const std::string& bytes, bool parse_error) {
        Spit(d.path / "b.csv", bytes);
        auto r = ComputeExportStats(ExportFormat::Csv, d.path / "b.csv");
        if (parse_error) {
            ASSERT_FALSE(r.ok());
            EXPECT_EQ(r.error().code, Errc::Corrupt);
        } else {
            ASSERT_TRUE(r.ok()) << r.error().message;
            EXPECT_NE(r->hash_serialized, stats->hash_serialized);
        }
    };
    // An amount changed by one satoshi: parses, but the hash differs.
    {
        std::string b = good;
        const auto line2 = b.find('\n') + 1;
        std::size_t comma = line2;
        for (int i = 0; i < 4; ++i) comma = b.find(',', comma) + 1;
        char& digit = b[comma];
        digit = digit == '9' ? '8' : char(digit + 1);
        check(b, false);
    }
    // A dropped row.
    {
        std::string b = good;
        const auto line2 = b.find('\n') + 1;
        b.erase(line2, b.find('\n', line2) + 1 - line2);
        check(b, false);
    }
    check(good.substr(0, good.size() - 5), true);             // truncated mid-row
    check("x" + good, true);                                  // bad header
    {
        std::string b = good;
        const auto pos = b.find(",pubkeyhash,");
        b.replace(pos, 12, ",scripthash,"); // a derived column that lies
        check(b, true);
    }
}

} // namespace
} // namespace ibdkit

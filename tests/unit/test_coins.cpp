// Coins: compression, Coin serialization, the LevelDB store, the cache against a std::map model,
// UTXO statistics, corruption handling and read-only opening.
#include "test_util.h"

#include "coins/coins_map.h"
#include "common/task_pool.h"

#include <ibdkit/coins/coin.h>
#include <ibdkit/coins/coins_db.h>
#include <ibdkit/coins/compressor.h>
#include <ibdkit/crypto/sha256.h>
#include <ibdkit/encoding/endian.h>
#include <ibdkit/utxo/address.h>
#include <ibdkit/utxo/stats.h>

#include "coins/coins_cache.h"
#include "coins/coins_db_internal.h"
#include "common/test_hooks.h"
#include "kv/store.h"
#include "stream/streams.h"

#include <gtest/gtest.h>

#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <climits>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <array>
#include <map>
#include <random>

namespace ibdkit {
namespace {

namespace fs = std::filesystem;
using test::ParseHex;
using test::ToHex;

Script S(const std::string& hex)
{
    auto v = ParseHex(hex);
    return Script(v.data(), v.size());
}

template <typename T>
Result<T> DecodeHex(const std::string& hex)
{
    const auto v = ParseHex(hex);
    return DecodeExact<T>(std::as_bytes(std::span(v)));
}

template <typename T>
std::string SerHex(const T& obj)
{
    return ToHex(SerializeToVector(obj));
}

using TempDir = ibdkit::test::TempDir;

// ---- amount compression ------------------------------------------------------------------------

TEST(CoinsCompress, AmountVectors)
{
    EXPECT_EQ(CompressAmount(0), 0u);
    EXPECT_EQ(CompressAmount(1), 1u);
    EXPECT_EQ(CompressAmount(1'000'000), 7u); // CENT
    EXPECT_EQ(CompressAmount(COIN), 9u);
    EXPECT_EQ(CompressAmount(50 * COIN), 0x32u);
    EXPECT_EQ(CompressAmount(21'000'000 * COIN), 0x1406f40u);
    for (uint64_t x : {0ull, 1ull, 7ull, 9ull, 0x32ull, 0x1406f40ull}) EXPECT_EQ(CompressAmount(DecompressAmount(x)), x);
}

TEST(CoinsCompress, AmountRoundTripsRandomAndExhaustiveSmall)
{
    for (uint64_t i = 0; i <= 100'000; ++i) ASSERT_EQ(DecompressAmount(CompressAmount(i)), i) << i;
    for (uint64_t i = 0; i <= 100'000; ++i) ASSERT_EQ(CompressAmount(DecompressAmount(i)), i) << i;
    std::mt19937_64 rng(test::TestSeed());
    for (int i = 0; i < 200'000; ++i) {
        const uint64_t v = rng() % uint64_t(MAX_MONEY + 1);
        ASSERT_EQ(DecompressAmount(CompressAmount(v)), v);
    }
    for (uint64_t e = 1, i = 0; i < 19; ++i, e *= 10) ASSERT_EQ(DecompressAmount(CompressAmount(e)), e);
}

// ---- script compression ------------------------------------------------------------------------

const std::string G_X = "79be667ef9dcbbac55a06295ce870b07029bfcdb2dce28d959f2815b16f81798";
const std::string G_Y = "483ada7726a3c4655da4fbfc0e1108a8fd17b448a68554199c47d08ffb10d4b8"; // even

Script RoundTripScript(const Script& s)
{
    auto bytes = SerializeToVector(ScriptCompressionRef<const Script>{s});
    Script out;
    SpanReader r(std::as_bytes(std::span(bytes)));
    Unserialize(r, ScriptCompressionRef<Script>{out});
    EXPECT_TRUE(r.empty());
    return out;
}

TEST(CoinsCompress, ScriptSpecialForms)
{
    const std::string h20 = "816115944e077fe7c803cfa57f29b36bf87c1d35";
    EXPECT_EQ(SerHex(ScriptCompressionRef<const Script>{S("76a914" + h20 + "88ac")}), "00" + h20);
    EXPECT_EQ(SerHex(ScriptCompressionRef<const Script>{S("a914" + h20 + "87")}), "01" + h20);
    EXPECT_EQ(SerHex(ScriptCompressionRef<const Script>{S("2102" + G_X + "ac")}), "02" + G_X);
    EXPECT_EQ(SerHex(ScriptCompressionRef<const Script>{S("2103" + G_X + "ac")}), "03" + G_X);
    // Uncompressed valid point: tag 4 | parity(y).
    const Script p2pk_u = S("4104" + G_X + G_Y + "ac");
    EXPECT_EQ(SerHex(ScriptCompressionRef<const Script>{p2pk_u}), "04" + G_X);
    EXPECT_EQ(RoundTripScript(p2pk_u), p2pk_u);
    // -G has the odd y: p - y.
    const std::string neg_y = "b7c52588d95c3b9aa25b0403f1eef75702e84bb7597aabe663b82f6f04ef2777";
    const Script p2pk_u_odd = S("4104" + G_X + neg_y + "ac");
    EXPECT_EQ(SerHex(ScriptCompressionRef<const Script>{p2pk_u_odd}), "05" + G_X);
    EXPECT_EQ(RoundTripScript(p2pk_u_odd), p2pk_u_odd);
    for (const auto& s : {S("76a914" + h20 + "88ac"), S("a914" + h20 + "87"), S("2102" + G_X + "ac"), S("2103" + G_X + "ac")}) {
        EXPECT_EQ(RoundTripScript(s), s);
    }
}

TEST(CoinsCompress, InvalidUncompressedKeyIsStoredRaw)
{
    // (0, 0) is not on the curve: Core does not special-case it (IsFullyValid fails).
    const Script bad = S("4104" + std::string(128, '0') + "ac");
    const std::string ser = SerHex(ScriptCompressionRef<const Script>{bad});
    EXPECT_EQ(ser.substr(0, 2), "49"); // VARINT(67 + 6)
    EXPECT_EQ(ser.size(), 2 + 67 * 2u);
    EXPECT_EQ(RoundTripScript(bad), bad);
    // A hybrid key (06/07) is never compressed either.
    const Script hybrid = S("4106" + G_X + G_Y + "ac");
    EXPECT_EQ(SerHex(ScriptCompressionRef<const Script>{hybrid}).substr(0, 2), "49");
}

TEST(CoinsCompress, DecompressOffCurveXIsCorrupt)
{
    // Find an x with no point (x^3 + 7 not a square): DecompressScript must fail (Core returns
    // false); reading such a record is Errc::Corrupt.
    int found = -1;
    for (int x = 0; x < 256 && found < 0; ++x) {
        std::array<uint8_t, 32> px{};
        px[31] = uint8_t(x);
        Script out;
        if (!DecompressScript(out, 4, px)) found = x;
    }
    ASSERT_GE(found, 0);
    std::vector<uint8_t> rec = ParseHex("000904"); // height 0, amount 1 BTC, type 4
    std::vector<uint8_t> x(32, 0);
    x[31] = uint8_t(found);
    rec.insert(rec.end(), x.begin(), x.end());
    auto r = DecodeExact<Coin>(std::as_bytes(std::span(rec)));
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.error().code, Errc::Corrupt);
}

TEST(CoinsCompress, OverlongRawScriptBecomesOpReturn)
{
    // VARINT(10001 + 6) followed by 10001 bytes: decodes to a single OP_RETURN, bytes skipped.
    DataStream<> ds;
    WriteVarInt(ds, uint32_t(MAX_SCRIPT_SIZE + 1 + SPECIAL_SCRIPTS));
    std::vector<std::byte> body(MAX_SCRIPT_SIZE + 1, std::byte{0x51});
    ds.write(body);
    Script out;
    Unserialize(ds, ScriptCompressionRef<Script>{out});
    EXPECT_TRUE(ds.empty());
    ASSERT_EQ(out.size(), 1u);
    EXPECT_EQ(out[0], OP_RETURN);
}

TEST(CoinsCompress, RandomScriptsRoundTrip)
{
    std::mt19937_64 rng(test::TestSeed());
    for (int i = 0; i < 20'000; ++i) {
        std::vector<uint8_t> b(rng() % 120);
        for (auto& c : b) c = uint8_t(rng());
        if (i % 4 == 0 && b.size() >= 25) { b.resize(25); b[0] = 0x76; b[1] = 0xa9; b[2] = 20; b[23] = 0x88; b[24] = 0xac; }
        const Script s(b.data(), b.size());
        ASSERT_EQ(RoundTripScript(s), s);
    }
}

// ---- Coin serialization (Core's coins_tests ccoins_serialization vectors) --------------------------

TEST(CoinsCoin, CoreVectors)
{
    auto c1 = DecodeHex<Coin>("97f23c835800816115944e077fe7c803cfa57f29b36bf87c1d35");
    ASSERT_TRUE(c1.ok());
    EXPECT_FALSE(c1->coinbase);
    EXPECT_EQ(c1->height, 203998u);
    EXPECT_EQ(c1->out.value, Amount{60000000000});
    EXPECT_EQ(ToHex(c1->out.script_pubkey.span()), "76a914816115944e077fe7c803cfa57f29b36bf87c1d3588ac");
    EXPECT_EQ(SerHex(*c1), "97f23c835800816115944e077fe7c803cfa57f29b36bf87c1d35");

    auto c2 = DecodeHex<Coin>("8ddf77bbd123008c988f1a4a4de2161e0f50aac7f17e7f9555caa4");
    ASSERT_TRUE(c2.ok());
    EXPECT_TRUE(c2->coinbase);
    EXPECT_EQ(c2->height, 120891u);
    EXPECT_EQ(c2->out.value, 110397);
    EXPECT_EQ(ToHex(c2->out.script_pubkey.span()), "76a9148c988f1a4a4de2161e0f50aac7f17e7f9555caa488ac");

    auto c3 = DecodeHex<Coin>("000006");
    ASSERT_TRUE(c3.ok());
    EXPECT_EQ(c3->height, 0u);
    EXPECT_EQ(c3->out.value, 0);
    EXPECT_EQ(c3->out.script_pubkey.size(), 0u);

    auto c4 = DecodeHex<Coin>("000007");
    ASSERT_FALSE(c4.ok());
    EXPECT_EQ(c4.error().code, Errc::EndOfData);

    auto c5 = DecodeHex<Coin>("00008a95c0bb00");
    ASSERT_FALSE(c5.ok());
    EXPECT_EQ(c5.error().code, Errc::EndOfData);

    auto trailing = DecodeHex<Coin>("00000600");
    ASSERT_FALSE(trailing.ok());
    EXPECT_EQ(trailing.error().code, Errc::TrailingData);
}

Coin RandomCoin(std::mt19937_64& rng)
{
    std::vector<uint8_t> script(rng() % 3 == 0 ? 25 : rng() % 60);
    for (auto& b : script) b = uint8_t(rng());
    if (script.size() == 25) { script[0] = 0x76; script[1] = 0xa9; script[2] = 20; script[23] = 0x88; script[24] = 0xac; }
    if (!script.empty() && script[0] == OP_RETURN) script[0] = 0x51;
    return Coin(TxOut{Amount(rng() % uint64_t(MAX_MONEY)), Script(script.data(), script.size())},
                uint32_t(rng() % 900'000), (rng() & 1) != 0);
}

TEST(CoinsCoin, RandomRoundTrip)
{
    std::mt19937_64 rng(test::TestSeed());
    for (int i = 0; i < 20'000; ++i) {
        const Coin c = RandomCoin(rng);
        const auto bytes = SerializeToVector(c);
        auto back = DecodeExact<Coin>(std::as_bytes(std::span(bytes)));
        ASSERT_TRUE(back.ok());
        ASSERT_EQ(*back, c);
        // Every strict prefix is rejected with a typed error, never a crash.
        if (i < 200) {
            for (std::size_t n = 0; n < bytes.size(); ++n) {
                auto p = DecodeExact<Coin>(std::as_bytes(std::span(bytes.data(), n)));
                ASSERT_FALSE(p.ok());
            }
        }
    }
}

// ---- store -------------------------------------------------------------------------------------

/// An outpoint's key in the chainstate (LevelDB orders keys by these bytes).
std::vector<uint8_t> CoinKeyBytes(const OutPoint& op)
{
    std::vector<uint8_t> out;
    VectorWriter<std::vector<uint8_t>> w(out, 0);
    Serialize(w, CoinKey{op});
    return out;
}

OutPoint RandomOutPoint(std::mt19937_64& rng, uint32_t pool = 0)
{
    OutPoint op;
    std::array<uint8_t, 32> b;
    if (pool) {
        const uint64_t k = rng() % pool;
        std::mt19937_64 r2(k * 7919 + 1);
        for (auto& c : b) c = uint8_t(r2());
        op.n = uint32_t(r2() % 3 == 0 ? r2() % 70000 : r2() % 4);
    } else {
        for (auto& c : b) c = uint8_t(rng());
        op.n = uint32_t(rng() % 4);
    }
    op.hash = Txid(uint256(b));
    return op;
}

BlockHash TipOf(uint64_t g)
{
    std::array<uint8_t, 32> b{};
    for (int i = 0; i < 8; ++i) b[i] = uint8_t(g >> (8 * i));
    b[31] = 0xb1;
    return BlockHash(uint256(b));
}

TEST(CoinsStore, ObfuscationKeyFormatAndXor)
{
    TempDir d;
    ObfuscationKey key;
    {
        StoreStatus st;
        auto db = OpenCoinsDB(d.path, {}, &st);
        ASSERT_TRUE(db) << st.message;
        key = db->store().Obfuscation();
        EXPECT_FALSE(key.IsNull());
        auto raw = db->store().ReadRaw(std::as_bytes(std::span(OBFUSCATE_KEY_KEY)));
        ASSERT_TRUE(raw);
        ASSERT_EQ(raw->size(), 9u);
        EXPECT_EQ(uint8_t((*raw)[0]), 8);
        EXPECT_EQ(std::memcmp(raw->data() + 1, key.bytes.data(), 8), 0);

        CoinsMap m;
        OutPoint op;
        op.hash = Txid(uint256(std::span<const uint8_t, 32>(ParseHex(std::string(64, 'a')).data(), 32)));
        op.n = 128;
        m.try_emplace(op, Coin(TxOut{50 * COIN, S("76a914" + std::string(40, '1') + "88ac")}, 7, true), CoinsCacheEntry::DIRTY);
        ASSERT_TRUE(BatchWrite(*db, m, TipOf(1), true).ok());
        // Raw record: key 'C' | txid | VARINT(128) = 80 00; value XORed with the key.
        const auto raw_key = ParseHex("43" + std::string(64, 'a') + "8000");
        auto rv = db->store().ReadRaw(std::as_bytes(std::span(raw_key)));
        ASSERT_TRUE(rv);
        std::vector<uint8_t> v(rv->begin(), rv->end());
        XorBytes(std::as_writable_bytes(std::span(v)), key);
        EXPECT_EQ(ToHex(v), "0f" "32" "00" + std::string(40, '1')); // VARINT(7*2+1), 50 BTC = 0x32, P2PKH
    }
    // Reopen: same key is read back, not regenerated.
    StoreStatus st;
    auto db = OpenCoinsDB(d.path, {}, &st);
    ASSERT_TRUE(db);
    EXPECT_EQ(db->store().Obfuscation(), key);
    EXPECT_EQ(db->GetBestBlock()->ToHex(), TipOf(1).ToHex());
}

TEST(CoinsStore, UnobfuscatedDatabase)
{
    TempDir d;
    CoinsDBOptions o;
    o.obfuscate = false;
    StoreStatus st;
    auto db = OpenCoinsDB(d.path, o, &st);
    ASSERT_TRUE(db);
    EXPECT_TRUE(db->store().Obfuscation().IsNull());
    EXPECT_FALSE(db->store().Exists(std::as_bytes(std::span(OBFUSCATE_KEY_KEY))));
}

TEST(CoinsStore, OptionsWriteUncompressedTablesWithTheirBloomFilters)
{
    // Core's LevelDB has no Snappy: every table block must be stored with compression type 0.
    // Each table has a filter block under Core's policy name whose filters hold BLOOM_BITS_PER_KEY
    // bits a key and record their probe count (which is how Core reads them).
    TempDir d;
    {
        StoreStatus st;
        auto db = OpenCoinsDB(d.path, {}, &st);
        ASSERT_TRUE(db);
        CoinsMap m;
        std::mt19937_64 rng(1);
        for (int i = 0; i < 2000; ++i) {
            m.try_emplace(RandomOutPoint(rng), Coin(TxOut{1000, Script(std::vector<uint8_t>(40, 0x51))}, 1, false), // compressible
                          CoinsCacheEntry::DIRTY);
        }
        ASSERT_TRUE(BatchWrite(*db, m, TipOf(1), true).ok());
        db->store().CompactAll();
    }
    int tables = 0;
    uint64_t filter_bits = 0;
    for (auto& f : fs::directory_iterator(d.path)) {
        if (f.path().extension() != ".ldb") continue;
        ++tables;
        auto bytes = test::ReadFile(f.path());
        // Footer: last 48 bytes; metaindex and index handles; the data block before the index
        // block ends with a 5-byte trailer whose first byte is the compression type. Checking the
        // index block trailer (just before the footer's referenced offset) is enough for the
        // option: find it from the footer's index handle.
        ASSERT_GE(bytes.size(), 48u);
        const uint8_t* footer = bytes.data() + bytes.size() - 48;
        auto varint = [](const uint8_t*& p) {
            uint64_t v = 0;
            for (int shift = 0;; shift += 7) {
                v |= uint64_t(*p & 0x7f) << shift;
                if (!(*p++ & 0x80)) break;
            }
            return v;
        };
        const uint8_t* p = footer;
        const uint64_t meta_off = varint(p);
        const uint64_t meta_size = varint(p);
        const uint64_t idx_off = varint(p);
        const uint64_t idx_size = varint(p);
        ASSERT_LT(idx_off + idx_size, bytes.size());
        EXPECT_EQ(bytes[idx_off + idx_size], 0) << "index block compressed in " << f.path();
        // Data blocks: a 40-byte run of 0x51 would shrink under Snappy; the table must hold at
        // least 2000 * 40 raw bytes.
        EXPECT_GT(bytes.size(), 2000u * 40u);

        // The metaindex block's one entry (no shared prefix): "filter.<policy name>" -> handle.
        ASSERT_LT(meta_off + meta_size, bytes.size());
        const uint8_t* m = bytes.data() + meta_off;
        ASSERT_EQ(varint(m), 0u);
        const uint64_t name_len = varint(m);
        varint(m); // value length
        EXPECT_EQ(std::string(reinterpret_cast<const char*>(m), name_len), "filter.leveldb.BuiltinBloomFilter2");
        m += name_len;
        const uint64_t filter_off = varint(m);
        const uint64_t filter_size = varint(m);
        ASSERT_LT(filter_off + filter_size, bytes.size());
        // Filter block: the filters, their uint32 offsets, the offset of those, one byte of base.
        const uint8_t* fb = bytes.data() + filter_off;
        const uint32_t offsets_at = ReadLE32(fb + filter_size - 5);
        const std::size_t filters = (filter_size - 5 - offsets_at) / 4;
        std::size_t data_blocks = 0;
        for (std::size_t i = 0; i < filters; ++i) {
            const uint32_t begin = ReadLE32(fb + offsets_at + 4 * i);
            const uint32_t end = i + 1 < filters ? ReadLE32(fb + offsets_at + 4 * (i + 1)) : offsets_at;
            if (begin == end) continue; // no block started in this range
            ++data_blocks;              // blocks are over 2 KiB: one starts in each non-empty range
            EXPECT_EQ(fb[end - 1], 3) << "probes: bits a key * ln 2, rounded down";
            filter_bits += 8 * (end - 1 - begin);
        }
        // Data blocks fill the file up to the filter block; each closes once it holds
        // TABLE_BLOCK_BYTES (the last may hold less), and one more entry cannot add 256 bytes.
        EXPECT_LE((data_blocks - 1) * TABLE_BLOCK_BYTES, filter_off) << f.path();
        EXPECT_GE(data_blocks * (TABLE_BLOCK_BYTES + 256), filter_off) << f.path();
    }
    EXPECT_GE(tables, 1);
    // 2000 coins and a few records more; a filter has at least 64 bits.
    EXPECT_GE(filter_bits, 2000u * BLOOM_BITS_PER_KEY);
    EXPECT_LE(filter_bits, 2100u * BLOOM_BITS_PER_KEY + 64u * 8);
}

TEST(CoinsStore, LockedDirectoryIsReported)
{
    TempDir d;
    StoreStatus st;
    auto db = OpenCoinsDB(d.path, {}, &st);
    ASSERT_TRUE(db);
    // Checked from another process first (fcntl locks are per process; and LevelDB's own
    // in-process lock attempt below closes an fd on LOCK, which drops the POSIX lock — a LevelDB
    // quirk, so the order matters here).
    pid_t pid = fork();
    if (pid == 0) _exit(IsDirectoryLocked(d.path) ? 0 : 1);
    int status = 0;
    waitpid(pid, &status, 0);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    // In-process LevelDB also refuses a second open of the same directory.
    StoreStatus st2;
    auto db2 = OpenCoinsDB(d.path, {}, &st2);
    EXPECT_FALSE(db2);
    EXPECT_EQ(st2.code, StoreStatus::Code::Locked) << st2.message;
}

// ---- cache versus a std::map model -----------------------------------------------------------------

using Model = std::map<OutPoint, Coin>;

Model ReadAll(const CoinsDB& db)
{
    Model m;
    auto r = db.ForEachCoin([&](const OutPoint& op, const Coin& c) {
        m.emplace(op, c);
        return true;
    });
    EXPECT_TRUE(r.ok()) << (r.ok() ? "" : r.error().message);
    // The same walk pulled (NewCursor) gives the same coins, then nothing ever after.
    Model pulled;
    auto cursor = db.NewCursor();
    OutPoint op;
    Coin c;
    while (cursor->Next(op, c)) EXPECT_TRUE(pulled.emplace(op, c).second);
    EXPECT_FALSE(cursor->Failure()) << cursor->Failure()->message;
    EXPECT_FALSE(cursor->Next(op, c));
    EXPECT_EQ(pulled, m);
    return m;
}

TEST(CoinsCache, RandomOpsMatchModelAcrossFlushAndReopen)
{
    const uint64_t seed = test::TestSeed();
    SCOPED_TRACE("IBDKIT_TEST_SEED=" + std::to_string(seed));
    std::printf("seed %llu\n", (unsigned long long)seed);
    std::mt19937_64 rng(seed);
    TempDir d;
    CoinsDBOptions o;
    o.batch_write_bytes = 4096; // many batches per flush
    o.policy = ALL_POLICIES[seed % ALL_POLICIES.size()];
    StoreStatus st;
    auto db = OpenCoinsDB(d.path, o, &st);
    ASSERT_TRUE(db) << st.message;
    auto cache = std::make_unique<CoinsCache>(*db, 1 << 20);
    Model model;
    uint64_t tip = 0;
    const uint32_t pool = 3000;

    for (int step = 0; step < 30'000; ++step) {
        const int op = int(rng() % 100);
        const OutPoint outpoint = RandomOutPoint(rng, pool);
        if (op < 40) {
            Coin c = RandomCoin(rng);
            if (rng() % 20 == 0) c.out.script_pubkey = S("6a04deadbeef"); // unspendable: not added
            const bool exists = model.count(outpoint) != 0;
            const bool unspendable = IsUnspendable(c.out.script_pubkey);
            if (!exists && !unspendable) model[outpoint] = c;
            else if (exists && !unspendable) model[outpoint] = c;
            cache->AddCoin(outpoint, Coin(c), /*possible_overwrite=*/exists || rng() % 2 == 0);
        } else if (op < 70) {
            Coin moved;
            const bool spent = cache->SpendCoin(outpoint, &moved);
            auto it = model.find(outpoint);
            ASSERT_EQ(spent, it != model.end()) << "step " << step;
            if (spent) {
                ASSERT_EQ(moved, it->second);
                model.erase(it);
            }
        } else if (op < 88) {
            const Coin& c = cache->AccessCoin(outpoint);
            auto it = model.find(outpoint);
            ASSERT_EQ(!c.IsSpent(), it != model.end()) << "step " << step;
            if (it != model.end()) {
                ASSERT_EQ(c, it->second);
            }
        } else if (op < 93) {
            ASSERT_EQ(cache->HaveCoin(outpoint), model.count(outpoint) != 0);
        } else if (op < 95) {
            cache->Uncache(outpoint);
        } else if (op < 97) {
            cache->SetBestBlock(TipOf(++tip));
            ASSERT_TRUE(cache->Flush().ok());
            ASSERT_EQ(cache->GetCacheSize(), 0u);
            ASSERT_EQ(ReadAll(*db), model) << "after flush, step " << step;
        } else if (op < 98) {
            cache->SetBestBlock(TipOf(++tip));
            if (rng() % 2) {
                ASSERT_TRUE(cache->Sync().ok());
            } else {
                const std::size_t keep = rng() % cache->Budget();
                ASSERT_TRUE(cache->FlushWarm(keep).ok());
                ASSERT_TRUE(cache->DynamicMemoryUsage() <= keep || cache->GetCacheSize() == 0) << "step " << step;
            }
            ASSERT_EQ(cache->DirtyCount(), 0u);
            ASSERT_EQ(ReadAll(*db), model) << "after sync, step " << step;
        } else if (op < 99 && tip > 0) {
            // Drop unflushed changes? No: flush, then close and reopen the database.
            cache->SetBestBlock(TipOf(++tip));
            ASSERT_TRUE(cache->Flush().ok());
            cache.reset();
            db.reset();
            db = OpenCoinsDB(d.path, o, &st);
            ASSERT_TRUE(db) << st.message;
            cache = std::make_unique<CoinsCache>(*db, 1 << 20);
            ASSERT_EQ(cache->GetBestBlock(), TipOf(tip));
            ASSERT_EQ(ReadAll(*db), model) << "after reopen, step " << step;
        }
        if (cache->NeedsFlush()) {
            cache->SetBestBlock(TipOf(++tip));
            ASSERT_TRUE(cache->Flush().ok());
        }
    }
    cache->SetBestBlock(TipOf(++tip));
    ASSERT_TRUE(cache->Flush().ok());
    EXPECT_EQ(ReadAll(*db), model);
    auto h = db->GetHeadBlocks();
    ASSERT_TRUE(h.ok());
    EXPECT_TRUE(h->empty());
}

// The cache's shards are ranges of the chainstate's key order, and calls on outpoints of different
// shards may run on different threads: four threads, two shards each, build the same cache (and,
// flushed, the same database) as one thread.
TEST(CoinsCache, ShardsAreKeyRangesAndMayRunOnThreadsOfTheirOwn)
{
    std::mt19937_64 rng(21);
    std::vector<std::pair<OutPoint, Coin>> adds;
    for (int i = 0; i < 20'000; ++i) adds.emplace_back(RandomOutPoint(rng), RandomCoin(rng));
    for (int i = 0; i + 1 < 20'000; i += 2) {
        const auto& [a, ca] = adds[std::size_t(i)];
        const auto& [b, cb] = adds[std::size_t(i) + 1];
        const bool key_less = CoinKeyBytes(a) < CoinKeyBytes(b);
        if (CoinsCache::ShardOf(a) < CoinsCache::ShardOf(b)) {
            EXPECT_TRUE(key_less);
        }
        if (CoinsCache::ShardOf(b) < CoinsCache::ShardOf(a)) {
            EXPECT_FALSE(key_less);
        }
    }
    auto build = [&](CoinsCache& cache, unsigned threads) {
        auto work = [&](std::size_t lo, std::size_t hi) {
            for (std::size_t i = 0; i < adds.size(); ++i) {
                const auto s = CoinsCache::ShardOf(adds[i].first);
                if (s < lo || s >= hi) continue;
                Coin c = adds[i].second;
                cache.AddCoin(adds[i].first, std::move(c), false);
                if (i % 3 == 0) {
                    EXPECT_TRUE(cache.SpendCoin(adds[i].first));
                }
            }
        };
        std::vector<std::thread> pool;
        const std::size_t per = CoinsCache::SHARDS / threads;
        for (unsigned t = 0; t < threads; ++t) pool.emplace_back(work, t * per, (t + 1) * per);
        for (auto& th : pool) th.join();
    };
    TempDir d;
    std::vector<std::vector<std::pair<OutPoint, Coin>>> dumps;
    std::vector<std::size_t> usage;
    for (unsigned threads : {1u, 4u}) {
        StoreStatus st;
        auto db = OpenCoinsDB(d.path / std::to_string(threads), {}, &st);
        ASSERT_TRUE(db);
        CoinsCache cache(*db, 1 << 30);
        build(cache, threads);
        EXPECT_EQ(cache.GetCacheSize(), 20'000u - 6'667u); // spent FRESH coins are dropped
        usage.push_back(cache.DynamicMemoryUsage());
        cache.SetBestBlock(TipOf(1));
        ASSERT_TRUE(cache.Flush().ok());
        auto& all = dumps.emplace_back();
        ASSERT_TRUE(db->ForEachCoin([&](const OutPoint& op, const Coin& c) {
            all.emplace_back(op, c);
            return true;
        }).ok());
    }
    EXPECT_EQ(usage[0], usage[1]);
    EXPECT_EQ(dumps[0].size(), 20'000u - 6'667u);
    EXPECT_TRUE(dumps[0] == dumps[1]);
}

TEST(CoinsCache, FreshSpendNeverReachesDatabase)
{
    TempDir d;
    StoreStatus st;
    auto db = OpenCoinsDB(d.path, {}, &st);
    ASSERT_TRUE(db);
    CoinsCache cache(*db, 1 << 20);
    std::mt19937_64 rng(5);
    const OutPoint a = RandomOutPoint(rng), b = RandomOutPoint(rng);
    cache.AddCoin(a, RandomCoin(rng), false);
    EXPECT_TRUE(cache.SpendCoin(a));
    EXPECT_EQ(cache.GetCacheSize(), 0u); // FRESH + spent = dropped
    cache.AddCoin(b, RandomCoin(rng), false);
    cache.SetBestBlock(TipOf(1));
    ASSERT_TRUE(cache.Flush().ok());
    EXPECT_TRUE(*db->HaveCoin(b));
    EXPECT_FALSE(*db->HaveCoin(a));
    // Spending a coin that lives in the database leaves a DIRTY spent entry, erased on flush.
    EXPECT_TRUE(cache.SpendCoin(b));
    EXPECT_EQ(cache.GetCacheSize(), 1u);
    EXPECT_EQ(cache.DirtyCount(), 1u);
    const OutPoint c = RandomOutPoint(rng);
    cache.AddCoin(c, RandomCoin(rng), false);
    EXPECT_THROW(cache.AddCoin(c, RandomCoin(rng), false), std::logic_error);
    EXPECT_NO_THROW(cache.AddCoin(c, RandomCoin(rng), true));
    cache.SetBestBlock(TipOf(2));
    ASSERT_TRUE(cache.Flush().ok());
    EXPECT_FALSE(*db->HaveCoin(b));
}

TEST(CoinsCache, MemoryAccountingGrowsAndFlushResets)
{
    TempDir d;
    StoreStatus st;
    auto db = OpenCoinsDB(d.path, {}, &st);
    ASSERT_TRUE(db);
    CoinsCache cache(*db, 4 << 20);
    std::mt19937_64 rng(9);
    const std::size_t empty = cache.DynamicMemoryUsage();
    int added = 0;
    while (!cache.NeedsFlush()) {
        Coin c = RandomCoin(rng);
        c.out.script_pubkey = Script(std::vector<uint8_t>(100, 0x51)); // heap script
        cache.AddCoin(RandomOutPoint(rng), std::move(c), false);
        ++added;
    }
    EXPECT_GT(cache.DynamicMemoryUsage(), empty + std::size_t(added) * (100 + 64));
    EXPECT_LT(added, 40'000);
    cache.SetBestBlock(TipOf(1));
    ASSERT_TRUE(cache.Flush().ok());
    EXPECT_FALSE(cache.NeedsFlush());
    EXPECT_LE(cache.DynamicMemoryUsage(), empty + 64);
}

// The per-coin footprint (docs/chainstate.md, *What a coin costs*): a coin costs its node (72 bytes
// when its script is P2PKH, P2SH or P2WPKH, 88 for P2WSH or P2TR), its share of the slot table and
// its share of the flush's index (two shards' worth). Core counts ~140 bytes a coin; this is the
// figure issue 12 sets against it.
TEST(CoinsCache, ACoinCostsItsNodeItsSlotAndItsShareOfTheFlushIndex)
{
    static_assert(CoinsMap::SMALL_NODE_BYTES == 72 && CoinsMap::LARGE_NODE_BYTES == 88);
    struct Case {
        const char* what;
        std::size_t node;
        std::vector<uint8_t> script;
    };
    std::vector<uint8_t> p2wpkh(22, 0x11), p2tr(34, 0x22);
    p2wpkh[0] = 0x00, p2wpkh[1] = 20;
    p2tr[0] = 0x51, p2tr[1] = 32;
    for (const Case& k : {Case{"P2WPKH", 72, p2wpkh}, Case{"P2TR", 88, p2tr}}) {
        TempDir d;
        StoreStatus st;
        auto db = OpenCoinsDB(d.path, {}, &st);
        ASSERT_TRUE(db);
        CoinsCache cache(*db, std::size_t(1) << 30);
        std::mt19937_64 rng(12);
        const std::size_t empty = cache.DynamicMemoryUsage();
        constexpr int COINS = 200'000;
        for (int i = 0; i < COINS; ++i) {
            Coin c = RandomCoin(rng);
            c.out.script_pubkey = Script(k.script.data(), k.script.size());
            cache.AddCoin(RandomOutPoint(rng), std::move(c), false);
        }
        const double per_coin = double(cache.DynamicMemoryUsage() - empty) / COINS;
        // Node, the flush's two shard indexes (of 8 shards), at least one slot.
        EXPECT_GE(per_coin, double(k.node) + FLUSH_INDEXES * 16.0 / CoinsCache::SHARDS + 8) << k.what;
        // 25,000 coins a shard fill 32,768 slots to 76%: 10.5 bytes a coin (20 just after a doubling).
        EXPECT_LE(per_coin, double(k.node) + 16) << k.what;
    }
}

// A cache filled to its budget with the smallest coins ends with its slot tables near their load
// limit (the budget's size hint), not just past a doubling: ≤ 88 bytes a coin, 1.59× Core's ~140.
TEST(CoinsCache, AFullCacheHoldsACoinIn88Bytes)
{
    TempDir d;
    StoreStatus st;
    auto db = OpenCoinsDB(d.path, {}, &st);
    ASSERT_TRUE(db);
    for (const std::size_t budget : {std::size_t(24) << 20, std::size_t(40) << 20}) {
        CoinsCache cache(*db, budget);
        std::mt19937_64 rng(budget);
        std::vector<uint8_t> p2wpkh(22, 0x11);
        p2wpkh[0] = 0x00, p2wpkh[1] = 20;
        while (!cache.NeedsFlush()) {
            Coin c = RandomCoin(rng);
            c.out.script_pubkey = Script(p2wpkh.data(), p2wpkh.size());
            cache.AddCoin(RandomOutPoint(rng), std::move(c), false);
        }
        const double per_coin = double(cache.DynamicMemoryUsage()) / double(cache.GetCacheSize());
        EXPECT_LE(per_coin, 88.0) << budget;
        EXPECT_GE(per_coin, 72 + 8 + 4.0) << budget;
    }
}

// With a runner (the engine's shard helpers) the eviction's passes run one task per shard; the
// coins kept must be the same as on one thread.
std::vector<OutPoint> FlushWarmAndListKept(const TaskRunner* runner)
{
    std::vector<OutPoint> kept;
    TempDir d;
    StoreStatus st;
    auto db = OpenCoinsDB(d.path, {}, &st);
    EXPECT_TRUE(db);
    if (!db) return kept;
    CoinsCache cache(*db, 64 << 20);
    std::mt19937_64 rng(11);
    std::vector<std::pair<OutPoint, Coin>> added;
    for (uint32_t h = 1; h <= 2000; ++h) {
        for (int i = 0; i < 10; ++i) {
            Coin c = RandomCoin(rng);
            c.height = h;
            if (i == 0) c.out.script_pubkey = Script(std::vector<uint8_t>(80, 0x51)); // heap script
            const OutPoint op = RandomOutPoint(rng);
            cache.AddCoin(op, Coin(c), false);
            added.emplace_back(op, std::move(c));
        }
    }
    // Spend a few: they must reach the database as erasures and leave the cache.
    for (std::size_t i = 0; i < added.size(); i += 7) EXPECT_TRUE(cache.SpendCoin(added[i].first));
    const std::size_t full = cache.DynamicMemoryUsage();
    const std::size_t keep = full / 3;
    cache.SetBestBlock(TipOf(1));
    EXPECT_TRUE(cache.FlushWarm(keep, runner).ok());
    EXPECT_LE(cache.DynamicMemoryUsage(), keep);
    EXPECT_GT(cache.DynamicMemoryUsage(), keep / 2); // it kept what fitted, not nothing
    EXPECT_EQ(cache.DirtyCount(), 0u);
    EXPECT_EQ(db->GetBestBlock().value(), TipOf(1));
    // The database holds every unspent coin; the cache holds only the youngest ones.
    uint32_t oldest_kept = UINT32_MAX, youngest_dropped = 0;
    for (std::size_t i = 0; i < added.size(); ++i) {
        const auto& [op, coin] = added[i];
        const bool spent = i % 7 == 0;
        EXPECT_EQ(*db->HaveCoin(op), !spent) << i;
        if (spent) {
            EXPECT_FALSE(cache.HasEntry(op));
        } else if (cache.HasEntry(op)) {
            oldest_kept = std::min(oldest_kept, coin.height);
            kept.push_back(op);
        } else {
            youngest_dropped = std::max(youngest_dropped, coin.height);
        }
    }
    EXPECT_LT(youngest_dropped, oldest_kept);
    EXPECT_GT(youngest_dropped, 0u);
    // Kept coins read back equal; dropped ones come back from the database.
    for (std::size_t i = 1; i < added.size(); i += 97) {
        if (i % 7 == 0) continue;
        EXPECT_EQ(cache.AccessCoin(added[i].first), added[i].second) << i;
    }
    return kept;
}

TEST(CoinsCache, FlushWarmKeepsTheYoungestCoinsWithinTheLimit)
{
    const std::vector<OutPoint> one_thread = FlushWarmAndListKept(nullptr);
    TaskPool pool(2);
    const TaskRunner runner = [&pool](std::size_t n, const TaskPool::Task& task) { pool.Run(n, task); };
    const std::vector<OutPoint> on_tasks = FlushWarmAndListKept(&runner);
    EXPECT_FALSE(one_thread.empty());
    EXPECT_EQ(one_thread, on_tasks);
}

// ---- interrupted flush: H marker and replay range ---------------------------------------------------

TEST(CoinsDB, InterruptedFlushReportsReplayRange)
{
    TempDir d;
    CoinsDBOptions o;
    o.batch_write_bytes = 256;
    std::mt19937_64 rng(3);
    {
        StoreStatus st;
        auto db = OpenCoinsDB(d.path, o, &st);
        ASSERT_TRUE(db);
        CoinsCache cache(*db, 1 << 20);
        for (int i = 0; i < 50; ++i) cache.AddCoin(RandomOutPoint(rng), RandomCoin(rng), false);
        cache.SetBestBlock(TipOf(1));
        ASSERT_TRUE(cache.Flush().ok());
    }
    {
        CoinsDBOptions o2 = o;
        int batches = 0;
        o2.test_hooks = TestHooks::AfterPartialBatch([&] {
            if (++batches == 2) throw std::runtime_error("simulated crash");
        });
        StoreStatus st;
        auto db = OpenCoinsDB(d.path, o2, &st);
        ASSERT_TRUE(db);
        CoinsCache cache(*db, 1 << 20);
        for (int i = 0; i < 50; ++i) cache.AddCoin(RandomOutPoint(rng), RandomCoin(rng), false);
        cache.SetBestBlock(TipOf(2));
        EXPECT_THROW((void)cache.Flush(), std::runtime_error);
    }
    StoreStatus st;
    auto db = OpenCoinsDB(d.path, o, &st);
    ASSERT_TRUE(db);
    EXPECT_TRUE(db->GetBestBlock()->IsNull());
    auto r = db->NeedsReplay();
    ASSERT_TRUE(r.ok());
    ASSERT_TRUE(r->has_value());
    EXPECT_EQ((*r)->new_tip, TipOf(2));
    EXPECT_EQ((*r)->old_tip, TipOf(1));
    // Writing toward another tip is refused (Core asserts); toward the new tip it completes.
    CoinsMap empty;
    EXPECT_FALSE(BatchWrite(*db, empty, TipOf(3), true).ok());
    EXPECT_TRUE(BatchWrite(*db, empty, TipOf(2), true).ok());
    EXPECT_FALSE(db->NeedsReplay()->has_value());
    EXPECT_EQ(*db->GetBestBlock(), TipOf(2));
}

// A flush on two threads (sort halves, a writing thread): the same database as on one, the same
// crash protocol when a batch fails half-way.
// A flush sorts its entries by the txid's first 6 bytes and n (batch_write.cpp); txids that share
// those bytes and outputs past vout 16511 (whose VARINTs order differently from their numbers) are
// sorted again by the whole key. Every coin reaches the database, on one thread or two (builds
// with assertions also check that the write order is LevelDB's key order).
TEST(CoinsDB, FlushWritesKeysThatShareASortPrefixOrHaveLongVarints)
{
    std::mt19937_64 rng(31);
    std::map<OutPoint, Coin> want;
    for (int i = 0; i < 70'000; ++i) want.emplace(RandomOutPoint(rng), RandomCoin(rng));
    for (int group = 0; group < 200; ++group) {
        std::array<uint8_t, 32> b;
        for (auto& c : b) c = uint8_t(rng());
        for (int twin = 0; twin < 3; ++twin) {
            b[31] = uint8_t(twin); // same first 6 bytes (and 30 more), another txid
            for (uint32_t n : {0u, 1u, 127u, 128u, 16'383u, 16'511u, 16'512u, 65'535u, 65'536u, 2'000'000u}) {
                want.emplace(OutPoint{Txid(uint256(std::span<const uint8_t, 32>(b))), n}, RandomCoin(rng));
            }
        }
    }
    TempDir d;
    for (unsigned threads : {1u, 2u}) {
        CoinsDBOptions o;
        o.batch_write_bytes = 64 << 10;
        o.flush_threads = threads;
        StoreStatus st;
        auto db = OpenCoinsDB(d.path / std::to_string(threads), o, &st);
        ASSERT_TRUE(db) << st.message;
        CoinsCache cache(*db, 1 << 30);
        for (const auto& [op, coin] : want) cache.AddCoin(op, Coin(coin), false);
        cache.SetBestBlock(TipOf(1));
        ASSERT_TRUE(cache.Flush().ok());
        std::map<OutPoint, Coin> got;
        ASSERT_TRUE(db->ForEachCoin([&](const OutPoint& op, const Coin& c) {
            got.emplace(op, c);
            return true;
        }).ok());
        EXPECT_TRUE(got == want) << threads << " thread(s)";
    }
}

namespace {

/// The files of `dir` whose names end with `suffix`.
int CountFiles(const fs::path& dir, const std::string& suffix)
{
    int n = 0;
    for (const auto& f : fs::directory_iterator(dir)) {
        const std::string name = f.path().filename().string();
        if (name.size() >= suffix.size() && name.compare(name.size() - suffix.size(), suffix.size(), suffix) == 0) ++n;
    }
    return n;
}

std::vector<std::pair<OutPoint, Coin>> AllCoins(const CoinsDB& db)
{
    std::vector<std::pair<OutPoint, Coin>> all;
    EXPECT_TRUE(db.ForEachCoin([&](const OutPoint& op, const Coin& c) {
        all.emplace_back(op, c);
        return true;
    }).ok());
    return all;
}

} // namespace

TEST(CoinsDB, TwoFlushThreadsWriteTheSameDatabase)
{
    auto fill = [](CoinsCache& cache, uint64_t seed, int n) {
        std::mt19937_64 rng(seed);
        std::vector<OutPoint> ops;
        for (int i = 0; i < n; ++i) {
            ops.push_back(RandomOutPoint(rng));
            cache.AddCoin(ops.back(), RandomCoin(rng), false);
        }
        return ops;
    };
    TempDir d;
    std::vector<std::pair<OutPoint, Coin>> one;
    for (unsigned threads : {1u, 2u}) {
        CoinsDBOptions o;
        o.batch_write_bytes = 64 << 10; // many batches
        o.flush_threads = threads;
        StoreStatus st;
        auto db = OpenCoinsDB(d.path / std::to_string(threads), o, &st);
        ASSERT_TRUE(db) << st.message;
        CoinsCache cache(*db, 1 << 30);
        const auto ops = fill(cache, 5, 100'000);
        cache.SetBestBlock(TipOf(1));
        ASSERT_TRUE(cache.Flush().ok());
        // A warm flush: spends and new coins, entries kept.
        fill(cache, 6, 80'000);
        for (std::size_t i = 0; i < ops.size(); i += 3) cache.SpendCoin(ops[i]);
        cache.SetBestBlock(TipOf(2));
        ASSERT_TRUE(cache.FlushWarm(std::size_t(1) << 30).ok());
        EXPECT_EQ(*db->GetBestBlock(), TipOf(2));
        auto all = AllCoins(*db);
        EXPECT_EQ(all.size(), 100'000u - 33'334u + 80'000u);
        if (threads == 1) one = std::move(all);
        else EXPECT_TRUE(all == one);
    }
    // Interrupted on the writing thread: H stays, the replay range is reported, the exception reaches the caller.
    CoinsDBOptions o;
    o.batch_write_bytes = 64 << 10;
    o.flush_threads = 2;
    int batches = 0;
    o.test_hooks = TestHooks::AfterPartialBatch([&] {
        if (++batches == 3) throw std::runtime_error("simulated crash");
    });
    StoreStatus st;
    auto db = OpenCoinsDB(d.path / "2", o, &st);
    ASSERT_TRUE(db) << st.message;
    {
        CoinsCache cache(*db, 1 << 30);
        fill(cache, 7, 100'000);
        cache.SetBestBlock(TipOf(3));
        EXPECT_THROW((void)cache.Flush(), std::runtime_error);
    }
    EXPECT_EQ(batches, 3);
    auto r = db->NeedsReplay();
    ASSERT_TRUE(r.ok() && r->has_value());
    EXPECT_EQ((*r)->new_tip, TipOf(3));
    EXPECT_EQ((*r)->old_tip, TipOf(2));
}

// ---- the first flush into a new database: a bulk load ---------------------------------------------


TEST(CoinsDB, FirstFlushIntoANewDatabaseIsABulkLoadWithTheSameContents)
{
    // Enough entries for two flush threads to split the key order; some entries are spent coins
    // the cache believes the database may hold (nothing to write: the database has none).
    std::mt19937_64 rng(41);
    std::vector<std::pair<OutPoint, Coin>> coins;
    for (int i = 0; i < 70'000; ++i) coins.emplace_back(RandomOutPoint(rng), RandomCoin(rng));
    TempDir d;
    std::vector<std::pair<OutPoint, Coin>> reference;
    for (const bool bulk : {false, true}) {
        for (const unsigned threads : {1u, 2u}) {
            const fs::path dir = d.path / (std::string(bulk ? "bulk" : "batches") + std::to_string(threads));
            CoinsDBOptions o;
            o.bulk_load_new = bulk;
            o.flush_threads = threads;
            o.batch_write_bytes = 64 << 10;
            StoreStatus st;
            auto db = OpenCoinsDB(dir, o, &st);
            ASSERT_TRUE(db) << st.message;
            {
                CoinsCache cache(*db, 1 << 30);
                for (std::size_t i = 0; i < coins.size(); ++i) {
                    cache.AddCoin(coins[i].first, Coin(coins[i].second), i % 10 == 0);
                    if (i % 10 == 0 && i % 20 == 0) cache.SpendCoin(coins[i].first); // a spent, non-fresh entry
                }
                cache.SetBestBlock(TipOf(1));
                ASSERT_TRUE(cache.Flush().ok());
            }
            EXPECT_EQ(*db->GetBestBlock(), TipOf(1));
            EXPECT_FALSE(db->NeedsReplay()->has_value());
            auto all = AllCoins(*db);
            EXPECT_EQ(all.size(), coins.size() - coins.size() / 20);
            if (reference.empty()) reference = all;
            EXPECT_TRUE(all == reference) << (bulk ? "bulk load" : "batches") << ", " << threads << " thread(s)";
            EXPECT_EQ(CountFiles(dir, ".dbtmp"), 0);

            // The next flush goes through LevelDB's writes on top of the loaded tables, and
            // reads find the loaded coins (through their filters and indexes).
            {
                CoinsCache cache(*db, 1 << 30);
                for (std::size_t i = 1; i < coins.size(); i += 3) {
                    if (i % 20 != 0) {
                        EXPECT_TRUE(cache.SpendCoin(coins[i].first)) << i;
                    }
                }
                cache.AddCoin(RandomOutPoint(rng), RandomCoin(rng), false);
                cache.SetBestBlock(TipOf(2));
                ASSERT_TRUE(cache.Flush().ok());
            }
            db.reset();
            db = OpenCoinsDB(dir, o, &st);
            ASSERT_TRUE(db) << st.message;
            EXPECT_EQ(*db->GetBestBlock(), TipOf(2));
            std::size_t left = 0;
            for (std::size_t i = 0; i < coins.size(); ++i) {
                const bool spent = i % 20 == 0 || (i % 3 == 1);
                auto c = db->GetCoin(coins[i].first);
                ASSERT_TRUE(c.ok()) << c.error().message;
                EXPECT_EQ(c->has_value(), !spent) << i;
                left += !spent;
            }
            EXPECT_EQ(AllCoins(*db).size(), left + 1);
        }
    }
}

TEST(CoinsDB, MapsWhoseKeysInterleaveAreMergedBeforeTheWrite)
{
    // Maps that are not consecutive key ranges (unlike the cache's shards, MapKeys::Ranges) are
    // collected and sorted together into one order before anything is written.
    std::mt19937_64 rng(47);
    std::map<OutPoint, Coin> want;
    for (int i = 0; i < 80'000; ++i) want.emplace(RandomOutPoint(rng), RandomCoin(rng));
    TempDir d;
    for (const bool bulk : {false, true}) {
        CoinsMap a, b;
        bool odd = false;
        for (const auto& [op, c] : want) {
            ((odd = !odd) ? a : b).try_emplace(op, c, CoinsCacheEntry::DIRTY | CoinsCacheEntry::FRESH);
        }
        CoinsDBOptions o;
        o.bulk_load_new = bulk;
        o.flush_threads = 2;
        StoreStatus st;
        auto db = OpenCoinsDB(d.path / (bulk ? "bulk" : "batches"), o, &st);
        ASSERT_TRUE(db) << st.message;
        CoinsMap* const maps[] = {&a, &b};
        ASSERT_TRUE(BatchWrite(*db, std::span<CoinsMap* const>(maps), TipOf(1), false).ok());
        std::map<OutPoint, Coin> got;
        for (const auto& [op, c] : AllCoins(*db)) got.emplace(op, c);
        EXPECT_TRUE(got == want) << (bulk ? "bulk load" : "batches");
        EXPECT_EQ(a.size() + b.size(), want.size()) << "a flush that does not erase keeps the entries";
    }
}

TEST(CoinsDB, BulkLoadStoppedBeforeItsSwitchLeavesTheNewDatabaseEmpty)
{
    TempDir d;
    std::mt19937_64 rng(43);
    CoinsDBOptions o;
    o.flush_threads = 2;
    o.test_hooks = TestHooks::AfterPartialBatch([] { throw std::runtime_error("simulated crash"); });
    StoreStatus st;
    {
        auto db = OpenCoinsDB(d.path, o, &st);
        ASSERT_TRUE(db) << st.message;
        CoinsCache cache(*db, 1 << 30);
        for (int i = 0; i < 70'000; ++i) cache.AddCoin(RandomOutPoint(rng), RandomCoin(rng), false);
        cache.SetBestBlock(TipOf(1));
        EXPECT_THROW((void)cache.Flush(), std::runtime_error);
    }
    int unlisted = 0; // the load's tables (the database had none before)
    for (const auto& f : fs::directory_iterator(d.path)) {
        if (f.path().extension() == ".ldb") {
            ++unlisted;
            EXPECT_GT(fs::file_size(f.path()), 1u << 20);
        }
    }
    EXPECT_EQ(unlisted, 2) << "one table per flush thread";
    o.test_hooks = nullptr;
    auto db = OpenCoinsDB(d.path, o, &st);
    ASSERT_TRUE(db) << st.message;
    EXPECT_TRUE(db->GetBestBlock()->IsNull());
    EXPECT_FALSE(db->NeedsReplay()->has_value());
    EXPECT_TRUE(AllCoins(*db).empty());
    // LevelDB removes the tables no MANIFEST lists (the one left, perhaps under a reused number,
    // is LevelDB's own: its log, holding the obfuscation key, written out as a table on opening).
    for (const auto& f : fs::directory_iterator(d.path)) {
        if (f.path().extension() == ".ldb") {
            EXPECT_LT(fs::file_size(f.path()), 64u << 10) << f.path();
        }
    }
    // The next first flush loads again.
    CoinsCache cache(*db, 1 << 30);
    cache.AddCoin(RandomOutPoint(rng), RandomCoin(rng), false);
    cache.SetBestBlock(TipOf(1));
    ASSERT_TRUE(cache.Flush().ok());
    EXPECT_EQ(AllCoins(*db).size(), 1u);
}

TEST(CoinsStore, BulkLoadIsOnlyForANewDatabaseAndKeepsItsKeysInOrder)
{
    TempDir d;
    StoreStatus st;
    auto store = Store::Open(d.path, StoreOptions{}, &st);
    ASSERT_TRUE(store) << st.message;
    const auto bytes = [](const std::string& s) { return std::as_bytes(std::span<const char>(s.data(), s.size())); };
    {
        auto load = store->BeginBulkLoad(2, {}, false);
        ASSERT_TRUE(load);
        EXPECT_TRUE(load->Add(0, bytes("b"), bytes("1")).ok());
        EXPECT_EQ(load->Add(0, bytes("a"), bytes("2")).code, StoreStatus::Code::InvalidArgument);
        EXPECT_EQ(load->Add(0, bytes("c"), bytes("3")).code, StoreStatus::Code::InvalidArgument) << "a part stops at its first error";
        EXPECT_FALSE(store->CommitBulkLoad(std::move(load)).ok());
    }
    {
        // Parts whose ranges overlap are refused at the commit; the database is unchanged.
        auto load = store->BeginBulkLoad(2, {}, false);
        ASSERT_TRUE(load);
        EXPECT_TRUE(load->Add(0, bytes("m"), bytes("1")).ok());
        EXPECT_TRUE(load->Add(1, bytes("c"), bytes("2")).ok());
        EXPECT_EQ(store->CommitBulkLoad(std::move(load)).code, StoreStatus::Code::InvalidArgument);
        EXPECT_FALSE(store->ReadRaw(bytes("m")));
    }
    {
        RawRecord r;
        const std::string k = "A", v = "record";
        r.key.assign(bytes(k).begin(), bytes(k).end());
        r.value.assign(bytes(v).begin(), bytes(v).end());
        auto load = store->BeginBulkLoad(2, {r}, true);
        ASSERT_TRUE(load);
        EXPECT_TRUE(load->Add(0, bytes("b"), bytes("1")).ok());
        EXPECT_TRUE(load->Add(1, bytes("c"), bytes("2")).ok());
        ASSERT_TRUE(store->CommitBulkLoad(std::move(load)).ok());
    }
    EXPECT_EQ(store->ReadRaw(bytes("A")), "record");
    EXPECT_EQ(store->ReadRaw(bytes("b")), "1");
    EXPECT_EQ(store->ReadRaw(bytes("c")), "2");
    const auto okey = std::as_bytes(std::span<const uint8_t>(OBFUSCATE_KEY_KEY));
    EXPECT_TRUE(store->ReadRaw(okey)) << "the obfuscation key record is kept";
    EXPECT_FALSE(store->BeginBulkLoad(1, {}, false)) << "the database holds records now";
}

// ---- corruption --------------------------------------------------------------------------------

TEST(CoinsDB, CorruptValuesGiveTypedErrors)
{
    TempDir d;
    StoreStatus st;
    auto db = OpenCoinsDB(d.path, {}, &st);
    ASSERT_TRUE(db);
    std::mt19937_64 rng(11);
    const OutPoint op = RandomOutPoint(rng);
    auto put_raw = [&](const std::vector<uint8_t>& plain) {
        DataStream<> k;
        k << CoinKey{op};
        std::vector<uint8_t> v = plain;
        XorBytes(std::as_writable_bytes(std::span(v)), db->store().Obfuscation());
        KvBatch b;
        b.Put(k.span(), std::as_bytes(std::span(v)));
        ASSERT_TRUE(db->store().WriteBatch(b).ok());
    };
    put_raw(ParseHex("97f23c835800816115944e077fe7c803cfa57f29b36bf87c1d35"));
    ASSERT_TRUE(db->GetCoin(op).ok());
    put_raw(ParseHex("97f23c835800816115944e077fe7c803cfa57f29b36bf87c1d")); // truncated
    auto r = db->GetCoin(op);
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.error().code, Errc::Corrupt);
    put_raw(ParseHex("ffffffffffffffffff")); // VARINT overflow
    r = db->GetCoin(op);
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.error().code, Errc::VarIntOverflow);
    put_raw(ParseHex("97f23c835800816115944e077fe7c803cfa57f29b36bf87c1d35ff")); // trailing
    r = db->GetCoin(op);
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.error().code, Errc::TrailingData);
    // Through the cache, a corrupt record throws a DecodeError (not a crash).
    put_raw(ParseHex("97f23c"));
    CoinsCache cache(*db, 1 << 20);
    EXPECT_THROW((void)cache.HaveCoin(op), DecodeError);
    auto all = db->ForEachCoin([](const OutPoint&, const Coin&) { return true; });
    ASSERT_FALSE(all.ok());
    EXPECT_EQ(all.error().code, Errc::Corrupt);
    auto cursor = db->NewCursor();
    OutPoint walked;
    Coin coin;
    while (cursor->Next(walked, coin)) {
    }
    ASSERT_TRUE(cursor->Failure());
    EXPECT_EQ(cursor->Failure()->code, Errc::Corrupt);
    EXPECT_EQ(cursor->Failure()->message, all.error().message);
}

TEST(CoinsDB, WrongObfuscationKeyGivesTypedErrors)
{
    TempDir d;
    std::mt19937_64 rng(12);
    std::vector<OutPoint> ops;
    {
        StoreStatus st;
        auto db = OpenCoinsDB(d.path, {}, &st);
        ASSERT_TRUE(db);
        CoinsCache cache(*db, 1 << 20);
        for (int i = 0; i < 200; ++i) {
            ops.push_back(RandomOutPoint(rng));
            cache.AddCoin(ops.back(), RandomCoin(rng), true);
        }
        cache.SetBestBlock(TipOf(1));
        ASSERT_TRUE(cache.Flush().ok());
        // Replace the key record with another key.
        std::array<std::byte, 9> v{};
        v[0] = std::byte{8};
        for (int i = 1; i < 9; ++i) v[i] = std::byte(0x5a);
        KvBatch b;
        b.Put(std::as_bytes(std::span(OBFUSCATE_KEY_KEY)), v);
        ASSERT_TRUE(db->store().WriteBatch(b).ok());
    }
    StoreStatus st;
    auto db = OpenCoinsDB(d.path, {}, &st);
    ASSERT_TRUE(db);
    int errors = 0;
    for (const auto& op : ops) {
        auto r = db->GetCoin(op);
        if (!r.ok()) ++errors;
    }
    // Wrong-key garbage decodes as something or fails with a typed error; most must fail.
    EXPECT_GT(errors, 0);
    auto all = db->ForEachCoin([](const OutPoint&, const Coin&) { return true; });
    EXPECT_FALSE(all.ok());
    // The best-block record decodes (any 32 bytes do) but names an unknown block.
    EXPECT_NE(*db->GetBestBlock(), TipOf(1));
}

TEST(CoinsDB, CorruptTableFileIsReportedNotCrashed)
{
    TempDir d;
    std::mt19937_64 rng(13);
    {
        StoreStatus st;
        auto db = OpenCoinsDB(d.path, {}, &st);
        ASSERT_TRUE(db);
        CoinsCache cache(*db, 64 << 20);
        for (int i = 0; i < 5000; ++i) cache.AddCoin(RandomOutPoint(rng), RandomCoin(rng), true);
        cache.SetBestBlock(TipOf(1));
        ASSERT_TRUE(cache.Flush().ok());
        db->store().CompactAll();
    }
    for (auto& f : fs::directory_iterator(d.path)) {
        if (f.path().extension() != ".ldb") continue;
        std::fstream fsx(f.path(), std::ios::in | std::ios::out | std::ios::binary);
        fsx.seekp(100);
        const char junk[16] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16};
        fsx.write(junk, sizeof(junk));
    }
    StoreStatus st;
    auto db = OpenCoinsDB(d.path, {}, &st);
    if (!db) {
        EXPECT_NE(st.code, StoreStatus::Code::Ok);
        return;
    }
    auto all = db->ForEachCoin([](const OutPoint&, const Coin&) { return true; });
    ASSERT_FALSE(all.ok());
    EXPECT_EQ(all.error().code, Errc::Corrupt);
}

TEST(CoinsDB, OneFlippedByteInATableIsAChecksumErrorOnAPointRead)
{
    // LevelDB leaves the check of a block read for a lookup to ReadOptions::verify_checksums;
    // ibdkit's table reader checks it instead (kv/leveldb_env.h, PreadFile). Flip one byte of one
    // coin's value on disk: reading that coin must fail as a corruption, never return another coin.
    TempDir d;
    std::mt19937_64 rng(17);
    std::vector<std::pair<OutPoint, Coin>> coins;
    {
        StoreStatus st;
        auto db = OpenCoinsDB(d.path, {}, &st);
        ASSERT_TRUE(db);
        CoinsCache cache(*db, 64 << 20);
        for (int i = 0; i < 3000; ++i) {
            coins.emplace_back(RandomOutPoint(rng), RandomCoin(rng));
            cache.AddCoin(coins.back().first, Coin(coins.back().second), true);
        }
        cache.SetBestBlock(TipOf(1));
        ASSERT_TRUE(cache.Flush().ok());
        db->store().CompactAll();
    }
    int tables = 0;
    for (auto& f : fs::directory_iterator(d.path)) {
        if (f.path().extension() != ".ldb") continue;
        ++tables;
        // Halfway: inside a data block of coins (the first one starts with the obfuscation key,
        // which the open reads).
        const auto at = std::streamoff(fs::file_size(f.path()) / 2);
        std::fstream fsx(f.path(), std::ios::in | std::ios::out | std::ios::binary);
        fsx.seekg(at);
        char c = 0;
        fsx.read(&c, 1);
        c = char(c ^ 0x04);
        fsx.seekp(at);
        fsx.write(&c, 1);
    }
    ASSERT_GE(tables, 1);
    StoreStatus st;
    auto db = OpenCoinsDB(d.path, {}, &st);
    ASSERT_TRUE(db) << st.message;
    int corrupt = 0, checksum = 0, other = 0;
    for (const auto& [op, coin] : coins) {
        auto got = db->GetCoin(op); // LevelDB's own failure comes back as an error too, never thrown
        if (!got.ok()) {
            EXPECT_EQ(got.error().code, Errc::Corrupt) << got.error().message;
            EXPECT_EQ(got.error().message.rfind("coin " + op.hash.ToHex() + ":", 0), 0u) << got.error().message;
            checksum += got.error().message.find("checksum mismatch") != std::string::npos;
            ++corrupt;
            continue;
        }
        ASSERT_TRUE(*got) << "a coin written is missing";
        EXPECT_TRUE((*got)->out == coin.out && (*got)->height == coin.height) << "a coin came back changed";
        ++other;
    }
    EXPECT_GT(checksum, 0) << "no read met the table's checksum";
    EXPECT_GT(corrupt, 0) << "the flipped byte went unnoticed";
    EXPECT_GT(other, 0) << "the other blocks still read";
}

// ---- read-only open ----------------------------------------------------------------------------

std::map<std::string, std::string> HashDirectory(const fs::path& dir)
{
    std::map<std::string, std::string> out;
    for (auto& f : fs::directory_iterator(dir)) {
        auto bytes = test::ReadFile(f.path());
        out[f.path().filename().string()] = HashSha256d(std::span<const uint8_t>(bytes)).ToHex() + "/" +
                                            std::to_string(fs::last_write_time(f.path()).time_since_epoch().count());
    }
    return out;
}

TEST(CoinsDB, ReadOnlyOpenLeavesDirectoryByteIdentical)
{
    TempDir d;
    std::mt19937_64 rng(14);
    Model model;
    {
        StoreStatus st;
        auto db = OpenCoinsDB(d.path, {}, &st);
        ASSERT_TRUE(db);
        CoinsCache cache(*db, 64 << 20);
        for (int i = 0; i < 3000; ++i) {
            OutPoint op = RandomOutPoint(rng);
            Coin c = RandomCoin(rng);
            model[op] = c;
            cache.AddCoin(op, std::move(c), true);
        }
        cache.SetBestBlock(TipOf(1));
        ASSERT_TRUE(cache.Flush().ok());
        // Leave data in the log only (no compaction): opening must replay it, which LevelDB does
        // by writing a new table and MANIFEST.
    }
    const auto before = HashDirectory(d.path);
    for (int round = 0; round < 2; ++round) {
        CoinsDBOptions o;
        o.read_only = true;
        StoreStatus st;
        auto db = OpenCoinsDB(d.path, o, &st);
        ASSERT_TRUE(db) << st.message;
        EXPECT_EQ(ReadAll(*db), model);
        EXPECT_EQ(*db->GetBestBlock(), TipOf(1));
        CoinsMap m;
        EXPECT_FALSE(BatchWrite(*db, m, TipOf(2), true).ok());
        auto stats = ComputeUtxoStats(*db);
        ASSERT_TRUE(stats.ok());
        EXPECT_EQ(stats->txouts, model.size());
    }
    EXPECT_EQ(HashDirectory(d.path), before);
    // And the database is still fully usable afterwards.
    StoreStatus st;
    auto db = OpenCoinsDB(d.path, {}, &st);
    ASSERT_TRUE(db) << st.message;
    EXPECT_EQ(ReadAll(*db), model);
}

TEST(CoinsDB, OpenReturnsTypedErrors)
{
    TempDir d;
    CoinsDBOptions ro;
    ro.read_only = true;
    auto missing = CoinsDB::Open(d.path / "nope", ro);
    ASSERT_FALSE(missing);
    EXPECT_EQ(missing.error().code, Errc::NotFound) << missing.error().message;
    // A folder of someone's files is never written into.
    fs::create_directories(d.path / "notes");
    std::ofstream(d.path / "notes" / "todo.txt") << "keep";
    auto refused = CoinsDB::Open(d.path / "notes", {});
    ASSERT_FALSE(refused);
    EXPECT_EQ(refused.error().code, Errc::Refused) << refused.error().message;
    // Held by a writer of this process: LevelDB's lock.
    auto writer = CoinsDB::Open(d.path / "db", {});
    ASSERT_TRUE(writer) << writer.error().message;
    auto second = CoinsDB::Open(d.path / "db", {});
    ASSERT_FALSE(second);
    EXPECT_EQ(second.error().code, Errc::Locked) << second.error().message;
    // The library's own callers take the store's status: the same codes, one for one.
    StoreStatus st;
    EXPECT_FALSE(OpenCoinsDB(d.path / "db", {}, &st));
    EXPECT_EQ(st.code, StoreStatus::Code::Locked);
    EXPECT_EQ(ErrorOf(StatusOf(second.error())).code, Errc::Locked);
}

TEST(CoinsDB, ReadOnlyOpenOfMissingOrLockedDirectory) // locked: a snapshot is read (test_live_snapshot.cpp)
{
    TempDir d;
    CoinsDBOptions o;
    o.read_only = true;
    StoreStatus st;
    EXPECT_FALSE(OpenCoinsDB(d.path / "nope", o, &st));
    EXPECT_EQ(st.code, StoreStatus::Code::NotFound);
    EXPECT_FALSE(fs::exists(d.path / "nope"));

    {
        StoreStatus st1;
        auto w = OpenCoinsDB(d.path / "db", {}, &st1);
        ASSERT_TRUE(w);
    }
    // A writer in another process holds the lock: the read-only open reads a private snapshot.
    int pipefd[2], back[2];
    ASSERT_EQ(pipe(pipefd), 0);
    ASSERT_EQ(pipe(back), 0);
    pid_t pid = fork();
    if (pid == 0) {
        // Child: take the lock the way LevelDB does (fcntl write lock) and wait.
        const int fd = ::open((d.path / "db" / "LOCK").c_str(), O_RDWR);
        struct flock fl{};
        fl.l_type = F_WRLCK;
        fl.l_whence = SEEK_SET;
        const bool ok = fd >= 0 && fcntl(fd, F_SETLK, &fl) == 0;
        char c = ok ? 1 : 0;
        (void)!write(pipefd[1], &c, 1);
        char x;
        (void)!read(back[0], &x, 1); // the parent's byte ends the wait
        _exit(0);
    }
    char c = 0;
    ASSERT_EQ(read(pipefd[0], &c, 1), 1);
    ASSERT_EQ(c, 1);
    auto db = OpenCoinsDB(d.path / "db", o, &st);
    ASSERT_TRUE(db) << st.message;
    EXPECT_TRUE(db->store().FromSnapshot());
    db.reset();
    char x = 0;
    (void)!write(back[1], &x, 1);
    int status = 0;
    waitpid(pid, &status, 0);
    close(pipefd[0]);
    close(pipefd[1]);
    close(back[0]);
    close(back[1]);
}

// ---- UTXO stats --------------------------------------------------------------------------------

TEST(CoinsStats, EmptySetHash)
{
    TempDir d;
    StoreStatus st;
    auto db = OpenCoinsDB(d.path, {}, &st);
    ASSERT_TRUE(db);
    auto s = ComputeUtxoStats(*db);
    ASSERT_TRUE(s.ok());
    EXPECT_EQ(s->hash_serialized.ToHex(), "56944c5d3f98413ef45cf54545538103cc9f298e0575820ad3591376e2e0f65d");
    EXPECT_EQ(s->txouts, 0u);
    EXPECT_EQ(s->transactions, 0u);
    EXPECT_EQ(FormatMoney(s->total_amount), "0.00000000");
}

TEST(CoinsStats, OutputsSortedByIndexNotByVarIntKey)
{
    // VARINT key order puts 65535 (82 fe 7f) before 16383 (fe 7f); the hash wants ascending n.
    TempDir d;
    StoreStatus st;
    auto db = OpenCoinsDB(d.path, {}, &st);
    ASSERT_TRUE(db);
    std::mt19937_64 rng(15);
    const std::vector<uint32_t> ns{0, 127, 128, 255, 16383, 16384, 65535, 70000};
    std::array<uint8_t, 32> tb{};
    tb.fill(0x42);
    std::array<uint8_t, 32> tb2{};
    tb2.fill(0x07);
    std::map<std::pair<uint256, uint32_t>, Coin> sorted;
    {
        CoinsCache cache(*db, 1 << 20);
        for (const auto* t : {&tb, &tb2}) {
            for (uint32_t n : ns) {
                OutPoint op{Txid(uint256(*t)), n};
                Coin c = RandomCoin(rng);
                sorted[{op.hash.ToUint256(), n}] = c;
                cache.AddCoin(op, std::move(c), false);
            }
        }
        cache.SetBestBlock(TipOf(1));
        ASSERT_TRUE(cache.Flush().ok());
    }
    // Independent reference: serialize in (txid, n) order and SHA256d.
    std::vector<uint8_t> ser;
    uint64_t bogo = 0;
    Amount total = 0;
    for (const auto& [k, c] : sorted) {
        VectorWriter<std::vector<uint8_t>> w(ser, ser.size());
        w << k.first << k.second << uint32_t(c.height * 2 + c.coinbase) << c.out;
        bogo += 50 + c.out.script_pubkey.size();
        total += c.out.value;
    }
    auto s = ComputeUtxoStats(*db);
    ASSERT_TRUE(s.ok());
    EXPECT_EQ(s->hash_serialized, HashSha256d(std::span<const uint8_t>(ser)));
    EXPECT_EQ(s->txouts, sorted.size());
    EXPECT_EQ(s->transactions, 2u);
    EXPECT_EQ(s->bogosize, bogo);
    EXPECT_EQ(s->total_amount, total);
    EXPECT_EQ(s->best_block, TipOf(1));
}

TEST(CoinsStats, FormatMoney)
{
    EXPECT_EQ(FormatMoney(0), "0.00000000");
    EXPECT_EQ(FormatMoney(1), "0.00000001");
    EXPECT_EQ(FormatMoney(29950 * COIN), "29950.00000000");
    EXPECT_EQ(FormatMoney(MAX_MONEY), "21000000.00000000");
}

} // namespace
} // namespace ibdkit

// ---- script types and addresses (dump) ---------------------------------------------------------

namespace ibdkit {
namespace {

std::string_view TypeName(const Script& s) { return GetTxnOutputType(Solver(s.span())); }

TEST(CoinsAddress, KnownVectors)
{
    const Script p2pkh = S("76a91462e907b15cbf27d5425399ebf6f0fb50ebb88f1888ac"); // genesis key's hash160
    EXPECT_EQ(TypeName(p2pkh), "pubkeyhash");
    EXPECT_EQ(EncodeAddress(p2pkh, AddressNetwork::Main).value_or(""), "1A1zP1eP5QGefi2DMPTfTL5SLmv7DivfNa");
    const Script p2wpkh = S("0014751e76e8199196d454941c45d1b3a323f1433bd6"); // BIP173
    EXPECT_EQ(TypeName(p2wpkh), "witness_v0_keyhash");
    EXPECT_EQ(EncodeAddress(p2wpkh, AddressNetwork::Main).value_or(""), "bc1qw508d6qejxtdg4y5r3zarvary0c5xw7kv8f3t4");
    EXPECT_EQ(EncodeAddress(p2wpkh, AddressNetwork::Regtest).value_or(""), "bcrt1qw508d6qejxtdg4y5r3zarvary0c5xw7kygt080");
    const Script p2wsh = S("00201863143c14c5166804bd19203356da136c985678cd4d27a1b8c6329604903262"); // BIP173
    EXPECT_EQ(TypeName(p2wsh), "witness_v0_scripthash");
    EXPECT_EQ(EncodeAddress(p2wsh, AddressNetwork::Test).value_or(""), "tb1qrp33g0q5c5txsp9arysrx4k6zdkfs4nce4xj0gdcccefvpysxf3q0sl5k7");
    const Script p2tr = S("5120" + G_X); // BIP350 / BIP86 style
    EXPECT_EQ(TypeName(p2tr), "witness_v1_taproot");
    EXPECT_EQ(EncodeAddress(p2tr, AddressNetwork::Main).value_or(""), "bc1p0xlxvlhemja6c4dqv22uapctqupfhlxm9h8z3k2e72q4k9hcz7vqzk5jj0");
    const Script p2sh = S("a914" + std::string("e9c3dd0c07aac76179ebc76a6c78d4d67c6c160a") + "87");
    EXPECT_EQ(TypeName(p2sh), "scripthash");
    EXPECT_EQ(EncodeAddress(p2sh, AddressNetwork::Main).value_or(""), "3P14159f73E4gFr7JterCCQh9QjiTjiZrG");
    EXPECT_EQ(TypeName(S("4104" + G_X + G_Y + "ac")), "pubkey");
    EXPECT_FALSE(EncodeAddress(S("4104" + G_X + G_Y + "ac"), AddressNetwork::Main));
    EXPECT_EQ(TypeName(S("6a0568656c6c6f")), "nulldata");
    EXPECT_EQ(TypeName(S("5121" "02" + G_X + "51ae")), "multisig");
    EXPECT_EQ(TypeName(S("51024e73")), "anchor");
    EXPECT_EQ(TypeName(S("5220" + G_X)), "witness_unknown");
    EXPECT_EQ(TypeName(S("51")), "nonstandard");
    // Leading zero bytes become '1's (hash160 of zeros: the well-known burn address).
    EXPECT_EQ(EncodeAddress(S("76a914" + std::string(40, '0') + "88ac"), AddressNetwork::Main).value_or(""),
              "1111111111111111111114oLvT2");
    // P2A (anchor) is witness v1 with a 2-byte program: it has an address (Core's WitnessUnknown).
    EXPECT_EQ(EncodeAddress(S("51024e73"), AddressNetwork::Main).value_or(""), "bc1pfeessrawgf");
    EXPECT_FALSE(EncodeAddress(S("5121" "02" + G_X + "51ae"), AddressNetwork::Main));
    EXPECT_FALSE(EncodeAddress(S("0015" + std::string(42, '0')), AddressNetwork::Main)); // v0, 21 bytes: nonstandard
}

TEST(CoinsAddress, AllocationFreeEncoderAgreesAndFitsItsBound)
{
    // The longest address: a 40-byte witness program (v16) with regtest's "bcrt" prefix.
    const Script longest = S("6028" + std::string(80, 'a'));
    ASSERT_EQ(TypeName(longest), "witness_unknown");
    const Script scripts[] = {S("76a91462e907b15cbf27d5425399ebf6f0fb50ebb88f1888ac"),
                              S("a914e9c3dd0c07aac76179ebc76a6c78d4d67c6c160a87"),
                              S("0014751e76e8199196d454941c45d1b3a323f1433bd6"),
                              S("00201863143c14c5166804bd19203356da136c985678cd4d27a1b8c6329604903262"),
                              S("5120" + G_X), S("51024e73"), S("5220" + G_X), longest,
                              S("76a914" + std::string(40, '0') + "88ac"), S("4104" + G_X + G_Y + "ac"), S("51")};
    for (const AddressNetwork net : {AddressNetwork::Main, AddressNetwork::Test, AddressNetwork::Signet, AddressNetwork::Regtest}) {
        for (const Script& s : scripts) {
            char buf[MAX_ADDRESS_LENGTH];
            const std::size_t n = EncodeAddressInto(s, Solver(s.span()), net, buf);
            const auto want = EncodeAddress(s, net);
            EXPECT_EQ(n == 0 ? std::optional<std::string>() : std::optional<std::string>(std::string(buf, n)), want);
            EXPECT_LE(n, MAX_ADDRESS_LENGTH);
        }
    }
    char buf[MAX_ADDRESS_LENGTH];
    EXPECT_EQ(EncodeAddressInto(longest, TxoutType::WITNESS_UNKNOWN, AddressNetwork::Regtest, buf), 76u);
    // BIP350's test vector for a v16 program.
    EXPECT_EQ(EncodeAddress(S("6002751e"), AddressNetwork::Main).value_or(""), "bc1sw50qgdz25j");
}

TEST(CoinsAddress, EncodeIntoFillsAtMostTheMaximum)
{
    // The longest address: a 40-byte witness v16 program on regtest (bech32m, hrp "bcrt").
    const Script longest = S("6028" + std::string(80, 'f'));
    ASSERT_EQ(Solver(longest.span()), TxoutType::WITNESS_UNKNOWN);
    char buf[MAX_ADDRESS_LENGTH + 1];
    buf[MAX_ADDRESS_LENGTH] = '#';
    const std::size_t n = EncodeAddressInto(longest, TxoutType::WITNESS_UNKNOWN, AddressNetwork::Regtest, buf);
    EXPECT_EQ(n, MAX_ADDRESS_LENGTH);
    EXPECT_EQ(buf[MAX_ADDRESS_LENGTH], '#');
    EXPECT_EQ(std::string(buf, n), EncodeAddress(longest, AddressNetwork::Regtest).value_or(""));
    EXPECT_EQ(std::string_view(buf, 6), "bcrt1s");
    const Script p2pk = S("4104" + G_X + G_Y + "ac");
    EXPECT_EQ(EncodeAddressInto(p2pk, TxoutType::PUBKEY, AddressNetwork::Main, buf), 0u);
}

} // namespace
} // namespace ibdkit

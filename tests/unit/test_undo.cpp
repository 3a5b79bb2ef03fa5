// Undo data: Core's byte format, rev-file records (checksums, typed errors, lying sizes), Core's own
// rev file from mainnet, ConnectBlock's undo output against a real block's spent outputs, and
// DisconnectBlock: a replay disconnected back to height k has the UTXO set of a replay stopped at k.
#include "replay_test_util.h"

#include <ibdkit/blockfile/locate.h>
#include <ibdkit/coins/coins_db.h>
#include <ibdkit/coins/undo.h>
#include <ibdkit/encoding/endian.h>
#include <ibdkit/engine/replay.h>
#include <ibdkit/utxo/stats.h>

#include "blockfile/undo_file.h"
#include "coins/coins_cache.h"
#include "common/write_guard_internal.h"
#include "connect/connect.h"
#include "connect/disconnect.h"
#include "gen/chain_gen.h"
#include "coins/coins_db_internal.h"

#include <gtest/gtest.h>

#include <fcntl.h>
#include <unistd.h>

#include <atomic>
#include <fstream>
#include <map>
#include <set>

using namespace ibdkit;
namespace fs = std::filesystem;
using ibdkit::test::ParseHex;
using ibdkit::test::TempDir;

namespace {

Script ScriptOf(const std::string& hex)
{
    const auto b = ParseHex(hex);
    Script s;
    s.assign(b.data(), b.size());
    return s;
}

Coin MakeCoin(Amount value, const std::string& script_hex, uint32_t height, bool coinbase)
{
    TxOut out;
    out.value = value;
    out.script_pubkey = ScriptOf(script_hex);
    return Coin(std::move(out), height, coinbase);
}

const MessageStart REGTEST_MAGIC{0xfa, 0xbf, 0xb5, 0xda};

BlockHash HashFromByte(uint8_t b)
{
    std::array<uint8_t, 32> x{};
    x.fill(b);
    return BlockHash(uint256(std::span<const uint8_t, 32>(x)));
}

// The largest single allocation while `fn` runs (0 when the test binary's hooks are not installed).
std::atomic<std::size_t> g_largest{0};
template <typename Fn>
std::size_t LargestAllocation(Fn&& fn)
{
    g_largest = 0;
    test::g_on_alloc = +[](void*, std::size_t n) {
        std::size_t cur = g_largest.load(std::memory_order_relaxed);
        while (n > cur && !g_largest.compare_exchange_weak(cur, n)) {}
    };
    fn();
    test::g_on_alloc = nullptr;
    // The hooks are absent under AddressSanitizer: then nothing is measured.
    if (test::g_free_hook_installed) {
        EXPECT_GT(g_largest.load(), 0u) << "the allocation hook saw nothing";
    }
    return g_largest.load();
}

} // namespace

TEST(Undo, SerializesInCoresFormat)
{
    BlockUndo u;
    // Height 0 (a legacy record): no version dummy. P2PKH compresses to 00 + 20 bytes.
    u.vtxundo.push_back({{MakeCoin(5'000'000'000, "76a914" + std::string(40, '1') + "88ac", 0, false)}});
    // Height 120, coinbase: VARINT(241) = 80 71, the dummy 00, a raw 2-byte script (VARINT 8).
    u.vtxundo.push_back({{MakeCoin(1, "51ae", 120, true), MakeCoin(0, "6a", 7, false)}});
    const auto bytes = SerializeBlockUndo(u);
    // CompressAmount(50 BTC) = 50 → VARINT 32; CompressAmount(1) = 1; CompressAmount(0) = 0.
    const std::string expect = "02"
                               "01" "00" "32" "00" + std::string(40, '1') +
                               "02" "8071" "00" "01" "08" "51ae"
                                    "0e" "00" "00" "07" "6a";
    EXPECT_EQ(test::ToHex(bytes), expect);
    auto back = DecodeBlockUndo(bytes);
    ASSERT_TRUE(back.ok()) << back.error().message;
    EXPECT_EQ(*back, u);
    EXPECT_EQ(back->CoinCount(), 3u);

    // Any value of the legacy dummy is accepted on read, as Core's VARINT read does.
    auto odd = bytes;
    const std::size_t dummy = 1 + 1 + 1 + 1 + 21 + 1 + 2; // offset of the second coin's dummy
    ASSERT_EQ(odd[dummy], 0x00);
    odd[dummy] = 0x05;
    auto lenient = DecodeBlockUndo(odd);
    ASSERT_TRUE(lenient.ok());
    EXPECT_EQ(*lenient, u);
}

TEST(Undo, MalformedBytesAreTypedErrors)
{
    BlockUndo u;
    u.vtxundo.push_back({{MakeCoin(12345, "0014" + std::string(40, 'a'), 99, false)}});
    const auto bytes = SerializeBlockUndo(u);
    for (std::size_t n = 0; n < bytes.size(); ++n) {
        auto r = DecodeBlockUndo(std::span(bytes.data(), n));
        ASSERT_FALSE(r.ok()) << n;
        EXPECT_EQ(r.error().code, Errc::EndOfData) << n;
    }
    auto trailing = bytes;
    trailing.push_back(0);
    auto r = DecodeBlockUndo(trailing);
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.error().code, Errc::TrailingData);

    // Counts above MAX_SIZE are refused outright; a large count the bytes do not back fails at the
    // end of the data without allocating for it.
    r = DecodeBlockUndo(ParseHex("fe00000004"));
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.error().code, Errc::SizeTooLarge);
    for (const char* lying : {"feffffff01", "01" "feffffff01"}) {
        const auto in = ParseHex(lying);
        const std::size_t largest = LargestAllocation([&] {
            auto e = DecodeBlockUndo(in);
            ASSERT_FALSE(e.ok());
            EXPECT_EQ(e.error().code, Errc::EndOfData) << lying;
        });
        EXPECT_LE(largest, MAX_VECTOR_ALLOCATE + 4096) << lying;
    }
    // A compressed P2PK whose x is not on the curve.
    for (int x = 0; x < 256; ++x) {
        std::array<uint8_t, 32> px{};
        px[31] = uint8_t(x);
        Script s;
        if (DecompressScript(s, 4, px)) continue;
        r = DecodeBlockUndo(ParseHex("01" "01" "00" "00" "04" + test::ToHex(px)));
        ASSERT_FALSE(r.ok());
        EXPECT_EQ(r.error().code, Errc::Corrupt);
        break;
    }
}

TEST(Undo, RevRecordsWriteReadAndRefuseDamage)
{
    TempDir t;
    const fs::path dir = t.path / "undo";
    BlockUndo u;
    u.vtxundo.push_back({{MakeCoin(777, "a914" + std::string(40, 'b') + "87", 5, true)}});
    const auto bytes = SerializeBlockUndo(u);
    const BlockHash prev = HashFromByte(1), hash = HashFromByte(2), other = HashFromByte(3);
    UndoPos pos, empty_pos;
    {
        auto w = UndoFileWriter::Open(dir, REGTEST_MAGIC);
        ASSERT_TRUE(w.ok()) << w.error().message;
        pos = (*w)->Write(hash, 7, prev, bytes);
        EXPECT_EQ(pos, (UndoPos{0, 8, uint32_t(bytes.size())}));
        auto found = (*w)->Find(hash);
        ASSERT_TRUE(found.ok());
        EXPECT_EQ(*found, pos); // pending entries are found before Sync
        empty_pos = (*w)->Write(other, 8, hash, SerializeBlockUndo(BlockUndo{}));
        EXPECT_EQ(empty_pos.pos, pos.pos + pos.size + UNDO_DATA_DISK_OVERHEAD);
        (*w)->Sync();
        EXPECT_EQ((*w)->records_written(), 2u);
    }
    // The record is exactly Core's: magic, size, undo bytes, SHA256d(prev ‖ undo).
    const auto file = test::ReadFile(UndoFilePath(dir, 0));
    std::vector<uint8_t> expect;
    AppendUndoRecord(expect, REGTEST_MAGIC, prev, bytes);
    AppendUndoRecord(expect, REGTEST_MAGIC, hash, ParseHex("00"));
    EXPECT_EQ(file, expect);
    EXPECT_EQ(test::ToHex(std::span(file.data(), 8)), "fabfb5da" + test::ToHex(std::array<uint8_t, 4>{uint8_t(bytes.size()), 0, 0, 0}));

    UndoFileReader reader(dir, ObfuscationKey{}, REGTEST_MAGIC);
    auto got = reader.Read(pos.file, pos.pos, prev);
    ASSERT_TRUE(got.ok()) << got.error().message;
    EXPECT_EQ(*got, u);
    auto wrong_prev = reader.Read(pos.file, pos.pos, other);
    ASSERT_FALSE(wrong_prev.ok());
    EXPECT_EQ(wrong_prev.error().code, Errc::BadChecksum);
    auto wrong_pos = reader.Read(pos.file, pos.pos + 1, prev);
    ASSERT_FALSE(wrong_pos.ok());
    EXPECT_EQ(wrong_pos.error().code, Errc::BadMagic);
    auto no_file = reader.Read(9, 8, prev);
    ASSERT_FALSE(no_file.ok());
    EXPECT_EQ(no_file.error().code, Errc::Corrupt);
    auto no_header = reader.Read(0, 4, prev);
    ASSERT_FALSE(no_header.ok());
    EXPECT_EQ(no_header.error().code, Errc::Corrupt);

    // The index names both records; a reopened writer appends after them and finds old entries.
    auto idx = ReadUndoIndex(dir);
    ASSERT_TRUE(idx.ok());
    ASSERT_EQ(idx->size(), 2u);
    EXPECT_EQ((*idx)[0].hash, hash);
    EXPECT_EQ((*idx)[0].height, 7);
    EXPECT_EQ((*idx)[0].pos, pos);
    {
        // A torn entry (a crash while appending) is cut off when the writer opens.
        std::ofstream(dir / "revindex.dat", std::ios::binary | std::ios::app).write("torn", 4);
        auto w = UndoFileWriter::Open(dir, REGTEST_MAGIC);
        ASSERT_TRUE(w.ok()) << w.error().message;
        auto f = (*w)->Find(hash);
        ASSERT_TRUE(f.ok());
        EXPECT_EQ(*f, pos);
        auto missing = (*w)->Find(HashFromByte(9));
        ASSERT_TRUE(missing.ok());
        EXPECT_FALSE(missing->has_value());
        // The same block written again (a resumed run): the later entry wins.
        const auto again = (*w)->Write(hash, 7, prev, bytes);
        EXPECT_EQ(again.pos, uint32_t(file.size()) + 8);
        (*w)->Sync();
        auto f2 = (*w)->Find(hash);
        ASSERT_TRUE(f2.ok());
        EXPECT_EQ(*f2, again);
    }
    EXPECT_EQ(fs::file_size(dir / "revindex.dat"), 3 * UNDO_INDEX_ENTRY_SIZE);

    // Damage: a flipped undo byte fails the checksum; a size the file does not hold is EndOfData
    // (and the reader does not allocate it).
    auto damaged = file;
    damaged[9] ^= 1;
    const fs::path ddir = t.path / "damaged";
    fs::create_directories(ddir);
    std::ofstream(UndoFilePath(ddir, 0), std::ios::binary).write(reinterpret_cast<const char*>(damaged.data()), std::streamsize(damaged.size()));
    UndoFileReader dreader(ddir, ObfuscationKey{}, REGTEST_MAGIC);
    auto bad = dreader.Read(0, 8, prev);
    ASSERT_FALSE(bad.ok());
    EXPECT_EQ(bad.error().code, Errc::BadChecksum);
    auto lying = file;
    WriteLE32(lying.data() + 4, 0xfffffff0u);
    std::ofstream(UndoFilePath(ddir, 1), std::ios::binary).write(reinterpret_cast<const char*>(lying.data()), std::streamsize(lying.size()));
    const std::size_t largest = LargestAllocation([&] {
        auto e = dreader.Read(1, 8, prev);
        ASSERT_FALSE(e.ok());
        EXPECT_EQ(e.error().code, Errc::EndOfData);
    });
    EXPECT_LE(largest, MAX_VECTOR_ALLOCATE + 4096);

    // Obfuscated files (Core ≥ 28) read with the key.
    ObfuscationKey key;
    for (std::size_t i = 0; i < 8; ++i) key.bytes[i] = std::byte(0x31 + i);
    auto xored = file;
    XorBytes(MakeWritableByteSpan(xored), key, 0);
    std::ofstream(UndoFilePath(ddir, 2), std::ios::binary).write(reinterpret_cast<const char*>(xored.data()), std::streamsize(xored.size()));
    UndoFileReader xreader(ddir, key, REGTEST_MAGIC);
    auto x = xreader.Read(2, empty_pos.pos, hash);
    ASSERT_TRUE(x.ok()) << x.error().message;
    EXPECT_TRUE(x->vtxundo.empty());
}

TEST(Undo, WriterRefusesCoreAndForeignDirectories)
{
    TempDir t;
    fs::create_directories(t.path / "core" / "index");
    auto r = UndoFileWriter::Open(t.path / "core", REGTEST_MAGIC);
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.error().code, Errc::Refused);
    EXPECT_NE(r.error().message.find("not an ibdkit undo folder"), std::string::npos) << r.error().message;
    fs::create_directories(t.path / "blk");
    std::ofstream(t.path / "blk" / "blk00000.dat") << "x";
    EXPECT_FALSE(UndoFileWriter::Open(t.path / "blk", REGTEST_MAGIC).ok());
    fs::create_directories(t.path / "foreign");
    std::ofstream(t.path / "foreign" / "rev00003.dat") << "x";
    r = UndoFileWriter::Open(t.path / "foreign", REGTEST_MAGIC);
    ASSERT_FALSE(r.ok());
    EXPECT_NE(r.error().message.find("revindex.dat"), std::string::npos);
    EXPECT_FALSE(fs::exists(t.path / "foreign" / "revindex.dat"));

    EXPECT_TRUE(IsSameOrInside(t.path / "a" / "b", t.path));
    EXPECT_TRUE(IsSameOrInside(t.path, t.path));
    EXPECT_TRUE(IsSameOrInside(t.path / "a" / ".." / "c", t.path / "c"));
    EXPECT_FALSE(IsSameOrInside(t.path / "ab", t.path / "a"));
    EXPECT_FALSE(IsSameOrInside(t.path.parent_path(), t.path));
}

TEST(Undo, ReadsCoresMainnetRevFile)
{
    auto dir = test::TestData("mainnet/blk_0-599");
    if (!dir) FAIL() << "tests/data is incomplete";
    auto chain = LocateFromBlocksDir(*dir, ChainType::MAIN);
    ASSERT_TRUE(chain.ok()) << chain.error().message;
    ASSERT_GE(chain->order.blocks.size(), 41u);
    // Core wrote the records of heights 1..40 back to back; each checksum binds it to its parent.
    const auto rev = test::ReadFile(*dir / "rev00000.dat");
    UndoFileReader reader(*dir, ObfuscationKey{}, GetChainParams(ChainType::MAIN).message_start);
    uint64_t pos = 8;
    int height = 1;
    while (pos < rev.size() && height <= 40) {
        const uint32_t size = ReadLE32(rev.data() + pos - 4);
        auto u = reader.Read(0, uint32_t(pos), chain->headers.Hash(int(height) - 1));
        ASSERT_TRUE(u.ok()) << height << ": " << u.error().message;
        EXPECT_TRUE(u->vtxundo.empty()); // coinbase-only blocks
        // The same bytes re-serialized, the same checksum recomputed: what ibdkit writes.
        std::vector<uint8_t> ours;
        AppendUndoRecord(ours, GetChainParams(ChainType::MAIN).message_start, chain->headers.Hash(int(height) - 1),
                         SerializeBlockUndo(*u));
        EXPECT_TRUE(std::equal(ours.begin(), ours.end(), rev.begin() + std::ptrdiff_t(pos - 8))) << height;
        // And bound to the wrong parent, it fails.
        auto wrong = reader.Read(0, uint32_t(pos), chain->headers.Hash(int(height)));
        ASSERT_FALSE(wrong.ok());
        EXPECT_EQ(wrong.error().code, Errc::BadChecksum);
        pos += size + 32 + 8;
        ++height;
    }
    EXPECT_EQ(height, 41);
}

namespace {

std::string JsonString(const std::string& s, std::size_t from, const std::string& key, std::size_t* at)
{
    const std::size_t k = s.find("\"" + key + "\"", from);
    const std::size_t q1 = s.find('"', s.find(':', k) + 1);
    const std::size_t q2 = s.find('"', q1 + 1);
    *at = q2;
    return s.substr(q1 + 1, q2 - q1 - 1);
}
int64_t JsonNumber(const std::string& s, std::size_t from, const std::string& key, std::size_t* at)
{
    const std::size_t k = s.find("\"" + key + "\"", from);
    std::size_t p = s.find(':', k) + 1;
    while (s[p] == ' ') ++p;
    std::size_t e = p;
    while (std::isdigit(uint8_t(s[e])) || s[e] == 't' || s[e] == 'f' || s[e] == 'r' || s[e] == 'u' || s[e] == 'e' || s[e] == 'a' || s[e] == 'l' || s[e] == 's') ++e;
    *at = e;
    const std::string v = s.substr(p, e - p);
    if (v == "true") return 1;
    if (v == "false") return 0;
    return std::stoll(v);
}

// The spent outputs of block 866,342 in block order (Floresta's test data).
std::vector<Coin> SpentCoins866342(const std::string& json)
{
    std::vector<Coin> out;
    std::size_t at = 0;
    for (std::size_t k = json.find("\"txout\""); k != std::string::npos; k = json.find("\"txout\"", at)) {
        const int64_t value = JsonNumber(json, k, "value", &at);
        const std::string script = JsonString(json, k, "script_pubkey", &at);
        const bool coinbase = JsonNumber(json, k, "is_coinbase", &at) != 0;
        const int64_t height = JsonNumber(json, k, "creation_height", &at);
        out.push_back(MakeCoin(value, script, uint32_t(height), coinbase));
    }
    return out;
}

// The one place that fills a ConnectContext for a lone block: every ancestor stamped an hour before
// it (so every median time past is that), and BIP34 active on its chain. The ancestry lives as long
// as the test process: a ConnectContext only refers to it.
ConnectContext ContextAt(int height, const Block& block, const ConsensusParams& params)
{
    static std::vector<HeaderInfo> ancestors;
    ancestors.assign(std::size_t(height), HeaderInfo{uint32_t(block.time - 3600), block.bits});
    ConnectContext ctx;
    ctx.height = height;
    ctx.prev = HeaderAncestry{0, ancestors};
    ctx.bip34_ancestor = params.bip34_hash;
    return ctx;
}

std::map<OutPoint, Coin> Snapshot(CoinsCache& view, const std::vector<OutPoint>& ops)
{
    std::map<OutPoint, Coin> m;
    for (const auto& op : ops) {
        if (auto c = view.GetCoin(op)) m.emplace(op, *c);
    }
    return m;
}

} // namespace

TEST(Undo, ConnectBlockUndoIsTheBlocksSpentCoinsInCoresOrder)
{
    auto pb = test::TestData("mainnet/blocks/block_866342.raw");
    auto pj = test::TestData("mainnet/blocks/block_866342.spent_utxos.json");
    if (!pb || !pj) FAIL() << "tests/data is incomplete";
    auto block = DecodeBlock(test::ReadFile(*pb));
    ASSERT_TRUE(block.ok());
    const auto raw = test::ReadFile(*pj);
    const auto spent = SpentCoins866342(std::string(raw.begin(), raw.end()));
    const auto& params = GetChainParams(ChainType::MAIN);

    TempDir t;
    StoreStatus st;
    auto db = OpenCoinsDB(t.path, {}, &st);
    ASSERT_TRUE(db) << st.message;
    CoinsCache view(*db, 1 << 30);
    // The view before the block: every spent coin not created inside the block itself.
    std::set<Txid> own;
    for (const auto& tx : block->vtx) own.insert(tx.GetHash());
    std::vector<OutPoint> touched;
    std::size_t k = 0;
    for (std::size_t i = 1; i < block->vtx.size(); ++i) {
        for (const auto& in : block->vtx[i].vin()) {
            ASSERT_LT(k, spent.size());
            if (!own.contains(in.prevout.hash)) view.AddCoin(in.prevout, Coin(spent[k]), false);
            touched.push_back(in.prevout);
            ++k;
        }
    }
    ASSERT_EQ(k, spent.size());
    for (const auto& tx : block->vtx) {
        for (uint32_t o = 0; o < tx.vout().size(); ++o) touched.push_back(OutPoint{tx.GetHash(), o});
    }
    const auto before = Snapshot(view, touched);
    const BlockHash parent = block->hash_prev_block;
    view.SetBestBlock(parent);

    BlockValidationState state;
    auto checked = CheckBlock(Block(*block), state, params.consensus);
    ASSERT_TRUE(checked) << state.GetRejectReason();
    const ConnectContext ctx = ContextAt(866342, *block, params.consensus);
    BlockUndo undo;
    ASSERT_TRUE(ConnectBlock(*checked, ctx, view, params.consensus, state, {.undo = &undo})) << state.GetRejectReason();
    ASSERT_EQ(undo.vtxundo.size(), block->vtx.size() - 1);
    k = 0;
    for (std::size_t i = 1; i < block->vtx.size(); ++i) {
        ASSERT_EQ(undo.vtxundo[i - 1].prevout.size(), block->vtx[i].vin().size());
        for (const Coin& c : undo.vtxundo[i - 1].prevout) {
            EXPECT_EQ(c, spent[k]) << "input " << k;
            ++k;
        }
    }
    // Round trip through Core's format, then disconnect: the view is as before the block.
    auto decoded = DecodeBlockUndo(SerializeBlockUndo(undo));
    ASSERT_TRUE(decoded.ok());
    ASSERT_EQ(*decoded, undo);
    std::string why;
    EXPECT_EQ(DisconnectBlock(*block, 866342, block->GetHash(), std::move(*decoded), view, &why), DisconnectResult::OK) << why;
    EXPECT_EQ(view.GetBestBlock(), parent);
    EXPECT_EQ(Snapshot(view, touched), before);

    // Disconnecting it again: its outputs are gone and its inputs already restored — UNCLEAN.
    EXPECT_EQ(DisconnectBlock(*block, 866342, block->GetHash(), undo, view, &why), DisconnectResult::UNCLEAN);
    // Undo data of another shape: FAILED, with Core's text.
    BlockUndo short_undo = undo;
    short_undo.vtxundo.pop_back();
    EXPECT_EQ(DisconnectBlock(*block, 866342, block->GetHash(), short_undo, view, &why), DisconnectResult::FAILED);
    EXPECT_EQ(why, "DisconnectBlock(): block and undo data inconsistent");
    BlockUndo bad_tx = undo;
    bad_tx.vtxundo.back().prevout.emplace_back(spent[0]);
    EXPECT_EQ(DisconnectBlock(*block, 866342, block->GetHash(), bad_tx, view, &why), DisconnectResult::FAILED);
    EXPECT_EQ(why, "DisconnectBlock(): transaction and undo data inconsistent");
}

TEST(Undo, ApplyTxInUndoTakesLegacyMetadataFromASibling)
{
    TempDir t;
    StoreStatus st;
    auto db = OpenCoinsDB(t.path, {}, &st);
    ASSERT_TRUE(db) << st.message;
    CoinsCache view(*db, 1 << 20);
    Txid txid(uint256(std::span<const uint8_t, 32>(std::array<uint8_t, 32>{7}.data(), 32)));
    // No sibling: FAILED.
    EXPECT_EQ(ApplyTxInUndo(MakeCoin(5, "51", 0, false), view, OutPoint{txid, 0}), DisconnectResult::FAILED);
    view.AddCoin(OutPoint{txid, 3}, MakeCoin(9, "52", 1234, true), false);
    EXPECT_EQ(ApplyTxInUndo(MakeCoin(5, "51", 0, false), view, OutPoint{txid, 0}), DisconnectResult::OK);
    auto c = view.GetCoin(OutPoint{txid, 0});
    ASSERT_TRUE(c);
    EXPECT_EQ(c->height, 1234u);
    EXPECT_TRUE(c->coinbase);
    // Restoring over an unspent coin: UNCLEAN, and the coin is overwritten.
    EXPECT_EQ(ApplyTxInUndo(MakeCoin(6, "53", 10, false), view, OutPoint{txid, 0}), DisconnectResult::UNCLEAN);
    EXPECT_EQ(view.GetCoin(OutPoint{txid, 0})->out.value, 6);
}

namespace {

using ibdkit::test::GeneratedBlocks;
using ibdkit::test::HashOf;
using ibdkit::test::MustReplay;

} // namespace

TEST(Undo, DisconnectingBackToKGivesTheUtxoSetOfAReplayStoppedAtK)
{
    const auto& blocks = GeneratedBlocks();
    TempDir t;
    ReplayOptions o;
    o.source.blocks_dir = blocks;
    o.chainstate = t.path / "chainstate";
    o.undo_dir = t.path / "undo";
    o.dbcache_mib = 1; // flushes along the way: undo is synced before each
    o.threads = 2;
    const auto full = MustReplay(o);
    ASSERT_EQ(full.height, 220);
    EXPECT_EQ(full.undo_records, 220u);
    EXPECT_GT(full.flushes, 1u);
    const int k = 150;
    ReplayOptions stopped;
    stopped.source.blocks_dir = blocks;
    stopped.stop_height = k;
    const auto at_k = MustReplay(stopped);
    ASSERT_EQ(at_k.height, k);

    auto chain = LocateFromBlocksDir(blocks, ChainType::REGTEST);
    ASSERT_TRUE(chain.ok());
    ASSERT_EQ(chain->TipHeight(), 220);
    BlockFileReader blk(chain->files, chain->key);
    auto index = ReadUndoIndex(o.undo_dir);
    ASSERT_TRUE(index.ok());
    ASSERT_EQ(index->size(), 220u);
    std::map<BlockHash, UndoPos> where;
    for (const auto& e : *index) where[e.hash] = e.pos;
    UndoFileReader rev(o.undo_dir, ObfuscationKey{}, GetChainParams(ChainType::REGTEST).message_start);
    uint64_t restored = 0;
    {
        StoreStatus st;
        auto db = OpenCoinsDB(o.chainstate, {}, &st);
        ASSERT_TRUE(db) << st.message;
        CoinsCache view(*db, 64 << 20);
        for (int h = 220; h > k; --h) {
            const std::size_t i = std::size_t(h - chain->base_height);
            auto bytes = blk.Read(chain->order.blocks[i]);
            ASSERT_TRUE(bytes.ok());
            auto block = DecodeBlock(*bytes);
            ASSERT_TRUE(block.ok());
            const BlockHash hash = chain->headers.Hash(chain->base_height + int(i));
            ASSERT_EQ(view.GetBestBlock(), hash);
            ASSERT_TRUE(where.contains(hash));
            auto undo = rev.Read(where[hash].file, where[hash].pos, block->hash_prev_block);
            ASSERT_TRUE(undo.ok()) << undo.error().message;
            restored += undo->CoinCount();
            std::string why;
            ASSERT_EQ(DisconnectBlock(*block, h, hash, std::move(*undo), view, &why), DisconnectResult::OK) << h << why;
        }
        ASSERT_TRUE(view.Flush().ok());
    }
    EXPECT_GT(restored, 100u) << "the disconnected blocks spend coins";
    {
        StoreStatus st;
        auto db = OpenCoinsDB(o.chainstate, {}, &st);
        ASSERT_TRUE(db) << st.message;
        auto best = db->GetBestBlock();
        ASSERT_TRUE(best.ok());
        EXPECT_EQ(*best, at_k.tip);
        auto stats = ComputeUtxoStats(*db, uint32_t(k));
        ASSERT_TRUE(stats.ok());
        EXPECT_EQ(stats->hash_serialized.ToHex(), HashOf(at_k));
        EXPECT_EQ(stats->txouts, at_k.utxo->txouts);
        EXPECT_EQ(stats->total_amount, at_k.utxo->total_amount);
    }
    // The rewound chainstate resumes: connecting 151..220 again gives the full run's set, and the
    // undo directory takes the records again (the later index entries win).
    const auto again = MustReplay(o);
    EXPECT_EQ(again.start_height, k + 1);
    EXPECT_EQ(again.height, 220);
    EXPECT_EQ(HashOf(again), HashOf(full));
    EXPECT_EQ(again.undo_records, 70u);
}

TEST(Undo, ReplayRefusesAnUndoDirectoryInsideCoresDirectories)
{
    const auto& blocks = GeneratedBlocks();
    ReplayOptions o;
    o.source.blocks_dir = blocks;
    o.undo_dir = blocks / "undo";
    auto r = Replay(o);
    ASSERT_FALSE(r.ok());
    EXPECT_NE(r.error().message.find("never writes into a Bitcoin Core directory"), std::string::npos) << r.error().message;
    EXPECT_FALSE(fs::exists(blocks / "undo"));
    o.undo_dir = blocks;
    EXPECT_FALSE(Replay(o).ok());
    TempDir t;
    ReplayOptions d;
    d.source.datadir = t.path;
    d.undo_dir = t.path / "regtest" / "undo";
    r = Replay(d);
    ASSERT_FALSE(r.ok());
    EXPECT_NE(r.error().message.find("never writes into a Bitcoin Core directory"), std::string::npos) << r.error().message;
}

// As BlockFileReader's: a server's reader per connection keeps one rev file open, not every one a
// peer's getbspent reached.
TEST(Undo, ReaderKeepsAtMostTheFilesItIsToldOpen)
{
    test::TempDir t;
    const auto dir = fs::canonical(t.path);
    const BlockHash prev = *BlockHash::FromHex("0f9188f13cb7b2c71f2a335e3a4fc328bf5beb436012afca590b1a11466e2206");
    for (uint32_t i = 0; i < 4; ++i) {
        std::vector<uint8_t> bytes;
        AppendUndoRecord(bytes, REGTEST_MAGIC, prev, SerializeBlockUndo(BlockUndo{}));
        std::ofstream(UndoFilePath(dir, i), std::ios::binary).write(reinterpret_cast<const char*>(bytes.data()), std::streamsize(bytes.size()));
    }
    UndoFileReader reader(dir, ObfuscationKey{}, REGTEST_MAGIC);
    for (uint32_t i : {0u, 1u, 2u}) ASSERT_TRUE(reader.Read(i, 8, prev).ok()) << i;
    EXPECT_EQ(test::OpenFilesUnder(dir).size(), 3u) << "without a bound every file read stays open";
    reader.KeepOpenAtMost(2);
    EXPECT_EQ(test::OpenFilesUnder(dir), (std::set<fs::path>{UndoFilePath(dir, 1), UndoFilePath(dir, 2)}));
    for (uint32_t i : {1u, 3u}) ASSERT_TRUE(reader.Read(i, 8, prev).ok()) << i;
    EXPECT_EQ(test::OpenFilesUnder(dir), (std::set<fs::path>{UndoFilePath(dir, 1), UndoFilePath(dir, 3)})) << "file 2 was read least recently";
    reader.KeepOpenAtMost(1);
    EXPECT_EQ(test::OpenFilesUnder(dir), (std::set<fs::path>{UndoFilePath(dir, 3)}));
}

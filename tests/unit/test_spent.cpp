// Blocks with their spent outputs: Core's rev files against the engine's own spent coins, fees
// against the coinbase, the four tables' rows, malformed spent outputs as typed errors.
#include "replay_test_util.h"
#include "test_util.h"

#include <ibdkit/blockfile/blockfile.h>
#include <ibdkit/blockfile/locate.h>
#include <ibdkit/encoding/endian.h>
#include <ibdkit/spent/reader.h>
#include <ibdkit/spent/spent_block.h>
#include <ibdkit/spent/tables.h>

#include "blockfile/undo_file.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <fstream>
#include <limits>
#include <map>
#include <string>
#include <variant>
#include <vector>

namespace ibdkit {
namespace {

namespace fs = std::filesystem;

/// A sink that keeps every cell (tests only: it allocates per cell).
/// A user's own sink, through the public EmitRows (virtual calls).
struct CellSink : RowSinkBase {
    using Cell = std::variant<std::monostate, int64_t, double, bool, std::string>;
    std::vector<std::vector<Cell>> rows{{}};
    void Int(int64_t v) override { rows.back().emplace_back(v); }
    void Real(double v) override { rows.back().emplace_back(v); }
    void Bool(bool v) override { rows.back().emplace_back(v); }
    void Text(std::string_view v) override { rows.back().emplace_back(std::string(v)); }
    void Blob(std::span<const uint8_t> v) override { rows.back().emplace_back(HexOf(v)); }
    void Null() override { rows.back().emplace_back(std::monostate{}); }
    void EndRow() override { rows.emplace_back(); }
    std::size_t Rows() const { return rows.size() - 1; }
    static std::string HexOf(std::span<const uint8_t> v)
    {
        static constexpr char D[] = "0123456789abcdef";
        std::string s;
        for (uint8_t b : v) {
            s += D[b >> 4];
            s += D[b & 15];
        }
        return s;
    }
};
static_assert(RowSink<CellSink>);

/// Every table's rows for a block, checked to have one cell per column of the right kind.
std::map<BlockTable, CellSink> AllRows(const SpentBlock& b)
{
    std::map<BlockTable, CellSink> out;
    for (BlockTable t : ALL_BLOCK_TABLES) {
        CellSink& s = out[t];
        EmitRows(t, b, AddressNetworkOf(b.chain()), s);
        const auto cols = BlockTableColumns(t);
        for (std::size_t r = 0; r < s.Rows(); ++r) {
            EXPECT_EQ(s.rows[r].size(), cols.size()) << BlockTableName(t);
            for (std::size_t c = 0; c < cols.size() && c < s.rows[r].size(); ++c) {
                const auto& cell = s.rows[r][c];
                if (std::holds_alternative<std::monostate>(cell)) {
                    EXPECT_TRUE(cols[c].nullable) << BlockTableName(t) << "." << cols[c].name;
                    continue;
                }
                switch (cols[c].type) {
                case ColumnType::Int: EXPECT_TRUE(std::holds_alternative<int64_t>(cell)) << cols[c].name; break;
                case ColumnType::Real: EXPECT_TRUE(std::holds_alternative<double>(cell)) << cols[c].name; break;
                case ColumnType::Bool: EXPECT_TRUE(std::holds_alternative<bool>(cell)) << cols[c].name; break;
                case ColumnType::Text:
                case ColumnType::Blob: EXPECT_TRUE(std::holds_alternative<std::string>(cell)) << cols[c].name; break;
                }
            }
        }
    }
    return out;
}

/// The spent outputs of block 866,342 in block order (Floresta's test data).
std::vector<Coin> Coins866342()
{
    auto pj = test::TestData("mainnet/blocks/block_866342.spent_utxos.json");
    if (!pj) return {};
    std::ifstream f(*pj);
    const auto j = nlohmann::json::parse(f);
    std::vector<Coin> out;
    for (const auto& e : j) {
        const auto script = test::ParseHex(e["txout"]["script_pubkey"].get<std::string>());
        out.emplace_back(TxOut{e["txout"]["value"].get<Amount>(), Script(script.data(), script.size())},
                         e["creation_height"].get<uint32_t>(), e["is_coinbase"].get<bool>());
    }
    return out;
}

/// Every block of a reader, in order.
std::vector<SpentBlock> ReadAll(const SpentReaderOptions& o)
{
    std::vector<SpentBlock> out;
    auto r = SpentBlockReader::Open(o);
    EXPECT_TRUE(r.ok()) << (r.ok() ? "" : r.error().message);
    if (!r.ok()) return out;
    for (;;) {
        auto b = (*r)->Next();
        EXPECT_TRUE(b.ok()) << (b.ok() ? "" : b.error().message);
        if (!b.ok() || !*b) break;
        out.push_back(std::move(**b));
    }
    return out;
}

TEST(Spent, CoresMainnetRevFileEqualsTheEnginesSpentOutputs)
{
    auto dir = test::TestData("mainnet/blk_0-599");
    if (!dir) FAIL() << "tests/data is incomplete";
    auto chain = LocateFromBlocksDir(*dir, ChainType::MAIN);
    ASSERT_TRUE(chain.ok()) << chain.error().message;
    BlockFileReader blocks(chain->files, chain->key);
    // Core wrote the records of heights 1..40 back to back.
    const auto rev = test::ReadFile(*dir / "rev00000.dat");
    UndoFileReader reader(*dir, ObfuscationKey{}, GetChainParams(ChainType::MAIN).message_start);
    std::vector<SpentBlock> core;
    uint64_t pos = 8;
    for (int h = 1; h <= 40; ++h) {
        ASSERT_LT(pos, rev.size());
        auto u = reader.Read(0, uint32_t(pos), chain->headers.Hash(int(h) - 1));
        ASSERT_TRUE(u.ok()) << h << ": " << u.error().message;
        auto bytes = blocks.Read(chain->order.blocks[std::size_t(h)]);
        ASSERT_TRUE(bytes.ok());
        auto b = SpentBlock::Make(std::move(*bytes), h, std::move(*u), ChainType::MAIN);
        ASSERT_TRUE(b.ok()) << b.error().message;
        core.push_back(std::move(*b));
        pos += ReadLE32(rev.data() + pos - 4) + 32 + 8;
    }

    SpentReaderOptions o;
    o.source.blocks_dir = *dir;
    o.from_height = 1;
    o.to_height = 40;
    const auto engine = ReadAll(o);
    ASSERT_EQ(engine.size(), core.size());
    for (std::size_t i = 0; i < core.size(); ++i) {
        EXPECT_EQ(engine[i].height(), core[i].height());
        EXPECT_EQ(engine[i].hash(), core[i].hash());
        EXPECT_EQ(engine[i].undo(), core[i].undo()) << core[i].height();
        EXPECT_EQ(engine[i].coinbase_value(), 50 * COIN);
        EXPECT_EQ(engine[i].fees(), 0);
    }
}

TEST(Spent, GenesisComesFirstFromEitherSource)
{
    auto dir = test::TestData("mainnet/blk_0-599");
    if (!dir) FAIL() << "tests/data is incomplete";
    SpentReaderOptions o;
    o.source.blocks_dir = *dir;
    o.to_height = 2;
    const auto blocks = ReadAll(o);
    ASSERT_EQ(blocks.size(), 3u);
    EXPECT_EQ(blocks[0].height(), 0);
    EXPECT_EQ(blocks[0].hash(), GetChainParams(ChainType::MAIN).consensus.hash_genesis_block);
    EXPECT_EQ(blocks[0].subsidy(), 50 * COIN);
    EXPECT_EQ(blocks[2].height(), 2);
}

TEST(Spent, Block866342FeesAreTheCoinbaseMinusTheSubsidy)
{
    auto pb = test::TestData("mainnet/blocks/block_866342.raw");
    if (!pb) FAIL() << "tests/data is incomplete";
    const auto coins = Coins866342();
    ASSERT_EQ(coins.size(), 7972u);
    auto b = SpentBlock::FromCoins(test::ReadFile(*pb), 866342, coins, ChainType::MAIN);
    ASSERT_TRUE(b.ok()) << b.error().message;
    EXPECT_EQ(b->subsidy(), 3 * COIN + COIN / 8); // 3.125 BTC after the fourth halving
    EXPECT_EQ(b->fees(), b->coinbase_value() - b->subsidy());
    Amount sum = 0;
    for (std::size_t i = 0; i < b->txs().size(); ++i) sum += b->Fee(i);
    EXPECT_EQ(sum, b->fees());

    auto rows = AllRows(*b);
    ASSERT_EQ(rows[BlockTable::Blocks].Rows(), 1u);
    EXPECT_EQ(std::get<int64_t>(rows[BlockTable::Blocks].rows[0][6]), b->fees());
    EXPECT_EQ(std::get<std::string>(rows[BlockTable::Blocks].rows[0][1]), b->hash().ToHex());
    EXPECT_EQ(std::get<int64_t>(rows[BlockTable::Blocks].rows[0][5]), int64_t(GetBlockWeight(b->view().ToOwned())));
    const CellSink& txs = rows[BlockTable::Transactions];
    ASSERT_EQ(txs.Rows(), 4864u);
    EXPECT_TRUE(std::holds_alternative<std::monostate>(txs.rows[0][2])); // the coinbase has no fee
    Amount row_fees = 0;
    for (std::size_t r = 1; r < txs.Rows(); ++r) {
        const int64_t fee = std::get<int64_t>(txs.rows[r][2]);
        row_fees += fee;
        const int64_t vsize = std::get<int64_t>(txs.rows[r][3]);
        EXPECT_DOUBLE_EQ(std::get<double>(txs.rows[r][4]), double(fee) / double(vsize));
        EXPECT_EQ(vsize, (std::get<int64_t>(txs.rows[r][7]) + 3) / 4);
    }
    EXPECT_EQ(row_fees, b->fees());
    // Inputs: one row per spent coin, in block order, with the coin's value and script.
    const CellSink& ins = rows[BlockTable::Inputs];
    ASSERT_EQ(ins.Rows(), coins.size());
    Amount in_sum = 0;
    for (std::size_t r = 0; r < ins.Rows(); ++r) {
        EXPECT_EQ(std::get<int64_t>(ins.rows[r][5]), coins[r].out.value);
        EXPECT_EQ(std::get<std::string>(ins.rows[r][6]), CellSink::HexOf(coins[r].out.script_pubkey.span()));
        EXPECT_EQ(std::get<int64_t>(ins.rows[r][9]), int64_t(coins[r].height));
        in_sum += coins[r].out.value;
    }
    // The first input spends a P2SH coin (a9 14 … 87): a 3… address.
    EXPECT_EQ(std::get<std::string>(ins.rows[0][7]), "scripthash");
    EXPECT_EQ(std::get<std::string>(ins.rows[0][8]).front(), '3');
    const CellSink& outs = rows[BlockTable::Outputs];
    Amount out_sum = 0;
    for (std::size_t r = 0; r < outs.Rows(); ++r) out_sum += std::get<int64_t>(outs.rows[r][3]);
    EXPECT_EQ(in_sum + b->subsidy(), out_sum); // every satoshi in equals every satoshi out
}

TEST(Spent, SpentOutputsThatDoNotMatchTheBlockAreTypedErrors)
{
    auto pb = test::TestData("mainnet/blocks/block_866342.raw");
    if (!pb) FAIL() << "tests/data is incomplete";
    const auto bytes = test::ReadFile(*pb);
    const auto coins = Coins866342();
    ASSERT_FALSE(coins.empty());
    BlockUndo undo;
    {
        auto b = SpentBlock::FromCoins(bytes, 866342, coins, ChainType::MAIN);
        ASSERT_TRUE(b.ok());
        undo = b->undo();
    }
    // A record with a transaction too few, and one with a coin too few: Corrupt, naming the block.
    BlockUndo short_txs = undo;
    short_txs.vtxundo.pop_back();
    auto r = SpentBlock::Make(bytes, 866342, short_txs, ChainType::MAIN);
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.error().code, Errc::Corrupt);
    EXPECT_NE(r.error().message.find("height 866342"), std::string::npos) << r.error().message;
    BlockUndo short_coins = undo;
    short_coins.vtxundo[10].prevout.pop_back();
    r = SpentBlock::Make(bytes, 866342, short_coins, ChainType::MAIN);
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.error().code, Errc::Corrupt);
    BlockUndo extra = undo;
    extra.vtxundo[3].prevout.push_back(extra.vtxundo[3].prevout.front());
    EXPECT_EQ(SpentBlock::Make(bytes, 866342, extra, ChainType::MAIN).error().code, Errc::Corrupt);
    // A caller's list one coin short or long.
    EXPECT_EQ(SpentBlock::FromCoins(bytes, 866342, std::span(coins).first(coins.size() - 1), ChainType::MAIN).error().code,
              Errc::InvalidValue);
    auto more = coins;
    more.push_back(coins.back());
    EXPECT_EQ(SpentBlock::FromCoins(bytes, 866342, more, ChainType::MAIN).error().code, Errc::InvalidValue);
    // Values: a coin worth less than its transaction's outputs, one above MAX_MONEY, and a
    // coinbase claiming more than subsidy + fees (the same block one halving later).
    BlockUndo poor = undo;
    for (Coin& c : poor.vtxundo[0].prevout) c.out.value = 0;
    r = SpentBlock::Make(bytes, 866342, poor, ChainType::MAIN);
    ASSERT_FALSE(r.ok());
    EXPECT_NE(r.error().message.find("bad-txns-in-belowout"), std::string::npos) << r.error().message;
    BlockUndo rich = undo;
    rich.vtxundo[0].prevout[0].out.value = MAX_MONEY + 1;
    r = SpentBlock::Make(bytes, 866342, rich, ChainType::MAIN);
    ASSERT_FALSE(r.ok());
    EXPECT_NE(r.error().message.find("bad-txns-inputvalues-outofrange"), std::string::npos) << r.error().message;
    // A huge value after an ordinary one: refused before it is added (no signed overflow).
    BlockUndo huge = undo;
    auto two = std::find_if(huge.vtxundo.begin(), huge.vtxundo.end(), [](const TxUndo& u) { return u.prevout.size() >= 2; });
    ASSERT_NE(two, huge.vtxundo.end());
    two->prevout[1].out.value = std::numeric_limits<Amount>::max();
    r = SpentBlock::Make(bytes, 866342, huge, ChainType::MAIN);
    ASSERT_FALSE(r.ok());
    EXPECT_NE(r.error().message.find("bad-txns-inputvalues-outofrange"), std::string::npos) << r.error().message;
    r = SpentBlock::Make(bytes, 1'050'000, undo, ChainType::MAIN);
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.error().code, Errc::Corrupt);
    EXPECT_NE(r.error().message.find("bad-cb-amount"), std::string::npos) << r.error().message;
    // Bytes that are not a block.
    EXPECT_FALSE(SpentBlock::Make(std::vector<uint8_t>(bytes.begin(), bytes.begin() + 1000), 866342, undo, ChainType::MAIN).ok());
}

TEST(Spent, MalformedUndoRecordsAreTypedErrors)
{
    auto pb = test::TestData("mainnet/blocks/block_866342.raw");
    if (!pb) FAIL() << "tests/data is incomplete";
    const auto bytes = test::ReadFile(*pb);
    auto b = SpentBlock::FromCoins(bytes, 866342, Coins866342(), ChainType::MAIN);
    ASSERT_TRUE(b.ok());
    const auto undo_bytes = SerializeBlockUndo(b->undo());
    // Truncated anywhere: a decoding error, never a crash.
    for (std::size_t cut : {std::size_t{1}, std::size_t{100}, undo_bytes.size() / 2, undo_bytes.size() - 1}) {
        auto u = DecodeBlockUndo(std::span(undo_bytes).first(cut));
        ASSERT_FALSE(u.ok()) << cut;
        EXPECT_EQ(u.error().code, Errc::EndOfData) << cut;
    }
    // A record whose transaction count is wrong: one lower leaves bytes over, one higher runs out.
    ASSERT_EQ(undo_bytes[0], 0xfd); // 4863 transactions after the coinbase: a three-byte CompactSize
    EXPECT_EQ(undo_bytes[1] | undo_bytes[2] << 8, 4863);
    const auto with_count = [&](unsigned n) {
        auto v = undo_bytes;
        v[1] = uint8_t(n);
        v[2] = uint8_t(n >> 8);
        return v;
    };
    EXPECT_EQ(DecodeBlockUndo(with_count(4862)).error().code, Errc::TrailingData);
    EXPECT_EQ(DecodeBlockUndo(with_count(4864)).error().code, Errc::EndOfData);
    // A rev file cut short inside a record: EndOfData from the reader.
    test::TempDir t;
    const BlockHash prev = b->view().header().hash_prev_block;
    std::vector<uint8_t> rec;
    AppendUndoRecord(rec, GetChainParams(ChainType::MAIN).message_start, prev, undo_bytes);
    {
        std::ofstream(t.path / "rev00000.dat", std::ios::binary).write(reinterpret_cast<const char*>(rec.data()),
                                                                        std::streamsize(rec.size() - 40));
    }
    UndoFileReader reader(t.path, ObfuscationKey{}, GetChainParams(ChainType::MAIN).message_start);
    auto u = reader.Read(0, 8, prev);
    ASSERT_FALSE(u.ok());
    EXPECT_EQ(u.error().code, Errc::EndOfData);
}

TEST(Spent, ReplayReaderDeliversARangeWithConsistentFees)
{
    const auto& blocks = test::GeneratedBlocks();
    SpentReaderOptions o;
    EXPECT_TRUE(o.skip_scripts); // the reader's default, unlike the runs': blk files trusted as a node's own
    o.source.blocks_dir = blocks;
    o.source.chain = ChainType::REGTEST;
    o.from_height = 50;
    o.to_height = 120;
    o.threads = 2;
    const auto got = ReadAll(o);
    ASSERT_EQ(got.size(), 71u);
    uint64_t spends = 0;
    for (std::size_t i = 0; i < got.size(); ++i) {
        EXPECT_EQ(got[i].height(), 50 + int(i));
        EXPECT_EQ(got[i].fees() + got[i].subsidy(), got[i].coinbase_value()) << got[i].height();
        spends += got[i].undo().CoinCount();
        auto rows = AllRows(got[i]);
        EXPECT_EQ(rows[BlockTable::Inputs].Rows(), got[i].undo().CoinCount());
    }
    EXPECT_GT(spends, 50u); // the generated chain spends coins in most blocks

    // The same blocks' undo data as the engine writes it into rev files.
    test::TempDir t;
    ReplayOptions ro;
    ro.source.blocks_dir = blocks;
    ro.source.chain = ChainType::REGTEST;
    ro.stop_height = 120;
    ro.statistics = false;
    ro.skip_scripts = true;
    ro.undo_dir = t.path / "undo";
    test::MustReplay(ro);
    auto index = ReadUndoIndex(ro.undo_dir);
    ASSERT_TRUE(index.ok());
    UndoFileReader rev(ro.undo_dir, ObfuscationKey{}, GetChainParams(ChainType::REGTEST).message_start);
    std::size_t matched = 0;
    for (const auto& e : *index) {
        if (e.height < 50 || e.height > 120) continue;
        const SpentBlock& b = got[std::size_t(e.height - 50)];
        auto u = rev.Read(e.pos.file, e.pos.pos, b.view().header().hash_prev_block);
        ASSERT_TRUE(u.ok()) << u.error().message;
        EXPECT_EQ(*u, b.undo()) << e.height;
        ++matched;
    }
    EXPECT_EQ(matched, got.size());
}

TEST(Spent, AReaderDroppedEarlyStopsItsReplay)
{
    SpentReaderOptions o;
    o.source.blocks_dir = test::GeneratedBlocks();
    o.read_ahead = 1;
    auto r = SpentBlockReader::Open(o);
    ASSERT_TRUE(r.ok()) << r.error().message;
    auto b = (*r)->Next();
    ASSERT_TRUE(b.ok() && *b);
    EXPECT_EQ((*b)->height(), 0);
    r->reset(); // joins the replay thread, which sees the reader gone
}

TEST(Spent, OpenRefusesWhatItCannotRead)
{
    SpentReaderOptions o;
    EXPECT_EQ(SpentBlockReader::Open(o).error().code, Errc::InvalidValue);
    o.source.blocks_dir = "/nonexistent/blocks";
    EXPECT_FALSE(SpentBlockReader::Open(o).ok());
    o.source.blocks_dir = test::GeneratedBlocks();
    o.from_height = 10;
    o.to_height = 5;
    EXPECT_EQ(SpentBlockReader::Open(o).error().code, Errc::InvalidValue);
    // A blocks directory that ends below --to.
    o.from_height = 0;
    o.to_height = 100000;
    auto r = SpentBlockReader::Open(o);
    ASSERT_TRUE(r.ok());
    Result<std::optional<SpentBlock>> last = std::optional<SpentBlock>{};
    for (;;) {
        last = (*r)->Next();
        if (!last.ok() || !*last) break;
    }
    ASSERT_FALSE(last.ok());
    EXPECT_NE(last.error().message.find("below --to"), std::string::npos) << last.error().message;
}

} // namespace
} // namespace ibdkit

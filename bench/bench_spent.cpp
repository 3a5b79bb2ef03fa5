// Blocks with their spent outputs (spent/): mainnet block 866,342 with the coins its inputs spend
// (tests/data). Group SpentBlock_866342, per byte of block: "make" checks the spent coins against
// the block and computes its fees (SpentBlock::Make, as every source does per block); "rows" is
// the four tables' row producers (EmitRows) into a sink that only measures its cells, so the figure
// is the producers' own cost; "make+rows" both, what an export costs beyond reading and writing.
#include "bench_case.h"

#include <ibdkit/spent/spent_block.h>
#include <ibdkit/spent/tables.h>

#include "spent/emit_rows.h"

#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <memory>

namespace ibdkit::bench {
namespace {

struct Input {
    std::vector<uint8_t> bytes;
    BlockUndo undo;
    std::unique_ptr<SpentBlock> block;
};

/// Sums the cells' sizes, so that no cell can be optimised away.
struct MeasureSink {
    uint64_t n{0};
    void Int(int64_t v) { n += uint64_t(v) & 7; }
    void Real(double v) { n += v > 0; }
    void Bool(bool v) { n += v; }
    void Text(std::string_view v) { n += v.size(); }
    void Blob(std::span<const uint8_t> v) { n += v.size(); }
    void Null() { ++n; }
    void EndRow() { ++n; }
};
static_assert(RowSink<MeasureSink>);

std::shared_ptr<Input> Load(std::string* skip)
{
    auto block_path = TestDataFile("mainnet/blocks/block_866342.raw");
    auto spent_path = TestDataFile("mainnet/blocks/block_866342.spent_utxos.json");
    if (!block_path || !spent_path) {
        *skip = "tests/data/mainnet/blocks/block_866342.* not present";
        return nullptr;
    }
    auto in = std::make_shared<Input>();
    std::ifstream bf(*block_path, std::ios::binary);
    in->bytes.assign(std::istreambuf_iterator<char>(bf), std::istreambuf_iterator<char>());
    std::ifstream sf(*spent_path);
    const auto j = nlohmann::json::parse(sf);
    std::vector<Coin> coins;
    for (const auto& e : j) {
        const std::string hex = e["txout"]["script_pubkey"].get<std::string>();
        std::vector<uint8_t> script(hex.size() / 2);
        for (std::size_t i = 0; i < script.size(); ++i) script[i] = uint8_t(std::stoi(hex.substr(2 * i, 2), nullptr, 16));
        coins.emplace_back(TxOut{e["txout"]["value"].get<Amount>(), Script(script.data(), script.size())},
                           e["creation_height"].get<uint32_t>(), e["is_coinbase"].get<bool>());
    }
    auto b = SpentBlock::FromCoins(in->bytes, 866342, coins, ChainType::MAIN);
    if (!b) {
        *skip = "block 866342 with its spent outputs does not check: " + b.error().message;
        return nullptr;
    }
    in->undo = b->undo();
    in->block = std::make_unique<SpentBlock>(std::move(*b));
    return in;
}

double Size()
{
    auto p = TestDataFile("mainnet/blocks/block_866342.raw");
    return p ? double(std::filesystem::file_size(*p)) : 1.0;
}

uint64_t AllRows(const SpentBlock& b)
{
    MeasureSink sink;
    for (BlockTable t : ALL_BLOCK_TABLES) EmitRowsTo(t, b, AddressNetwork::Main, sink);
    return sink.n;
}

const Registrar make_case({"SpentBlock_866342", "make", "byte", Size(), [](std::string* skip) -> Op {
    auto in = Load(skip);
    if (!in) return {};
    return [in] {
        auto b = SpentBlock::Make(in->bytes, 866342, in->undo, ChainType::MAIN);
        DoNotOptimize(b.ok());
    };
}});

const Registrar rows_case({"SpentBlock_866342", "rows", "byte", Size(), [](std::string* skip) -> Op {
    auto in = Load(skip);
    if (!in) return {};
    return [in] { DoNotOptimize(AllRows(*in->block)); };
}});

const Registrar both_case({"SpentBlock_866342", "make+rows", "byte", Size(), [](std::string* skip) -> Op {
    auto in = Load(skip);
    if (!in) return {};
    return [in] {
        auto b = SpentBlock::Make(in->bytes, 866342, in->undo, ChainType::MAIN);
        DoNotOptimize(b.ok() ? AllRows(*b) : 0);
    };
}});

} // namespace
} // namespace ibdkit::bench

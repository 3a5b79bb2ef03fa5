// Script verification of a whole real block: every non-coinbase input of mainnet block 866,342
// (7,972 inputs, 2,373 of them taproot) through VerifyInput under the block's flags, with each
// transaction's PrecomputedTxData made once, as the engine would. One thread, no signature cache.
//
// Group: VerifyScripts_866342, per input.
#include "bench.h"

#include <ibdkit/chain/params.h>
#include <ibdkit/encoding/hex.h>
#include <ibdkit/primitives/block.h>
#include <ibdkit/script/verify.h>

#include <fstream>
#include <iterator>
#include <memory>
#include <stdexcept>
#include <string>

namespace ibdkit::bench {
namespace {

struct BlockAndSpent {
    Block block;
    std::vector<TxOut> spent;
};

// The "value" and "script_pubkey" fields of tests/data's spent-outputs file, in order (a minimal
// reader for that file's fixed shape: the bench library has no JSON parser).
std::vector<TxOut> ReadSpent(const std::string& text)
{
    std::vector<TxOut> out;
    const std::string value_key = "\"value\":", script_key = "\"script_pubkey\":";
    for (std::size_t pos = text.find(value_key); pos != std::string::npos; pos = text.find(value_key, pos + 1)) {
        TxOut o;
        o.value = std::stoll(text.substr(pos + value_key.size(), 24));
        const std::size_t s = text.find(script_key, pos);
        const std::size_t open = s == std::string::npos ? s : text.find('"', s + script_key.size());
        const std::size_t close = open == std::string::npos ? open : text.find('"', open + 1);
        if (close == std::string::npos) throw std::runtime_error("unexpected spent-outputs file");
        auto bytes = ParseHex(std::string_view(text).substr(open + 1, close - open - 1));
        if (!bytes) throw std::runtime_error("unexpected spent-outputs file");
        o.script_pubkey = Script(*bytes);
        out.push_back(std::move(o));
    }
    return out;
}

std::shared_ptr<BlockAndSpent> Load(std::string* skip)
{
    auto block_path = TestDataFile("mainnet/blocks/block_866342.raw");
    auto spent_path = TestDataFile("mainnet/blocks/block_866342.spent_utxos.json");
    if (!block_path || !spent_path) {
        *skip = "tests/data/mainnet/blocks/block_866342.* not present";
        return nullptr;
    }
    std::ifstream bf(*block_path, std::ios::binary);
    const std::vector<uint8_t> bytes((std::istreambuf_iterator<char>(bf)), std::istreambuf_iterator<char>());
    auto block = DecodeBlock(bytes);
    if (!block) {
        *skip = "block 866342 does not decode";
        return nullptr;
    }
    std::ifstream sf(*spent_path);
    const std::string text((std::istreambuf_iterator<char>(sf)), std::istreambuf_iterator<char>());
    return std::make_shared<BlockAndSpent>(BlockAndSpent{std::move(*block), ReadSpent(text)});
}

const Registrar verify_scripts{Case{
    "VerifyScripts_866342", "", "input", 7972,
    [](std::string* skip) -> Op {
        auto d = Load(skip);
        if (!d) return {};
        const ScriptFlags flags = GetBlockScriptFlags(GetChainParams(ChainType::MAIN).consensus, 866342, d->block.GetHash());
        return [d, flags] {
            std::size_t next = 0, failed = 0;
            for (std::size_t t = 1; t < d->block.vtx.size(); ++t) {
                const Transaction& tx = d->block.vtx[t];
                const std::span<const TxOut> spent(d->spent.data() + next, tx.vin().size());
                next += tx.vin().size();
                PrecomputedTxData txdata;
                txdata.Init(tx, std::vector<TxOut>(spent.begin(), spent.end()));
                for (uint32_t i = 0; i < tx.vin().size(); ++i) failed += !VerifyInput(tx, i, spent, flags, &txdata).ok();
            }
            if (failed != 0) throw std::runtime_error("VerifyScripts_866342: an input failed");
            DoNotOptimize(failed);
        };
    },
    /*smoke_ok=*/false}};

} // namespace
} // namespace ibdkit::bench

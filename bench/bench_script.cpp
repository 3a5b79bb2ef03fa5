// Script verification of a whole real block: every non-coinbase input of mainnet block 866,342
// (7,972 inputs, 2,373 of them taproot) through VerifyInput under the block's flags, with each
// transaction's PrecomputedTxData made once, as the engine would. One thread, no signature cache.
// When libbitcoinkernel.so loads, Bitcoin Core's engine does the same through its C API
// (btck_precomputed_transaction_data_create once per transaction, btck_script_pubkey_verify per
// input; transactions and outputs made untimed, as ours are decoded untimed).
//
// Group: VerifyScripts_866342, per input; variants "ibdkit" and "core-kernel".
//
// VerifyScripts_signed: the same loop over a `gen-chain --signed` chain (mainnet profile, 110
// blocks, ~3 MB, seed 2, made in setup): 8,014 inputs, P2PKH, P2WPKH, P2SH/P2WSH 2-of-3 multisig,
// P2TR key path and tapscript in mainnet's shares. Both groups are what scripts/script_overhead.py
// counts under callgrind to split each input's instructions between libsecp256k1 and the rest.
#include "bench_case.h"

#include <ibdkit/chain/params.h>
#include <ibdkit/consensus/script_flags.h>
#include <ibdkit/encoding/hex.h>
#include <ibdkit/primitives/block.h>

#include "gen/chain_gen.h"
#include "script/verify.h"

#include <unordered_map>

#include <dlfcn.h>

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

// The parts of libbitcoinkernel's C API that verify a script, loaded with dlopen.
struct KernelScriptApi {
    void* (*tx_create)(const void*, std::size_t){nullptr};
    void* (*spk_create)(const void*, std::size_t){nullptr};
    void* (*out_create)(const void*, int64_t){nullptr};
    void* (*txdata_create)(const void*, const void**, std::size_t){nullptr};
    void (*txdata_destroy)(void*){nullptr};
    int (*verify)(const void*, int64_t, const void*, const void*, uint32_t, uint32_t, uint8_t*){nullptr};
};

const KernelScriptApi* LoadKernelScriptApi(std::string* why)
{
    static const KernelScriptApi* api = []() -> const KernelScriptApi* {
        auto lib = FindKernelLib("", nullptr);
        if (!lib) return nullptr;
        void* h = dlopen(lib->c_str(), RTLD_NOW | RTLD_LOCAL);
        if (!h) return nullptr;
        auto* k = new KernelScriptApi;
        k->tx_create = reinterpret_cast<decltype(k->tx_create)>(dlsym(h, "btck_transaction_create"));
        k->spk_create = reinterpret_cast<decltype(k->spk_create)>(dlsym(h, "btck_script_pubkey_create"));
        k->out_create = reinterpret_cast<decltype(k->out_create)>(dlsym(h, "btck_transaction_output_create"));
        k->txdata_create = reinterpret_cast<decltype(k->txdata_create)>(dlsym(h, "btck_precomputed_transaction_data_create"));
        k->txdata_destroy = reinterpret_cast<decltype(k->txdata_destroy)>(dlsym(h, "btck_precomputed_transaction_data_destroy"));
        k->verify = reinterpret_cast<decltype(k->verify)>(dlsym(h, "btck_script_pubkey_verify"));
        if (!k->tx_create || !k->spk_create || !k->out_create || !k->txdata_create || !k->txdata_destroy || !k->verify) return nullptr;
        return k;
    }();
    if (!api && why) *why = "libbitcoinkernel.so with the script API not loadable (set IBDKIT_KERNEL_LIB)";
    return api;
}

// Core's objects for the block, made once (kept for the process: the bench runs it to the end).
struct KernelBlock {
    struct Tx {
        void* tx;
        std::vector<void*> scripts;
        std::vector<const void*> outputs;
        std::vector<int64_t> amounts;
    };
    std::vector<Tx> txs;
};

const Registrar verify_scripts_core{Case{
    "VerifyScripts_866342", "core-kernel", "input", 7972,
    [](std::string* skip) -> Op {
        const KernelScriptApi* k = LoadKernelScriptApi(skip);
        if (!k) return {};
        auto d = Load(skip);
        if (!d) return {};
        const ScriptFlags flags = GetBlockScriptFlags(GetChainParams(ChainType::MAIN).consensus, 866342, d->block.GetHash());
        auto kb = std::make_shared<KernelBlock>();
        std::size_t next = 0;
        for (std::size_t t = 1; t < d->block.vtx.size(); ++t) {
            const Transaction& tx = d->block.vtx[t];
            const std::vector<uint8_t> raw = EncodeTransaction(tx);
            KernelBlock::Tx ktx{k->tx_create(raw.data(), raw.size()), {}, {}, {}};
            if (!ktx.tx) throw std::runtime_error("btck_transaction_create failed");
            for (std::size_t i = 0; i < tx.vin().size(); ++i) {
                const TxOut& out = d->spent[next + i];
                void* spk = k->spk_create(out.script_pubkey.data(), out.script_pubkey.size());
                ktx.scripts.push_back(spk);
                ktx.outputs.push_back(k->out_create(spk, out.value));
                ktx.amounts.push_back(out.value);
            }
            next += tx.vin().size();
            kb->txs.push_back(std::move(ktx));
        }
        return [k, kb, flags] {
            std::size_t failed = 0;
            for (const KernelBlock::Tx& t : kb->txs) {
                void* txdata = k->txdata_create(t.tx, const_cast<const void**>(t.outputs.data()), t.outputs.size());
                for (uint32_t i = 0; i < t.scripts.size(); ++i) {
                    uint8_t status = 0;
                    failed += k->verify(t.scripts[i], t.amounts[i], t.tx, txdata, i, flags, &status) != 1;
                }
                k->txdata_destroy(txdata);
            }
            if (failed != 0) throw std::runtime_error("VerifyScripts_866342/core-kernel: an input failed");
            DoNotOptimize(failed);
        };
    },
    /*smoke_ok=*/false}};

const Registrar verify_scripts{Case{
    "VerifyScripts_866342", "ibdkit", "input", 7972,
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

// The transactions of a generated signed chain with the outputs they spend and their block's flags.
struct SignedChain {
    std::vector<Block> blocks;
    struct Tx {
        const Transaction* tx;
        std::vector<TxOut> spent;
        ScriptFlags flags;
    };
    std::vector<Tx> txs;
    std::size_t inputs{0};
};

constexpr std::size_t SIGNED_CHAIN_INPUTS = 8014;

std::shared_ptr<SignedChain> MakeSignedChain()
{
    ChainGenOptions opts = MainnetChainGenOptions(110);
    opts.target_bytes = 3'000'000;
    opts.start_time = 1'700'000'000;
    opts.seed = 2;
    opts.signed_spends = true;
    ChainGenerator gen(opts);
    auto chain = std::make_shared<SignedChain>();
    while (!gen.Done()) chain->blocks.push_back(gen.Next());
    const ConsensusParams& params = GetChainParams(ChainType::REGTEST).consensus;
    std::unordered_map<OutPoint, TxOut, OutPointHasher> coins;
    for (std::size_t b = 0; b < chain->blocks.size(); ++b) {
        const Block& block = chain->blocks[b];
        const ScriptFlags flags = GetBlockScriptFlags(params, int(b + 1), block.GetHash());
        for (const Transaction& tx : block.vtx) {
            if (!tx.IsCoinBase()) {
                SignedChain::Tx entry{&tx, {}, flags};
                for (const TxIn& in : tx.vin()) {
                    auto it = coins.find(in.prevout);
                    if (it == coins.end()) throw std::runtime_error("signed chain spends an unknown output");
                    entry.spent.push_back(std::move(it->second));
                    coins.erase(it);
                }
                chain->inputs += entry.spent.size();
                chain->txs.push_back(std::move(entry));
            }
            for (uint32_t o = 0; o < tx.vout().size(); ++o) coins.emplace(OutPoint{tx.GetHash(), o}, tx.vout()[o]);
        }
    }
    if (chain->inputs != SIGNED_CHAIN_INPUTS) {
        throw std::runtime_error("VerifyScripts_signed: the generator now makes " + std::to_string(chain->inputs) +
                                 " inputs; update SIGNED_CHAIN_INPUTS");
    }
    return chain;
}

const Registrar verify_scripts_signed{Case{
    "VerifyScripts_signed", "ibdkit", "input", double(SIGNED_CHAIN_INPUTS),
    [](std::string*) -> Op {
        auto chain = MakeSignedChain();
        return [chain] {
            std::size_t failed = 0;
            for (const SignedChain::Tx& t : chain->txs) {
                PrecomputedTxData txdata;
                txdata.Init(*t.tx, t.spent);
                for (uint32_t i = 0; i < t.spent.size(); ++i) failed += !VerifyInput(*t.tx, i, t.spent, t.flags, &txdata).ok();
            }
            if (failed != 0) throw std::runtime_error("VerifyScripts_signed: an input failed");
            DoNotOptimize(failed);
        };
    },
    /*smoke_ok=*/false}};

} // namespace
} // namespace ibdkit::bench

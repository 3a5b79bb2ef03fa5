// Block decoding and checking on real mainnet blocks (Core's DeserializeBlockTest and
// DeserializeAndCheckBlockTest), the zero-copy view walk, and — when py-bitcoinkernel's
// libbitcoinkernel.so can be loaded — Bitcoin Core's own decode/check in the same interleaved run.
//
// Groups: DeserializeBlockTest, DeserializeAndCheckBlockTest, BlockViewWalk (413,567, Core's
// block), and the same with a _481829 / _866342 suffix. Decoding reads from a DataStream<Policy>,
// as Core's benchmark does, so every buffer policy is a variant; "core-kernel" is Core.
#include "bench_case.h"

#include <ibdkit/chain/params.h>
#include <ibdkit/consensus/check.h>
#include <ibdkit/primitives/block.h>
#include <ibdkit/primitives/block_view.h>

#include "memory/policy.h"
#include "stream/streams.h"

#include <dlfcn.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <memory>

namespace ibdkit::bench {
namespace {

using Bytes = std::vector<uint8_t>;

std::shared_ptr<Bytes> LoadBlock(const std::string& rel, std::string* skip)
{
    auto path = TestDataFile(rel);
    if (!path) {
        *skip = "tests/data/" + rel + " not present";
        return nullptr;
    }
    std::ifstream f(*path, std::ios::binary);
    auto b = std::make_shared<Bytes>((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
    if (!DecodeBlock(*b)) {
        *skip = rel + " does not decode";
        return nullptr;
    }
    return b;
}

std::string Rel(int height) { return "mainnet/blocks/block_" + std::to_string(height) + ".raw"; }
std::string Group(const char* base, int height)
{
    return height == 413567 ? std::string(base) : std::string(base) + "_" + std::to_string(height);
}
double BlockSize(int height)
{
    auto p = TestDataFile(Rel(height));
    return p ? double(std::filesystem::file_size(*p)) : 1.0;
}

/// A stream holding the block plus one extra byte, so reading the block never empties (and
/// clears) it and Rewind brings it back: Core's benchmark setup.
template <typename P>
std::shared_ptr<DataStream<P>> StreamOf(const Bytes& b)
{
    auto s = std::make_shared<DataStream<P>>(std::span<const uint8_t>(b));
    const std::byte extra{0};
    s->write(std::span<const std::byte>(&extra, 1));
    return s;
}

template <typename P>
Case DeserializeCase(int height)
{
    return {Group("DeserializeBlockTest", height), std::string(P::name), "block", 1, [height](std::string* skip) -> Op {
                auto raw = LoadBlock(Rel(height), skip);
                if (!raw) return {};
                auto stream = StreamOf<P>(*raw);
                const std::size_t size = raw->size();
                return [stream, size] {
                    Block block;
                    *stream >> block;
                    DoNotOptimize(block.vtx.data());
                    if (!stream->Rewind(size)) std::abort();
                };
            }};
}

template <typename P>
Case DeserializeAndCheckCase(int height)
{
    return {Group("DeserializeAndCheckBlockTest", height), std::string(P::name), "block", 1, [height](std::string* skip) -> Op {
                auto raw = LoadBlock(Rel(height), skip);
                if (!raw) return {};
                auto stream = StreamOf<P>(*raw);
                const std::size_t size = raw->size();
                const ConsensusParams* params = &GetChainParams(ChainType::MAIN).consensus;
                return [stream, size, params] {
                    Block block;
                    *stream >> block;
                    if (!stream->Rewind(size)) std::abort();
                    BlockValidationState state;
                    auto checked = CheckBlock(std::move(block), state, *params);
                    if (!checked) std::abort();
                    DoNotOptimize(checked->block().vtx.data());
                };
            }};
}

Case ViewWalkCase(int height)
{
    return {Group("BlockViewWalk", height), "", "byte", BlockSize(height), [height](std::string* skip) -> Op {
                auto raw = LoadBlock(Rel(height), skip);
                if (!raw) return {};
                return [raw] {
                    // Parse (the structural walk) then visit every transaction, input, witness item
                    // and output as spans: no allocation, no hashing.
                    const BlockView v = BlockView::ParseOrThrow(*raw);
                    uint64_t acc = 0;
                    for (TxView tx : v.txs()) {
                        for (InputView in : tx.inputs()) {
                            acc += in.script_sig.size() + in.sequence + in.prevout_bytes[0];
                            for (ByteSpan item : in.witness) acc += item.size();
                        }
                        for (OutputView out : tx.outputs()) acc += uint64_t(out.value) + out.script_pubkey.size();
                    }
                    DoNotOptimize(acc);
                };
            }};
}

// Every txid and wtxid of the block from the view: one multi-buffer batch (Sha256dMany) vs one
// SHA256d stream per id (TxView::ComputeTxid/ComputeWtxid). Isolates the hashing share of decoding.
Case TxIdsCase(int height, bool batch)
{
    return {Group("BlockTxIds", height), batch ? "batch" : "per-tx", "block", 1, [height, batch](std::string* skip) -> Op {
                auto raw = LoadBlock(Rel(height), skip);
                if (!raw) return {};
                auto view = std::make_shared<BlockView>(BlockView::ParseOrThrow(*raw));
                // The view points into *raw: the ops keep both alive.
                if (batch) {
                    return [view, raw] {
                        BlockTxIds ids = view->ComputeTxIds();
                        DoNotOptimize(ids.txids.data());
                    };
                }
                return [view, raw] {
                    uint8_t acc = 0;
                    for (TxView tx : view->txs()) {
                        acc ^= tx.ComputeTxid().ToUint256().data()[0];
                        if (tx.HasWitness()) acc ^= tx.ComputeWtxid().ToUint256().data()[0];
                    }
                    DoNotOptimize(acc);
                };
            }};
}

// ---- Bitcoin Core's engine through libbitcoinkernel's C API (dlopen; optional) ----------------

struct Kernel {
    void* (*block_create)(const void*, std::size_t){nullptr};
    void (*block_destroy)(void*){nullptr};
    int32_t (*block_check)(void*, const void*, uint32_t, void*){nullptr};
    void* (*chain_parameters_create)(uint8_t){nullptr};
    const void* (*get_consensus_params)(void*){nullptr};
    void* (*state_create)(){nullptr};
    void (*state_destroy)(void*){nullptr};
    const void* consensus{nullptr};
};

const Kernel* LoadKernel(std::string* why)
{
    static const Kernel* kernel = []() -> const Kernel* {
        std::vector<std::string> paths;
        if (const char* env = std::getenv("IBDKIT_KERNEL_LIB")) paths.emplace_back(env);
        paths.emplace_back("/root/.pyenv/versions/3.11.7/lib/python3.11/site-packages/pbk/_libs/libbitcoinkernel.so");
        paths.emplace_back("libbitcoinkernel.so");
        void* h = nullptr;
        for (const auto& p : paths) {
            if ((h = dlopen(p.c_str(), RTLD_NOW | RTLD_LOCAL))) break;
        }
        if (!h) return nullptr;
        auto* k = new Kernel;
        k->block_create = reinterpret_cast<decltype(k->block_create)>(dlsym(h, "btck_block_create"));
        k->block_destroy = reinterpret_cast<decltype(k->block_destroy)>(dlsym(h, "btck_block_destroy"));
        k->block_check = reinterpret_cast<decltype(k->block_check)>(dlsym(h, "btck_block_check"));
        k->chain_parameters_create = reinterpret_cast<decltype(k->chain_parameters_create)>(dlsym(h, "btck_chain_parameters_create"));
        k->get_consensus_params = reinterpret_cast<decltype(k->get_consensus_params)>(dlsym(h, "btck_chain_parameters_get_consensus_params"));
        k->state_create = reinterpret_cast<decltype(k->state_create)>(dlsym(h, "btck_block_validation_state_create"));
        k->state_destroy = reinterpret_cast<decltype(k->state_destroy)>(dlsym(h, "btck_block_validation_state_destroy"));
        if (!k->block_create || !k->block_destroy || !k->block_check || !k->chain_parameters_create ||
            !k->get_consensus_params || !k->state_create || !k->state_destroy) {
            return nullptr;
        }
        k->consensus = k->get_consensus_params(k->chain_parameters_create(0 /* mainnet */));
        return k;
    }();
    if (!kernel && why) *why = "libbitcoinkernel.so not loadable (set IBDKIT_KERNEL_LIB)";
    return kernel;
}

Case CoreDeserializeCase(int height)
{
    return {Group("DeserializeBlockTest", height), "core-kernel", "block", 1, [height](std::string* skip) -> Op {
                const Kernel* k = LoadKernel(skip);
                if (!k) return {};
                auto raw = LoadBlock(Rel(height), skip);
                if (!raw) return {};
                return [k, raw] {
                    // btck_block_create: copy into a DataStream, deserialize (txids/wtxids computed).
                    void* b = k->block_create(raw->data(), raw->size());
                    if (!b) std::abort();
                    k->block_destroy(b);
                };
            }};
}

Case CoreDeserializeAndCheckCase(int height)
{
    return {Group("DeserializeAndCheckBlockTest", height), "core-kernel", "block", 1, [height](std::string* skip) -> Op {
                const Kernel* k = LoadKernel(skip);
                if (!k) return {};
                auto raw = LoadBlock(Rel(height), skip);
                if (!raw) return {};
                return [k, raw] {
                    void* b = k->block_create(raw->data(), raw->size());
                    void* st = k->state_create();
                    if (!b || k->block_check(b, k->consensus, 3 /* POW | MERKLE */, st) != 1) std::abort();
                    k->state_destroy(st);
                    k->block_destroy(b);
                };
            }};
}

void RegisterFor(int height)
{
    RegisterPerPolicy([height]<typename P>(P) { return DeserializeCase<P>(height); });
    Registry().push_back(CoreDeserializeCase(height));
    RegisterPerPolicy([height]<typename P>(P) { return DeserializeAndCheckCase<P>(height); });
    Registry().push_back(CoreDeserializeAndCheckCase(height));
    Registry().push_back(ViewWalkCase(height));
    Registry().push_back(TxIdsCase(height, true));
    Registry().push_back(TxIdsCase(height, false));
}

const bool registered = [] {
    for (int h : {413567, 481829, 866342}) {
        RegisterFor(h);
    }
    return true;
}();

} // namespace
} // namespace ibdkit::bench

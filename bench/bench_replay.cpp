// ReplayDefaultChain: the whole IBD pipeline (read, decode, CheckBlock, connect, flush, stats) over
// the default generated chain, once per op, for every buffer policy. Unit: block.
#include "bench_case.h"

#include <ibdkit/engine/replay.h>

#include "gen/chain_gen.h"

#include <unistd.h>

#include <cstdlib>
#include <filesystem>

namespace ibdkit::bench {
namespace {

namespace fs = std::filesystem;

constexpr int CHAIN_BLOCKS = 2500;

// The chain `ibdkit run` caches (same options), or a fresh copy in a temporary directory.
std::shared_ptr<fs::path> DefaultChain(std::string* why)
{
    const fs::path cached = fs::path(IBDKIT_SOURCE_DIR) / "build" / "default-chain" / "blocks";
    if (fs::exists(cached / "blk00000.dat")) return std::make_shared<fs::path>(cached);
    static std::shared_ptr<fs::path> made;
    if (made) return made;
    const fs::path dir = fs::temp_directory_path() / ("ibdkit-bench-chain-" + std::to_string(::getpid()));
    ChainGenOptions o;
    o.blocks = CHAIN_BLOCKS;
    o.seed = 1;
    o.start_time = REGTEST_GENESIS_TIME + GEN_BLOCK_SPACING;
    o.target_bytes = uint64_t(CHAIN_BLOCKS) * 72'000;
    auto r = WriteGeneratedChain(dir, o, ChainWriteOptions{});
    if (!r) {
        *why = "cannot generate the default chain: " + r.error().message;
        return nullptr;
    }
    made = std::shared_ptr<fs::path>(new fs::path(dir / "blocks"), [dir](fs::path* p) {
        std::error_code ec;
        fs::remove_all(dir, ec);
        delete p;
    });
    return made;
}

template <typename P>
Case ReplayCase()
{
    Case c{"ReplayDefaultChain", std::string(P::name), "block", CHAIN_BLOCKS, [](std::string* why) -> Op {
               auto chain = DefaultChain(why);
               if (!chain) return {};
               return [chain] {
                   ReplayOptions o;
                   o.source.blocks_dir = *chain;
                   o.source.chain = ChainType::REGTEST;
                   o.policy = P::id;
                   auto r = Replay(o);
                   if (!r || r->height != CHAIN_BLOCKS) std::abort(); // the work must really happen
                   DoNotOptimize(r->utxo->hash_serialized);
               };
           }};
    c.smoke_ok = false; // seconds per op
    return c;
}

const bool registered = [] {
    RegisterPerPolicy([]<typename P>(P) { return ReplayCase<P>(); });
    return true;
}();

} // namespace
} // namespace ibdkit::bench

// A tiny ibdkit consumer (tests/consumer): decodes and checks the regtest genesis block, computes
// the statistics of an empty chainstate (LevelDB) and, given a block file, replays it into a
// chainstate, so every private dependency must link. It includes only the façade (docs/api.md).
#include <ibdkit/chain/params.h>
#include <ibdkit/engine/replay.h>
#include <ibdkit/primitives/block.h>
#include <ibdkit/utxo/stats.h>

#include <cstdio>
#include <filesystem>

int main(int argc, char** argv)
{
    using namespace ibdkit;
    const ChainParams& params = GetChainParams(ChainType::REGTEST);
    const auto bytes = EncodeBlock(params.genesis);
    auto block = DecodeBlock(std::span<const uint8_t>(bytes));
    if (!block || block->GetHash() != params.consensus.hash_genesis_block) {
        std::fprintf(stderr, "consumer: genesis round trip failed\n");
        return 1;
    }
    const std::filesystem::path dir = argc > 1 ? argv[1] : "consumer-chainstate";
    auto db = CoinsDB::Open(dir, CoinsDBOptions{});
    if (!db) {
        std::fprintf(stderr, "consumer: cannot open %s: %s\n", dir.c_str(), db.error().message.c_str());
        return 1;
    }
    auto stats = ComputeUtxoStats(**db);
    if (!stats) return 1;
    std::printf("genesis %s\nempty set %s\n", block->GetHash().ToHex().c_str(),
                stats->hash_serialized.ToHex().c_str());
    if (stats->txouts != 0) return 1;
    if (argc > 2) {
        ReplayOptions opts;
        opts.source.blocks_dir = argv[2];
        opts.chainstate = dir.string() + "-replayed";
        opts.threads = 1;
        auto r = Replay(opts);
        if (!r || !r->utxo) {
            std::fprintf(stderr, "consumer: replay failed: %s\n", r ? "no statistics" : r.error().message.c_str());
            return 1;
        }
        std::printf("replayed to %d, %llu coins, %s\n", r->height, (unsigned long long)r->utxo->txouts,
                    r->utxo->hash_serialized.ToHex().c_str());
    }
    return 0;
}

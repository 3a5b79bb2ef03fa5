// A tiny ibdkit consumer (tests/consumer): decodes and checks the regtest genesis block and computes
// the statistics of an empty chainstate (LevelDB), so every private dependency must link.
#include <ibdkit/chain/params.h>
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
    StoreStatus status;
    auto db = CoinsDB::Open(dir, CoinsDBOptions{}, &status);
    if (!db) {
        std::fprintf(stderr, "consumer: cannot open %s\n", dir.c_str());
        return 1;
    }
    auto stats = ComputeUtxoStats(*db);
    if (!stats) return 1;
    std::printf("genesis %s\nempty set %s\n", block->GetHash().ToHex().c_str(),
                stats->hash_serialized.ToHex().c_str());
    return stats->txouts == 0 ? 0 : 1;
}

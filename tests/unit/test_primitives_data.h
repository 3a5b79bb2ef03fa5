// Real blocks from tests/data for the primitives and consensus tests.
#pragma once

#include "test_util.h"

#include <ibdkit/chain/params.h>
#include <ibdkit/encoding/endian.h>
#include <ibdkit/primitives/block.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace ibdkit::test {

struct RawBlock {
    std::string origin; ///< file and index, for failure messages
    ChainType chain;
    std::vector<uint8_t> bytes;
};

/// Records of a block file: magic + LE32 size + block, until the end or a zero (pre-allocated) tail.
inline std::vector<std::vector<uint8_t>> ReadBlockFile(const std::vector<uint8_t>& file)
{
    std::vector<std::vector<uint8_t>> out;
    std::size_t pos = 0;
    while (pos + 8 <= file.size()) {
        if (file[pos] == 0 && file[pos + 1] == 0 && file[pos + 2] == 0 && file[pos + 3] == 0) break;
        const uint32_t size = LoadLE<uint32_t>(file.data() + pos + 4);
        if (pos + 8 + size > file.size()) break;
        out.emplace_back(file.begin() + long(pos + 8), file.begin() + long(pos + 8 + size));
        pos += 8 + size;
    }
    return out;
}

/// Every block under tests/data.
inline const std::vector<RawBlock>& AllTestBlocks()
{
    static const std::vector<RawBlock> blocks = [] {
        std::vector<RawBlock> v;
        for (const char* name : {"mainnet/blocks/block_413567.raw", "mainnet/blocks/block_481829.raw",
                                 "mainnet/blocks/block_866342.raw"}) {
            if (auto p = TestData(name)) v.push_back({name, ChainType::MAIN, ReadFile(*p)});
        }
        const std::pair<const char*, ChainType> files[] = {
            {"mainnet/blk_0-599/blk00000.dat", ChainType::MAIN},
            {"mainnet/blk_0-599/blk00001.dat", ChainType::MAIN},
            {"signet/blk00000.dat", ChainType::SIGNET},
            {"regtest/core_kernel_blocks_1-206.blk", ChainType::REGTEST},
        };
        for (const auto& [name, chain] : files) {
            auto p = TestData(name);
            if (!p) continue;
            auto recs = ReadBlockFile(ReadFile(*p));
            for (std::size_t i = 0; i < recs.size(); ++i) {
                v.push_back({std::string(name) + "#" + std::to_string(i), chain, std::move(recs[i])});
            }
        }
        return v;
    }();
    return blocks;
}

/// Mainnet blocks 9 and 170 from tests/data: block 170's second transaction is the first payment
/// between people, spending block 9's coinbase (a P2PK output) with a legacy signature.
struct FirstPayment {
    Block b9, b170;
    const Transaction& tx() const { return b170.vtx[1]; }
    const TxOut& spent() const { return b9.vtx[0].vout()[0]; }
};
inline std::optional<FirstPayment> LoadFirstPayment()
{
    auto p = TestData("mainnet/blk_0-599/blk00000.dat");
    if (!p) return std::nullopt;
    const auto records = ReadBlockFile(ReadFile(*p));
    if (records.size() <= 170) return std::nullopt;
    auto b9 = DecodeBlock(records[9]);
    auto b170 = DecodeBlock(records[170]);
    if (!b9 || !b170) return std::nullopt;
    return FirstPayment{std::move(*b9), std::move(*b170)};
}

} // namespace ibdkit::test

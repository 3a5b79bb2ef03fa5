#include "consensus/merkle.h"

#include <ibdkit/crypto/sha256.h>

namespace ibdkit {

uint256 ComputeMerkleRoot(std::vector<uint256> hashes, bool* mutated)
{
    bool mutation = false;
    while (hashes.size() > 1) {
        if (mutated) {
            for (std::size_t pos = 0; pos + 1 < hashes.size(); pos += 2) {
                if (hashes[pos] == hashes[pos + 1]) mutation = true;
            }
        }
        if (hashes.size() & 1) hashes.push_back(hashes.back());
        static_assert(sizeof(uint256) == 32);
        Sha256d64(hashes[0].data(), hashes[0].data(), hashes.size() / 2);
        hashes.resize(hashes.size() / 2);
    }
    if (mutated) *mutated = mutation;
    if (hashes.empty()) return uint256();
    return hashes[0];
}

uint256 BlockMerkleRoot(const Block& block, bool* mutated)
{
    std::vector<uint256> leaves;
    leaves.reserve(block.vtx.size() + 1);
    for (const Transaction& tx : block.vtx) leaves.push_back(tx.GetHash().ToUint256());
    return ComputeMerkleRoot(std::move(leaves), mutated);
}

uint256 BlockWitnessMerkleRoot(const Block& block)
{
    std::vector<uint256> leaves;
    leaves.reserve(block.vtx.size() + 1);
    leaves.emplace_back(); // the coinbase's wtxid is zero
    for (std::size_t i = 1; i < block.vtx.size(); ++i) leaves.push_back(block.vtx[i].GetWitnessHash().ToUint256());
    return ComputeMerkleRoot(std::move(leaves));
}

uint256 BlockMerkleRoot(const BlockView& block, bool* mutated)
{
    std::vector<uint256> leaves;
    leaves.reserve(block.tx_count() + 1);
    for (TxView tx : block.txs()) leaves.push_back(tx.ComputeTxid().ToUint256());
    return ComputeMerkleRoot(std::move(leaves), mutated);
}

uint256 BlockWitnessMerkleRoot(const BlockView& block)
{
    std::vector<uint256> leaves;
    leaves.reserve(block.tx_count() + 1);
    bool first = true;
    for (TxView tx : block.txs()) {
        if (first) {
            leaves.emplace_back();
            first = false;
        } else {
            leaves.push_back(tx.ComputeWtxid().ToUint256());
        }
    }
    return ComputeMerkleRoot(std::move(leaves));
}

} // namespace ibdkit

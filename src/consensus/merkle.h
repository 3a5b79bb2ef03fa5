// src/consensus/merkle.h — block merkle roots (txids and wtxids) with Core's mutation rule.
//
// Pairwise SHA256d over 64-byte concatenations, duplicating the last hash of an odd level. The
// CVE-2012-2459 mutation flag is set when any level has two identical hashes at positions
// (2k, 2k+1): such a tree has the same root as one with a duplicated transaction tail.
#pragma once

#include <ibdkit/primitives/block.h>
#include <ibdkit/primitives/block_view.h>
#include <ibdkit/primitives/hash.h>

#include <vector>

namespace ibdkit {

/// Merkle root of `hashes` (consumed; may be empty, giving the null hash). When `mutated` is
/// non-null it receives the CVE-2012-2459 flag.
uint256 ComputeMerkleRoot(std::vector<uint256> hashes, bool* mutated = nullptr);

/// Root over the txids of a block.
uint256 BlockMerkleRoot(const Block& block, bool* mutated = nullptr);
/// Root over the wtxids of a block, the coinbase's taken as zero (BIP141).
uint256 BlockWitnessMerkleRoot(const Block& block);

/// The same from a zero-copy view (hashes the transaction bytes in place).
uint256 BlockMerkleRoot(const BlockView& block, bool* mutated = nullptr);
uint256 BlockWitnessMerkleRoot(const BlockView& block);

} // namespace ibdkit

// ibdkit/consensus/best_chain.h — the most-work chain through a set of block headers.
//
// Nakamoto's rule as both block locators need it: follow prev-hashes from the network's genesis and
// take the chain with the most work (exact 256-bit work, Core's GetBlockProof summed). The block
// files' scan (blockfile/blockfile.h, ChainOrderer) and Core's block index (blockfile/block_index.h,
// SelectBestChain) only say which headers are candidates and in what order ties go.
#pragma once

#include <ibdkit/primitives/hash.h>

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

namespace ibdkit {

/// One candidate header: its hash, its parent's hash and its compact target.
struct ChainCandidate {
    BlockHash hash;
    BlockHash prev;
    uint32_t bits{0};
};

/// The chain SelectMostWorkChain chose, as indexes into its `candidates`.
struct MostWorkChain {
    std::vector<std::size_t> chain; ///< genesis (or, when the genesis is no candidate, a child of it) first, tip last
    /// Height of every candidate reached from the genesis (-1: not reached, or a duplicate).
    std::vector<int> heights;
    uint64_t orphans{0};    ///< candidates whose ancestry does not reach the genesis
    uint64_t stale{0};      ///< candidates reaching the genesis but off the chosen chain
    uint64_t duplicates{0}; ///< candidates whose hash an earlier candidate has
};

/// The most-work chain from `genesis` through `candidates`. The genesis may be a candidate (height 0)
/// or only the parent of candidates (they are then at height 1). Among chains of equal work the one
/// whose tip comes first in `candidates` wins; a later candidate with an earlier one's hash counts as
/// a duplicate and is otherwise ignored. Empty `chain` when nothing reaches the genesis. Never fails:
/// an invalid target is zero work (GetBlockProof).
MostWorkChain SelectMostWorkChain(std::span<const ChainCandidate> candidates, const BlockHash& genesis);

} // namespace ibdkit

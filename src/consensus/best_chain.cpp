// The most-work chain: a breadth-first walk from the genesis summing each header's proof.
#include <ibdkit/consensus/best_chain.h>

#include <ibdkit/consensus/pow.h>

#include <algorithm>
#include <unordered_map>

namespace ibdkit {

MostWorkChain SelectMostWorkChain(std::span<const ChainCandidate> candidates, const BlockHash& genesis)
{
    MostWorkChain out;
    const std::size_t n = candidates.size();
    out.heights.assign(n, -1);
    std::unordered_map<BlockHash, std::size_t, Uint256Hasher> first_of;
    std::vector<bool> duplicate(n, false);
    for (std::size_t i = 0; i < n; ++i) {
        if (!first_of.emplace(candidates[i].hash, i).second) {
            duplicate[i] = true;
            ++out.duplicates;
        }
    }
    std::unordered_map<BlockHash, std::vector<std::size_t>, Uint256Hasher> children;
    for (std::size_t i = 0; i < n; ++i) {
        if (!duplicate[i] && candidates[i].hash != genesis) children[candidates[i].prev].push_back(i);
    }
    // Consecutive headers mostly share a target: one proof per run of equal bits.
    uint32_t last_bits = 0;
    arith_uint256 last_proof = GetBlockProof(0);
    auto proof = [&](uint32_t bits) {
        if (bits != last_bits) {
            last_bits = bits;
            last_proof = GetBlockProof(bits);
        }
        return last_proof;
    };
    std::vector<arith_uint256> work(n);
    std::vector<std::size_t> parent(n, SIZE_MAX);
    std::vector<std::size_t> frontier;
    auto visit_children_of = [&](const BlockHash& h, const arith_uint256& base, int height, std::size_t from) {
        auto it = children.find(h);
        if (it == children.end()) return;
        for (std::size_t c : it->second) {
            work[c] = base + proof(candidates[c].bits);
            out.heights[c] = height + 1;
            parent[c] = from;
            frontier.push_back(c);
        }
    };
    if (auto g = first_of.find(genesis); g != first_of.end()) {
        work[g->second] = proof(candidates[g->second].bits);
        out.heights[g->second] = 0;
        frontier.push_back(g->second);
    } else {
        visit_children_of(genesis, arith_uint256{}, 0, SIZE_MAX);
    }
    for (std::size_t k = 0; k < frontier.size(); ++k) {
        const std::size_t i = frontier[k];
        visit_children_of(candidates[i].hash, work[i], out.heights[i], i);
    }
    std::size_t best = SIZE_MAX;
    for (std::size_t i = 0; i < n; ++i) {
        if (duplicate[i]) continue;
        if (out.heights[i] < 0) {
            ++out.orphans;
            continue;
        }
        if (best == SIZE_MAX || work[i] > work[best]) best = i;
    }
    for (std::size_t i = best; i != SIZE_MAX; i = parent[i]) out.chain.push_back(i);
    std::reverse(out.chain.begin(), out.chain.end());
    out.stale = frontier.size() - out.chain.size();
    return out;
}

} // namespace ibdkit

#include "pipeline.h"

#include <unordered_set>

namespace ibdkit::engine {

void PlanAhead(ReadyBlock& rb, bool list_outside)
{
    const Block& block = rb.block->block();
    rb.plan.Assign(block);
    if (!list_outside) return;
    rb.outside_listed = true;
    thread_local std::unordered_set<Txid, Uint256Hasher> own;
    own.clear();
    for (const auto& tx : block.vtx) own.insert(tx.GetHash());
    rb.outside_prevouts.reserve(rb.plan.Inputs());
    for (const auto& tx : block.vtx) {
        if (tx.IsCoinBase()) continue;
        for (const auto& in : tx.vin()) {
            if (!own.contains(in.prevout.hash)) rb.outside_prevouts.push_back(in.prevout);
        }
    }
}

} // namespace ibdkit::engine

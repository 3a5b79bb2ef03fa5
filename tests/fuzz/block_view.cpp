// Fuzz: the zero-copy block view against the owning decoder. Same accept/reject, same Errc, and
// on success the same header, ids, sizes, inputs, outputs and witnesses.
#include <ibdkit/primitives/block.h>
#include <ibdkit/primitives/block_view.h>

#include "consensus/merkle.h"

#include <cstdlib>
#include <span>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size)
{
    using namespace ibdkit;
    const std::span<const uint8_t> in(data, size);
    auto owned = DecodeBlock(in);
    auto view = BlockView::Parse(in);
    if (owned.ok() != view.ok()) std::abort();
    if (!owned) {
        if (owned.error().code != view.error().code) std::abort();
        return 0;
    }
    if (!(view->header() == owned->header()) || view->ComputeHash() != owned->GetHash()) std::abort();
    if (view->tx_count() != owned->vtx.size()) std::abort();
    std::size_t i = 0;
    for (TxView tx : view->txs()) {
        const Transaction& o = owned->vtx[i++];
        if (tx.ComputeTxid() != o.GetHash() || tx.ComputeWtxid() != o.GetWitnessHash()) std::abort();
        if (tx.GetTotalSize() != o.GetTotalSize() || tx.GetStrippedSize() != o.GetStrippedSize()) std::abort();
        if (tx.IsCoinBase() != o.IsCoinBase()) std::abort();
        std::size_t k = 0;
        for (InputView vin : tx.inputs()) {
            const TxIn& oi = o.vin()[k++];
            if (vin.prevout() != oi.prevout || vin.sequence != oi.sequence) std::abort();
            if (!(vin.witness.ToOwned() == oi.witness)) std::abort();
        }
        k = 0;
        for (OutputView vout : tx.outputs()) {
            if (vout.value != o.vout()[k++].value) std::abort();
        }
    }
    bool m1 = false, m2 = false;
    if (BlockMerkleRoot(*view, &m1) != BlockMerkleRoot(*owned, &m2) || m1 != m2) std::abort();
    return 0;
}

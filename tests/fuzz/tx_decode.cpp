// Fuzz: transaction decoding, owned and view, with and without witness. Both front ends must
// agree on every input (accept/reject and the Errc), a decoded transaction must re-encode to the
// same bytes, and the view's ids must equal the owned ones.
#include <ibdkit/primitives/block_view.h>
#include <ibdkit/primitives/transaction.h>

#include <cstdlib>
#include <span>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size)
{
    using namespace ibdkit;
    const std::span<const uint8_t> in(data, size);
    for (TxParams p : {TX_WITH_WITNESS, TX_NO_WITNESS}) {
        auto owned = DecodeTransaction(in, p);
        auto view = TxView::Parse(in, p);
        if (owned.ok() != view.ok()) std::abort();
        if (!owned) {
            if (owned.error().code != view.error().code) std::abort();
            continue;
        }
        if (EncodeTransaction(*owned, p) != std::vector<uint8_t>(in.begin(), in.end())) std::abort();
        if (view->ComputeTxid() != owned->GetHash() || view->ComputeWtxid() != owned->GetWitnessHash()) std::abort();
        if (view->GetStrippedSize() != owned->GetStrippedSize()) std::abort();
        if (!(view->ToOwned() == *owned)) std::abort();
        if (Transaction(owned->ToMutable()).GetWitnessHash() != owned->GetWitnessHash()) std::abort();
    }
    return 0;
}

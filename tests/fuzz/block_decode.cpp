// Fuzz: block decoding and the context-free checks. A decoded block re-encodes to the same
// bytes; CheckBlock never crashes and agrees with itself on a re-decoded copy.
#include <ibdkit/chain/params.h>
#include <ibdkit/consensus/check.h>
#include <ibdkit/primitives/block.h>

#include "consensus/merkle.h"

#include <cstdlib>
#include <span>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size)
{
    using namespace ibdkit;
    auto block = DecodeBlock(std::span<const uint8_t>(data, size));
    if (!block) return 0;
    const auto bytes = EncodeBlock(*block);
    if (bytes != std::vector<uint8_t>(data, data + size)) std::abort();
    if (GetBlockTotalSize(*block) != size) std::abort();
    const auto& params = GetChainParams(ChainType::REGTEST).consensus;
    BlockValidationState a, w;
    const bool ok = CheckBlockRules(*block, a, params, {false, true});
    (void)CheckWitnessMalleation(*block, true, w);
    (void)GetBlockWeight(*block);
    BlockValidationState b;
    auto again = DecodeBlock(bytes);
    if (!again || CheckBlockRules(*again, b, params, {false, true}) != ok) std::abort();
    if (a.GetRejectReason() != b.GetRejectReason()) std::abort();
    return 0;
}

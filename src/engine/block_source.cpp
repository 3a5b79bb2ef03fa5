#include "block_source.h"

namespace ibdkit::engine {

BlockContexts::BlockContexts(const EngineOptions& o, const ChainParams& params, const HeaderChain& headers)
    : m_o(o), m_headers(headers), m_bip34_height(params.consensus.bip34_height),
      m_assumevalid(headers, o.assumevalid, params.consensus, o.MinimumChainWork(params.consensus.minimum_chain_work))
{
}

ConnectContext BlockContexts::At(int height) const
{
    ConnectContext ctx;
    ctx.height = height;
    const int bip34 = m_bip34_height;
    if (height > bip34 && bip34 >= 0 && bip34 <= m_headers.Height()) ctx.bip34_ancestor = m_headers.Hash(bip34);
    // Core never connects the genesis block's transactions, so never asks about its scripts.
    if (auto why = height == 0 || m_o.skip_scripts ? std::nullopt : m_assumevalid.Reason(height)) {
        ctx.check_scripts = true;
        ctx.script_check_reason = *why;
    }
    return ctx;
}

} // namespace ibdkit::engine

#include "consensus/assumevalid.h"

#include <limits>

namespace ibdkit {

int64_t GetBlockProofEquivalentTime(const arith_uint256& to_work, const arith_uint256& from_work, const arith_uint256& tip_proof,
                                    const ConsensusParams& params) noexcept
{
    arith_uint256 r;
    int64_t sign = 1;
    if (to_work > from_work) {
        r = to_work - from_work;
    } else {
        r = from_work - to_work;
        sign = -1;
    }
    // Core divides by GetBlockProof(tip), never zero for a header that passed its proof of work.
    if (tip_proof == arith_uint256(0)) return sign * std::numeric_limits<int64_t>::max();
    r *= uint32_t(params.pow_target_spacing);
    r /= tip_proof;
    if (r.bits() > 63) return sign * std::numeric_limits<int64_t>::max();
    return sign * int64_t(r.GetLow64());
}

std::optional<std::string_view> ScriptCheckReason(const AssumeValidChain& assumevalid, const HeaderChainView& best, int height,
                                                  const BlockHash& hash, const ConsensusParams& params)
{
    constexpr int64_t TWO_WEEKS_IN_SECONDS{60 * 60 * 24 * 7 * 2};
    if (assumevalid.hash.IsNull()) return "assumevalid=0 (always verify)";
    if (!assumevalid.chain) return "assumevalid hash not in headers";
    const HeaderChainView& av = *assumevalid.chain;
    if (av.HashAt(height) != hash) {
        return height > av.TipHeight() ? "block height above assumevalid height" : "block not in assumevalid chain";
    }
    if (best.HashAt(height) != hash) return "block not in best header chain";
    const arith_uint256& best_work = best.chain_work.back();
    if (best_work < UintToArith256(params.minimum_chain_work)) return "best header chainwork below minimumchainwork";
    const std::size_t n = best.chain_work.size();
    const arith_uint256 tip_proof = n >= 2 ? best.chain_work[n - 1] - best.chain_work[n - 2] : best.chain_work[0];
    const arith_uint256& block_work = best.chain_work[std::size_t(height - best.base_height)];
    if (GetBlockProofEquivalentTime(best_work, block_work, tip_proof, params) <= TWO_WEEKS_IN_SECONDS) {
        return "block too recent relative to best header";
    }
    return std::nullopt;
}

BlockHash ResolveAssumeValid(const std::optional<BlockHash>& setting, const ConsensusParams& params) noexcept
{
    return setting ? *setting : params.default_assume_valid;
}

AssumeValidRule::AssumeValidRule(const HeaderChain& best, const std::optional<BlockHash>& setting, const ConsensusParams& params,
                                 const uint256& minimum_chain_work)
    : m_best(best), m_params(params), m_hash(ResolveAssumeValid(setting, params))
{
    m_params.minimum_chain_work = minimum_chain_work;
}

std::optional<std::string_view> AssumeValidRule::Reason(int height) const
{
    if (height < 0 || height > m_best.Height()) return "block not in best header chain";
    const HeaderChainView best{0, m_best.Hashes(), m_best.ChainWork()};
    AssumeValidChain av{m_hash, std::nullopt};
    if (!m_hash.IsNull()) {
        if (auto h = m_best.HeightOf(m_hash)) av.chain = HeaderChainView{0, best.hashes.first(std::size_t(*h) + 1), {}};
    }
    return ScriptCheckReason(av, best, height, m_best.Hash(height), m_params);
}

} // namespace ibdkit

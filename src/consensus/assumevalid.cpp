#include <ibdkit/consensus/assumevalid.h>

#include <limits>

namespace ibdkit {

std::vector<arith_uint256> CumulativeChainWork(std::span<const uint32_t> bits, const arith_uint256& start)
{
    std::vector<arith_uint256> work;
    work.reserve(bits.size());
    arith_uint256 sum = start;
    for (uint32_t b : bits) {
        sum += GetBlockProof(b);
        work.push_back(sum);
    }
    return work;
}

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

AssumeValidRule::AssumeValidRule(int base_height, std::span<const BlockHash> hashes, std::span<const uint32_t> bits,
                                 bool bits_start_one_early, const std::optional<BlockHash>& setting, const ConsensusParams& params)
    : m_params(params)
{
    // The work of the block below the first, when its bits are given, counts towards every later
    // block's and is then dropped from the list.
    m_work = CumulativeChainWork(bits);
    if (bits_start_one_early && !m_work.empty()) m_work.erase(m_work.begin());
    m_work.resize(hashes.size());
    m_best = HeaderChainView{base_height, hashes, m_work};
    m_assumevalid.hash = ResolveAssumeValid(setting, params);
    if (m_assumevalid.hash.IsNull()) return;
    for (std::size_t i = hashes.size(); i-- > 0;) {
        if (hashes[i] == m_assumevalid.hash) {
            m_assumevalid.chain = HeaderChainView{base_height, hashes.first(i + 1), {}};
            break;
        }
    }
}

std::optional<std::string_view> AssumeValidRule::Reason(int height) const
{
    const auto hash = m_best.HashAt(height);
    if (!hash) return "block not in best header chain";
    return ScriptCheckReason(m_assumevalid, m_best, height, *hash, m_params);
}

} // namespace ibdkit

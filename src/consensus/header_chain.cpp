#include <ibdkit/consensus/header_chain.h>

#include <algorithm>
#include <ctime>

namespace ibdkit {

HeaderChain::HeaderChain(const ChainParams& params) : m_params(&params)
{
    m_full.push_back(params.genesis.header());
    Push(params.consensus.hash_genesis_block, HeaderInfo{params.genesis.time, params.genesis.bits});
}

std::optional<int> HeaderChain::HeightOf(const BlockHash& hash) const
{
    auto it = m_height_of.find(hash);
    if (it == m_height_of.end()) return std::nullopt;
    return it->second;
}

std::optional<HeaderChain::HeldRun> HeaderChain::Held(std::span<const BlockHeader> headers) const
{
    if (headers.empty()) return std::nullopt;
    const auto parent = HeightOf(headers.front().hash_prev_block);
    if (!parent) return std::nullopt;
    HeldRun run{*parent, 0};
    while (run.held < headers.size() && run.Last() < Height() && Hash(run.Last() + 1) == headers[run.held].GetHash()) ++run.held;
    return run;
}

std::optional<std::string> CheckHeaderOn(const BlockHeader& header, const HeaderAncestry& prev, const ConsensusParams& params)
{
    const BlockHash hash = header.GetHash();
    const std::string where = "header " + hash.ToHex() + " at height " + std::to_string(prev.prev_height() + 1);
    if (!CheckProofOfWork(hash.ToUint256(), header.bits, params)) return where + " does not meet its nBits (high-hash)";
    BlockValidationState state;
    if (!ContextualCheckBlockHeader(header, prev, params, int64_t(std::time(nullptr)), state)) {
        return where + " fails Core's header checks: " + state.GetRejectReason();
    }
    return std::nullopt;
}

HeaderAncestry HeaderChain::AncestryAt(int height) const
{
    const std::size_t end = std::size_t(height) + 1;
    const std::size_t take = std::min<std::size_t>(end, HEADER_ANCESTRY_NEEDED);
    return HeaderAncestry{int(end - take), std::span<const HeaderInfo>(m_info).subspan(end - take, take)};
}

std::optional<std::string> HeaderChain::Append(const BlockHeader& header)
{
    if (header.hash_prev_block != Tip()) {
        return "header " + header.GetHash().ToHex() + " does not extend our best header " + Tip().ToHex() + " (height " +
               std::to_string(Height()) + ")";
    }
    if (auto why = CheckHeaderOn(header, AncestryAt(Height()), m_params->consensus)) return why;
    if (HasFullHeaders()) m_full.push_back(header);
    Push(header.GetHash(), HeaderInfo{header.time, header.bits});
    return std::nullopt;
}

void HeaderChain::AppendKnown(const BlockHash& hash, HeaderInfo info)
{
    m_full.clear();
    m_full.shrink_to_fit();
    Push(hash, info);
}

void HeaderChain::Push(const BlockHash& hash, HeaderInfo info)
{
    const arith_uint256 proof = GetBlockProof(info.bits);
    m_work.push_back(m_work.empty() ? proof : m_work.back() + proof);
    m_hashes.push_back(hash);
    m_info.push_back(info);
    m_height_of.emplace(hash, Height());
}

void HeaderChain::Truncate(int height)
{
    const bool full = HasFullHeaders();
    while (Height() > std::max(0, height)) {
        m_height_of.erase(m_hashes.back());
        m_hashes.pop_back();
        m_info.pop_back();
        m_work.pop_back();
        if (full) m_full.pop_back();
    }
}

void HeaderChain::Reserve(std::size_t headers)
{
    m_hashes.reserve(headers);
    m_info.reserve(headers);
    m_work.reserve(headers);
    m_height_of.reserve(headers);
}

void HeaderChain::Adopt(const HeaderBranch& branch)
{
    Truncate(branch.Fork());
    for (const BlockHeader& header : branch.Headers()) {
        if (HasFullHeaders()) m_full.push_back(header);
        Push(header.GetHash(), HeaderInfo{header.time, header.bits});
    }
}

HeaderBranch::HeaderBranch(const HeaderChain& chain, int fork) : m_chain(chain), m_fork(fork), m_tip(chain.Hash(fork))
{
    const HeaderAncestry below = chain.AncestryAt(fork);
    m_ancestry.assign(below.headers.begin(), below.headers.end());
}

std::optional<std::string> HeaderBranch::Append(const BlockHeader& header)
{
    if (header.hash_prev_block != m_tip) return "header " + header.GetHash().ToHex() + " does not extend the branch it came in";
    const int height = m_fork + int(m_headers.size()) + 1;
    const std::size_t take = std::min<std::size_t>(m_ancestry.size(), HEADER_ANCESTRY_NEEDED);
    const HeaderAncestry prev{height - int(take), std::span<const HeaderInfo>(m_ancestry).last(take)};
    if (auto why = CheckHeaderOn(header, prev, m_chain.Params().consensus)) return why;
    m_ancestry.push_back(HeaderInfo{header.time, header.bits});
    m_headers.push_back(header);
    m_tip = header.GetHash();
    m_work += GetBlockProof(header.bits);
    return std::nullopt;
}

bool HeaderBranch::MoreWork() const
{
    const auto work = m_chain.ChainWork();
    return m_work > work.back() - work[std::size_t(m_fork)];
}

int64_t HeaderChain::MedianTimePast(int height) const
{
    return GetMedianTimePast(HeaderAncestry{0, std::span<const HeaderInfo>(m_info).first(std::size_t(height) + 1)});
}

} // namespace ibdkit

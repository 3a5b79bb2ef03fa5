// src/consensus/header_walk.cpp — one peer's headers onto a HeaderChain (header_walk.h).
#include "consensus/header_walk.h"

#include <algorithm>

namespace ibdkit {

HeaderWalk::Ask HeaderWalk::Next() const
{
    const auto hashes = m_chain.Hashes();
    if (m_branch) return {hashes, m_branch->Tip()};
    if (m_ask_from >= 0) return {hashes.first(std::size_t(m_ask_from) + 1), std::nullopt};
    return {hashes.first(std::max<std::size_t>(hashes.size() - 1, 1)), std::nullopt};
}

Result<HeaderWalk::Step, std::string> HeaderWalk::Take(std::span<const BlockHeader> headers)
{
    const bool seed_only = m_seed_only && !m_answered;
    std::size_t i = 0;
    if (!m_branch && !headers.empty()) {
        const auto run = m_chain.Held(headers);
        if (!run) {
            return std::string("headers that do not connect to the chain held (the first one's parent " +
                               headers.front().hash_prev_block.ToHex() + " is unknown)");
        }
        m_answered = true;
        i = run->held;
        if (i == HEADERS_PER_ANSWER) {
            if (run->Last() <= m_ask_from) return std::string("a full headers message of headers held, not past the last one");
            m_ask_from = run->Last();
            m_shown = std::max(m_shown, m_ask_from);
            return Step::More;
        }
        m_ask_from = -1;
        m_shown = std::max(m_shown, run->Last());
        if (i < headers.size() && run->Last() < m_chain.Height()) {
            m_shown = run->Last();
            if (seed_only) {
                m_chain.Truncate(run->Last());
            } else {
                m_branch.emplace(m_chain, run->Last());
            }
        }
    }
    m_answered = true;
    for (; i < headers.size(); ++i) {
        if (auto why = m_branch ? m_branch->Append(headers[i]) : m_chain.Append(headers[i])) return "an invalid header: " + *why;
        if (!m_branch) m_shown = m_chain.Height();
    }
    if (headers.size() == HEADERS_PER_ANSWER) return Step::More;
    return m_branch ? Step::BranchEnded : Step::Done;
}

void HeaderWalk::Adopt()
{
    IBDKIT_EXPECTS(m_branch, "HeaderWalk::Adopt needs a branch");
    m_chain.Adopt(*m_branch);
    m_branch.reset();
    m_shown = m_chain.Height();
}

std::optional<std::string> BelowMinimumChainWork(const HeaderChain& chain, const uint256& minimum)
{
    const arith_uint256& work = chain.ChainWork().back();
    if (!(work < UintToArith256(minimum))) return std::nullopt;
    return "the peers' best header chain (height " + std::to_string(chain.Height()) + ", work " + ArithToUint256(work).ToHex() +
           ") has less work than the minimum chain work " + minimum.ToHex() +
           ": Core would not sync it (peers of another network or far behind: connect to others; a test chain: "
           "--minimum-chain-work 0)";
}

} // namespace ibdkit

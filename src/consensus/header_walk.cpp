// src/consensus/header_walk.cpp — one peer's headers onto a HeaderChain (header_walk.h).
#include "consensus/header_walk.h"

#include <algorithm>

namespace ibdkit {

HeaderWalk::Ask HeaderWalk::Next() const
{
    if (m_presync) return m_presync->Next();
    const auto hashes = m_chain.Hashes();
    if (m_branch) return {hashes, m_branch->Tip()};
    if (m_ask_from >= 0) return {hashes.first(std::size_t(m_ask_from) + 1), std::nullopt};
    return {hashes.first(std::max<std::size_t>(hashes.size() - 1, 1)), std::nullopt};
}

// Core's anti-DoS test of an answer's new headers (TryLowWorkHeadersSync): the chain they make,
// from the fork's work on, against the minimum.
bool HeaderWalk::BelowMinimum(int fork, std::span<const BlockHeader> headers)
{
    arith_uint256 work = m_chain.ChainWork()[std::size_t(fork)];
    if (work >= m_minimum) return false;
    for (const BlockHeader& header : headers) work += GetBlockProof(header.bits);
    if (work >= m_minimum) return false;
    m_low_work = {fork + int64_t(headers.size()), work};
    return true;
}

Result<HeaderWalk::Step, std::string> HeaderWalk::Take(std::span<const BlockHeader> headers)
{
    if (m_presync) return TakePresynced(headers);
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
        if (i < headers.size() && BelowMinimum(run->Last(), headers.subspan(i))) {
            // Core ignores a short answer of low work; a full one may go on to the minimum.
            if (headers.size() < HEADERS_PER_ANSWER) return Step::LowWork;
            m_shown = run->Last();
            m_presync.emplace(m_chain, run->Last(), m_minimum);
            m_presync_fork = run->Last();
            m_presync_replaces = seed_only;
            m_released = false;
            return TakePresynced(headers.subspan(i));
        }
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

// The presync's answer; its released headers go where the answer's would have (the tip, a seed
// replaced above the fork, or a branch), checked in full.
Result<HeaderWalk::Step, std::string> HeaderWalk::TakePresynced(std::span<const BlockHeader> headers)
{
    auto taken = m_presync->Take(headers);
    if (!taken) {
        m_presync.reset();
        return Describe(taken.error());
    }
    if (auto why = AppendReleased(taken->released)) {
        m_presync.reset();
        return "an invalid header: " + *why;
    }
    const HeadersPresync::Step step = taken->step;
    if (step == HeadersPresync::Step::More) return Step::More;
    if (step != HeadersPresync::Step::Complete) {
        m_low_work = {m_presync->Height(), m_presync->Work()};
        m_presync.reset();
        return Step::LowWork;
    }
    // The peer's chain has the minimum work and all of it so far is on the chain (or the branch):
    // it goes on as any peer's.
    m_presync.reset();
    if (headers.size() == HEADERS_PER_ANSWER) return Step::More;
    return m_branch ? Step::BranchEnded : Step::Done;
}

std::optional<std::string> HeaderWalk::AppendReleased(std::span<const BlockHeader> released)
{
    if (released.empty()) return std::nullopt;
    if (!m_released) {
        m_released = true;
        if (m_presync_fork < m_chain.Height()) {
            if (m_presync_replaces) {
                m_chain.Truncate(m_presync_fork);
            } else {
                m_branch.emplace(m_chain, m_presync_fork);
            }
        }
    }
    for (const BlockHeader& header : released) {
        if (auto why = m_branch ? m_branch->Append(header) : m_chain.Append(header)) return why;
        if (!m_branch) m_shown = m_chain.Height();
    }
    return std::nullopt;
}

void HeaderWalk::Adopt()
{
    IBDKIT_EXPECTS(m_branch, "HeaderWalk::Adopt needs a branch");
    m_chain.Adopt(*m_branch);
    m_branch.reset();
    m_shown = m_chain.Height();
}

std::string MinimumChainWorkShortfall(int64_t height, const arith_uint256& work, const uint256& minimum, const std::string& outcome)
{
    return "header chain (height " + std::to_string(height) + ", work " + ArithToUint256(work).ToHex() +
           ") has less work than the minimum chain work " + minimum.ToHex() + ": " + outcome +
           " (peers of another network or far behind: connect to others; a test chain: --minimum-chain-work 0)";
}

std::optional<std::string> BelowMinimumChainWork(const HeaderChain& chain, const uint256& minimum)
{
    const arith_uint256& work = chain.ChainWork().back();
    if (!(work < UintToArith256(minimum))) return std::nullopt;
    return "the peers' best " + MinimumChainWorkShortfall(chain.Height(), work, minimum, "Core would not sync it");
}

} // namespace ibdkit

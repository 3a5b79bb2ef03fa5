// src/consensus/header_walk.h — one peer's headers onto a HeaderChain, without the network: what
// the next getheaders summarises, and what each answer did to the chain. The one header download
// of the classic sync (src/engine/peer_headers.cpp) and of SwiftSync over P2P
// (src/swiftsync/peer_connect.cpp); each asks its peer itself and decides what to do with a
// competing branch once it has ended. A peer's chain below the minimum chain work goes through
// Core's presync first (HeadersPresync, consensus/headers_presync.h): none of it reaches the chain
// before the peer has shown the work, and then only as its redownload is checked.
#pragma once

#include "consensus/headers_presync.h"

#include <ibdkit/consensus/header_chain.h>
#include <ibdkit/error.h>

#include <cstddef>
#include <optional>
#include <span>
#include <string>

namespace ibdkit {

/// Walks one peer's answers onto `chain`, as Core follows a peer's headers:
/// - the first locator starts at the tip's parent, as Core's first getheaders does, so a peer at
///   the tip answers with it rather than with nothing (Shown() then counts it);
/// - an answer may start below the tip where the peer's chain is the chain's (a locator entry's
///   step); a full answer of headers held (a peer far behind) is asked on from its last header,
///   and the next answer must go past it;
/// - headers that extend the tip are appended (each through HeaderChain::Append's checks);
/// - headers that fork below the tip start a branch (HeaderBranch: every header checked on the
///   branch's own ancestors), followed to its end; the caller then adopts it or not (Core: only
///   with more work, MoreWork). While `seed_only` (the chain is only what the run started from and
///   no peer has shown it yet), a first answer that forks replaces the chain above the fork
///   instead, as a download from the genesis would have;
/// - new headers whose chain (the chain's work at their fork, plus theirs) has less than
///   `minimum_work` are not appended (Core's TryLowWorkHeadersSync): a short answer ends the walk
///   (LowWork), a full one starts a presync from the fork, whose released headers are then appended
///   (or start the branch) as above; a presync that ends below the minimum ends the walk (LowWork).
/// Holds `chain` by reference: it must outlive the walk, and change only through it while it lasts.
class HeaderWalk {
public:
    /// `minimum_work`: Core's minimum chain work (zero: every chain has it, no presync).
    HeaderWalk(HeaderChain& chain, bool seed_only, const arith_uint256& minimum_work)
        : m_chain(chain), m_seed_only(seed_only), m_minimum(minimum_work)
    {
    }

    /// What the next getheaders asks (HeadersAsk); the span is valid until the chain changes.
    using Ask = HeadersAsk;
    Ask Next() const;

    enum class Step {
        More,        ///< ask again (Next())
        Done,        ///< the peer's chain ends on the chain
        BranchEnded, ///< a competing branch is complete (Branch()): Adopt() it or leave it
        LowWork,     ///< the peer's chain ends below the minimum work (LowWorkSeen()): none of it kept
                     ///< but what a redownload released (its commitments checked) before the peer stopped
    };
    /// Takes the peer's answer to Next(); after Done or BranchEnded nothing more is asked. The
    /// error says how the peer broke Core's rules, for "peer sent " to open (headers that do not
    /// connect, a full answer of headers held not past the last one, an invalid header); the
    /// chain keeps what came before the bad header.
    Result<Step, std::string> Take(std::span<const BlockHeader> headers);

    /// The competing branch, from the answer that started it until Adopt() (nullptr otherwise).
    const HeaderBranch* Branch() const noexcept { return m_branch ? &*m_branch : nullptr; }
    /// Replaces the chain above the branch's fork with the branch. Precondition: Branch().
    void Adopt();
    /// The highest height of the chain the peer showed it holds: the last of its headers on it, or
    /// its branch's fork (-1: none).
    int Shown() const noexcept { return m_shown; }
    /// Whether the peer answered onto the chain: an answer that connects to it, or an empty one.
    bool Answered() const noexcept { return m_answered; }
    /// The peer's low-work chain as far as it went, after LowWork: its height and chain work.
    struct ChainSeen {
        int64_t height{0};
        arith_uint256 work;
    };
    const ChainSeen& LowWorkSeen() const noexcept { return m_low_work; }
    /// The presync under way (nullptr when none is): its phase, commitments and buffer.
    const HeadersPresync* Presync() const noexcept { return m_presync ? &*m_presync : nullptr; }

private:
    bool BelowMinimum(int fork, std::span<const BlockHeader> headers);
    Result<Step, std::string> TakePresynced(std::span<const BlockHeader> headers);
    std::optional<std::string> AppendReleased(std::span<const BlockHeader> released);

    HeaderChain& m_chain;
    bool m_seed_only;
    arith_uint256 m_minimum;
    std::optional<HeadersPresync> m_presync;
    int m_presync_fork{0};
    bool m_presync_replaces{false}; ///< the presync's released headers replace a seed above its fork
    bool m_released{false};         ///< the presync released its first headers
    ChainSeen m_low_work;
    bool m_answered{false};
    std::optional<HeaderBranch> m_branch;
    int m_ask_from{-1}; ///< the height the next locator starts at (-1: the tip's parent)
    int m_shown{-1};
};

/// The words every P2P sync refuses a header chain below the minimum chain work with (Core's
/// -minimumchainwork, RunSettings::MinimumChainWork), without their subject: "header chain (height
/// H, work W) has less work than the minimum chain work M", then `outcome` (what was done with it),
/// then the fixes (peers of this network at its tip; a test chain's minimum of 0).
std::string MinimumChainWorkShortfall(int64_t height, const arith_uint256& work, const uint256& minimum, const std::string& outcome);

/// Why Core would not download the blocks of `chain`, the peers' best header chain: its work is
/// below `minimum`; nullopt when it is not. MinimumChainWorkShortfall's words.
std::optional<std::string> BelowMinimumChainWork(const HeaderChain& chain, const uint256& minimum);

} // namespace ibdkit

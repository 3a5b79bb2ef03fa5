// src/consensus/header_walk.h — one peer's headers onto a HeaderChain, without the network: what
// the next getheaders summarises, and what each answer did to the chain. The one header download
// of the classic sync (src/engine/peer_headers.cpp) and of SwiftSync over P2P
// (src/swiftsync/peer_connect.cpp); each asks its peer itself and decides what to do with a
// competing branch once it has ended.
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
///   instead, as a download from the genesis would have.
/// Holds `chain` by reference: it must outlive the walk, and change only through it while it lasts.
class HeaderWalk {
public:
    HeaderWalk(HeaderChain& chain, bool seed_only) : m_chain(chain), m_seed_only(seed_only) {}

    /// What the next getheaders asks (HeadersAsk); the span is valid until the chain changes.
    using Ask = HeadersAsk;
    Ask Next() const;

    enum class Step {
        More,        ///< ask again (Next())
        Done,        ///< the peer's chain ends on the chain
        BranchEnded, ///< a competing branch is complete (Branch()): Adopt() it or leave it
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

private:
    HeaderChain& m_chain;
    bool m_seed_only;
    bool m_answered{false};
    std::optional<HeaderBranch> m_branch;
    int m_ask_from{-1}; ///< the height the next locator starts at (-1: the tip's parent)
    int m_shown{-1};
};

/// Why Core would not download the blocks of `chain`, a peers' best header chain: its work is below
/// `minimum` (Core's -minimumchainwork, RunSettings::MinimumChainWork); nullopt when it is not. The
/// words every P2P sync refuses such a chain with, naming the work, the minimum and the fixes.
std::optional<std::string> BelowMinimumChainWork(const HeaderChain& chain, const uint256& minimum);

} // namespace ibdkit

// ibdkit/consensus/header_chain.h — the one model of a best header chain: by height from the
// genesis, each header's hash, time, bits and chain work, its height by hash, the ancestry the
// header rules read and the median time past.
//
// Three builders fill it: the scan of a blocks directory and Core's block index (blockfile/locate.h,
// from headers they already ordered by work: AppendKnown), and the P2P header download (the one
// both syncs drive: Append, which checks each header as Core does before asking for its block). The engine
// derives every block's context from it, and the assumevalid rule reads it (assumevalid.h). A
// peer's competing branch is built beside it (HeaderBranch) and replaces it above the fork only
// with more work.
#pragma once

#include <ibdkit/chain/params.h>
#include <ibdkit/consensus/header_check.h>
#include <ibdkit/consensus/pow.h>
#include <ibdkit/primitives/block.h>
#include <ibdkit/primitives/hash.h>

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

namespace ibdkit {

class HeaderBranch;

/// Core's checks of a header before its block is asked for: its proof of work against its own
/// nBits (high-hash), then ContextualCheckBlockHeader on `prev` with the local clock (bad-diffbits,
/// time-too-old, time-timewarp-attack, time-too-new, bad-version). Why not, naming the header,
/// its height and Core's reason; nullopt when it passes.
std::optional<std::string> CheckHeaderOn(const BlockHeader& header, const HeaderAncestry& prev, const ConsensusParams& params);

/// A best header chain by height, the network's genesis at 0. Not thread-safe: one writer, and no
/// reader while it writes. Costs about 120 bytes per header (with full headers kept, 200).
class HeaderChain {
public:
    /// The chain holding only the network's genesis header. `params` must outlive the chain (the
    /// networks' parameters, GetChainParams, always do).
    explicit HeaderChain(const ChainParams& params);

    int Height() const noexcept { return int(m_hashes.size()) - 1; }
    /// The network's parameters the chain was made with.
    const ChainParams& Params() const noexcept { return *m_params; }
    /// Precondition for the accessors by height: 0 ≤ height ≤ Height() (std::out_of_range otherwise).
    const BlockHash& Hash(int height) const { return m_hashes.at(std::size_t(height)); }
    const HeaderInfo& Info(int height) const { return m_info.at(std::size_t(height)); }
    const BlockHash& Tip() const noexcept { return m_hashes.back(); }
    /// The height of `hash` on this chain, nullopt when it is not on it.
    std::optional<int> HeightOf(const BlockHash& hash) const;
    /// Where a run of headers (each the parent of the next, as a `headers` message carries them)
    /// meets this chain: the height of the first one's parent, and how many from the first are
    /// the chain's own headers above it, in order. A peer's answer that is all `held` came from a
    /// locator entry below its tip; the first header not held starts its own headers.
    struct HeldRun {
        int parent{0};
        std::size_t held{0};
        /// The height of the last header held (`parent` when none is).
        int Last() const noexcept { return parent + int(held); }
    };
    /// The run `headers` make on this chain; nullopt when `headers` is empty or its first
    /// header's parent is not on the chain (the headers do not connect).
    std::optional<HeldRun> Held(std::span<const BlockHeader> headers) const;
    /// Hashes by height, genesis first (valid until the next Append or Truncate).
    std::span<const BlockHash> Hashes() const noexcept { return m_hashes; }
    /// Chain work by height: GetBlockProof summed from the genesis (Core's nChainWork).
    std::span<const arith_uint256> ChainWork() const noexcept { return m_work; }
    /// The ancestors' (time, bits) the header rules read for a header at height + 1: the last
    /// HEADER_ANCESTRY_NEEDED of them, ending at `height` (≤ Height()).
    HeaderAncestry AncestryAt(int height) const;
    /// Median time past of the block at `height` (its own and up to 10 earlier timestamps:
    /// consensus GetMedianTimePast).
    int64_t MedianTimePast(int height) const;

    /// Appends a header that must extend the tip and pass CheckHeaderOn; returns why not otherwise.
    /// The 80 bytes are kept (Header()) as long as every header came this way.
    std::optional<std::string> Append(const BlockHeader& header);
    /// Appends a header its builder already ordered (a block file's or Core's index, whose blocks
    /// the engine checks as they connect): no check, and Header() is no longer available.
    void AppendKnown(const BlockHash& hash, HeaderInfo info);
    /// Drops every header above `height` (≥ 0).
    void Truncate(int height);
    /// Reserves room for `headers` headers.
    void Reserve(std::size_t headers);
    /// Replaces the headers above the branch's fork with the branch's, already checked. Precondition:
    /// the branch was made on this chain, which has not changed since.
    void Adopt(const HeaderBranch& branch);

    /// Whether Header() is available: every header came through Append.
    bool HasFullHeaders() const noexcept { return m_full.size() == m_hashes.size(); }
    /// The full header at `height`. Precondition: HasFullHeaders().
    const BlockHeader& Header(int height) const { return m_full.at(std::size_t(height)); }

private:
    void Push(const BlockHash& hash, HeaderInfo info);

    const ChainParams* m_params; ///< the network's (static storage)
    std::vector<BlockHash> m_hashes;
    std::vector<HeaderInfo> m_info;     ///< time and bits by height
    std::vector<arith_uint256> m_work;  ///< chain work by height
    std::vector<BlockHeader> m_full;    ///< the headers themselves, while all came through Append
    std::unordered_map<BlockHash, int, Uint256Hasher> m_height_of;
};

/// A competing branch of a HeaderChain: headers forking after height Fork(), each linked to the
/// last and checked as HeaderChain::Append checks one (CheckHeaderOn), on the branch's own
/// ancestors: the chain's up to the fork, then the branch's. Core follows the branch only when it
/// has more chain work than the chain above the fork (MoreWork; on a tie the first seen stays), and
/// then HeaderChain::Adopt takes it. Holds `chain` by reference: it must outlive the branch and not
/// change while the branch is built. Memory: about 90 bytes a header, plus 2016 ancestors' time and bits.
class HeaderBranch {
public:
    /// An empty branch forking after `fork` (0 ≤ fork ≤ chain.Height()).
    HeaderBranch(const HeaderChain& chain, int fork);

    /// Appends a header that must extend the branch (at first: the chain's block at the fork) and
    /// pass Core's header checks; why not otherwise (the branch is left as it was).
    std::optional<std::string> Append(const BlockHeader& header);
    int Fork() const noexcept { return m_fork; }
    /// The branch's headers, the one after the fork first.
    std::span<const BlockHeader> Headers() const noexcept { return m_headers; }
    /// The hash the next header must extend.
    const BlockHash& Tip() const noexcept { return m_tip; }
    /// Whether the branch has more chain work (GetBlockProof summed) than the chain above the fork.
    bool MoreWork() const;

private:
    const HeaderChain& m_chain;
    int m_fork;
    BlockHash m_tip;
    std::vector<BlockHeader> m_headers;
    std::vector<HeaderInfo> m_ancestry; ///< the chain's last ancestors at the fork, then the branch's
    arith_uint256 m_work;
};

} // namespace ibdkit

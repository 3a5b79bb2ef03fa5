// ibdkit/consensus/header_chain.h — the one model of a best header chain: by height from the
// genesis, each header's hash, time, bits and chain work, its height by hash, the ancestry the
// header rules read and the median time past.
//
// Three builders fill it: the scan of a blocks directory and Core's block index (blockfile/locate.h,
// from headers they already ordered by work: AppendKnown), and the P2P header download (engine's
// sync: Append, which checks each header as Core does before asking for its block). The engine
// derives every block's context from it, and the assumevalid rule reads it (assumevalid.h).
#pragma once

#include <ibdkit/chain/params.h>
#include <ibdkit/consensus/header_check.h>
#include <ibdkit/consensus/pow.h>
#include <ibdkit/primitives/block.h>
#include <ibdkit/primitives/hash.h>

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

namespace ibdkit {

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
    /// Precondition for the accessors by height: 0 ≤ height ≤ Height() (std::out_of_range otherwise).
    const BlockHash& Hash(int height) const { return m_hashes.at(std::size_t(height)); }
    const HeaderInfo& Info(int height) const { return m_info.at(std::size_t(height)); }
    const BlockHash& Tip() const noexcept { return m_hashes.back(); }
    /// The height of `hash` on this chain, nullopt when it is not on it.
    std::optional<int> HeightOf(const BlockHash& hash) const;
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

} // namespace ibdkit

// ibdkit/engine/header_chain.h — the best header chain a peer source knows, by height, with proof
// of work checked on every append, kept on disk next to the coins so a resumed sync knows the
// height and median time past of the chainstate's best block.
#pragma once

#include <ibdkit/chain/params.h>
#include <ibdkit/consensus/header_check.h>
#include <ibdkit/consensus/pow.h>
#include <ibdkit/error.h>
#include <ibdkit/primitives/block.h>
#include <ibdkit/primitives/hash.h>
#include <ibdkit/wire/protocol.h>

#include <cstdint>
#include <filesystem>
#include <optional>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

namespace ibdkit {

/// File name of the header chain inside the chainstate directory.
inline constexpr const char* HEADERS_FILE = "ibdkit-headers.dat";

/// Core's checks of a header before its block is asked for: its proof of work against its own
/// nBits (high-hash), then ContextualCheckBlockHeader on `prev` with the local clock (bad-diffbits,
/// time-too-old, time-timewarp-attack, time-too-new, bad-version). Why not, naming the header,
/// its height and Core's reason; nullopt when it passes.
std::optional<std::string> CheckHeaderOn(const BlockHeader& header, const HeaderAncestry& prev, const ConsensusParams& params);

/// The best header chain known, by height (genesis at 0), with checks on every append.
class HeaderChain {
public:
    explicit HeaderChain(const ChainParams& params);

    int Height() const noexcept { return int(m_hashes.size()) - 1; }
    const BlockHash& Hash(int height) const { return m_hashes.at(std::size_t(height)); }
    const BlockHeader& Header(int height) const { return m_headers.at(std::size_t(height)); }
    const BlockHash& Tip() const noexcept { return m_hashes.back(); }
    std::optional<int> HeightOf(const BlockHash& hash) const;
    std::span<const BlockHash> Hashes() const noexcept { return m_hashes; }
    /// Chain work by height: GetBlockProof summed from the genesis (Core's nChainWork).
    std::span<const arith_uint256> ChainWork() const noexcept { return m_work; }

    /// Appends a header that must extend the tip and pass CheckHeaderOn; returns why not otherwise.
    std::optional<std::string> Append(const BlockHeader& header);
    /// The ancestors' (time, bits) the header rules read for a header at height + 1: the last
    /// HEADER_ANCESTRY_NEEDED of them, ending at `height` (≤ Height()).
    HeaderAncestry AncestryAt(int height) const;
    /// Drops every header above `height` (≥ 0).
    void Truncate(int height);
    /// Locator from the tip (newest first, genesis last).
    std::vector<BlockHash> Locator() const { return MakeLocator(m_hashes); }
    /// Median time past of the block at `height` (its own and up to 10 earlier timestamps:
    /// consensus GetMedianTimePast).
    int64_t MedianTimePast(int height) const;

    /// Loads a headers file, keeping the valid prefix (a bad or partial tail is dropped and the
    /// file truncated to match). Returns the number of headers loaded.
    Result<int> Load(const std::filesystem::path& file);
    /// Appends headers [from, Height()] to the file (rewriting it from `from` on).
    std::optional<std::string> Persist(const std::filesystem::path& file, int from) const;

private:
    const ChainParams& m_params;
    std::vector<BlockHeader> m_headers;
    std::vector<BlockHash> m_hashes;
    std::vector<HeaderInfo> m_ancestry; ///< time and bits by height
    std::vector<arith_uint256> m_work;  ///< chain work by height
    std::unordered_map<BlockHash, int, Uint256Hasher> m_height_of;
};

} // namespace ibdkit

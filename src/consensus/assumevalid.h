// src/consensus/assumevalid.h — whether a block's scripts are verified: Core's assumevalid rule.
//
// Core's ConnectBlock skips a block's script checks only if all of these hold, in this order (each
// failing one is the reason it logs for verifying; validation.cpp, "script_check_reason"):
//   (a) an assumevalid hash is set ("assumevalid=0 (always verify)") and is a known header
//       ("assumevalid hash not in headers");
//   (b) the block is that header's ancestor ("block height above assumevalid height", "block not
//       in assumevalid chain");
//   (c) the block is in the best header chain ("block not in best header chain");
//   (d) the best header's chain work is at least the network's minimum chain work ("best header
//       chainwork below minimumchainwork");
//   (e) the best header is more than two weeks of proof-of-work-equivalent time past the block
//       ("block too recent relative to best header").
// The decision reads the header chains as spans of hashes by height, so a block source states what
// it knows: replay its whole chain from the scan, sync its header chain. ibdkit's sources know
// only their best chain, so an assumevalid hash off that chain is "not in headers" here where
// Core, knowing the side branch, might say the block is not in the assumevalid chain: either way
// the scripts run.
#pragma once

#include <ibdkit/chain/params.h>
#include <ibdkit/consensus/header_chain.h>
#include <ibdkit/consensus/pow.h>
#include <ibdkit/primitives/hash.h>

#include <cstdint>
#include <optional>
#include <span>
#include <string_view>

namespace ibdkit {

/// A header chain by height: hashes[i] is the header at base_height + i, the last one its tip.
/// chain_work[i] (same indexes, or empty where not read) is the work of every header from the
/// genesis to it (GetBlockProof summed; a chain whose first headers are unknown counts less, which
/// can only make scripts run).
struct HeaderChainView {
    int base_height{0};
    std::span<const BlockHash> hashes;
    std::span<const arith_uint256> chain_work;

    int TipHeight() const noexcept { return base_height + int(hashes.size()) - 1; }
    /// The hash at `height`, nullopt outside the span.
    std::optional<BlockHash> HashAt(int height) const noexcept
    {
        if (height < base_height || height > TipHeight()) return std::nullopt;
        return hashes[std::size_t(height - base_height)];
    }
};

/// Core's GetBlockProofEquivalentTime(to, from, tip): the seconds of work at tip's difficulty
/// between two chain works (negative if `to` has less), saturated at ±INT64_MAX.
int64_t GetBlockProofEquivalentTime(const arith_uint256& to_work, const arith_uint256& from_work, const arith_uint256& tip_proof,
                                    const ConsensusParams& params) noexcept;

/// The assumevalid block as the caller's headers know it.
struct AssumeValidChain {
    /// The assumevalid hash; null: verify every script (Core's -assumevalid=0).
    BlockHash hash;
    /// The chain ending at the assumevalid header (its ancestors by height), or nullopt when no
    /// known header has the hash.
    std::optional<HeaderChainView> chain;
};

/// Core's reason why the scripts of the block at `height` with hash `hash` are verified, or
/// nullopt when the assumevalid rule skips them. `best` is the best header chain, its tip the best
/// header, with chain_work filled. The genesis block (whose transactions Core never connects) is
/// not asked about.
std::optional<std::string_view> ScriptCheckReason(const AssumeValidChain& assumevalid, const HeaderChainView& best, int height,
                                                  const BlockHash& hash, const ConsensusParams& params);

/// The assumevalid hash a run uses: `setting` if given (a null hash: verify every script), the
/// network's default_assume_valid otherwise.
BlockHash ResolveAssumeValid(const std::optional<BlockHash>& setting, const ConsensusParams& params) noexcept;

/// The assumevalid rule over a header chain whose tip is the best header: a replay's block files or
/// a datadir's block index (known whole from the start), a peer's headers (growing as they arrive:
/// each Reason reads the chain as it is then). Holds a reference to `best`, which must outlive it;
/// not thread-safe with a writer of `best`.
class AssumeValidRule {
public:
    /// `setting` as for ResolveAssumeValid; `minimum_chain_work` the run's (Core's
    /// -minimumchainwork, RunSettings::MinimumChainWork), in place of `params`' own.
    AssumeValidRule(const HeaderChain& best, const std::optional<BlockHash>& setting, const ConsensusParams& params,
                    const uint256& minimum_chain_work);
    /// ScriptCheckReason for the block at `height` of the chain (above the genesis).
    std::optional<std::string_view> Reason(int height) const;

private:
    const HeaderChain& m_best;
    ConsensusParams m_params;
    BlockHash m_hash;
};

} // namespace ibdkit

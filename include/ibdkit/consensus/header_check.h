// ibdkit/consensus/header_check.h — contextual header checks (Core's ContextualCheckBlockHeader)
// and the difficulty rules of every network (Core's GetNextWorkRequired), over the ancestors of
// the header being checked.
//
// The caller (replay over block files, sync over P2P) keeps its own header chain and passes the
// few fields these rules read of the last ancestors — time and bits by height — so the same code
// checks a header wherever the chain lives. Chain work per header is GetBlockProof (pow.h).
#pragma once

#include <ibdkit/consensus/validation.h>
#include <ibdkit/primitives/block.h>

#include <cstdint>
#include <span>

namespace ibdkit {

struct ConsensusParams;

/// What the contextual rules read of one ancestor.
struct HeaderInfo {
    uint32_t time{0};
    uint32_t bits{0};
};

/// The ancestors of a header, by height: `headers[i]` is the block at `first_height + i`, and the
/// last one is the previous block. The rules read at most the last HEADER_ANCESTRY_NEEDED of them
/// (the retarget window, and testnet's walk back to its start); a span that starts later than
/// max(0, prev_height + 1 - HEADER_ANCESTRY_NEEDED) is a precondition violation (asserted).
struct HeaderAncestry {
    int first_height{0};
    std::span<const HeaderInfo> headers;

    int prev_height() const noexcept { return first_height + int(headers.size()) - 1; }
    const HeaderInfo& prev() const noexcept { return headers.back(); }
    const HeaderInfo& at(int height) const noexcept;
};

/// The ancestors every network's rules may read (one retarget interval: 2016 blocks).
inline constexpr int HEADER_ANCESTRY_NEEDED = 2016;
/// Core's MAX_FUTURE_BLOCK_TIME: a header may be at most two hours ahead of the local clock.
inline constexpr int64_t MAX_FUTURE_BLOCK_TIME = 2 * 60 * 60;
/// Core's MAX_TIMEWARP (BIP94): at a retarget boundary, at most 600 s before the previous block.
inline constexpr int64_t MAX_TIMEWARP = 600;
/// Core's MEDIAN_TIME_SPAN.
inline constexpr int MEDIAN_TIME_SPAN = 11;

/// Median of the times of the previous block and up to 10 before it (Core's GetMedianTimePast).
/// Precondition: `prev.headers` is not empty.
int64_t GetMedianTimePast(const HeaderAncestry& prev) noexcept;

/// The bits the next header must carry (Core's GetNextWorkRequired): the previous bits between
/// retargets, the retarget formula every DifficultyAdjustmentInterval blocks (testnet4: from the
/// first block of the period, BIP94), testnet's minimum-difficulty rule (a header more than
/// 20 minutes after its parent may use the pow limit; otherwise the last bits not set by that
/// rule), regtest's no-retargeting. `new_time` is the new header's time.
uint32_t GetNextWorkRequired(const HeaderAncestry& prev, int64_t new_time, const ConsensusParams& params) noexcept;

/// Core's CalculateNextWorkRequired: the retarget from the period's first time (and, with BIP94,
/// its first bits) to the last block's time and bits, clamped to a factor of 4 and the pow limit.
uint32_t CalculateNextWorkRequired(uint32_t last_bits, int64_t last_time, int64_t first_time, uint32_t first_bits,
                                   const ConsensusParams& params) noexcept;

/// Whether a header at `height` may carry `new_bits` after a parent with `old_bits` (Core's
/// PermittedDifficultyTransition): on networks without minimum-difficulty blocks, equal bits
/// between retargets and a change within a factor of 4 (after compact rounding, capped at the pow
/// limit) at a retarget; always true where minimum-difficulty blocks are allowed. A header chain
/// checked without its times (the presync of consensus/headers_presync.h) cannot compress its work
/// into fewer blocks than a valid chain would need.
bool PermittedDifficultyTransition(const ConsensusParams& params, int64_t height, uint32_t old_bits, uint32_t new_bits) noexcept;

/// Core's ContextualCheckBlockHeader for `header` on top of `prev` (its ancestors), with `now` the
/// local clock (seconds since the epoch). On failure returns false with `state` holding Core's
/// reason, checked in Core's order:
///   bad-diffbits (INVALID_HEADER), time-too-old (INVALID_HEADER), time-timewarp-attack
///   (INVALID_HEADER, BIP94 networks), time-too-new (TIME_FUTURE), bad-version(0x%08x)
///   (INVALID_HEADER: version < 2, 3, 4 from the BIP34, BIP66, BIP65 heights).
/// Checkpoints (bad-fork-prior-to-checkpoint) are not checked.
bool ContextualCheckBlockHeader(const BlockHeader& header, const HeaderAncestry& prev, const ConsensusParams& params,
                                int64_t now, BlockValidationState& state);

} // namespace ibdkit

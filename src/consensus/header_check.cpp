#include <ibdkit/consensus/header_check.h>

#include <ibdkit/chain/params.h>
#include <ibdkit/consensus/pow.h>

#include <algorithm>
#include <array>
#include <cassert>
#include <cstdio>

namespace ibdkit {

const HeaderInfo& HeaderAncestry::at(int height) const noexcept
{
    assert(height >= first_height && height <= prev_height() && "HeaderAncestry: ancestor not provided");
    return headers[std::size_t(height - first_height)];
}

int64_t GetMedianTimePast(const HeaderAncestry& prev) noexcept
{
    assert(!prev.headers.empty());
    std::array<int64_t, MEDIAN_TIME_SPAN> times{};
    const int n = std::min<int>(MEDIAN_TIME_SPAN, prev.prev_height() + 1);
    for (int i = 0; i < n; ++i) times[std::size_t(i)] = prev.at(prev.prev_height() - i).time;
    std::sort(times.begin(), times.begin() + n);
    return times[std::size_t(n / 2)];
}

uint32_t CalculateNextWorkRequired(uint32_t last_bits, int64_t last_time, int64_t first_time, uint32_t first_bits,
                                   const ConsensusParams& params) noexcept
{
    if (params.pow_no_retargeting) return last_bits;
    const int64_t timespan = std::clamp(last_time - first_time, params.pow_target_timespan / 4, params.pow_target_timespan * 4);
    const arith_uint256 limit = UintToArith256(params.pow_limit);
    arith_uint256 target;
    // BIP94 (testnet4): the period's first block keeps the real difficulty (it cannot use the
    // minimum-difficulty exception), so the retarget starts from it.
    target.SetCompact(params.enforce_bip94 ? first_bits : last_bits);
    target *= uint32_t(timespan); // ≤ 4 × two weeks in seconds: fits
    target /= arith_uint256(uint64_t(params.pow_target_timespan));
    if (target > limit) target = limit;
    return target.GetCompact();
}

bool PermittedDifficultyTransition(const ConsensusParams& params, int64_t height, uint32_t old_bits, uint32_t new_bits) noexcept
{
    if (params.pow_allow_min_difficulty_blocks) return true;
    if (height % params.DifficultyAdjustmentInterval() != 0) return old_bits == new_bits;
    const arith_uint256 limit = UintToArith256(params.pow_limit);
    const arith_uint256 timespan(uint64_t(params.pow_target_timespan));
    arith_uint256 observed;
    observed.SetCompact(new_bits);
    // The bound of each direction is rounded through the compact form, as a retarget's bits are.
    auto bound = [&](int64_t span) {
        arith_uint256 target;
        target.SetCompact(old_bits);
        target *= uint32_t(span); // ≤ 4 × two weeks in seconds: fits
        target /= timespan;
        if (target > limit) target = limit;
        arith_uint256 rounded;
        rounded.SetCompact(target.GetCompact());
        return rounded;
    };
    if (bound(params.pow_target_timespan * 4) < observed) return false;
    return !(bound(params.pow_target_timespan / 4) > observed);
}

uint32_t GetNextWorkRequired(const HeaderAncestry& prev, int64_t new_time, const ConsensusParams& params) noexcept
{
    const uint32_t limit_bits = UintToArith256(params.pow_limit).GetCompact();
    const int64_t interval = params.DifficultyAdjustmentInterval();
    const int last = prev.prev_height();
    const HeaderInfo& last_info = prev.prev();
    if ((last + 1) % interval != 0) {
        if (params.pow_allow_min_difficulty_blocks) {
            // Testnet: a block more than twice the target spacing after its parent may be mined
            // at minimum difficulty; otherwise the last bits not set by that exception apply.
            if (new_time > int64_t(last_info.time) + params.pow_target_spacing * 2) return limit_bits;
            // Core's walk back while the bits are the limit, stopping at the period's first block
            // (or the genesis): every regtest block and most testnet ones walk all the way, so the
            // loop reads the span directly.
            const int start = last - int(last % interval);
            assert(start >= prev.first_height && "HeaderAncestry: the period's first block not provided");
            const HeaderInfo* p = &prev.at(last);
            int h = last;
            while (h - 8 >= start) { // eight at a time while all carry the limit: one branch per eight
                unsigned differ = 0;
                for (int k = 0; k < 8; ++k) differ |= unsigned(p[-k].bits != limit_bits);
                if (differ != 0) break;
                p -= 8;
                h -= 8;
            }
            for (; h > start && p->bits == limit_bits; --h) --p;
            return p->bits;
        }
        return last_info.bits;
    }
    const int first = last - int(interval - 1);
    assert(first >= 0);
    const HeaderInfo& first_info = prev.at(first);
    return CalculateNextWorkRequired(last_info.bits, last_info.time, first_info.time, first_info.bits, params);
}

bool ContextualCheckBlockHeader(const BlockHeader& header, const HeaderAncestry& prev, const ConsensusParams& params,
                                int64_t now, BlockValidationState& state)
{
    const int height = prev.prev_height() + 1;
    if (header.bits != GetNextWorkRequired(prev, header.time, params)) {
        return state.Invalid(BlockValidationResult::BLOCK_INVALID_HEADER, "bad-diffbits", "incorrect proof of work");
    }
    if (int64_t(header.time) <= GetMedianTimePast(prev)) {
        return state.Invalid(BlockValidationResult::BLOCK_INVALID_HEADER, "time-too-old", "block's timestamp is too early");
    }
    if (params.enforce_bip94 && height % params.DifficultyAdjustmentInterval() == 0 &&
        int64_t(header.time) < int64_t(prev.prev().time) - MAX_TIMEWARP) {
        return state.Invalid(BlockValidationResult::BLOCK_INVALID_HEADER, "time-timewarp-attack",
                             "block's timestamp is too early on diff adjustment block");
    }
    if (int64_t(header.time) > now + MAX_FUTURE_BLOCK_TIME) {
        return state.Invalid(BlockValidationResult::BLOCK_TIME_FUTURE, "time-too-new", "block timestamp too far in the future");
    }
    if ((header.version < 2 && height >= params.bip34_height) || (header.version < 3 && height >= params.bip66_height) ||
        (header.version < 4 && height >= params.bip65_height)) {
        char reason[32];
        std::snprintf(reason, sizeof reason, "bad-version(0x%08x)", uint32_t(header.version));
        char debug[48];
        std::snprintf(debug, sizeof debug, "rejected nVersion=0x%08x block", uint32_t(header.version));
        return state.Invalid(BlockValidationResult::BLOCK_INVALID_HEADER, reason, debug);
    }
    return true;
}

} // namespace ibdkit

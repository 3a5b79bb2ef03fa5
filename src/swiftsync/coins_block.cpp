// Coins mode's check of one block (swiftsync/coins_block.h).
#include "swiftsync/coins_block.h"

#include <ibdkit/consensus/check.h>
#include <ibdkit/consensus/header_check.h>
#include <ibdkit/consensus/validation.h>

#include "connect/connect.h"
#include "swiftsync/range_internal.h"

#include <ctime>
#include <string>

namespace ibdkit::swiftsync {

CoinsBlockRules::CoinsBlockRules(const HeaderChain& headers, ChainType chain, const Hints& hints, const SaltedHasher& hasher,
                                 bool collect_unspent, const CoinsModeOptions& coins)
    : m_headers(headers), m_chain(chain), m_params(GetChainParams(chain).consensus), m_hints(hints), m_hasher(hasher),
      m_collect_unspent(collect_unspent), m_skip_scripts(coins.skip_scripts), m_assumevalid(headers, coins.assumevalid, m_params, coins.minimum_chain_work.value_or(m_params.minimum_chain_work)),
      // Where BIP34 holds from height 1, no coinbase can repeat another (connect.cpp, Bip30For).
      m_collect_bip30(m_params.bip34_height > 1), m_now(int64_t(std::time(nullptr)))
{
    if (m_params.bip34_height <= headers.Height()) m_bip34_hash = headers.Hash(m_params.bip34_height);
}

BlockOutcome CoinsBlockRules::Check(Block& block, uint32_t h, const BlockHash& hash, const SpentCoinsFor& spent) const
{
    BlockOutcome out;
    Partial& p = out.partial;
    auto refuse = [&](std::string reason) {
        p.failure = BlockFailure{h, hash, std::move(reason)};
        return std::move(out);
    };
    // Core's order for a block: its header's proof of work, the header's contextual rules, then
    // the rest of CheckBlock, ContextualCheckBlock and ConnectBlock.
    const BlockHeader header = block.header();
    // The ancestry below comes from the header chain: each block's own header must agree with it
    // (every block of 1..n passes here, so every time and bits it holds is checked).
    const HeaderInfo& indexed = m_headers.Info(int(h));
    if (header.hash_prev_block != m_headers.Hash(int(h) - 1) || header.time != indexed.time || header.bits != indexed.bits) {
        out.error = Error{Errc::Corrupt, "block " + hash.ToHex() + " at height " + std::to_string(h) +
                                             " does not agree with the block index (parent, time or bits)"};
        return out;
    }
    const HeaderAncestry prev = m_headers.AncestryAt(int(h) - 1);
    BlockValidationState state, header_state;
    auto checked = CheckBlock(std::move(block), state, m_params);
    if (!checked && state.GetResult() == BlockValidationResult::BLOCK_INVALID_HEADER) return refuse(state.GetRejectReason());
    if (!ContextualCheckBlockHeader(header, prev, m_params, m_now, header_state)) return refuse(header_state.GetRejectReason());
    if (!checked) return refuse(state.GetRejectReason());

    if (!spent) {
        // Outpoints mode: the block's outpoints alone, as CheckRange weighs a blk file's block.
        AccumulateBlock(checked->block(), h, hash, m_chain, m_hints.Indices(h), m_hasher, m_collect_unspent, p);
        return out;
    }
    auto undo = spent(checked->block());
    if (!undo) {
        out.error = std::move(undo.error());
        out.coins_unfit = true;
        return out;
    }
    AccumulateBlock(checked->block(), h, hash, m_chain, m_hints.Indices(h), m_hasher, m_collect_unspent, p, &*undo);
    if (p.failure) return out;

    ConnectContext ctx;
    ctx.height = int(h);
    ctx.prev = prev;
    if (m_bip34_hash && int(h) > m_params.bip34_height) ctx.bip34_ancestor = m_bip34_hash;
    if (auto why = m_skip_scripts ? std::nullopt : m_assumevalid.Reason(int(h))) {
        ctx.check_scripts = true;
        ctx.script_check_reason = *why;
    }
    if (m_collect_bip30 && Bip30Applies(ctx, hash, m_params)) p.bip30_coinbases.emplace_back(checked->block().vtx[0].GetHash(), h);
    ConnectStats stats;
    if (!CheckBlockSpends(*checked, ctx, *undo, m_params, state, &stats)) {
        out.refused_on_coins = true;
        return refuse(state.GetRejectReason());
    }
    p.script_checked_inputs = stats.script_checked_inputs;
    return out;
}

} // namespace ibdkit::swiftsync

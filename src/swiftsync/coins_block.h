// src/swiftsync/coins_block.h (internal) — coins mode's check of one block with its spent coins:
// Core's rules in Core's order and BIP 457's Coin elements. What the range check over a datadir's
// rev files (check_coins.cpp) and the check over peers' spent coins (check_peers.cpp) share; they
// differ only in where a block's spent coins come from and whom to blame when they do not fit.
#pragma once

#include <ibdkit/consensus/header_chain.h>
#include <ibdkit/error.h>
#include <ibdkit/swiftsync/check_range.h>

#include "consensus/assumevalid.h"

#include <cstdint>
#include <functional>
#include <optional>

namespace ibdkit::swiftsync {

/// One block's outcome: its partial (partial.failure when a rule refused it), or an error.
struct BlockOutcome {
    Partial partial;
    std::optional<Error> error;
    /// The error is the spent coins': they did not decode or do not fit the block.
    bool coins_unfit{false};
    /// A rule that reads the spent coins refused the block (amounts, maturity, BIP68, sigops,
    /// scripts): with coins from an untrusted source, the coins may be what is wrong.
    bool refused_on_coins{false};
};

/// The spent coins of a block that passed CheckBlock (grouped per transaction as a rev record
/// holds them), or why they cannot be had; called once per block, on the block's thread.
using SpentCoinsFor = std::function<Result<BlockUndo>(const Block& block)>;

/// The rules of coins mode over one header chain and hintsfile; Check is safe on many threads.
class CoinsBlockRules {
public:
    /// `headers` holds heights 0..n of the chain the blocks must be on (each block's header must
    /// agree with it); all references must outlive the rules.
    CoinsBlockRules(const HeaderChain& headers, ChainType chain, const Hints& hints, const SaltedHasher& hasher,
                    bool collect_unspent, const CoinsModeOptions& coins);

    /// Checks `block` (its hash `hash`, at height h ≥ 1) as Core would connect it: header proof of
    /// work and contextual rules, CheckBlock, ContextualCheckBlock, then the spent coins from
    /// `spent` and every ConnectBlock rule that reads them, scripts where the assumevalid rule
    /// runs them; the block's Coin elements go to the outcome's partial. Consumes the block.
    /// `spent` empty: outpoints mode, the header and CheckBlock's rules, then the block's outpoints
    /// (no spent coins, no rule that reads them).
    BlockOutcome Check(Block& block, uint32_t h, const BlockHash& hash, const SpentCoinsFor& spent) const;

private:
    const HeaderChain& m_headers;
    ChainType m_chain;
    const ConsensusParams& m_params;
    const Hints& m_hints;
    const SaltedHasher& m_hasher;
    bool m_collect_unspent;
    bool m_skip_scripts;
    AssumeValidRule m_assumevalid;
    std::optional<BlockHash> m_bip34_hash;
    bool m_collect_bip30;
    int64_t m_now;
};

} // namespace ibdkit::swiftsync

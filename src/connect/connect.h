// src/connect/connect.h — connecting a checked block to the UTXO set, scripts included.
//
// Its own area: the IBD engine (engine/) calls it; it knows nothing of block sources, threads or
// flushing. ConnectBlock accepts only a CheckedBlock (consensus/check.h), so a block that skipped
// CheckBlock cannot be connected by accident.
//
// The rules of Core's ContextualCheckBlock + ConnectBlock, with Core's reject reasons: BIP34 coinbase height (bad-cb-height), transaction finality
// (bad-txns-nonfinal), block weight (bad-blk-weight), the witness commitment
// (bad-witness-nonce-size, bad-witness-merkle-match, unexpected-witness), BIP30 with Core's two
// historical exceptions (bad-txns-BIP30), inputs that exist and are unspent
// (bad-txns-inputs-missingorspent), coinbase maturity (bad-txns-premature-spend-of-coinbase), input
// and fee ranges (bad-txns-inputvalues-outofrange, bad-txns-in-belowout, bad-txns-fee-outofrange,
// bad-txns-accumulated-fee-outofrange), BIP68 relative lock-times once CSV is active
// (bad-txns-nonfinal), the sigop-cost limit with P2SH and witness sigops counted from the spent
// outputs under Core's script-flag rules (bad-blk-sigops), the coinbase claim (bad-cb-amount),
// and, when ConnectContext::check_scripts is set, every input's scripts and signatures
// (block-script-verify-flag-failed (<Core's ScriptErrorString>)). The header's contextual rules
// (consensus/header_check.h) are the engine's, before this.
//
// Scripts are verified after every other rule of the block, as Core's parallel script checks are
// (CCheckQueue, completed after the coinbase claim): a block that breaks another rule too is
// rejected for that rule. Of several failing inputs, the first in block order gives the reason,
// whatever the threads. Where check_scripts is off (the engine's assumevalid rule), a chain is
// trusted for its scripts exactly as Core trusts the blocks below its assumevalid hash. Signet
// block solutions are not checked.
#pragma once

#include <ibdkit/chain/params.h>
#include <ibdkit/coins/undo.h>
#include <ibdkit/consensus/check.h>
#include <ibdkit/consensus/header_check.h>
#include <ibdkit/consensus/validation.h>
#include <ibdkit/primitives/block.h>

#include "coins/coins_cache.h"
#include "common/executor.h"

#include <array>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string_view>
#include <vector>

namespace ibdkit {

struct ConnectContext {
    int height{0};
    /// The chain's (time, bits) below this block: prev.prev_height() == height - 1. Its median
    /// time past is BIP113's lock-time cutoff once CSV is active; BIP68's time locks read the median
    /// time past at a spent coin's height - 1, so the ancestry starts at the genesis (first_height
    /// 0) unless no spent coin is older than its first 11 blocks.
    HeaderAncestry prev;
    /// Hash of this chain's block at params.bip34_height, when height > bip34_height (BIP30 rule).
    std::optional<BlockHash> bip34_ancestor;
    /// Verify every input's scripts (Core's fScriptChecks) under GetBlockScriptFlags of this block
    /// (consensus/script_flags.h). The engine sets it from the assumevalid rule (consensus/assumevalid.h);
    /// off, no per-input work is done for scripts at all.
    bool check_scripts{false};
    /// Why (Core's script_check_reason, for reports): static text, empty when not checked.
    std::string_view script_check_reason;
};

struct ConnectStats {
    Amount fees{0};
    uint64_t inputs{0};
    uint64_t outputs_added{0};
    uint64_t script_checked_inputs{0}; ///< inputs whose scripts were verified (ctx.check_scripts)
};

/// The part of connecting a block that depends on the block alone: its inputs (after the
/// coinbase) and its transactions' outputs grouped by the shard of the cache they touch
/// (CoinsCache::ShardOf), each group in block order, and where each transaction's inputs start
/// among the block's. ConnectBlock makes one itself when given none; the engine makes it on the
/// thread that decoded and checked the block, while the block is still in that core's cache.
class ConnectPlan {
public:
    /// One step of a shard's work: input `input` of transaction `tx`, or (OUTPUTS) all of its
    /// outputs, which share its txid's shard.
    struct Op {
        static constexpr uint32_t OUTPUTS = ~uint32_t(0);
        uint32_t tx;
        uint32_t input;
    };

    ConnectPlan() = default;
    explicit ConnectPlan(const Block& block) { Assign(block); }
    /// Plans `block`, reusing this plan's storage.
    void Assign(const Block& block);

    /// Shard `s`'s steps, in block order.
    std::span<const Op> Shard(std::size_t s) const noexcept
    {
        return std::span<const Op>(m_ops).subspan(m_shard_begin[s], m_shard_begin[s + 1] - m_shard_begin[s]);
    }
    /// Per transaction, the index of its first input among the block's inputs after the coinbase
    /// (CheckedBlock::input_sigops() order); the last entry is their count.
    std::span<const std::size_t> FirstInput() const noexcept { return m_first_input; }
    std::size_t Inputs() const noexcept { return m_first_input.empty() ? 0 : m_first_input.back(); }
    /// Transactions of the block planned (0 for a default-constructed plan).
    std::size_t Transactions() const noexcept { return m_first_input.empty() ? 0 : m_first_input.size() - 1; }
    /// Whether this is the plan of `block` (the same transactions, wherever the Block was moved).
    bool IsPlanOf(const Block& block) const noexcept
    {
        return m_vtx == block.vtx.data() && Transactions() == block.vtx.size();
    }

private:
    const Transaction* m_vtx{nullptr}; ///< the planned block's transactions (moving a Block keeps them)
    std::vector<Op> m_ops;
    std::array<std::size_t, CoinsCache::SHARDS + 1> m_shard_begin{};
    std::vector<std::size_t> m_first_input;
};

/// Buffers ConnectBlock reuses from one block to the next (each input's spent coin, keeping its
/// script's storage; a plan; the outputs whose BIP30 lookup on disk waits): one per thread that
/// connects blocks, owned by the caller. Not thread-safe: one ConnectBlock at a time.
class ConnectScratch {
public:
    ConnectScratch();
    ~ConnectScratch();
    ConnectScratch(const ConnectScratch&) = delete;
    ConnectScratch& operator=(const ConnectScratch&) = delete;

    struct Impl;
    Impl& impl() noexcept { return *m_impl; }

private:
    std::unique_ptr<Impl> m_impl;
};

/// What a caller may add to ConnectBlock, each optional.
struct ConnectExtras {
    /// Counts of the block, added to (never reset).
    ConnectStats* stats{nullptr};
    /// Filled with the block's undo data (the coins spent, per non-coinbase transaction in input
    /// order, as Core's ConnectBlock builds its CBlockUndo; coins/undo.h); unspecified on failure.
    BlockUndo* undo{nullptr};
    /// The cache's side (looking up, spending and adding coins, and each input's sigop cost) runs
    /// as one task per shard of the cache (coins/coins_cache.h), and the scripts over it; the
    /// checks and the result are the same as without.
    const TaskRunner* runner{nullptr};
    /// Must be ConnectPlan(checked.block()) (IBDKIT_EXPECTS, ibdkit/error.h: it is checked by the
    /// planned transactions' address and count, a guard against a mix-up, not against a block
    /// freed and another built in its place); without it ConnectBlock plans the block itself.
    const ConnectPlan* plan{nullptr};
    /// Buffers kept from the last block; without, ConnectBlock allocates its own for the call.
    ConnectScratch* scratch{nullptr};
};

/// Applies `block` at ctx.height: checks the rules above and updates `view`. Returns false with
/// Core's reason in `state` if a rule fails; `view` is then as it was before the block (the changes
/// the block made are taken back, as Core drops its view of a failed block), so the blocks before
/// it may be flushed. Throws as the cache's reads do (`view` may then hold part of the block).
bool ConnectBlock(const CheckedBlock& checked, const ConnectContext& ctx, CoinsCache& view, const ConsensusParams& params,
                  BlockValidationState& state, const ConnectExtras& extras = {});

/// ConnectBlock's rules without a UTXO set: for a block whose spent coins are given (a node's undo
/// data for it, as coins/undo.h lays it out), ContextualCheckBlock and every rule of ConnectBlock
/// above, in Core's order and with Core's reasons, scripts included when ctx.check_scripts is set
/// (over `runner`'s threads, if given) — except the two that read the set. Whether each coin is
/// unspent, and BIP30, are the caller's to prove (SwiftSync's coins mode does it with its
/// aggregates, swiftsync/check_range.h). What stands for "the inputs exist": a coin is missing
/// (bad-txns-inputs-missingorspent) unless it is older than the block or made by an earlier
/// transaction of it. `spent` must hold one TxUndo per transaction after the coinbase and one coin
/// per input (IBDKIT_EXPECTS); its coins are moved out. Returns false with Core's
/// reason in `state` when a rule fails. Thread-safe for distinct blocks (its scratch is per thread).
bool CheckBlockSpends(const CheckedBlock& checked, const ConnectContext& ctx, BlockUndo& spent, const ConsensusParams& params,
                      BlockValidationState& state, ConnectStats* stats = nullptr, const TaskRunner* runner = nullptr);

/// Re-applies a block that was already connected once, without checks and idempotently (spending
/// a missing coin and overwriting an existing one are fine): recovery after a flush interrupted
/// between its first and last batch (Core's RollforwardBlock).
void RollforwardBlock(const Block& block, int height, CoinsCache& view);

/// Whether Core checks BIP30 (no transaction overwrites an unspent coin) for block `hash` at
/// ctx.height: not in its two historical exceptions, nor while BIP34 guarantees unique coinbases
/// (ctx.bip34_ancestor is the network's BIP34 block, below height 1,983,702).
bool Bip30Applies(const ConnectContext& ctx, const BlockHash& hash, const ConsensusParams& params) noexcept;

/// Core's two historical blocks that duplicate an earlier coinbase (BIP30 exceptions).
bool IsBIP30Repeat(int height, const BlockHash& hash) noexcept;

} // namespace ibdkit

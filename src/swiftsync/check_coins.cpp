// SwiftSync's range check in coins mode (swiftsync/check_range.h, CheckRangeCoins): each block with
// its undo data, every rule of Core's that does not read the UTXO set, and BIP 457's Coin elements.
#include <ibdkit/swiftsync/check_range.h>

#include <ibdkit/consensus/check.h>
#include <ibdkit/consensus/header_check.h>
#include <ibdkit/consensus/validation.h>

#include "blockfile/undo_file.h"
#include "connect/connect.h"
#include "consensus/assumevalid.h"

#include "swiftsync/block_walk.h"
#include "swiftsync/range_internal.h"

#include <ctime>
#include <string>
#include <vector>

namespace ibdkit::swiftsync {

namespace {

/// One block's outcome: its partial, or an error that ends the range (undo data that does not fit).
struct BlockOutcome {
    Partial partial;
    std::optional<Error> error;
};

/// Whether `undo` has the shape of `block`'s spent coins: one list per transaction after the
/// coinbase, one coin per input.
bool FitsBlock(const BlockUndo& undo, const Block& block)
{
    if (undo.vtxundo.size() + 1 != block.vtx.size()) return false;
    for (std::size_t t = 1; t < block.vtx.size(); ++t) {
        if (undo.vtxundo[t - 1].prevout.size() != block.vtx[t].vin().size()) return false;
    }
    return true;
}

/// The undo record of each height from..to, or why one is missing.
Result<std::vector<const DatadirUndo::Block*>> UndoByHeight(const LocatedChain& loc, const DatadirUndo& undo, uint32_t from, uint32_t to)
{
    std::vector<const DatadirUndo::Block*> by_height(std::size_t(to - from + 1), nullptr);
    for (const DatadirUndo::Block& b : undo.blocks) {
        if (b.height < int(from) || b.height > int(to)) continue;
        if (b.hash != loc.headers.Hash(int(b.height))) {
            return Error{Errc::Corrupt, "the block index gives two blocks at height " + std::to_string(b.height) + ": " +
                                            loc.headers.Hash(int(b.height)).ToHex() + " and, with undo data, " +
                                            b.hash.ToHex()};
        }
        by_height[std::size_t(uint32_t(b.height) - from)] = &b;
    }
    for (uint32_t h = from; h <= to; ++h) {
        if (!by_height[h - from]) {
            return Error{Errc::NotFound, "block " + loc.headers.Hash(int(h)).ToHex() + " at height " +
                                             std::to_string(h) +
                                             " has no undo data in the datadir (pruned, or not connected by Core yet): coins mode "
                                             "needs every block's rev data; outpoints mode checks without it (much less)"};
        }
    }
    return by_height;
}

} // namespace

Result<Partial> CheckRangeCoins(const LocatedChain& blocks, const Hints& hints, const Salt& salt, uint32_t from, uint32_t to,
                                const CheckRangeOptions& options, const CoinsModeOptions& coins)
{
    if (from < 1 || from > to || to > hints.height()) {
        return Error{Errc::InvalidValue, "range " + std::to_string(from) + ".." + std::to_string(to) +
                                             " is not within the hintsfile's 1.." + std::to_string(hints.height())};
    }
    if (!coins.undo) return Error{Errc::InvalidValue, "coins mode needs the blocks' undo data (a Bitcoin Core data directory)"};
    if (blocks.base_height != 0 || int64_t(to) > int64_t(blocks.TipHeight())) {
        return Error{Errc::InvalidValue, "blocks " + std::to_string(from) + ".." + std::to_string(to) +
                                             " are not all in the blocks' best chain from the genesis (heights " +
                                             std::to_string(blocks.base_height) + ".." + std::to_string(blocks.TipHeight()) + ")"};
    }
    auto undo_at = UndoByHeight(blocks, *coins.undo, from, to);
    if (!undo_at) return undo_at.error();
    const ChainParams& chain_params = GetChainParams(blocks.chain);
    const ConsensusParams& params = chain_params.consensus;
    const HeaderChain& headers = blocks.headers;
    const AssumeValidRule assumevalid(headers, coins.assumevalid, params);
    std::optional<BlockHash> bip34_hash;
    if (params.bip34_height <= blocks.TipHeight()) bip34_hash = blocks.headers.Hash(params.bip34_height);
    // Where BIP34 holds from height 1, no coinbase can repeat another (connect.cpp, Bip30For).
    const bool collect_bip30 = params.bip34_height > 1;
    const int64_t now = int64_t(std::time(nullptr));
    const SaltedHasher hasher(salt);

    UndoFileReader rev(coins.undo->blocks_dir, coins.undo->key, chain_params.message_start);
    std::vector<std::vector<uint8_t>> undo_bytes;
    uint32_t batch_first = from;
    auto read_undo = [&](uint32_t h, std::size_t slot) -> std::optional<Error> {
        if (slot == 0) batch_first = h;
        if (undo_bytes.size() <= slot) undo_bytes.resize(slot + 1);
        const DatadirUndo::Block& u = *(*undo_at)[h - from];
        auto r = rev.ReadBytes(u.file, u.undo_pos, u.prev);
        if (!r) {
            return Error{r.error().code, "block " + u.hash.ToHex() + " at height " + std::to_string(h) + ", rev" + std::to_string(u.file) +
                                             " at " + std::to_string(u.undo_pos) + ": " + r.error().message};
        }
        undo_bytes[slot] = std::move(*r);
        return std::nullopt;
    };

    auto work = [&](Block& block, uint32_t h, const BlockHash& hash) {
        BlockOutcome out;
        Partial& p = out.partial;
        auto refuse = [&](std::string reason) {
            p.failure = BlockFailure{h, hash, std::move(reason)};
            return std::move(out);
        };
        // Core's order for a block: its header's proof of work, the header's contextual rules,
        // then the rest of CheckBlock, ContextualCheckBlock and ConnectBlock.
        const BlockHeader header = block.header();
        // The ancestry below comes from the block index: each block's own header must agree with
        // it (every block of 1..n passes here, so every time and bits it holds is checked).
        const HeaderInfo& indexed = headers.Info(int(h));
        if (header.hash_prev_block != blocks.headers.Hash(int(h) - 1) || header.time != indexed.time || header.bits != indexed.bits) {
            out.error = Error{Errc::Corrupt, "block " + hash.ToHex() + " at height " + std::to_string(h) +
                                                 " does not agree with the block index (parent, time or bits)"};
            return out;
        }
        const HeaderAncestry prev = headers.AncestryAt(int(h) - 1);
        BlockValidationState state, header_state;
        auto checked = CheckBlock(std::move(block), state, params);
        if (!checked && state.GetResult() == BlockValidationResult::BLOCK_INVALID_HEADER) return refuse(state.GetRejectReason());
        if (!ContextualCheckBlockHeader(header, prev, params, now, header_state)) return refuse(header_state.GetRejectReason());
        if (!checked) return refuse(state.GetRejectReason());

        auto undo = DecodeBlockUndo(undo_bytes[h - batch_first]);
        if (!undo || !FitsBlock(*undo, checked->block())) {
            out.error = Error{Errc::Corrupt, "the undo data of block " + hash.ToHex() + " at height " + std::to_string(h) +
                                                 (undo ? " does not fit the block" : " does not decode: " + undo.error().message)};
            return out;
        }
        AccumulateBlock(checked->block(), h, hash, blocks.chain, hints.Indices(h), hasher, options.collect_unspent || bool(options.on_unspent),
                        p, &*undo);
        if (p.failure) return out;

        ConnectContext ctx;
        ctx.height = int(h);
        ctx.prev = prev;
        if (bip34_hash && int(h) > params.bip34_height) ctx.bip34_ancestor = bip34_hash;
        if (auto why = coins.skip_scripts ? std::nullopt : assumevalid.Reason(int(h))) {
            ctx.check_scripts = true;
            ctx.script_check_reason = *why;
        }
        if (collect_bip30 && Bip30Applies(ctx, hash, params)) p.bip30_coinbases.emplace_back(checked->block().vtx[0].GetHash(), h);
        ConnectStats stats;
        if (!CheckBlockSpends(*checked, ctx, *undo, params, state, &stats)) return refuse(state.GetRejectReason());
        p.script_checked_inputs = stats.script_checked_inputs;
        return out;
    };

    Partial partial;
    partial.from = from;
    partial.to = to;
    partial.mode = AggregateMode::Coins;
    auto walked = WalkBlocks<BlockOutcome>(
        blocks, from, to, options.threads, options.progress, work,
        [&](uint32_t, BlockOutcome& b) -> std::optional<Error> {
            if (b.error) return b.error;
            return MergeBlock(partial, b.partial, options);
        },
        read_undo, options.policy);
    if (!walked) return walked.error();
    return partial;
}

Result<LocatedChain> LocateForMode(const std::filesystem::path& datadir, const std::filesystem::path& blocks_dir,
                                   std::optional<ChainType> chain, AggregateMode mode)
{
    if (datadir.empty() == blocks_dir.empty()) return Error{Errc::InvalidValue, "give a data directory or a blocks directory (exactly one)"};
    if (mode == AggregateMode::Coins && datadir.empty()) {
        return Error{Errc::InvalidValue, "coins mode reads the spent coins from a Bitcoin Core data directory's rev files: give one, "
                                         "or choose outpoints mode for bare block files (it checks much less)"};
    }
    return datadir.empty() ? LocateFromBlocksDir(blocks_dir, chain) : LocateFromDatadir(datadir, chain);
}

Result<Partial> CheckFromGenesis(const LocatedChain& loc, const std::filesystem::path& datadir, const Hints& hints, const Salt& salt,
                                 uint32_t n, AggregateMode mode, const CheckRangeOptions& options, const CoinsModeOptions& coins)
{
    if (mode == AggregateMode::OutPoints) return CheckRange(loc, hints, salt, 1, n, options);
    auto undo = LocateUndoInDatadir(datadir, loc.chain);
    if (!undo) return undo.error();
    CoinsModeOptions co = coins;
    co.undo = &*undo;
    return CheckRangeCoins(loc, hints, salt, 1, n, options, co);
}

} // namespace ibdkit::swiftsync

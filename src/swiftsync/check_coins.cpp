// SwiftSync's range check in coins mode (swiftsync/check_range.h, CheckRangeCoins): each block with
// its undo data, every rule of Core's that does not read the UTXO set, and BIP 457's Coin elements.
#include <ibdkit/swiftsync/check_range.h>

#include "blockfile/undo_file.h"

#include "swiftsync/block_walk.h"
#include "swiftsync/coins_block.h"
#include "swiftsync/range_internal.h"

#include <string>
#include <vector>

namespace ibdkit::swiftsync {

namespace {

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
    const SaltedHasher hasher(salt);
    const CoinsBlockRules rules(blocks.headers, blocks.chain, hints, hasher, options.collect_unspent || bool(options.on_unspent), coins);

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
        return rules.Check(block, h, hash, [&](const Block& b) -> Result<BlockUndo> {
            auto undo = DecodeBlockUndo(undo_bytes[h - batch_first]);
            if (undo && FitsBlock(*undo, b)) return std::move(*undo);
            return Error{Errc::Corrupt, "the undo data of block " + hash.ToHex() + " at height " + std::to_string(h) +
                                            (undo ? " does not fit the block" : " does not decode: " + undo.error().message)};
        });
    };

    Partial partial;
    partial.from = from;
    partial.to = to;
    partial.mode = AggregateMode::Coins;
    auto walked = WalkBlocks<BlockOutcome>(
        blocks, from, to, options.threads, options.on_progress, work,
        [&](uint32_t, BlockOutcome& b) -> std::optional<Error> {
            if (b.error) return b.error;
            return MergeBlock(partial, b.partial, options);
        },
        read_undo, options.policy);
    if (!walked) return walked.error();
    return partial;
}

Result<LocatedChain> LocateForMode(const BlockFileSource& source, AggregateMode mode)
{
    if (!source.NamesOne()) return Error{Errc::InvalidValue, "give a data directory or a blocks directory (exactly one)"};
    if (mode == AggregateMode::Coins && source.datadir.empty()) {
        return Error{Errc::InvalidValue, "coins mode reads the spent coins from a Bitcoin Core data directory's rev files: give one, "
                                         "or choose outpoints mode for bare block files (it checks much less)"};
    }
    return LocateBlocks(source);
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

// src/connect/disconnect.h — undoing a connected block with its undo data (Core's
// DisconnectBlock and ApplyTxInUndo), the step of a reorganisation below the chainstate's tip.
//
// Transactions are undone last to first: each one's outputs are spent (and compared with the
// block's: a missing or different coin makes the result UNCLEAN, except the coinbases of Core's two
// BIP30 blocks whose outputs a later duplicate overwrote), then its inputs' coins are restored from
// the undo data, last input first. A restored coin that overwrites an unspent one is UNCLEAN; undo
// data that does not match the block's shape, or a legacy coin record (height 0) whose
// transaction has no other unspent output to take the height from, is FAILED. The view's best
// block becomes the block's parent.
#pragma once

#include <ibdkit/coins/undo.h>
#include <ibdkit/primitives/block.h>

#include "coins/coins_cache.h"

#include <string>

namespace ibdkit {

/// Core's DisconnectResult.
enum class DisconnectResult {
    OK,       ///< all good
    UNCLEAN,  ///< rolled back, but the UTXO set was inconsistent with the block
    FAILED,   ///< something else went wrong: the view is in an indeterminate state, discard it
};

/// Disconnects `block` (at `height`, its hash `hash`) from `view` using its undo data. `error`, when
/// given, receives why a FAILED result failed (Core's log text).
DisconnectResult DisconnectBlock(const Block& block, int height, const BlockHash& hash, BlockUndo undo, CoinsCache& view,
                                 std::string* error = nullptr);

/// Core's ApplyTxInUndo: restores `coin` at `out`. OK, UNCLEAN (it overwrote an unspent coin), or
/// FAILED (a height-0 legacy record with no unspent sibling output to take its metadata from).
DisconnectResult ApplyTxInUndo(Coin&& coin, CoinsCache& view, const OutPoint& out);

} // namespace ibdkit

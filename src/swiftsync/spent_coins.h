// src/swiftsync/spent_coins.h — BIP 455's spent coins between a block's undo data (Core's rev
// record, coins/undo.h) and a `bspent` message (wire/protocol.h, docs/formats.md §13).
//
// The server's side makes a `bspent` from the record: the coins of every input but the coinbase's,
// numbered in block order, those created at or above a request's cutoff left out. The client's
// side takes a `bspent` from an untrusted peer and the block it was asked for, and gives each input
// its coin, or none where the cutoff left it out; what a message cannot be for that block (another
// block's hash, an index past the block's inputs, a coin the cutoff excludes, a coin missing without
// a cutoff, an amount no value compresses to) is an Errc::InvalidValue naming the input, and the
// peer that sent it is to be dropped. Whether the coins are the right ones only SwiftSync's
// aggregate tells (BIP 457).
#pragma once

#include <ibdkit/coins/coin.h>
#include <ibdkit/coins/undo.h>
#include <ibdkit/error.h>
#include <ibdkit/primitives/block.h>

#include "wire/protocol.h"

#include <cstdint>
#include <functional>
#include <optional>
#include <vector>

namespace ibdkit::swiftsync {

/// The `bspent` that answers `request` for the block whose undo data is `undo`: every spent coin in
/// block order with its input index, only those created below the cutoff when it is above 0.
BspentMessage MakeBspent(const GetBspentMessage& request, const BlockUndo& undo);

/// MakeBspent's payload; Errc::OversizedMessage when it would exceed Core's message limit (a block
/// whose spent coins' scripts are that large cannot be served by BIP 455 in one message).
Result<std::vector<uint8_t>> BspentPayload(const GetBspentMessage& request, const BlockUndo& undo);

/// The inputs of a block but the coinbase's, in block order: what a `bspent`'s indexes count.
uint64_t SpendingInputCount(const Block& block) noexcept;

/// Per input of `block` but the coinbase's, in block order, the coin `message` gives it, or
/// nullopt where the request's cutoff left it out (the client holds those coins itself). Checks
/// the message against the request and the block; the errors are the header's.
Result<std::vector<std::optional<Coin>>> SpentCoinsFromBspent(const BspentMessage& message,
                                                              const GetBspentMessage& request, const Block& block);

/// The block's undo data from a `bspent` asked for without a cutoff: every input's coin, grouped
/// per transaction as Core's rev record holds them (what coins mode checks a block against).
Result<BlockUndo> BlockUndoFromBspent(const BspentMessage& message, const Block& block);

/// The block's undo data from a `bspent` asked for with `request`'s cutoff: the coins it left out
/// are those `recent` holds (the client's coins created at or above the cutoff, by outpoint). The
/// bytes they would have taken in the message are added to `saved`. A coin left out that `recent`
/// does not hold, or holds from below the cutoff, is Errc::InvalidValue (the peer's), as every
/// error of SpentCoinsFromBspent.
Result<BlockUndo> BlockUndoFromBspent(const BspentMessage& message, const GetBspentMessage& request, const Block& block,
                                      const std::function<const Coin*(const OutPoint&)>& recent, uint64_t& saved);

} // namespace ibdkit::swiftsync

// ibdkit/blockfile/checked_read.h — a block read from a located chain and checked as the replay checks
// it before connecting: the record is the block the index (or the scan) names, and it passes Core's
// CheckBlock (proof of work, merkle root, sizes, each transaction). Every reader of a chain's
// blocks — the replay's source, `export` and `read_blocks` over a datadir — says the same words for
// the same damaged record. The checks hold no state (thread-safe); ReadCheckedBlock is as
// thread-safe as the caller's reader it reads through.
#pragma once

#include <ibdkit/blockfile/blockfile.h>
#include <ibdkit/blockfile/locate.h>
#include <ibdkit/error.h>
#include <ibdkit/primitives/hash.h>

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string_view>
#include <vector>

namespace ibdkit {

/// Nullopt when `bytes` start with a header that hashes to `want`; else Errc::Corrupt ("the record
/// at height N is not block H": a stale index, a damaged header).
std::optional<Error> CheckRecordIsBlock(std::span<const std::byte> bytes, int height, const BlockHash& want);

/// A block that fails Core's context-free rules where a reader met it: Errc::Corrupt with Core's
/// reject reason ("the block at height N breaks a consensus rule: bad-txnmrklroot").
Error InvalidBlockError(int height, std::string_view reason);

/// The block at `height` of `chain` (base_height..TipHeight()), read and checked by both of the
/// above: errors are the reader's, a record that does not decode (its DecodeError code), and the
/// two Corrupt ones. The bytes are the caller's.
Result<std::vector<uint8_t>> ReadCheckedBlock(BlockFileReader& reader, const LocatedChain& chain, int height);

} // namespace ibdkit

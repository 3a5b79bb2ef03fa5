// src/engine/process.h — a `block` message end to end, as a node receives it: framing and
// checksum into the buffer policy's DataStream, decode, CheckBlock, the buffer freed by the policy.
// (Core's ProcessMessageBlock benchmark.)
#pragma once

#include <ibdkit/chain/params.h>
#include <ibdkit/consensus/check.h>
#include <ibdkit/primitives/block.h>

#include "memory/policy.h"

#include <optional>

namespace ibdkit {

struct BlockMessageOutcome {
    std::optional<Error> error;          ///< framing error, a non-block message, or a decode error
    BlockValidationState state;          ///< CheckBlock's verdict when the block decoded
    std::optional<CheckedBlock> block;   ///< set when the block passed CheckBlock
    uint64_t dropped{0};                 ///< messages dropped (bad checksum / command) on the way
};

/// Feeds one complete message (header + payload) through a fresh receiver of policy `policy`,
/// then decodes and checks the block it carries (bytes after the block are ignored, as Core's
/// `block` handler does).
BlockMessageOutcome ProcessMessageBlock(std::span<const uint8_t> message, const ChainParams& params,
                                        PolicyId policy = DefaultPolicy::id, CheckBlockOptions opts = {});

} // namespace ibdkit

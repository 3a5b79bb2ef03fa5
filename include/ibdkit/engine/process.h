// ibdkit/engine/process.h — a `block` message end to end, as a node receives it: framing and
// checksum into a DataStream<Policy>, decode, CheckBlock. (Core's ProcessMessageBlock benchmark.)
#pragma once

#include <ibdkit/chain/params.h>
#include <ibdkit/consensus/check.h>
#include <ibdkit/primitives/block.h>
#include <ibdkit/wire/message.h>
#include <ibdkit/wire/protocol.h>

#include <optional>

namespace ibdkit {

struct BlockMessageOutcome {
    std::optional<Error> error;          ///< framing error, a non-block message, or a decode error
    BlockValidationState state;          ///< CheckBlock's verdict when the block decoded
    std::optional<CheckedBlock> block;   ///< set when the block passed CheckBlock
    uint64_t dropped{0};                 ///< messages dropped (bad checksum / command) on the way
};

/// Feeds one complete message (header + payload) through a fresh receiver, then decodes and checks
/// the block it carries.
template <typename Policy>
BlockMessageOutcome ProcessMessageBlock(std::span<const uint8_t> message, const ChainParams& params,
                                        CheckBlockOptions opts = {})
{
    BlockMessageOutcome out;
    MessageReceiver<Policy> rx(params.message_start);
    auto r = rx.Feed(message);
    out.dropped = rx.stats().dropped_checksum + rx.stats().dropped_command;
    if (!r) {
        out.error = r.error();
        return out;
    }
    if (!*r) {
        out.error = Error{out.dropped ? Errc::BadChecksum : Errc::EndOfData,
                          out.dropped ? "message dropped (bad checksum or command)" : "incomplete message"};
        return out;
    }
    NetMessage<Policy> msg = rx.TakeMessage();
    if (msg.command != "block") {
        out.error = Error{Errc::BadCommand, "expected a 'block' message, got '" + msg.command + "'"};
        return out;
    }
    const std::span<const uint8_t> payload(UCharCast(msg.payload.data()), msg.payload.size());
    auto block = DecodeBlock(payload);
    // Bytes after the block are ignored, as Core's `block` handler does.
    if (!block && block.error().code == Errc::TrailingData) block = DecodeBlockMessage(payload);
    if (!block) {
        out.error = block.error();
        return out;
    }
    out.block = CheckBlock(std::move(*block), out.state, params.consensus, opts);
    return out;
}

} // namespace ibdkit

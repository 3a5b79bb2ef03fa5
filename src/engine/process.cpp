// src/engine/process.cpp — a `block` message end to end (engine/process.h).
#include "engine/process.h"

#include "wire/message.h"
#include "wire/protocol.h"

namespace ibdkit {

BlockMessageOutcome ProcessMessageBlock(std::span<const uint8_t> message, const ChainParams& params, PolicyId policy,
                                        CheckBlockOptions opts)
{
    BlockMessageOutcome out;
    MessageReceiver rx(params.message_start, policy);
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
    NetMessage msg = rx.TakeMessage();
    if (msg.command != "block") {
        // Through a temporary: operator+(const char*, const std::string&) makes GCC emit a copy of
        // std::string::_M_append here, and that copy then serves the whole process in place of
        // libstdc++'s (LevelDB's write batches included), at more instructions per byte.
        out.error = Error{Errc::BadCommand, "expected a 'block' message, got '" + std::string(msg.command) + "'"};
        return out;
    }
    const std::span<const uint8_t> payload = msg.payload.uchars();
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

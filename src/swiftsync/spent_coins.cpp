#include "swiftsync/spent_coins.h"

#include <ibdkit/coins/compressor.h>

#include "wire/message.h"

#include <string>

namespace ibdkit::swiftsync {

namespace {

Error Refused(const std::string& what) { return Error{Errc::InvalidValue, "bspent: " + what}; }

// The value a compressed amount stands for, when some value compresses to it: DecompressAmount
// wraps on values no amount compresses to, and a peer's coin must not carry a value it never said.
std::optional<Amount> AmountOf(uint64_t compressed)
{
    const uint64_t value = DecompressAmount(compressed);
    if (CompressAmount(value) != compressed) return std::nullopt;
    return Amount(value);
}

} // namespace

BspentMessage MakeBspent(const GetBspentMessage& request, const BlockUndo& undo)
{
    BspentMessage m;
    m.block_hash = request.block_hash;
    uint32_t index = 0;
    for (const TxUndo& tx : undo.vtxundo) {
        for (const Coin& c : tx.prevout) {
            if (request.Wants(c.height)) {
                m.coins.push_back(BspentCoin{index, c.height, c.coinbase, c.out.script_pubkey,
                                             CompressAmount(uint64_t(c.out.value))});
            }
            ++index;
        }
    }
    return m;
}

Result<std::vector<uint8_t>> BspentPayload(const GetBspentMessage& request, const BlockUndo& undo)
{
    auto payload = EncodeBspent(MakeBspent(request, undo));
    if (payload.size() > MAX_PROTOCOL_MESSAGE_LENGTH) {
        return Error{Errc::OversizedMessage, "bspent for block " + request.block_hash.ToHex() + " would be " +
                                                 std::to_string(payload.size()) + " bytes, above Core's message limit"};
    }
    return payload;
}

uint64_t SpendingInputCount(const Block& block) noexcept
{
    uint64_t n = 0;
    for (std::size_t i = 1; i < block.vtx.size(); ++i) n += block.vtx[i].vin().size();
    return n;
}

Result<std::vector<std::optional<Coin>>> SpentCoinsFromBspent(const BspentMessage& message,
                                                              const GetBspentMessage& request, const Block& block)
{
    if (message.block_hash != request.block_hash) {
        return Refused("for block " + message.block_hash.ToHex() + ", asked for " + request.block_hash.ToHex());
    }
    if (block.GetHash() != request.block_hash) {
        return Refused("the block given is " + block.GetHash().ToHex() + ", not the one asked for");
    }
    const uint64_t inputs = SpendingInputCount(block);
    // Sized by the block, which is already in memory, never by the message.
    std::vector<std::optional<Coin>> out(static_cast<std::size_t>(inputs));
    uint64_t next = 0; // the first input not yet given a coin
    for (const BspentCoin& c : message.coins) {
        if (c.input_index >= inputs) {
            return Refused("input index " + std::to_string(c.input_index) + " past the block's " +
                           std::to_string(inputs) + " inputs");
        }
        if (c.input_index < next) return Refused("input indexes not strictly increasing");
        if (!request.Wants(c.height)) {
            return Refused("input " + std::to_string(c.input_index) + "'s coin from height " +
                           std::to_string(c.height) + " is at or above the cutoff " + std::to_string(request.cutoff));
        }
        if (request.cutoff == 0 && c.input_index != next) {
            return Refused("no coin for input " + std::to_string(next) + " (no cutoff was asked for)");
        }
        const auto value = AmountOf(c.compressed_amount);
        if (!value) return Refused("input " + std::to_string(c.input_index) + "'s amount is no compressed value");
        out[c.input_index] = Coin(TxOut{*value, c.script}, c.height, c.coinbase);
        next = uint64_t(c.input_index) + 1;
    }
    if (request.cutoff == 0 && next != inputs) {
        return Refused("no coin for input " + std::to_string(next) + " (no cutoff was asked for)");
    }
    return out;
}

namespace {

/// Every input's coin, grouped per transaction as a rev record holds them. Precondition: one coin
/// per input of the block but the coinbase's.
BlockUndo Grouped(std::vector<std::optional<Coin>>& coins, const Block& block)
{
    BlockUndo undo;
    undo.vtxundo.resize(block.vtx.empty() ? 0 : block.vtx.size() - 1);
    std::size_t k = 0;
    for (std::size_t i = 1; i < block.vtx.size(); ++i) {
        auto& prevout = undo.vtxundo[i - 1].prevout;
        prevout.reserve(block.vtx[i].vin().size());
        for (std::size_t j = 0; j < block.vtx[i].vin().size(); ++j) prevout.push_back(std::move(*coins[k++]));
    }
    return undo;
}

} // namespace

Result<BlockUndo> BlockUndoFromBspent(const BspentMessage& message, const Block& block)
{
    const GetBspentMessage request{message.block_hash, 0};
    auto coins = SpentCoinsFromBspent(message, request, block);
    if (!coins.ok()) return coins.error();
    return Grouped(*coins, block);
}

Result<BlockUndo> BlockUndoFromBspent(const BspentMessage& message, const GetBspentMessage& request, const Block& block,
                                      const std::function<const Coin*(const OutPoint&)>& recent, uint64_t& saved)
{
    auto coins = SpentCoinsFromBspent(message, request, block);
    if (!coins.ok()) return coins.error();
    std::vector<uint8_t> wire;
    std::size_t k = 0;
    for (std::size_t i = 1; i < block.vtx.size(); ++i) {
        for (const TxIn& in : block.vtx[i].vin()) {
            std::optional<Coin>& c = (*coins)[k++];
            if (c) continue;
            const Coin* kept = recent(in.prevout);
            if (!kept || kept->height < request.cutoff) {
                return Refused("no coin for input " + std::to_string(k - 1) + ", and " + in.prevout.hash.ToHex() + ":" + std::to_string(in.prevout.n) +
                               " is no coin created at or above the cutoff " + std::to_string(request.cutoff));
            }
            c = *kept;
            // What the coin would have taken in the message: index, code, script, amount.
            wire.clear();
            AppendReconstructableScript(wire, c->out.script_pubkey);
            saved += 8 + wire.size() + GetSizeOfCompactSize(CompressAmount(c->out.value));
        }
    }
    return Grouped(*coins, block);
}

} // namespace ibdkit::swiftsync

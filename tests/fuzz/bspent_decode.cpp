// Fuzz: BIP 455's `bspent` (and `getbspent`, BIP 434's `feature`) from an untrusted peer. The first
// byte picks the decoder, the rest is the payload. Malformed input must give a typed error — never
// a crash, a hang or an allocation sized by a lying count. A `bspent` that decodes has at most as
// many coins as its bytes can hold, indexes strictly increasing, and re-encodes to a payload that
// decodes to the same message (byte-identical unless a script came in the raw form a shorter row
// fits); its coins checked against a block of that many inputs either fit or are refused.
#include <ibdkit/coins/compressor.h>

#include "swiftsync/spent_coins.h"
#include "wire/protocol.h"

#include <algorithm>
#include <cstdlib>
#include <span>
#include <utility>

using namespace ibdkit;

namespace {

void Require(bool ok)
{
    if (!ok) std::abort();
}

// A block of a coinbase and, when `inputs` is above 0, one transaction with that many inputs: all
// the check reads of a block is its hash and its transactions' input counts.
Block BlockWithInputs(std::size_t inputs)
{
    Block b;
    MutableTransaction coinbase;
    coinbase.vin.resize(1);
    coinbase.vout.resize(1);
    b.vtx.emplace_back(std::move(coinbase));
    if (inputs == 0) return b;
    MutableTransaction spender;
    spender.vin.resize(inputs);
    spender.vin.front().prevout.n = 1; // not the null outpoint of a coinbase
    spender.vout.resize(1);
    b.vtx.emplace_back(std::move(spender));
    return b;
}

void CheckBspent(std::span<const uint8_t> payload)
{
    auto m = DecodeBspent(payload);
    if (!m) return;
    Require(payload.size() >= 33 + m->coins.size() * MIN_BSPENT_COIN_SIZE);
    for (std::size_t i = 1; i < m->coins.size(); ++i) Require(m->coins[i - 1].input_index < m->coins[i].input_index);
    const auto enc = EncodeBspent(*m);
    Require(enc.size() <= payload.size());
    auto again = DecodeBspent(enc);
    Require(again && *again == *m);
    Require(EncodeBspent(*again) == enc);
    if (m->coins.empty() || m->coins.back().input_index > 4096) return;
    const Block block = BlockWithInputs(m->coins.back().input_index + 1 - (payload.size() & 1));
    BspentMessage mine = *m;
    mine.block_hash = block.GetHash();
    const uint32_t cutoff = payload.empty() ? 0 : payload.back();
    auto coins = swiftsync::SpentCoinsFromBspent(mine, {mine.block_hash, cutoff}, block);
    if (!coins) {
        Require(coins.error().code == Errc::InvalidValue);
        return;
    }
    Require(coins->size() == swiftsync::SpendingInputCount(block));
    std::size_t given = 0;
    for (const auto& c : *coins) given += c.has_value();
    Require(given == m->coins.size());
    for (const BspentCoin& c : m->coins) {
        const Coin& coin = *(*coins)[c.input_index];
        Require(coin.height == c.height && coin.coinbase == c.coinbase && coin.out.script_pubkey == c.script);
        Require(CompressAmount(uint64_t(coin.out.value)) == c.compressed_amount);
    }
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size)
{
    if (size < 1) return 0;
    const std::span<const uint8_t> payload(data + 1, size - 1);
    switch (data[0] % 4) {
    case 0:
    case 1: CheckBspent(payload); break;
    case 2: {
        auto m = DecodeGetBspent(payload);
        if (!m) return 0;
        const auto enc = EncodeGetBspent(*m);
        Require(enc.size() == payload.size() && std::equal(enc.begin(), enc.end(), payload.begin()));
        break;
    }
    case 3: {
        auto m = DecodeFeature(payload);
        if (!m) return 0;
        Require(m->id.size() >= MIN_FEATURE_ID_LENGTH && m->id.size() <= MAX_FEATURE_ID_LENGTH);
        Require(m->data.size() <= MAX_FEATURE_DATA_LENGTH);
        const auto enc = EncodeFeature(*m);
        Require(enc.size() == payload.size() && std::equal(enc.begin(), enc.end(), payload.begin()));
        break;
    }
    }
    return 0;
}

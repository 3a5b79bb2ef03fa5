// Fuzz: every P2P payload decoder (version, ping/pong, getheaders/getblocks locators, headers,
// inv/getdata/notfound, reject, addr, block). The first byte picks the decoder, the rest is the
// payload (verack and the other empty messages have no payload to decode). Checks: no crash or
// unbounded allocation; whatever decodes re-encodes to bytes that decode to the same value, and
// for messages whose encoding is unique, to a prefix of the payload (the decoders ignore trailing
// bytes, as Core does).
#include <ibdkit/primitives/block.h>

#include "wire/protocol.h"

#include <algorithm>
#include <cstdlib>
#include <span>

using namespace ibdkit;

namespace {

void Require(bool ok)
{
    if (!ok) std::abort();
}

bool IsPrefix(const std::vector<uint8_t>& enc, std::span<const uint8_t> payload)
{
    return enc.size() <= payload.size() && std::equal(enc.begin(), enc.end(), payload.begin());
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size)
{
    if (size < 1) return 0;
    const std::span<const uint8_t> payload(data + 1, size - 1);
    switch (data[0] % 8) {
    case 0: {
        auto m = DecodeVersion(payload);
        if (!m) return 0;
        auto again = DecodeVersion(EncodeVersion(*m)); // every field written: the same message
        Require(again && *again == *m);
        break;
    }
    case 1: {
        auto nonce = DecodePing(payload); // ping and pong
        if (!nonce) return 0;
        Require(IsPrefix(EncodePing(*nonce), payload));
        break;
    }
    case 2: {
        auto m = DecodeLocator(payload); // getheaders and getblocks
        if (!m) return 0;
        Require(m->locator.size() <= MAX_LOCATOR_SZ);
        Require(IsPrefix(EncodeLocator(*m), payload));
        break;
    }
    case 3: {
        auto hs = DecodeHeaders(payload);
        if (!hs) return 0;
        Require(hs->size() <= MAX_HEADERS_RESULTS);
        auto again = DecodeHeaders(EncodeHeaders(*hs)); // transaction counts are written as 0
        Require(again && *again == *hs);
        break;
    }
    case 4: {
        auto invs = DecodeInv(payload); // inv, getdata, notfound
        if (!invs) return 0;
        Require(invs->size() <= MAX_INV_SZ);
        Require(IsPrefix(EncodeInv(*invs), payload));
        break;
    }
    case 5: {
        auto r = DecodeReject(payload);
        if (!r) return 0;
        Require(r->message.size() <= 12 && r->reason.size() <= 111);
        auto again = DecodeReject(EncodeReject(*r));
        Require(again && again->message == r->message && again->code == r->code && again->reason == r->reason &&
                again->hash == r->hash);
        (void)r->ToString();
        break;
    }
    case 6: {
        auto addrs = DecodeAddr(payload);
        if (!addrs) return 0;
        Require(addrs->size() <= MAX_ADDR_TO_SEND);
        Require(IsPrefix(EncodeAddr(*addrs), payload));
        break;
    }
    case 7: {
        auto block = DecodeBlockMessage(payload);
        if (!block) return 0;
        const auto enc = EncodeBlock(*block);
        Require(IsPrefix(enc, payload));
        Require(DecodeBlock(enc).ok()); // the block alone decodes strictly
        break;
    }
    }
    return 0;
}

// Fuzz target: chainstate records (coin keys and values, compressed scripts) must decode or fail
// with a DecodeError / typed Result error — never crash, never allocate from a lying length.
#include <ibdkit/coins/coin.h>
#include <ibdkit/coins/coins_db.h>
#include <ibdkit/coins/compressor.h>

#include "stream/streams.h"

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <span>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size)
{
    using namespace ibdkit;
    const auto bytes = std::as_bytes(std::span<const uint8_t>(data, size));
    auto c = DecodeCoinValue(bytes);
    if (c && MoneyRange(c->out.value)) {
        // A decoded coin re-encodes to bytes that decode to the same coin.
        const auto again = SerializeToVector(*c);
        auto back = DecodeExact<Coin>(std::as_bytes(std::span(again)));
        if (!back || !(*back == *c)) std::abort();
    }
    (void)DecodeCoinKey(bytes);
    try {
        SpanReader r(bytes);
        Script s;
        Unserialize(r, ScriptCompressionRef<Script>{s});
    } catch (const DecodeError&) {
    }
    if (size >= 8) {
        uint64_t x;
        std::memcpy(&x, data, 8);
        (void)DecompressAmount(x);
        if (x <= uint64_t(MAX_MONEY) && DecompressAmount(CompressAmount(x)) != x) std::abort();
    }
    return 0;
}

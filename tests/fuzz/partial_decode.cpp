// Fuzz: a SwiftSync range's Partial bytes and its unspent runs (swiftsync/partial.h), which a driver
// receives from other machines. Malformed input must give a typed error — never a crash, a hang or
// an allocation sized by a lying count. A partial that decodes re-encodes to exactly its bytes; a
// run's records come out in strictly increasing key order, within the run's range, and re-encode
// to exactly the run.
#include <ibdkit/swiftsync/partial.h>

#include <cstdlib>
#include <vector>

using namespace ibdkit;
using namespace ibdkit::swiftsync;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size)
{
    const std::span<const uint8_t> in(data, size);

    auto p = DeserializePartial(in);
    if (p) {
        const auto again = SerializePartial(*p);
        if (again.size() != size || !std::equal(again.begin(), again.end(), in.begin())) std::abort();
    }

    // As a run, and as the records of a run whose header the fuzzer's first byte sizes.
    std::vector<uint8_t> framed(UNSPENT_RUN_MAGIC.begin(), UNSPENT_RUN_MAGIC.end());
    framed.push_back(UNSPENT_RUN_VERSION);
    const uint8_t count = size > 0 ? data[0] % 8 : 0;
    for (uint32_t v : {1u, 0xffffffffu}) {
        for (int i = 0; i < 4; ++i) framed.push_back(uint8_t(v >> (8 * i)));
    }
    framed.push_back(count);
    framed.insert(framed.end(), 7, 0);
    framed.insert(framed.end(), in.begin() + (size > 0 ? 1 : 0), in.end());
    for (const std::span<const uint8_t> bytes : {in, std::span<const uint8_t>(framed)}) {
        auto reader = UnspentRunReader::Open(bytes);
        if (!reader) continue;
        std::vector<std::pair<OutPoint, Coin>> coins;
        std::vector<uint8_t> prev;
        OutPoint op;
        Coin coin;
        for (;;) {
            auto more = reader->Next(op, coin);
            if (!more || !*more) {
                if (more && coins.size() != reader->count()) std::abort();
                if (more) {
                    auto again = SerializeUnspentRun(reader->first(), reader->last(), coins);
                    if (!again || *again != std::vector<uint8_t>(bytes.begin(), bytes.end())) std::abort();
                }
                break;
            }
            const auto key = reader->key();
            if (!prev.empty() && !std::lexicographical_compare(prev.begin(), prev.end(), key.begin(), key.end())) std::abort();
            if (coin.height < reader->first() || coin.height > reader->last()) std::abort();
            prev.assign(key.begin(), key.end());
            coins.emplace_back(op, coin);
        }
    }
    return 0;
}

// Fuzz: the P2P v1 receiver on hostile byte streams, fed in chunks whose sizes come from the input.
// Checks: no crash; memory held never exceeds what arrived; splitting the stream differently never
// changes what is delivered.
#include "wire/message.h"

#include <cstdlib>

using namespace ibdkit;

namespace {
const MessageStart MAGIC{0xfa, 0xbf, 0xb5, 0xda};

struct Outcome {
    std::vector<std::pair<std::string, std::vector<std::byte>>> msgs;
    bool failed{false};
    friend bool operator==(const Outcome&, const Outcome&) = default;
};

Outcome Run(std::span<const uint8_t> stream, std::span<const uint8_t> chunking)
{
    MessageReceiver rx(MAGIC, PolicyId::Hardened, 100'000);
    Outcome o;
    std::size_t ci = 0, fed = 0;
    while (!stream.empty()) {
        std::size_t n = chunking.empty() ? stream.size() : 1 + chunking[ci++ % chunking.size()];
        n = std::min(n, stream.size());
        auto chunk = stream.first(n);
        stream = stream.subspan(n);
        fed += n;
        while (!chunk.empty()) {
            auto r = rx.Feed(chunk);
            if (!r) {
                o.failed = true;
                return o;
            }
            if (rx.PendingBytes() > fed) std::abort();
            if (*r) {
                auto m = rx.TakeMessage();
                o.msgs.emplace_back(m.command, std::vector<std::byte>(m.payload.begin(), m.payload.end()));
            }
        }
    }
    return o;
}
} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size)
{
    if (size < 2) return 0;
    const std::size_t split = std::min<std::size_t>(data[0], size - 1);
    std::span<const uint8_t> all(data + 1, size - 1);
    auto chunking = all.first(split);
    auto stream = all.subspan(split);
    if (Run(stream, chunking) != Run(stream, {})) std::abort();
    return 0;
}

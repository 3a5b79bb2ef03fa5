// Differential fuzz target: every SHA-256 back-end this CPU has must agree with the portable one —
// streaming (split at fuzzer-chosen offsets), one-shot SHA256d, and Sha256d64 both out of place and
// in place. Any disagreement aborts.
#include <ibdkit/crypto/sha256.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <span>
#include <vector>

namespace {

using ibdkit::sha256_detail::Backend;

struct Digests {
    uint8_t stream[32];
    uint8_t sha256d[32];
    std::vector<uint8_t> d64, d64_in_place;
};

Digests Compute(const uint8_t* data, std::size_t size, std::size_t cut1, std::size_t cut2)
{
    Digests d;
    ibdkit::Sha256()
        .Write(data, cut1)
        .Write(data + cut1, cut2 - cut1)
        .Write(data + cut2, size - cut2)
        .Finalize(d.stream);
    ibdkit::Sha256dOf({data, size}, d.sha256d);
    const std::size_t blocks = size / 64;
    d.d64.assign(32 * blocks, 0);
    ibdkit::Sha256d64(d.d64.data(), data, blocks);
    d.d64_in_place.assign(data, data + 64 * blocks);
    ibdkit::Sha256d64(d.d64_in_place.data(), d.d64_in_place.data(), blocks);
    d.d64_in_place.resize(32 * blocks);
    return d;
}

void Check(bool ok)
{
    if (!ok) std::abort();
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size)
{
    // The first two bytes choose the split points; the rest is the message.
    if (size < 2) return 0;
    const std::size_t len = size - 2;
    const std::size_t cut1 = len ? data[0] % (len + 1) : 0;
    const std::size_t cut2 = cut1 + (len - cut1 ? data[1] % (len - cut1 + 1) : 0);
    const uint8_t* msg = data + 2;

    ibdkit::sha256_detail::ForceBackend(Backend::Portable);
    const Digests ref = Compute(msg, len, cut1, cut2);
    for (std::size_t i = 0; i < len / 64; ++i) {
        uint8_t one[32];
        ibdkit::Sha256d().Write(std::span(msg + 64 * i, 64)).Finalize(one);
        Check(std::memcmp(one, ref.d64.data() + 32 * i, 32) == 0);
    }
    const std::optional<Backend> others[] = {Backend::ShaNi, Backend::Avx2, Backend::Avx512, std::nullopt};
    for (const auto& b : others) {
        if (b) {
            if (!ibdkit::sha256_detail::ForceBackend(*b)) continue;
        } else {
            ibdkit::sha256_detail::ResetBackend();
        }
        const Digests got = Compute(msg, len, cut1, cut2);
        Check(std::memcmp(got.stream, ref.stream, 32) == 0);
        Check(std::memcmp(got.sha256d, ref.sha256d, 32) == 0);
        Check(got.d64 == ref.d64);
        Check(got.d64_in_place == ref.d64);
    }
    ibdkit::sha256_detail::ResetBackend();
    return 0;
}

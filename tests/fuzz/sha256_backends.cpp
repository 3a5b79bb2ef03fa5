// Differential fuzz target: every SHA-256 back-end this CPU has must agree with the portable one —
// streaming (split at fuzzer-chosen offsets), one-shot SHA256d, Sha256d64 both out of place and
// in place, and the multi-buffer Sha256dMany / Sha256dManyPadded over the message and its three
// pieces. Any disagreement aborts.
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
    std::vector<uint8_t> many, padded; // SHA256d of: the whole message (three ranges), piece 0, 1, 2
};

/// Sha256dMany and Sha256dManyPadded over the whole message (as three ranges) and each piece.
void ComputeMany(const uint8_t* data, std::size_t size, std::size_t cut1, std::size_t cut2, Digests& d)
{
    const std::span<const uint8_t> all(data, size);
    const std::span<const uint8_t> piece[3] = {all.first(cut1), all.subspan(cut1, cut2 - cut1), all.subspan(cut2)};
    d.many.assign(32 * 4, 0);
    const ibdkit::HashJob jobs[4] = {{piece[0], piece[1], piece[2], d.many.data()},
                                     {piece[0], d.many.data() + 32},
                                     {piece[1], d.many.data() + 64},
                                     {piece[2], d.many.data() + 96}};
    ibdkit::Sha256dMany(jobs);
    // Padded copies, one after another.
    std::vector<uint8_t> buf;
    std::vector<std::size_t> at, blocks;
    for (std::span<const uint8_t> m : {all, piece[0], piece[1], piece[2]}) {
        at.push_back(buf.size());
        buf.insert(buf.end(), m.begin(), m.end());
        buf.resize(buf.size() + ibdkit::Sha256PaddingSize(m.size()));
        ibdkit::WriteSha256Padding(buf.data() + buf.size() - ibdkit::Sha256PaddingSize(m.size()), m.size());
        blocks.push_back((buf.size() - at.back()) / 64);
    }
    d.padded.assign(32 * 4, 0);
    std::vector<ibdkit::PaddedHashJob> padded;
    for (std::size_t i = 0; i < 4; ++i) padded.push_back({buf.data() + at[i], uint32_t(blocks[i]), d.padded.data() + 32 * i});
    ibdkit::Sha256dManyPadded(padded);
}

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
    ComputeMany(data, size, cut1, cut2, d);
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
    Check(std::memcmp(ref.many.data(), ref.sha256d, 32) == 0); // the three ranges are the message
    const std::size_t bounds[4] = {0, cut1, cut2, len};
    for (int i = 0; i < 3; ++i) {
        uint8_t one[32];
        ibdkit::Sha256dOf({msg + bounds[i], bounds[i + 1] - bounds[i]}, one);
        Check(std::memcmp(one, ref.many.data() + 32 * (i + 1), 32) == 0);
    }
    Check(ref.padded == ref.many);
    for (std::size_t i = 0; i < len / 64; ++i) {
        uint8_t one[32];
        ibdkit::Sha256d().Write(std::span(msg + 64 * i, 64)).Finalize(one);
        Check(std::memcmp(one, ref.d64.data() + 32 * i, 32) == 0);
    }
    const std::optional<Backend> others[] = {Backend::ShaNi, Backend::Avx2, Backend::Avx512, Backend::ArmSha2,
                                               std::nullopt};
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
        Check(got.many == ref.many);
        Check(got.padded == ref.many);
    }
    ibdkit::sha256_detail::ResetBackend();
    return 0;
}

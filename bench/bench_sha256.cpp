// SHA-256 back-ends side by side, shaped like Bitcoin Core's bench/crypto_hash.cpp cases so the
// figures compare directly: SHA256 of a 1,000,000-byte buffer (single stream) and SHA256D64_1024
// (1024 independent 64-byte inputs, the merkle-tree workload).
//
// Back-end variants call the engines directly instead of ForceBackend, so benchmarking never
// changes the process-wide choice other benchmarks rely on; "auto" goes through the public API.
#include "bench_case.h"

#include <ibdkit/crypto/sha256.h>

#include "crypto/sha256_internal.h"

#include <cstring>
#include <memory>
#include <optional>
#include <random>
#include <vector>

namespace ibdkit::bench {
namespace {

using sha256_detail::Backend;
using sha256_detail::Engine;

constexpr std::size_t STREAM_BYTES = 1000 * 1000;
constexpr std::size_t D64_BLOCKS = 1024;

std::shared_ptr<std::vector<uint8_t>> RandomBuffer(std::size_t n, uint64_t seed)
{
    auto v = std::make_shared<std::vector<uint8_t>>(n);
    std::mt19937_64 rng(seed);
    for (auto& b : *v) b = uint8_t(rng());
    return v;
}

// SHA-256 of a whole buffer with one engine: the same work as Sha256().Write(buf).Finalize().
void HashWith(const Engine& e, const std::vector<uint8_t>& buf, uint8_t* out)
{
    uint32_t s[8];
    std::memcpy(s, sha256_detail::IV, sizeof s);
    const std::size_t full = buf.size() / 64;
    e.transform(s, buf.data(), full);
    uint8_t tail[128] = {};
    const std::size_t rest = buf.size() % 64;
    std::memcpy(tail, buf.data() + 64 * full, rest);
    tail[rest] = 0x80;
    const std::size_t tail_blocks = rest + 9 > 64 ? 2 : 1;
    const uint64_t bits = uint64_t(buf.size()) * 8;
    for (int i = 0; i < 8; ++i) tail[64 * tail_blocks - 1 - i] = uint8_t(bits >> (8 * i));
    e.transform(s, tail, tail_blocks);
    std::memcpy(out, s, 32);
}

Case StreamCase(const char* variant, Backend b)
{
    return {"SHA256", variant, "byte", double(STREAM_BYTES), [b](std::string* why) -> Op {
                const Engine* e = sha256_detail::EngineFor(b);
                if (!e) {
                    *why = "this CPU lacks the instructions";
                    return {};
                }
                auto buf = RandomBuffer(STREAM_BYTES, 11);
                return [e, buf] {
                    uint8_t out[32];
                    HashWith(*e, *buf, out);
                    DoNotOptimize(out);
                };
            }};
}

Case StreamAutoCase()
{
    return {"SHA256", "auto", "byte", double(STREAM_BYTES), [](std::string*) -> Op {
                auto buf = RandomBuffer(STREAM_BYTES, 11);
                return [buf] {
                    uint8_t out[32];
                    Sha256().Write(*buf).Finalize(out);
                    DoNotOptimize(out);
                };
            }};
}

Case D64Case(const char* variant, std::optional<Backend> b)
{
    return {"SHA256D64_1024", variant, "block", double(D64_BLOCKS), [b](std::string* why) -> Op {
                const Engine* e = b ? sha256_detail::EngineFor(*b) : nullptr;
                if (b && !e) {
                    *why = "this CPU lacks the instructions";
                    return {};
                }
                auto in = RandomBuffer(64 * D64_BLOCKS, 12);
                auto out = std::make_shared<std::vector<uint8_t>>(32 * D64_BLOCKS);
                if (!e) {
                    return [in, out] {
                        Sha256d64(out->data(), in->data(), D64_BLOCKS);
                        DoNotOptimize(out->data());
                        ClobberMemory();
                    };
                }
                return [e, in, out] {
                    e->d64(out->data(), in->data(), D64_BLOCKS);
                    DoNotOptimize(out->data());
                    ClobberMemory();
                };
            }};
}

// Sha256dMany over 1024 independent 1000-byte messages (16 blocks each with padding, then one
// second-hash block), per back-end's plan; "auto" goes through the public API. Throughput counts
// message bytes, so it compares directly with the single-stream SHA256 figures.
constexpr std::size_t MANY_MSGS = 1024, MANY_LEN = 1000;

Case ManyCase(const char* variant, std::optional<Backend> b)
{
    return {"SHA256DMANY_1024x1000", variant, "byte", double(MANY_MSGS * MANY_LEN), [b](std::string* why) -> Op {
                const Engine* e = b ? sha256_detail::EngineFor(*b) : nullptr;
                if (b && !e) {
                    *why = "this CPU lacks the instructions";
                    return {};
                }
                auto in = RandomBuffer(MANY_MSGS * MANY_LEN, 13);
                auto out = std::make_shared<std::vector<uint8_t>>(32 * MANY_MSGS);
                auto jobs = std::make_shared<std::vector<HashJob>>();
                for (std::size_t i = 0; i < MANY_MSGS; ++i) {
                    jobs->emplace_back(std::span<const uint8_t>(*in).subspan(i * MANY_LEN, MANY_LEN), out->data() + 32 * i);
                }
                return [e, in, out, jobs] {
                    if (e) {
                        sha256_detail::RunMany(e->many, *jobs);
                    } else {
                        Sha256dMany(*jobs);
                    }
                    DoNotOptimize(out->data());
                    ClobberMemory();
                };
            }};
}

const bool registered = [] {
    Registry().push_back(StreamCase("portable", Backend::Portable));
    Registry().push_back(StreamCase("sha-ni", Backend::ShaNi));
#if defined(__aarch64__)
    Registry().push_back(StreamCase("arm-sha2", Backend::ArmSha2));
#endif
    Registry().push_back(StreamAutoCase());
    Registry().push_back(D64Case("portable", Backend::Portable));
    Registry().push_back(D64Case("sha-ni", Backend::ShaNi));
    Registry().push_back(D64Case("avx2", Backend::Avx2));
    Registry().push_back(D64Case("avx512", Backend::Avx512));
#if defined(__aarch64__)
    Registry().push_back(D64Case("arm-sha2", Backend::ArmSha2));
#endif
    Registry().push_back(D64Case("auto", std::nullopt));
    Registry().push_back(ManyCase("portable", Backend::Portable));
    Registry().push_back(ManyCase("sha-ni", Backend::ShaNi));
    Registry().push_back(ManyCase("avx2", Backend::Avx2));
    Registry().push_back(ManyCase("avx512", Backend::Avx512));
#if defined(__aarch64__)
    Registry().push_back(ManyCase("arm-sha2", Backend::ArmSha2));
#endif
    Registry().push_back(ManyCase("auto", std::nullopt));
    return true;
}();

} // namespace
} // namespace ibdkit::bench

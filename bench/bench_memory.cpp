// The seed PR's two buffer benchmarks, for every buffer policy, plus the cleanse primitives.
#include "bench_case.h"

#include "memory/cleanse.h"
#include "memory/policy.h"
#include "stream/streams.h"

#include <sys/mman.h>

#include <cstdlib>
#include <cstring>
#include <random>
#include <vector>

namespace ibdkit::bench {
namespace {

std::vector<std::byte> RandomBytes(std::size_t n, uint64_t seed)
{
    std::mt19937_64 rng(seed);
    std::vector<std::byte> v(n);
    for (auto& b : v) b = std::byte(rng());
    return v;
}

// DataStreamAlloc: construct a stream from 8,192 bytes (one allocation + copy) and destroy it.
template <typename P>
Case AllocCase()
{
    return {"DataStreamAlloc", std::string(P::name), "byte", 8192, [](std::string*) -> Op {
                auto src = std::make_shared<std::vector<std::byte>>(RandomBytes(8192, 1));
                return [src] {
                    DataStream<P> s{std::span<const std::byte>(*src)};
                    DoNotOptimize(s.data());
                    ClobberMemory(); // the copied bytes are observable: the copy cannot be elided
                };
            }};
}

// DataStreamSerializeScript: serialize a 999-byte script (3-byte CompactSize + bytes = 1,002
// bytes) into a fresh stream and destroy it.
template <typename P>
Case ScriptCase()
{
    return {"DataStreamSerializeScript", std::string(P::name), "byte", 1002, [](std::string*) -> Op {
                auto raw = RandomBytes(999, 2);
                auto script = std::make_shared<std::vector<uint8_t>>(reinterpret_cast<const uint8_t*>(raw.data()),
                                                                     reinterpret_cast<const uint8_t*>(raw.data()) + raw.size());
                return [script] {
                    DataStream<P> s;
                    s << *script;
                    DoNotOptimize(s.data());
                    ClobberMemory();
                };
            }};
}

template <typename Fn>
Case CleanseCase(const char* variant, Fn fn)
{
    return {"Cleanse8K", variant, "byte", 8192, [fn](std::string*) -> Op {
                auto buf = std::make_shared<std::vector<std::byte>>(8192, std::byte{1});
                return [buf, fn] {
                    fn(buf->data(), buf->size());
                    DoNotOptimize(buf->data());
                };
            }};
}

// The "give large buffers back to the kernel" idea for hardened, measured: a 1 MiB buffer filled,
// then released by zeroing + free, by munmap (the kernel zeroes pages before reuse), or with no
// hygiene at all.
Case LargeReleaseCase(const char* variant, int mode)
{
    constexpr std::size_t N = 1 << 20;
    return {"LargeBufferRelease1M", variant, "byte", double(N), [mode](std::string*) -> Op {
                auto src = std::make_shared<std::vector<std::byte>>(RandomBytes(N, 3));
                return [src, mode] {
                    if (mode == 1) {
                        void* p = mmap(nullptr, N, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
                        if (p == MAP_FAILED) std::abort();
                        std::memcpy(p, src->data(), N);
                        DoNotOptimize(p);
                        ClobberMemory();
                        munmap(p, N);
                        return;
                    }
                    void* p = std::malloc(N);
                    std::memcpy(p, src->data(), N);
                    DoNotOptimize(p);
                    ClobberMemory();
                    if (mode == 0) Cleanse(p, N);
                    std::free(p);
                };
            }, /*smoke_ok=*/true};
}

const bool registered = [] {
    RegisterPerPolicy([]<typename P>(P) { return AllocCase<P>(); });
    RegisterPerPolicy([]<typename P>(P) { return ScriptCase<P>(); });
    Registry().push_back(CleanseCase("core-memset-barrier", [](void* p, std::size_t n) { CleanseCoreStyle(p, n); }));
    Registry().push_back(CleanseCase("explicit_bzero", [](void* p, std::size_t n) { Cleanse(p, n); }));
    Registry().push_back(LargeReleaseCase("plain", 2));
    Registry().push_back(LargeReleaseCase("malloc-cleanse-free", 0));
    Registry().push_back(LargeReleaseCase("mmap-munmap", 1));
    return true;
}();

} // namespace
} // namespace ibdkit::bench

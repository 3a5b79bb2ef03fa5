// Micro-benchmark of contrib/core/cleansing_byte_vector.h beside std::vector<std::byte> (Core's
// DataStream with PR #30987) and std::vector<std::byte, ZeroAfterFreeStyle> (Core's DataStream as
// it is), standalone. The variants are interleaved (each round runs every variant, in a rotating
// order), and each ratio to std::vector is the median of the per-round ratios, with [min–max].
//
// A fourth variant is the floor of any container that zeroes what it releases: std::vector<std::byte>
// with one memset of its final block before it is destroyed (the blocks it outgrew are released
// unzeroed, so it does less than the guarantee asks). Where the work is only copying bytes in and
// destroying them, that memset is as large as the work itself; the last column compares the
// cleansing vector with this floor, which is what the container's own code costs.
//
//   cleansing_byte_vector_bench [--rounds N] [--min-time MS] [--filter SUBSTRING]
//
// Cases (each a fresh vector made, used and destroyed, as a stream is in Core):
//   Alloc8K          construct from 8 KiB and destroy (Core's DataStreamAlloc);
//   SerializeScript  a 3-byte CompactSize and 999 bytes appended (DataStreamSerializeScript);
//   SerializeBlock   ~1 MB appended as a block's fields are (4, 32, 1, 107, 8, 25-byte writes);
//   ReadMessage      ~1 MB copied in, then read out field by field, then destroyed.
//
// Two traps of glibc's, both of which can make one variant look several times slower than another
// for reasons that have nothing to do with the container: its mmap threshold is dynamic (a freed
// mmapped block raises it), so whether a 1 MB block costs 256 page faults per use depends on the
// process's history — this program fixes both thresholds with mallopt so that every block comes
// from the heap; and on AMD EPYC its `rep movsb` memcpy makes 8 KiB copies bimodal with heap
// layout — run with GLIBC_TUNABLES=glibc.cpu.x86_rep_movsb_threshold=1000000 to compare without it.
#include "cleansing_byte_vector.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#if defined(__GLIBC__)
#include <malloc.h>
#endif

namespace {

/// Core's zero_after_free_allocator, as its contract reads: std::allocator's memory, every block
/// zeroed (memset + a compiler barrier) before it is freed; no construct() member.
template <typename T>
struct ZeroAfterFreeStyle {
    using value_type = T;
    ZeroAfterFreeStyle() noexcept = default;
    template <typename U>
    ZeroAfterFreeStyle(const ZeroAfterFreeStyle<U>&) noexcept {}
    T* allocate(std::size_t n) { return std::allocator<T>{}.allocate(n); }
    void deallocate(T* p, std::size_t n) noexcept
    {
        if (p != nullptr) {
            std::memset(p, 0, n * sizeof(T));
            __asm__ __volatile__("" : : "r"(p) : "memory");
        }
        std::allocator<T>{}.deallocate(p, n);
    }
    template <typename U>
    bool operator==(const ZeroAfterFreeStyle<U>&) const noexcept { return true; }
};

void Escape(const void* p) { __asm__ __volatile__("" : : "r"(p) : "memory"); }

/// The floor: a plain vector whose last block is zeroed (memset + barrier) before it is freed.
struct PlainThenZeroed : std::vector<std::byte> {
    using std::vector<std::byte>::vector;
    PlainThenZeroed() = default;
    PlainThenZeroed(const PlainThenZeroed&) = default;
    PlainThenZeroed& operator=(const PlainThenZeroed&) = default;
    ~PlainThenZeroed()
    {
        if (capacity() != 0) {
            std::memset(data(), 0, capacity());
            Escape(data());
        }
    }
};

std::vector<std::byte> Bytes(std::size_t n, unsigned seed)
{
    std::vector<std::byte> v(n);
    unsigned x = seed;
    for (auto& b : v) b = std::byte((x = x * 1103515245u + 12345u) >> 24);
    return v;
}

constexpr std::size_t FIELDS[] = {4, 1, 32, 4, 1, 107, 4, 1, 8, 1, 25, 8, 1, 25, 4};
constexpr std::size_t BLOCK_BYTES = 1'000'000;

/// Where the next call reads its source from: 16 offsets 256 bytes apart. A memcpy whose source and
/// destination sit at nearly the same offset within a 4 KiB page runs several times slower (4K
/// aliasing), and the destination is wherever malloc puts it, so a fixed source would make each
/// sample fast or slow by the heap's layout alone; rotating the source averages over every layout.
const std::byte* Source(const std::vector<std::byte>& src)
{
    static std::size_t call = 0;
    return src.data() + (call++ % 16) * 256;
}

template <typename V>
void Alloc8K(const std::vector<std::byte>& src)
{
    const std::byte* in = Source(src);
    V v(in, in + 8192);
    Escape(v.data());
}

template <typename V>
void SerializeScript(const std::vector<std::byte>& src)
{
    V v;
    const std::byte size_prefix[3] = {std::byte{0xfd}, std::byte{0xe7}, std::byte{0x03}};
    v.insert(v.end(), size_prefix, size_prefix + 3);
    const std::byte* in = Source(src);
    v.insert(v.end(), in, in + 999);
    Escape(v.data());
}

template <typename V>
void SerializeBlock(const std::vector<std::byte>& src)
{
    V v;
    const std::byte* in = Source(src);
    std::size_t at = 0;
    for (std::size_t f = 0; at < BLOCK_BYTES; f = (f + 1) % std::size(FIELDS)) {
        v.insert(v.end(), in + at, in + at + FIELDS[f]);
        at += FIELDS[f];
    }
    Escape(v.data());
}

template <typename V>
void ReadMessage(const std::vector<std::byte>& src)
{
    const std::byte* in = Source(src);
    V v(in, in + BLOCK_BYTES);
    std::byte field[128];
    std::size_t at = 0;
    for (std::size_t f = 0; at + 128 < v.size(); f = (f + 1) % std::size(FIELDS)) {
        std::memcpy(field, v.data() + at, FIELDS[f]);
        Escape(field);
        at += FIELDS[f];
    }
    Escape(v.data());
}

struct Variant {
    const char* name;
    std::function<void(const std::vector<std::byte>&)> op;
};

struct Case {
    const char* name;
    std::vector<Variant> variants;
};

template <template <typename> class Op>
Case MakeCase(const char* name)
{
    return {name,
            {{"std::vector", Op<std::vector<std::byte>>::Run},
             {"zero_after_free", Op<std::vector<std::byte, ZeroAfterFreeStyle<std::byte>>>::Run},
             {"CleansingByteVector", Op<CleansingByteVector>::Run},
             {"floor: std::vector + memset", Op<PlainThenZeroed>::Run}}};
}

#define BENCH_OP(Fn)                                                        \
    template <typename V>                                                   \
    struct Fn##Op {                                                         \
        static void Run(const std::vector<std::byte>& src) { Fn<V>(src); }  \
    };
BENCH_OP(Alloc8K)
BENCH_OP(SerializeScript)
BENCH_OP(SerializeBlock)
BENCH_OP(ReadMessage)

/// ns per call of op, running it for at least min_ms.
double Time(const Variant& v, const std::vector<std::byte>& src, double min_ms)
{
    using Clock = std::chrono::steady_clock;
    std::size_t iters = 1;
    for (;;) {
        const auto start = Clock::now();
        for (std::size_t i = 0; i < iters; ++i) v.op(src);
        const double ns = std::chrono::duration<double, std::nano>(Clock::now() - start).count();
        if (ns >= min_ms * 1e6) return ns / double(iters);
        iters = ns < 1e5 ? iters * 10 : std::size_t(double(iters) * min_ms * 1e6 * 1.2 / ns) + 1;
    }
}

double Median(std::vector<double> v)
{
    std::sort(v.begin(), v.end());
    const std::size_t n = v.size();
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

const char* Library()
{
#if defined(_LIBCPP_VERSION)
    return "libc++";
#elif defined(__GLIBCXX__)
    return "libstdc++";
#else
    return "unknown standard library";
#endif
}

} // namespace

int main(int argc, char** argv)
{
    int rounds = 11;
    double min_ms = 50;
    std::string filter;
    for (int i = 1; i + 1 < argc; i += 2) {
        const std::string arg = argv[i];
        if (arg == "--rounds") rounds = std::max(1, std::atoi(argv[i + 1]));
        else if (arg == "--min-time") min_ms = std::atof(argv[i + 1]);
        else if (arg == "--filter") filter = argv[i + 1];
        else {
            std::fprintf(stderr, "usage: %s [--rounds N] [--min-time MS] [--filter SUBSTRING]\n", argv[0]);
            return 2;
        }
    }
    std::printf("cleansing_byte_vector_bench: %s, %s, %d rounds, %.0f ms per sample\n", Library(),
#if defined(__clang__)
                "clang " __clang_version__,
#else
                "gcc " __VERSION__,
#endif
                rounds, min_ms);
#if defined(__GLIBC__)
    mallopt(M_MMAP_THRESHOLD, 64 << 20);
    mallopt(M_TRIM_THRESHOLD, 128 << 20);
#endif
    const auto src = Bytes(BLOCK_BYTES + 16 * 256 + 256, 7);
    const Case cases[] = {MakeCase<Alloc8KOp>("Alloc8K"), MakeCase<SerializeScriptOp>("SerializeScript"),
                          MakeCase<SerializeBlockOp>("SerializeBlock"), MakeCase<ReadMessageOp>("ReadMessage")};
    std::printf("| case | variant | ns/op (median) | / std::vector (median [min–max] of rounds) | / floor |\n"
                "|---|---|---:|---|---|\n");
    constexpr std::size_t FLOOR = 3;
    for (const Case& c : cases) {
        if (!filter.empty() && std::string(c.name).find(filter) == std::string::npos) continue;
        const std::size_t nv = c.variants.size();
        std::vector<std::vector<double>> ns(nv), ratio(nv), to_floor(nv);
        for (int r = 0; r < rounds; ++r) {
            std::vector<double> t(nv);
            for (std::size_t k = 0; k < nv; ++k) {
                const std::size_t v = (k + std::size_t(r)) % nv; // rotate the order between rounds
                t[v] = Time(c.variants[v], src, min_ms);
            }
            for (std::size_t v = 0; v < nv; ++v) {
                ns[v].push_back(t[v]);
                ratio[v].push_back(t[v] / t[0]);
                to_floor[v].push_back(t[v] / t[FLOOR]);
            }
        }
        for (std::size_t v = 0; v < nv; ++v) {
            const auto [lo, hi] = std::minmax_element(ratio[v].begin(), ratio[v].end());
            const auto [flo, fhi] = std::minmax_element(to_floor[v].begin(), to_floor[v].end());
            std::printf("| %s | %s | %.1f | %.3f [%.3f–%.3f] | %.3f [%.3f–%.3f] |\n", c.name, c.variants[v].name,
                        Median(ns[v]), Median(ratio[v]), *lo, *hi, Median(to_floor[v]), *flo, *fhi);
        }
    }
    return 0;
}

// Tests of contrib/core/cleansing_byte_vector.h, standalone (the standard library only).
//
// Two observers of released memory, each able to fail:
//  - CheckingAllocator: every block the vector gives back is scanned before it is freed; each
//    release path (destruction, growth through every modifier, shrink_to_fit, copy and move
//    assignment, swap) must release the expected number of blocks, every byte of them zero;
//  - a replaced global operator delete (a free hook, as a zerocheck of Core's DataStream would
//    use): while armed, every block freed by anyone is scanned. std::vector<std::byte> is the
//    control — the hook finds its data — and CleansingByteVector over std::allocator must leave
//    none.
// A model test runs random operations against std::vector<std::byte> and compares contents.
// Exit status 0 when every check passes. CLEANSING_TEST_SEED=N replays the model test's seed.
#include "cleansing_byte_vector.h"

#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <list>
#include <new>
#include <random>
#include <sstream>
#include <string>
#include <vector>

namespace {

int g_failures = 0;
const char* g_test = "";

#define CHECK(cond)                                                                                 \
    do {                                                                                            \
        if (!(cond)) {                                                                              \
            std::fprintf(stderr, "%s:%d: [%s] check failed: %s\n", __FILE__, __LINE__, g_test, #cond); \
            ++g_failures;                                                                           \
        }                                                                                           \
    } while (0)

/// A byte pattern with no zero byte: what a freed block must not still hold.
std::byte SecretByte(std::size_t i) { return std::byte(0x80 | ((i * 37 + 11) & 0x7f)); }

/// An opaque use of a pointer, so that the allocations around it cannot be elided.
void Escape(const void* p) { __asm__ __volatile__("" : : "r"(p) : "memory"); }

// ---- observer 1: an allocator that checks what it is given back ---------------------------------

struct ReleaseLog {
    std::size_t blocks{0};       ///< blocks given back
    std::size_t bytes{0};        ///< their bytes
    std::size_t dirty_blocks{0}; ///< blocks with a non-zero byte
    std::size_t dirty_bytes{0};  ///< non-zero bytes in them
    long live{0};                ///< blocks allocated and not yet given back
};
ReleaseLog g_log;
bool g_fail_next_allocation = false;

struct CheckingAllocator {
    using value_type = std::byte;
    using is_always_equal = std::true_type;
    CheckingAllocator() noexcept = default;
    std::byte* allocate(std::size_t n)
    {
        if (g_fail_next_allocation) {
            g_fail_next_allocation = false;
            throw std::bad_alloc();
        }
        void* p = std::malloc(n == 0 ? 1 : n);
        if (p == nullptr) throw std::bad_alloc();
        // Fill with a pattern so that a block given back untouched would not look clean either.
        for (std::size_t i = 0; i < n; ++i) static_cast<std::byte*>(p)[i] = SecretByte(i + 5);
        ++g_log.live;
        return static_cast<std::byte*>(p);
    }
    void deallocate(std::byte* p, std::size_t n) noexcept
    {
        std::size_t dirty = 0;
        for (std::size_t i = 0; i < n; ++i) dirty += p[i] != std::byte{0};
        ++g_log.blocks;
        g_log.bytes += n;
        g_log.dirty_blocks += dirty != 0;
        g_log.dirty_bytes += dirty;
        --g_log.live;
        std::free(p);
    }
    bool operator==(const CheckingAllocator&) const noexcept { return true; }
};

using Vec = BasicCleansingByteVector<CheckingAllocator>;

/// n secret bytes.
std::vector<std::byte> Secret(std::size_t n, std::size_t salt = 0)
{
    std::vector<std::byte> v(n);
    for (std::size_t i = 0; i < n; ++i) v[i] = SecretByte(i + salt);
    return v;
}

Vec SecretVec(std::size_t n, std::size_t salt = 0)
{
    const auto s = Secret(n, salt);
    return Vec(s.begin(), s.end());
}

bool Same(const Vec& v, const std::vector<std::byte>& model)
{
    return v.size() == model.size() && std::equal(v.begin(), v.end(), model.begin());
}

/// Runs op with a fresh log and checks that it released `expect_blocks` blocks, all zero.
template <typename Op>
void ExpectReleases(const char* name, std::size_t expect_blocks, Op op)
{
    g_test = name;
    g_log = ReleaseLog{.live = g_log.live};
    op();
    if (g_log.blocks != expect_blocks || g_log.dirty_blocks != 0) {
        std::fprintf(stderr, "[%s] released %zu blocks (%zu bytes), expected %zu; %zu with data (%zu non-zero bytes)\n",
                     name, g_log.blocks, g_log.bytes, expect_blocks, g_log.dirty_blocks, g_log.dirty_bytes);
    }
    CHECK(g_log.blocks == expect_blocks);
    CHECK(g_log.dirty_blocks == 0);
}

void TestReleasePaths()
{
    ExpectReleases("destruction", 1, [] { Vec v = SecretVec(100); });
    ExpectReleases("destruction after clear (bytes beyond size)", 1, [] { Vec v = SecretVec(300); v.clear(); });
    ExpectReleases("destruction after erase (Compact)", 1, [] {
        Vec v = SecretVec(1000);
        v.erase(v.begin(), v.begin() + 600);
        const auto all = Secret(1000);
        CHECK(Same(v, std::vector<std::byte>(all.begin() + 600, all.end())));
    });
    ExpectReleases("destruction after a smaller resize", 1, [] { Vec v = SecretVec(500); v.resize(10); });
    ExpectReleases("growth: push_back", 2, [] {
        Vec v = SecretVec(64);
        CHECK(v.capacity() == 64);
        v.push_back(std::byte{1});
        CHECK(g_log.blocks == 1 && v.capacity() >= 65);
    });
    ExpectReleases("growth: insert range in the middle", 2, [] {
        Vec v = SecretVec(64);
        const auto more = Secret(100, 7);
        v.insert(v.begin() + 10, more.begin(), more.end());
        auto model = Secret(64);
        model.insert(model.begin() + 10, more.begin(), more.end());
        CHECK(Same(v, model));
    });
    ExpectReleases("growth: insert n copies", 2, [] { Vec v = SecretVec(64); v.insert(v.begin(), 200, std::byte{9}); });
    ExpectReleases("growth: resize", 2, [] { Vec v = SecretVec(64); v.resize(1000); CHECK(v[999] == std::byte{0}); });
    ExpectReleases("growth: reserve", 2, [] { Vec v = SecretVec(64); v.reserve(4096); CHECK(v.capacity() == 4096); });
    ExpectReleases("growth: assign", 2, [] {
        Vec v = SecretVec(64);
        const auto more = Secret(500, 3);
        v.assign(more.begin(), more.end());
        CHECK(Same(v, more));
    });
    ExpectReleases("shrink_to_fit after Compact", 2, [] {
        Vec v = SecretVec(1000);
        v.erase(v.begin(), v.begin() + 600);
        v.shrink_to_fit();
        CHECK(g_log.blocks == 1 && v.capacity() == 400);
    });
    ExpectReleases("shrink_to_fit of an empty vector", 1, [] {
        Vec v = SecretVec(100);
        v.clear();
        v.shrink_to_fit();
        CHECK(v.capacity() == 0 && v.data() == nullptr);
    });
    ExpectReleases("copy assignment into a smaller block", 3, [] {
        Vec a = SecretVec(10);
        const Vec b = SecretVec(1000, 1);
        a = b;
        CHECK(g_log.blocks == 1 && a == b);
    });
    ExpectReleases("copy assignment into a larger block", 2, [] {
        Vec a = SecretVec(1000);
        const Vec b = SecretVec(10, 1);
        a = b;
        CHECK(g_log.blocks == 0 && a == b && a.capacity() == 1000);
    });
    ExpectReleases("move assignment", 2, [] {
        Vec a = SecretVec(100);
        Vec b = SecretVec(200, 1);
        a = std::move(b);
        CHECK(g_log.blocks == 1 && a.size() == 200 && b.empty() && b.capacity() == 0);
    });
    ExpectReleases("move construction", 1, [] {
        Vec a = SecretVec(100);
        Vec b(std::move(a));
        CHECK(g_log.blocks == 0 && b.size() == 100 && a.data() == nullptr);
    });
    ExpectReleases("swap", 2, [] {
        Vec a = SecretVec(100);
        Vec b = SecretVec(300, 1);
        a.swap(b);
        swap(a, b);
        std::swap(a, b);
        CHECK(g_log.blocks == 0 && a.size() == 300 && b.size() == 100);
    });
    ExpectReleases("copy construction", 2, [] {
        const Vec a = SecretVec(100);
        Vec b(a);
        CHECK(b == a && b.capacity() == 100);
    });
}

void TestFailedAllocationChangesNothing()
{
    ExpectReleases("a failed growth leaves the vector as it was", 1, [] {
        Vec v = SecretVec(64);
        const std::byte* before = v.data();
        for (int path = 0; path < 4; ++path) {
            g_fail_next_allocation = true;
            bool threw = false;
            try {
                if (path == 0) v.push_back(std::byte{1});
                if (path == 1) v.insert(v.begin(), 100, std::byte{1});
                if (path == 2) v.reserve(1000);
                if (path == 3) v.resize(1000);
            } catch (const std::bad_alloc&) {
                threw = true;
            }
            g_fail_next_allocation = false;
            CHECK(threw);
            CHECK(v.data() == before && Same(v, Secret(64)));
        }
    });
}

void TestRangesAndAccess()
{
    g_test = "ranges and access";
    const std::list<unsigned char> list{1, 2, 3};
    Vec v(list.begin(), list.end()); // forward, not contiguous
    CHECK(v.size() == 3 && v[2] == std::byte{3} && v.front() == std::byte{1} && v.back() == std::byte{3});
    std::istringstream in("abc");
    v.insert(v.begin() + 1, std::istream_iterator<char>(in), std::istream_iterator<char>()); // single pass
    const std::string expect{"\x01" "abc" "\x02\x03"};
    CHECK(v.size() == 6 && std::memcmp(v.data(), expect.data(), 6) == 0);
    const std::string text = "xyz";
    v.insert(v.end(), text.begin(), text.end()); // contiguous chars
    CHECK(v.size() == 9 && v[8] == std::byte{'z'});
    CHECK(std::vector<std::byte>(v.rbegin(), v.rend()).front() == std::byte{'z'});
    bool threw = false;
    try {
        (void)v.at(9);
    } catch (const std::out_of_range&) {
        threw = true;
    }
    CHECK(threw);
    v.erase(v.begin());
    v.pop_back();
    CHECK(v.size() == 7 && v.front() == std::byte{'a'});
    Vec w{std::byte{1}, std::byte{2}};
    CHECK(w < v || v < w);
    CHECK((Vec{std::byte{1}} < Vec{std::byte{1}, std::byte{0}}));
    w = {std::byte{5}};
    CHECK(w.size() == 1 && w[0] == std::byte{5});
    w.assign(3, std::byte{7});
    CHECK(w == (Vec{std::byte{7}, std::byte{7}, std::byte{7}}));
}

/// Random operations on two vectors and their std::vector models; contents must always agree.
void TestAgainstStdVector(uint64_t seed)
{
    g_test = "model";
    std::mt19937_64 rng(seed);
    Vec v[2];
    std::vector<std::byte> m[2];
    auto pick = [&](std::size_t n) { return n == 0 ? 0 : std::size_t(rng() % (n + 1)); };
    const int failures_before = g_failures;
    for (int step = 0; step < 4000; ++step) {
        const int i = int(rng() % 2);
        Vec& a = v[i];
        auto& ma = m[i];
        const std::size_t n = rng() % (rng() % 8 == 0 ? 5000 : 40);
        switch (rng() % 13) {
        case 0: a.push_back(std::byte(rng())); ma.push_back(a.back()); break;
        case 1: {
            const auto src = Secret(n, step);
            const std::size_t at = pick(a.size());
            a.insert(a.begin() + at, src.begin(), src.end());
            ma.insert(ma.begin() + at, src.begin(), src.end());
            break;
        }
        case 2: {
            const std::size_t at = pick(a.size());
            a.insert(a.begin() + at, n, std::byte{3});
            ma.insert(ma.begin() + at, n, std::byte{3});
            break;
        }
        case 3: {
            const std::size_t from = pick(a.size()), to = from + pick(a.size() - from);
            a.erase(a.begin() + from, a.begin() + to);
            ma.erase(ma.begin() + from, ma.begin() + to);
            break;
        }
        case 4: a.resize(n); ma.resize(n); break;
        case 5: a.resize(n, std::byte{0x42}); ma.resize(n, std::byte{0x42}); break;
        case 6: a.reserve(n); CHECK(a.capacity() >= n); break;
        case 7: a.shrink_to_fit(); CHECK(a.capacity() == a.size()); break;
        case 8: a.clear(); ma.clear(); break;
        case 9: a = v[1 - i]; ma = m[1 - i]; break;
        case 10: {
            Vec copy = v[1 - i];
            a = std::move(copy);
            ma = m[1 - i];
            break;
        }
        case 11: v[0].swap(v[1]); m[0].swap(m[1]); break;
        case 12: {
            const auto src = Secret(n, step);
            a.assign(src.begin(), src.end());
            ma.assign(src.begin(), src.end());
            break;
        }
        }
        CHECK(Same(v[0], m[0]) && Same(v[1], m[1]));
        if (g_failures != failures_before) {
            std::fprintf(stderr, "model: diverged at step %d (seed %llu)\n", step, (unsigned long long)seed);
            return;
        }
    }
}

// ---- observer 2: a free hook on the global operator delete -------------------------------------

std::atomic<bool> g_armed{false};
std::atomic<std::size_t> g_hook_blocks{0}, g_hook_dirty_blocks{0};
constexpr std::size_t HEADER = 16; // holds the block's size, keeps operator new's 16-byte alignment

void* HookAllocate(std::size_t n)
{
    auto* base = static_cast<unsigned char*>(std::malloc(n + HEADER));
    if (base == nullptr) throw std::bad_alloc();
    std::memcpy(base, &n, sizeof(n));
    return base + HEADER;
}

void HookRelease(void* p) noexcept
{
    if (p == nullptr) return;
    auto* base = static_cast<unsigned char*>(p) - HEADER;
    if (g_armed.load(std::memory_order_relaxed)) {
        std::size_t n;
        std::memcpy(&n, base, sizeof(n));
        bool dirty = false;
        for (std::size_t i = 0; i < n; ++i) dirty |= static_cast<unsigned char*>(p)[i] != 0;
        ++g_hook_blocks;
        g_hook_dirty_blocks += dirty;
    }
    std::free(base);
}

/// Runs op with the hook armed; returns {blocks freed, blocks freed holding a non-zero byte}.
template <typename Op>
std::pair<std::size_t, std::size_t> Watched(Op op)
{
    g_hook_blocks = 0;
    g_hook_dirty_blocks = 0;
    g_armed = true;
    op();
    g_armed = false;
    return {g_hook_blocks.load(), g_hook_dirty_blocks.load()};
}

/// Every release path once, on any vector type with std::vector's interface.
template <typename V>
void AllPaths(const std::vector<std::byte>& secret)
{
    V a(secret.begin(), secret.end());
    Escape(a.data());
    a.insert(a.end(), secret.begin(), secret.end()); // growth
    a.push_back(std::byte{1});
    a.resize(a.size() * 2);
    a.reserve(a.capacity() * 2);
    a.erase(a.begin(), a.begin() + 100);
    a.shrink_to_fit();
    V b(secret.begin(), secret.begin() + 10);
    Escape(b.data());
    b = a; // copy into a smaller block
    V c(secret.begin(), secret.end());
    Escape(c.data());
    c = std::move(b); // move assignment releases c's block
    a.swap(c);
    a.clear();
    Escape(a.data());
}

void TestFreeHook()
{
    const auto secret = Secret(4096);
    g_test = "free hook: std::vector<std::byte> (control)";
    const auto control = Watched([&] { AllPaths<std::vector<std::byte>>(secret); });
    std::printf("free hook: std::vector<std::byte>: %zu blocks freed, %zu holding data\n", control.first, control.second);
    CHECK(control.second > 0); // the hook can see data left behind
    g_test = "free hook: CleansingByteVector";
    const auto cleansing = Watched([&] { AllPaths<CleansingByteVector>(secret); });
    std::printf("free hook: CleansingByteVector: %zu blocks freed, %zu holding data\n", cleansing.first, cleansing.second);
    CHECK(cleansing.first >= 5);
    CHECK(cleansing.second == 0);
}

} // namespace

// The replaced allocation functions (every form a standard library may call for std::byte).
void* operator new(std::size_t n) { return HookAllocate(n); }
void* operator new[](std::size_t n) { return HookAllocate(n); }
void* operator new(std::size_t n, const std::nothrow_t&) noexcept
{
    try {
        return HookAllocate(n);
    } catch (...) {
        return nullptr;
    }
}
void* operator new[](std::size_t n, const std::nothrow_t& t) noexcept { return operator new(n, t); }
void operator delete(void* p) noexcept { HookRelease(p); }
void operator delete[](void* p) noexcept { HookRelease(p); }
void operator delete(void* p, std::size_t) noexcept { HookRelease(p); }
void operator delete[](void* p, std::size_t) noexcept { HookRelease(p); }
void operator delete(void* p, const std::nothrow_t&) noexcept { HookRelease(p); }
void operator delete[](void* p, const std::nothrow_t&) noexcept { HookRelease(p); }

int main()
{
    std::setvbuf(stdout, nullptr, _IONBF, 0); // one stream with stderr, in program order
    uint64_t seed = std::random_device{}();
    if (const char* env = std::getenv("CLEANSING_TEST_SEED")) seed = std::strtoull(env, nullptr, 10);
    std::printf("cleansing_byte_vector_tests: seed %llu (CLEANSING_TEST_SEED=%llu replays it)\n",
                (unsigned long long)seed, (unsigned long long)seed);
    TestReleasePaths();
    TestFailedAllocationChangesNothing();
    TestRangesAndAccess();
    g_log = ReleaseLog{.live = g_log.live};
    TestAgainstStdVector(seed);
    g_test = "model: every block its operations released";
    std::printf("model: %zu blocks released (%zu bytes), %zu holding data\n", g_log.blocks, g_log.bytes, g_log.dirty_blocks);
    CHECK(g_log.blocks > 100 && g_log.dirty_blocks == 0);
    g_test = "no block leaked";
    CHECK(g_log.live == 0);
    TestFreeHook();
    if (g_failures) {
        std::fprintf(stderr, "cleansing_byte_vector_tests: %d check(s) failed\n", g_failures);
        return 1;
    }
    std::printf("cleansing_byte_vector_tests: all checks passed\n");
    return 0;
}

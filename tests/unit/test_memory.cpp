// Each policy's guarantee, observed through an upstream that snapshots freed blocks.
#include "test_util.h"

#include "memory/policy.h"
#include "stream/streams.h"

#include <gtest/gtest.h>

#include <linux/capability.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cstring>
#include <span>

using namespace ibdkit;

namespace {

// An upstream that remembers the contents of every block just before it is returned to the heap.
struct SnoopUpstream {
    static inline std::vector<std::vector<uint8_t>> freed;
    static inline std::size_t allocations = 0;
    static void* allocate(std::size_t n, std::size_t align)
    {
        ++allocations;
        // Zero fresh blocks: bytes the buffer never writes must not carry a stale secret left in the
        // heap by an earlier test, or the check would blame the policy for memory it never touched.
        void* p = NewDeleteUpstream::allocate(n, align);
        std::memset(p, 0, n);
        return p;
    }
    static void deallocate(void* p, std::size_t n, std::size_t align) noexcept
    {
        auto* b = static_cast<const uint8_t*>(p);
        freed.emplace_back(b, b + n);
        NewDeleteUpstream::deallocate(p, n, align);
    }
    static void Reset()
    {
        freed.clear();
        allocations = 0;
    }
};

constexpr uint8_t SECRET = 0xA5;

bool AnyFreedByteIsSecret()
{
    for (const auto& blk : SnoopUpstream::freed) {
        if (std::find(blk.begin(), blk.end(), SECRET) != blk.end()) return true;
    }
    return false;
}

bool AllFreedBytesZero()
{
    for (const auto& blk : SnoopUpstream::freed) {
        if (std::any_of(blk.begin(), blk.end(), [](uint8_t b) { return b != 0; })) return false;
    }
    return true;
}

// Writes secrets through a vector: construction, appends that reallocate, a shrink.
template <typename Vec>
void Exercise(Vec& v)
{
    for (int i = 0; i < 5000; ++i) v.push_back(typename Vec::value_type(SECRET));
    v.resize(10);
    v.shrink_to_fit();
}

} // namespace

TEST(MemoryPolicy, PlainLeavesBytesInTheHeap)
{
    // The control: proves the snoop sees secrets when nothing cleanses them.
    SnoopUpstream::Reset();
    {
        std::vector<uint8_t, PlainAllocator<uint8_t, SnoopUpstream>> v;
        Exercise(v);
    }
    EXPECT_GT(SnoopUpstream::freed.size(), 3u);
    EXPECT_TRUE(AnyFreedByteIsSecret());
}

TEST(MemoryPolicy, BarrierOnlyDoesNotCleanse)
{
    SnoopUpstream::Reset();
    {
        std::vector<uint8_t, BarrierOnlyAllocator<uint8_t, SnoopUpstream>> v;
        Exercise(v);
    }
    EXPECT_TRUE(AnyFreedByteIsSecret()) << "barrier-only is the PR's diagnostic variant: no memset";
}

TEST(MemoryPolicy, ZeroAfterFreeCleansesEveryFreedBlock)
{
    SnoopUpstream::Reset();
    {
        std::vector<uint8_t, ZeroAfterFreeAllocator<uint8_t, SnoopUpstream>> v;
        Exercise(v);
    }
    EXPECT_GT(SnoopUpstream::freed.size(), 3u);
    EXPECT_TRUE(AllFreedBytesZero()) << "whole capacity is zeroed, as Core's zero_after_free_allocator";
}

TEST(MemoryPolicy, HardenedWithStdVectorCleansesWholeBlocks)
{
    SnoopUpstream::Reset();
    {
        std::vector<uint8_t, HardenedAllocator<uint8_t, SnoopUpstream>> v;
        Exercise(v);
    }
    EXPECT_TRUE(AllFreedBytesZero());
}

TEST(MemoryPolicy, HardenedByteBufferCleansEveryWrittenByte)
{
    using Buf = ByteBuffer<HardenedAllocator<std::byte, SnoopUpstream>>;
    SnoopUpstream::Reset();
    {
        Buf b;
        const std::vector<std::byte> chunk(333, std::byte{SECRET});
        for (int i = 0; i < 50; ++i) b.insert(b.end(), chunk.data(), chunk.data() + chunk.size()); // reallocations
        b.erase(b.begin(), b.begin() + 1000);  // bytes moved down: stale copies beyond size()
        b.resize(10);                          // dirty tail beyond size()
        Buf copy = b;                          // copies are separate blocks
        Buf moved = std::move(copy);
        b.shrink_to_fit();
        b.clear();
        b.push_back(std::byte{SECRET});
    }
    EXPECT_GT(SnoopUpstream::freed.size(), 5u);
    EXPECT_FALSE(AnyFreedByteIsSecret()) << "a written byte survived a free";
}

TEST(MemoryPolicy, HardenedCleansOnlyTheDirtyPrefix)
{
    // The cost side of the guarantee: a block whose tail was never written is not zeroed there.
    using Buf = ByteBuffer<HardenedAllocator<std::byte, SnoopUpstream>>;
    SnoopUpstream::Reset();
    {
        Buf b;
        b.reserve(4096);
        std::memset(b.data() + 100, 0x77, 10); // a write outside [0, size): not through the buffer
        const std::vector<std::byte> chunk(50, std::byte{SECRET});
        b.insert(b.end(), chunk.data(), chunk.data() + chunk.size());
        EXPECT_EQ(b.dirty(), 50u);
    }
    ASSERT_EQ(SnoopUpstream::freed.size(), 1u);
    const auto& blk = SnoopUpstream::freed[0];
    EXPECT_TRUE(std::all_of(blk.begin(), blk.begin() + 50, [](uint8_t x) { return x == 0; }));
    EXPECT_EQ(blk[100], 0x77) << "bytes past the dirty mark are left alone";
}

namespace {
/// Copies of the blocks operator delete frees while armed (DataStream's default upstream is the
/// global operator new/delete, observed through the test binary's hook).
struct FreedBlocks {
    static inline std::vector<std::vector<uint8_t>>* blocks = nullptr;
    static void OnFree(const void* p, std::size_t n)
    {
        auto* b = static_cast<const uint8_t*>(p);
        auto* list = blocks;
        blocks = nullptr; // the copy below allocates (and may free): not recorded
        list->emplace_back(b, b + n);
        blocks = list;
    }
    static void Hook(const void* p, std::size_t n)
    {
        if (blocks && n >= 1024) OnFree(p, n);
    }
    /// Fresh blocks are zeroed: bytes a buffer never writes must not carry a secret left in the
    /// heap by an earlier test, or the check would blame the policy for memory it never touched.
    static void Zero(void* p, std::size_t n) { std::memset(p, 0, n); }
};

/// Runs `ops` on a DataStream<P> holding a secret and returns every freed block of ≥ 1 KB.
template <typename P>
std::vector<std::vector<uint8_t>> FreedByStream()
{
    const std::vector<std::byte> secret(8192, std::byte{SECRET}); // freed after the window
    std::array<std::byte, 4096> out{};
    std::vector<std::vector<uint8_t>> freed;
    freed.reserve(64);
    FreedBlocks::blocks = &freed;
    test::g_on_alloc = &FreedBlocks::Zero;
    test::g_on_free = &FreedBlocks::Hook;
    {
        DataStream<P> s{std::span<const std::byte>(secret)}; // construct
        s.write(secret);                                       // append: grows, frees the old buffer
        s.read(out);                                           // read
        s.Compact();                                           // compact
        s.write(secret);                                       // grow again
        s.write(secret);
    }                                                          // destroy
    test::g_on_free = nullptr;
    test::g_on_alloc = nullptr;
    FreedBlocks::blocks = nullptr;
    return freed;
}

bool AnyHoldsSecret(const std::vector<std::vector<uint8_t>>& blocks)
{
    for (const auto& b : blocks) {
        if (std::find(b.begin(), b.end(), SECRET) != b.end()) return true;
    }
    return false;
}
} // namespace

TEST(MemoryPolicy, DataStreamHardenedLeavesNoSecret)
{
    // The real DataStream<policy::Hardened> through its own paths (construct, append and grow,
    // read, compact, destroy): no block it frees holds a secret byte. The plain stream beside it
    // is the control: it frees secret bytes, so the observation can see them.
    if (!test::g_free_hook_installed) GTEST_SKIP() << "operator delete is AddressSanitizer's here (no free hook)";
    using P = policy::Hardened;
    static_assert(std::is_same_v<P::Buffer, ByteBuffer<HardenedAllocator<std::byte>, P::INLINE_BYTES>>);
    const auto hardened = FreedByStream<policy::Hardened>();
    EXPECT_GE(hardened.size(), 2u) << "growth and destruction free blocks";
    EXPECT_FALSE(AnyHoldsSecret(hardened));
    const auto plain = FreedByStream<policy::Plain>();
    EXPECT_GE(plain.size(), 2u);
    EXPECT_TRUE(AnyHoldsSecret(plain)) << "the control must see the secret, or the test observes nothing";
}

TEST(MemoryPolicy, HardenedInlineBytesAreCleansed)
{
    // Inline (small-buffer) bytes never reach the heap, but they are cleansed too: on growth to
    // the heap and on destruction. Observed where they lived, in the object's own storage. (Not
    // the whole object: the addresses it holds may contain SECRET's byte by chance.)
    using Buf = ByteBuffer<HardenedAllocator<std::byte, SnoopUpstream>, 64>;
    alignas(Buf) unsigned char storage[sizeof(Buf)];
    SnoopUpstream::Reset();
    auto* b = new (storage) Buf();
    const std::vector<std::byte> small(40, std::byte{SECRET});
    b->insert(b->end(), small.data(), small.data() + small.size());
    EXPECT_TRUE(b->is_inline());
    EXPECT_EQ(SnoopUpstream::allocations, 0u) << "40 bytes need no heap block";
    const auto* inline_bytes = reinterpret_cast<const unsigned char*>(b->data());
    ASSERT_GE(inline_bytes, std::begin(storage));
    ASSERT_LE(inline_bytes + small.size(), std::end(storage));
    EXPECT_EQ(std::count(inline_bytes, inline_bytes + small.size(), SECRET), std::ptrdiff_t(small.size()));
    b->~Buf();
    EXPECT_EQ(std::count(inline_bytes, inline_bytes + small.size(), SECRET), 0);

    // Growing past the inline capacity abandons the inline bytes: they are cleansed at once.
    b = new (storage) Buf();
    b->insert(b->end(), small.data(), small.data() + small.size());
    ASSERT_EQ(reinterpret_cast<const unsigned char*>(b->data()), inline_bytes);
    b->insert(b->end(), small.data(), small.data() + small.size());
    EXPECT_FALSE(b->is_inline());
    EXPECT_EQ(std::count(inline_bytes, inline_bytes + small.size(), SECRET), 0);
    b->~Buf();
    EXPECT_FALSE(AnyFreedByteIsSecret());

    // A moved-from inline buffer still cleanses its bytes when destroyed.
    {
        Buf src;
        src.insert(src.end(), small.data(), small.data() + small.size());
        Buf dst(std::move(src));
        EXPECT_EQ(dst.size(), small.size());
        EXPECT_TRUE(std::equal(dst.begin(), dst.end(), small.begin()));
    }
}

// ---- secure ---------------------------------------------------------------------------------

TEST(LockedPoolTest, BestFitCoalesceAndCleanse)
{
    LockedPool pool;
    auto* a = static_cast<uint8_t*>(pool.alloc(100));
    auto* b = static_cast<uint8_t*>(pool.alloc(200));
    auto* c = static_cast<uint8_t*>(pool.alloc(300));
    ASSERT_TRUE(a && b && c);
    EXPECT_EQ(reinterpret_cast<uintptr_t>(a) % LockedPool::ARENA_ALIGN, 0u);
    std::memset(b, SECRET, 200);
    pool.free(b);
    // The freed chunk is still mapped pool memory: it must read as zeros.
    EXPECT_TRUE(std::all_of(b, b + 200, [](uint8_t x) { return x == 0; }));
    // Best fit: a 150-byte request reuses b's hole rather than the big tail.
    auto* d = static_cast<uint8_t*>(pool.alloc(150));
    EXPECT_EQ(d, b);
    pool.free(d);
    pool.free(a);
    pool.free(c);
    auto st = pool.stats();
    EXPECT_EQ(st.used, 0u);
    EXPECT_EQ(st.chunks_free, 1u) << "neighbours coalesce back into one free chunk";
    EXPECT_EQ(st.free, st.total);
    // Oversized chunks get their own arena, released on free.
    void* big = pool.alloc(LockedPool::ARENA_SIZE * 3);
    ASSERT_NE(big, nullptr);
    EXPECT_EQ(pool.stats().arenas, 2u);
    pool.free(big);
    EXPECT_EQ(pool.stats().arenas, 1u);
}

TEST(LockedPoolTest, SecureStreamCleansesPoolMemory)
{
    std::byte* where = nullptr;
    std::size_t n = 0;
    {
        DataStream<policy::Secure> s;
        std::vector<uint8_t> secret(1000, SECRET);
        s << secret;
        where = s.data();
        n = s.size();
    }
    // Pool memory stays mapped after free; the stream's bytes must be gone from it.
    for (std::size_t i = 0; i < n; ++i) ASSERT_EQ(uint8_t(where[i]), 0) << i;
}

namespace {
// Drops CAP_IPC_LOCK from this process's effective and permitted sets.
bool DropIpcLock()
{
    __user_cap_header_struct hdr{_LINUX_CAPABILITY_VERSION_3, 0};
    __user_cap_data_struct data[2]{};
    if (syscall(SYS_capget, &hdr, data) != 0) return false;
    data[0].effective &= ~(1u << CAP_IPC_LOCK);
    data[0].permitted &= ~(1u << CAP_IPC_LOCK);
    data[0].inheritable &= ~(1u << CAP_IPC_LOCK);
    return syscall(SYS_capset, &hdr, data) == 0;
}
} // namespace

TEST(LockedPoolTest, ReportsUnlockedMemoryWhenMlockFails)
{
    // In a child that really cannot lock: RLIMIT_MEMLOCK lowered AND CAP_IPC_LOCK dropped (root
    // with the capability can lock regardless of the limit).
    int pipefd[2];
    ASSERT_EQ(pipe(pipefd), 0);
    pid_t pid = fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
        close(pipefd[0]);
        rlimit lim{4096, 4096};
        int rc = 0;
        auto fail = [&](int code) {
            if (rc == 0) rc = code; // keep the first failed check
        };
        if (setrlimit(RLIMIT_MEMLOCK, &lim) != 0 || !DropIpcLock()) fail(10);
        std::string warnings;
        int hook_calls = 0;
        LockedPool::SetLogHook([&](std::string_view m) {
            ++hook_calls;
            warnings = std::string(m);
        });
        LockedPool pool;
        void* p = pool.alloc(64 * 1024);
        void* q = pool.alloc(LockedPool::ARENA_SIZE * 2); // a second arena: still one warning
        if (!p || !q) fail(11);
        std::memset(p, 1, 64 * 1024); // usable although unlocked
        auto st = pool.stats();
        if (st.locked != 0) fail(12);
        if (st.total < LockedPool::ARENA_SIZE * 3) fail(13);
        if (st.lock_failures != 2) fail(14);
        if (hook_calls != 1) fail(15);
        if (warnings.find("RLIMIT_MEMLOCK") == std::string::npos) fail(16);
        pool.free(p);
        pool.free(q);
        ssize_t w = write(pipefd[1], warnings.data(), warnings.size());
        (void)w;
        _exit(rc);
    }
    close(pipefd[1]);
    char buf[512] = {};
    ssize_t got = read(pipefd[0], buf, sizeof buf - 1);
    close(pipefd[0]);
    int status = 0;
    waitpid(pid, &status, 0);
    ASSERT_TRUE(WIFEXITED(status));
    EXPECT_EQ(WEXITSTATUS(status), 0) << "child failed check " << WEXITSTATUS(status) << "; warning: " << buf;
    EXPECT_GT(got, 0);
}

TEST(LockedPoolTest, LocksWhenAllowed)
{
    LockedPool pool;
    void* p = pool.alloc(32);
    auto st = pool.stats();
    if (st.locked == 0) GTEST_SKIP() << "this environment cannot mlock at all";
    EXPECT_EQ(st.locked, st.total);
    pool.free(p);
}

TEST(PolicyNames, RoundTrip)
{
    for (PolicyId id : ALL_POLICIES) EXPECT_EQ(ParsePolicy(PolicyName(id)), id);
    EXPECT_EQ(ParsePolicy("zero_after_free"), PolicyId::ZeroAfterFree);
    EXPECT_FALSE(ParsePolicy("nope"));
}

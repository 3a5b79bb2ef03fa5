// The benchmark suite does its work: every benchmark runs once (smoke mode, as `make test` runs
// it); allocations are counted per iteration where allocation is the subject; the bytes a stream
// copied are checked against a checksum of runtime-random input; the zero-copy walk allocates
// nothing; Core's engine runs side by side or is skipped with a reason; callgrind counts
// instructions (deterministic, so comparable in a test).
#include "bench.h"

#include "primitives/tx_builder.h"
#include "test_util.h"

#include <ibdkit/primitives/block.h>

#include "memory/locked_pool.h"
#include "stream/streams.h"

#include <gtest/gtest.h>
#include <malloc.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <new>
#include <regex>
#include <set>

// Under AddressSanitizer the runtime provides every operator new/delete variant itself; replacing
// only some of them mixes allocators (alloc-dealloc-mismatch). The counting tests skip there.
#if defined(__SANITIZE_ADDRESS__)
#define IBDKIT_TEST_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define IBDKIT_TEST_ASAN 1
#endif
#endif
#ifdef IBDKIT_TEST_ASAN
#define SKIP_WITHOUT_ALLOCATION_COUNTING() GTEST_SKIP() << "allocation counting is off under AddressSanitizer"
#else
#define SKIP_WITHOUT_ALLOCATION_COUNTING() (void)0
#endif

// ---- a counting global operator new/delete for this test binary --------------------------------
// Always forwards to malloc/free; counts only while armed (one thread runs the benchmark op).

namespace {
std::atomic<bool> g_armed{false};
std::atomic<uint64_t> g_allocs{0};
std::atomic<uint64_t> g_bytes{0};
/// When non-zero: checksum (FNV-1a) the first g_capture_bytes of every freed block at least that
/// large, before it is freed.
std::atomic<std::size_t> g_capture_bytes{0};
uint64_t g_last_freed_checksum = 0;
bool g_last_freed_all_zero = false;
std::array<uint8_t, 4> g_last_freed_head{};

uint64_t Fnv1a(const uint8_t* p, std::size_t n)
{
    uint64_t h = 1469598103934665603ULL;
    for (std::size_t i = 0; i < n; ++i) h = (h ^ p[i]) * 1099511628211ULL;
    return h;
}

[[maybe_unused]] void* CountingNew(std::size_t n)
{
    if (g_armed.load(std::memory_order_relaxed)) {
        g_allocs.fetch_add(1, std::memory_order_relaxed);
        g_bytes.fetch_add(n, std::memory_order_relaxed);
    }
    void* p = std::malloc(n ? n : 1);
    if (!p) throw std::bad_alloc();
    if (auto on_alloc = ibdkit::test::g_on_alloc.load(std::memory_order_relaxed)) on_alloc(p, ::malloc_usable_size(p));
    return p;
}

[[maybe_unused]] void CountingDelete(void* p) noexcept
{
    if (!p) return;
    if (auto on_free = ibdkit::test::g_on_free.load(std::memory_order_relaxed)) on_free(p, ::malloc_usable_size(p));
    const std::size_t cap = g_capture_bytes.load(std::memory_order_relaxed);
    if (cap && g_armed.load(std::memory_order_relaxed) && ::malloc_usable_size(p) >= cap) {
        const auto* b = static_cast<const uint8_t*>(p);
        g_last_freed_checksum = Fnv1a(b, cap);
        g_last_freed_all_zero = std::all_of(b, b + cap, [](uint8_t x) { return x == 0; });
        std::memcpy(g_last_freed_head.data(), b, g_last_freed_head.size());
    }
    std::free(p);
}
} // namespace

#ifndef IBDKIT_TEST_ASAN
void* operator new(std::size_t n) { return CountingNew(n); }
void* operator new[](std::size_t n) { return CountingNew(n); }
void operator delete(void* p) noexcept { CountingDelete(p); }
void operator delete[](void* p) noexcept { CountingDelete(p); }
void operator delete(void* p, std::size_t) noexcept { CountingDelete(p); }
void operator delete[](void* p, std::size_t) noexcept { CountingDelete(p); }
namespace {
const bool g_hook_installed = (ibdkit::test::g_free_hook_installed = true);
}
#endif

namespace ibdkit::bench {
namespace {

const Case* Find(const std::string& name)
{
    for (const auto& c : Registry()) {
        if (c.name() == name) return &c;
    }
    return nullptr;
}

struct Counted {
    double allocs_per_iter{0};
    double bytes_per_iter{0};
};

/// Sets up `c`, runs it once untracked (warm-up: lazy statics, pools), then `iters` times counted.
std::optional<Counted> CountAllocations(const Case& c, int iters, std::size_t capture_bytes = 0)
{
    std::string why;
    Op op = c.setup(&why);
    if (!op) return std::nullopt;
    op();
    g_allocs = 0;
    g_bytes = 0;
    g_capture_bytes = capture_bytes;
    g_last_freed_checksum = 0;
    g_armed = true;
    for (int i = 0; i < iters; ++i) op();
    g_armed = false;
    g_capture_bytes = 0;
    return Counted{double(g_allocs.load()) / iters, double(g_bytes.load()) / iters};
}

std::size_t TxCount413567()
{
    auto path = test::TestData("mainnet/blocks/block_413567.raw");
    if (!path) return 0;
    auto raw = test::ReadFile(*path);
    auto block = DecodeBlock(raw);
    return block ? block->vtx.size() : 0;
}

constexpr std::array<const char*, 5> POLICIES{"plain", "zero-after-free", "barrier-only", "secure", "hardened"};

TEST(BenchSmoke, EveryBenchmarkRunsOnce)
{
    Options o;
    o.smoke = true;
    std::vector<std::string> skipped;
    const auto results = ibdkit::bench::Run(o, &skipped);
    ASSERT_FALSE(results.empty());
    std::set<std::string> ran;
    for (const auto& r : results) {
        ran.insert(r.name);
        EXPECT_GT(r.median_ns_per_unit, 0) << r.name;
        EXPECT_EQ(r.samples.size(), 1u) << r.name;
        if (r.ratio_to_plain) {
            EXPECT_GT(*r.ratio_to_plain, 0) << r.name;
        }
    }
    // Every registered benchmark either ran or is listed as skipped, with a reason.
    for (const auto& c : Registry()) {
        const bool listed = std::any_of(skipped.begin(), skipped.end(), [&](const std::string& s) {
            return s.rfind(c.name() + ": ", 0) == 0 && s.size() > c.name().size() + 2;
        });
        EXPECT_TRUE(ran.count(c.name()) || listed) << c.name() << " neither ran nor was reported skipped";
    }
    for (const char* name : {"DataStreamAlloc/plain", "DataStreamAlloc/hardened", "DataStreamSerializeScript/plain"}) {
        EXPECT_TRUE(ran.count(name)) << name;
    }
    if (test::TestData("mainnet/blocks/block_413567.raw")) {
        for (const char* name : {"DeserializeBlockTest/plain", "DeserializeAndCheckBlockTest/hardened",
                                 "ProcessMessageBlock/zero-after-free", "BlockViewWalk"}) {
            EXPECT_TRUE(ran.count(name)) << name;
        }
    }
    for (const auto& s : skipped) std::printf("skipped: %s\n", s.c_str());
}

TEST(BenchProof, DataStreamAllocAllocatesAndCopiesEveryIteration)
{
    SKIP_WITHOUT_ALLOCATION_COUNTING();
    std::map<std::string, uint64_t> checksum;
    std::map<std::string, bool> zeroed;
    for (const char* p : POLICIES) {
        const Case* c = Find(std::string("DataStreamAlloc/") + p);
        ASSERT_NE(c, nullptr) << p;
        auto n = CountAllocations(*c, 8, 8192);
        ASSERT_TRUE(n) << p;
        EXPECT_GE(n->allocs_per_iter, 1.0) << p;
        if (std::string(p) == "secure") {
            // The 8 KiB come from the mlocked pool, not the heap (the heap only sees the pool's
            // bookkeeping nodes).
            EXPECT_LT(n->bytes_per_iter, 8192) << p;
            EXPECT_GE(LockedPool::Instance().stats().arenas, 1u);
        } else {
            EXPECT_GE(n->bytes_per_iter, 8192) << p;
            checksum[p] = g_last_freed_checksum;
            zeroed[p] = g_last_freed_all_zero;
        }
    }
    // The freed 8 KiB block held the copied random bytes (same checksum whichever policy did not
    // zero it), and the zeroing policies left zeros behind.
    EXPECT_FALSE(zeroed["plain"]);
    EXPECT_FALSE(zeroed["barrier-only"]);
    EXPECT_EQ(checksum["plain"], checksum["barrier-only"]);
    EXPECT_NE(checksum["plain"], 0u);
    EXPECT_TRUE(zeroed["zero-after-free"]);
    EXPECT_TRUE(zeroed["hardened"]);
}

TEST(BenchProof, DataStreamSerializeScriptWritesTheScript)
{
    SKIP_WITHOUT_ALLOCATION_COUNTING();
    std::map<std::string, uint64_t> checksum;
    for (const char* p : POLICIES) {
        const Case* c = Find(std::string("DataStreamSerializeScript/") + p);
        ASSERT_NE(c, nullptr) << p;
        auto n = CountAllocations(*c, 8, 1002);
        ASSERT_TRUE(n) << p;
        EXPECT_GE(n->allocs_per_iter, 1.0) << p;
        if (std::string(p) == "plain" || std::string(p) == "barrier-only") {
            EXPECT_GE(n->bytes_per_iter, 1002) << p;
            // CompactSize(999) = fd e7 03, then the script bytes.
            EXPECT_EQ(g_last_freed_head[0], 0xfd) << p;
            EXPECT_EQ(g_last_freed_head[1], 0xe7) << p;
            EXPECT_EQ(g_last_freed_head[2], 0x03) << p;
            EXPECT_FALSE(g_last_freed_all_zero) << p;
            checksum[p] = g_last_freed_checksum;
        }
        if (std::string(p) == "zero-after-free") {
            EXPECT_TRUE(g_last_freed_all_zero);
        }
    }
    EXPECT_EQ(checksum["plain"], checksum["barrier-only"]);
}

TEST(BenchProof, BlockBenchmarksDecodeEveryTransaction)
{
    SKIP_WITHOUT_ALLOCATION_COUNTING();
    const std::size_t txs = TxCount413567();
    if (!txs) FAIL() << "tests/data/mainnet/blocks/block_413567.raw is missing";
    for (const std::string group : {"DeserializeBlockTest", "DeserializeAndCheckBlockTest", "ProcessMessageBlock"}) {
        for (const char* p : POLICIES) {
            const Case* c = Find(group + "/" + p);
            ASSERT_NE(c, nullptr) << group << "/" << p;
            auto n = CountAllocations(*c, 3);
            ASSERT_TRUE(n) << group << "/" << p;
            // Every iteration builds a fresh array of every transaction. The block's byte copy
            // and its input/output arrays come from recycled storage (few allocations, not
            // one per script): the decode itself is an opaque library call that cannot be elided.
            EXPECT_GE(n->bytes_per_iter, double(txs * sizeof(Transaction))) << group << "/" << p;
            EXPECT_GE(n->allocs_per_iter, 2.0) << group << "/" << p;
            if (group == "DeserializeBlockTest") {
                EXPECT_LE(n->allocs_per_iter, 16.0) << p;
            }
        }
    }
}

TEST(BenchProof, ViewWalkAndCleanseAllocateNothing)
{
    SKIP_WITHOUT_ALLOCATION_COUNTING();
    if (!TxCount413567()) FAIL() << "tests/data/mainnet/blocks/block_413567.raw is missing";
    for (const char* name : {"BlockViewWalk", "Cleanse8K/explicit_bzero", "Cleanse8K/core-memset-barrier"}) {
        const Case* c = Find(name);
        ASSERT_NE(c, nullptr) << name;
        auto n = CountAllocations(*c, 4);
        ASSERT_TRUE(n) << name;
        EXPECT_EQ(n->allocs_per_iter, 0.0) << name;
    }
}

TEST(BenchCore, MissingKernelLibraryIsSkippedWithReason)
{
    std::string why;
    EXPECT_FALSE(FindKernelLib("/nonexistent/libbitcoinkernel.so", &why));
    EXPECT_NE(why.find("--kernel-lib"), std::string::npos) << why;

    Options o;
    o.smoke = true;
    o.filter = "^DeserializeBlockTest/(plain|core-kernel)$";
    o.kernel_lib = "/nonexistent/libbitcoinkernel.so";
    std::vector<std::string> skipped;
    const auto results = ibdkit::bench::Run(o, &skipped);
    for (const auto& r : results) EXPECT_NE(r.variant, "core-kernel");
    if (Find("DeserializeBlockTest/core-kernel")) {
        const bool listed = std::any_of(skipped.begin(), skipped.end(), [](const std::string& s) {
            return s.rfind("DeserializeBlockTest/core-kernel: --kernel-lib", 0) == 0;
        });
        EXPECT_TRUE(listed);
    }
}

TEST(BenchCore, CoreRunsSideBySideWhenAvailable)
{
    std::string why;
    auto lib = FindKernelLib("", &why);
    if (!lib) IBDKIT_MISSING_PREREQUISITE(why, "py-bitcoinkernel (scripts/pydeps.sh puts it in build/venv) or set IBDKIT_KERNEL_LIB");
    if (!TxCount413567()) FAIL() << "tests/data/mainnet/blocks/block_413567.raw is missing";
    if (!Find("DeserializeBlockTest/core-kernel")) GTEST_SKIP() << "no Core variant registered";
    Options o;
    o.smoke = true;
    o.filter = "^DeserializeBlockTest/(plain|core-kernel)$";
    o.kernel_lib = *lib;
    std::vector<std::string> skipped;
    const auto results = ibdkit::bench::Run(o, &skipped);
    ASSERT_EQ(results.size(), 2u) << (skipped.empty() ? "" : skipped.front());
    for (const auto& r : results) {
        ASSERT_TRUE(r.ratio_to_core) << r.name;
        if (r.variant == "core-kernel") {
            EXPECT_DOUBLE_EQ(*r.ratio_to_core, 1.0);
        }
    }
}

TEST(BenchCallgrind, InstructionCountsShowTheCostOfCoresAllocator)
{
#if defined(__SANITIZE_ADDRESS__)
    GTEST_SKIP() << "valgrind cannot run an AddressSanitizer build";
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
    GTEST_SKIP() << "valgrind cannot run an AddressSanitizer build";
#endif
#endif
    const char* cli = IBDKIT_CLI_PATH;
    if (::access(cli, X_OK) != 0) GTEST_SKIP() << "CLI not built: " << cli;
    if (std::system("valgrind --version >/dev/null 2>&1") != 0) IBDKIT_MISSING_PREREQUISITE("valgrind is not installed", "valgrind (apt-get install valgrind; scripts/deps.sh does)");
    const std::string json = ::testing::TempDir() + "ibdkit_callgrind.json";
    const std::string cmd = std::string(cli) +
                            " bench --callgrind --callgrind-iters 3 --filter '^DataStreamAlloc/(plain|zero-after-free)$'"
                            " --json " + json + " >/dev/null 2>&1";
    ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd;
    std::ifstream f(json);
    const std::string text((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
    std::map<std::string, double> ir;
    const std::regex row(R"re("name": "([^"]+)"[^\n]*"ir_per_unit": ([0-9.eE+-]+))re");
    for (std::sregex_iterator it(text.begin(), text.end(), row), end; it != end; ++it) {
        ir[(*it)[1]] = std::stod((*it)[2]);
    }
    ASSERT_TRUE(ir.count("DataStreamAlloc/plain")) << text;
    ASSERT_TRUE(ir.count("DataStreamAlloc/zero-after-free")) << text;
    EXPECT_GT(ir["DataStreamAlloc/plain"], 0);
    // Core's allocator copies byte by byte through libstdc++'s generic path and zeroes on free:
    // many more instructions per byte than plain's memcpy. Instruction counts are deterministic.
    EXPECT_GT(ir["DataStreamAlloc/zero-after-free"], 2 * ir["DataStreamAlloc/plain"]);
}

// Counts read from the input never size an allocation on their own: a 32-million input, output,
// witness item or transaction count followed by a few bytes fails with EndOfData after
// allocating almost nothing (a reserve sized by the count would ask for gigabytes).
TEST(DecodeAllocation, CountPrefixesDoNotSizeAllocations)
{
    SKIP_WITHOUT_ALLOCATION_COUNTING();
    const std::string prevout(72, '0'), huge = "fe00000002"; // CompactSize 0x02000000 = MAX_SIZE
    const std::vector<std::string> txs = {
        "01000000" + huge + "00",                                                        // inputs
        "01000000" "01" + prevout + "00" "ffffffff" + huge + "00",                       // outputs
        "01000000" "0001" "01" + prevout + "00" "ffffffff" "01" "0000000000000000" "00" + huge + "00", // witness items
    };
    for (const std::string& hex : txs) {
        const auto bytes = test::ParseHex(hex);
        g_bytes = 0;
        g_armed = true;
        auto tx = DecodeTransaction(bytes);
        g_armed = false;
        ASSERT_FALSE(tx) << hex;
        EXPECT_EQ(tx.error().code, Errc::EndOfData) << hex;
        EXPECT_LT(g_bytes.load(), 64u * 1024) << hex;
    }
    std::vector<uint8_t> block(80, 0);
    for (uint8_t b : test::ParseHex(huge + "01000000" + huge + "00")) block.push_back(b); // transactions, then inputs
    g_bytes = 0;
    g_armed = true;
    auto decoded = DecodeBlock(block);
    g_armed = false;
    ASSERT_FALSE(decoded);
    EXPECT_EQ(decoded.error().code, Errc::EndOfData);
    EXPECT_LT(g_bytes.load(), 64u * 1024);
}

namespace {
/// CompactSize encoding of `n`.
std::vector<uint8_t> CompactSizeBytes(uint64_t n)
{
    std::vector<uint8_t> out;
    VectorWriter<std::vector<uint8_t>> w(out, 0);
    WriteCompactSize(w, n);
    return out;
}

void Append(std::vector<uint8_t>& v, const std::vector<uint8_t>& more) { v.insert(v.end(), more.begin(), more.end()); }
} // namespace

// A 4 MB block message whose counts lie — a transaction, input, output or witness item count far
// above what arrives — reserves at most one MAX_VECTOR_ALLOCATE batch (Core's 5 MB) for it before
// the decode fails, not what the count (or the 4 MB left) could hold. A witness item count of
// 2^25 once committed ~96 MB (4 M items of 24 bytes) here; a transaction count ~60 MB.
TEST(DecodeAllocation, LyingCountsInFourMegabyteBlockCommitOneBatch)
{
    SKIP_WITHOUT_ALLOCATION_COUNTING();
    constexpr std::size_t SIZE = 4'000'000;
    const std::string prevout(72, '1'), lie = "fe00000002"; // 2^25 = MAX_SIZE
    const std::string tx_head = "01000000" "01" + prevout + "00" "ffffffff";
    // Each prefix ends where a length follows: it claims SIZE bytes that never arrive.
    const std::vector<std::pair<std::string, std::string>> cases = {
        {"transactions", lie + "01000000" "01" + prevout},
        {"inputs", "01" "01000000" + lie + prevout},
        {"outputs", "01" + tx_head + lie + "0000000000000000"},
        {"witness items", "01" "01000000" "0001" "01" + prevout + "00" "ffffffff" "01" "0000000000000000" "00" + lie},
    };
    for (const auto& [what, hex] : cases) {
        std::vector<uint8_t> msg(80, 0);
        Append(msg, test::ParseHex(hex));
        Append(msg, CompactSizeBytes(SIZE));
        msg.resize(SIZE, 0);
        g_bytes = 0;
        g_armed = true;
        auto decoded = DecodeBlock(msg);
        g_armed = false;
        ASSERT_FALSE(decoded) << what;
        EXPECT_EQ(decoded.error().code, Errc::EndOfData) << what;
        EXPECT_LT(g_bytes.load(), 2 * detail::MAX_VECTOR_ALLOCATE) << what;
    }
}

// Witness stacks keep their capacity in recycled block storage, so it counts in the storage's
// footprint: exact (equal to a walk over every element) after each decode, and a storage whose
// stacks grew beyond the pool's limit is not kept (3 M empty witness items hold 72 MB).
TEST(DecodeAllocation, WitnessCapacityCountsInPooledStorageFootprint)
{
    const auto block_with_items = [](std::size_t items, std::size_t inputs) {
        std::vector<uint8_t> msg(80, 0);
        Append(msg, test::ParseHex("01" "02000000" "0001"));
        Append(msg, CompactSizeBytes(inputs));
        for (std::size_t i = 0; i < inputs; ++i) {
            Append(msg, test::ParseHex(std::string(64, '2') + "00000000" "00" "ffffffff"));
            msg[msg.size() - 41] = uint8_t(i); // distinct prevouts
        }
        Append(msg, test::ParseHex("01" "0000000000000000" "00"));
        for (std::size_t i = 0; i < inputs; ++i) {
            Append(msg, CompactSizeBytes(i == 0 ? items : 2));
            for (std::size_t k = 0; k < (i == 0 ? items : 2); ++k) {
                msg.push_back(k % 2); // an empty item, or one byte
                if (k % 2) msg.push_back(1);
            }
        }
        Append(msg, test::ParseHex("00000000"));
        return msg;
    };
    for (const auto& [items, inputs] : std::vector<std::pair<std::size_t, std::size_t>>{{1'000'000, 3}, {5, 2}, {1, 1}, {3'000'000, 2}}) {
        auto block = DecodeBlock(block_with_items(items, inputs));
        ASSERT_TRUE(block) << items;
        ASSERT_EQ(block->vtx[0].vin()[0].witness.stack.size(), items);
        const detail::TxStorage* st = detail::TxBuilder::StorageOf(block->vtx[0]);
        EXPECT_EQ(st->Footprint(), st->FootprintByWalking()) << items;
        EXPECT_GE(st->Footprint(), items * sizeof(std::vector<uint8_t>)) << items;
        // A block without witness over the same (recycled) storage clears the old stacks.
        block = DecodeBlock(test::ParseHex(std::string(160, '0') + "01" "01000000" "01" + std::string(72, '3') + "00" "ffffffff" "01" "0000000000000000" "00" "00000000"));
        ASSERT_TRUE(block);
        st = detail::TxBuilder::StorageOf(block->vtx[0]);
        EXPECT_EQ(st->Footprint(), st->FootprintByWalking()) << items;
    }
    const detail::StoragePoolSnapshot pool = detail::InspectStoragePool();
    EXPECT_TRUE(pool.footprints_exact);
    EXPECT_LE(pool.largest_footprint, detail::MAX_POOLED_FOOTPRINT);
}

} // namespace
} // namespace ibdkit::bench

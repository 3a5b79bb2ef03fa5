// OwnedBytes: a policy's DataStream taken over without a copy, its bytes kept across moves (inline
// bytes included), and its buffer freed by the policy's release exactly when released.
#include "memory/cleanse.h"
#include "stream/owned_bytes.h"

#include <gtest/gtest.h>

#include <vector>

using namespace ibdkit;

namespace {

template <typename P>
class OwnedBytesTest : public ::testing::Test {};
using AllPolicies = AllPolicyTypes::Apply<::testing::Types>;
TYPED_TEST_SUITE(OwnedBytesTest, AllPolicies);

template <typename P>
DataStream<P> StreamOf(std::size_t n)
{
    DataStream<P> s;
    for (std::size_t i = 0; i < n; ++i) s.write(std::span<const std::byte>{std::array{std::byte(i * 7 + 1)}});
    return s;
}

std::vector<std::byte> Copy(const OwnedBytes& b) { return {b.begin(), b.end()}; }

} // namespace

TYPED_TEST(OwnedBytesTest, TakesTheBufferWithoutCopying)
{
    using P = TypeParam;
    DataStream<P> s = StreamOf<P>(1000);
    const std::vector<std::byte> want(s.begin(), s.end());
    const std::byte* where = s.data();
    OwnedBytes b(std::move(s));
    EXPECT_EQ(b.data(), where) << "the stream's heap buffer is the bytes";
    EXPECT_EQ(b.size(), 1000u);
    EXPECT_EQ(Copy(b), want);
    EXPECT_EQ(b.policy(), P::id);
    EXPECT_EQ(b.uchars().size(), 1000u);
}

TYPED_TEST(OwnedBytesTest, UnreadBytesOnlyAndMovesKeepThem)
{
    using P = TypeParam;
    for (const std::size_t n : {std::size_t(0), std::size_t(10), std::size_t(63), std::size_t(64), std::size_t(65), std::size_t(5000)}) {
        DataStream<P> s = StreamOf<P>(n + 3);
        std::byte skip[3];
        s.read(skip);
        const std::vector<std::byte> want(s.begin(), s.end());
        OwnedBytes a(std::move(s));
        OwnedBytes b(std::move(a)); // a short buffer of a policy with inline bytes moves them
        EXPECT_TRUE(a.empty());
        EXPECT_FALSE(a.policy());
        OwnedBytes c;
        c = std::move(b);
        EXPECT_EQ(Copy(c), want) << n << " bytes";
        EXPECT_EQ(c.size(), n);
    }
}

TYPED_TEST(OwnedBytesTest, ReleaseIsThePolicysFreeAndHappensOnce)
{
    using P = TypeParam;
    OwnedBytes b(StreamOf<P>(4096));
    OwnedBytes moved(std::move(b));
    const uint64_t before = CleansedBytes();
    b.Release(); // moved from: nothing to free
    EXPECT_EQ(CleansedBytes(), before);
    moved.Release();
    const uint64_t cleansed = CleansedBytes() - before;
    EXPECT_TRUE(moved.empty());
    EXPECT_FALSE(moved.policy());
    // The policies that cleanse on free zero at least the bytes written; the others none.
    DataStream<P> probe = StreamOf<P>(4096);
    const uint64_t probe_before = CleansedBytes();
    { DataStream<P> gone(std::move(probe)); }
    EXPECT_EQ(cleansed, CleansedBytes() - probe_before) << "OwnedBytes frees as the stream itself would";
    moved.Release(); // twice: no effect
    OwnedBytes{}.Release();
}

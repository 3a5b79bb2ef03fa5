// CRC-32C: published check values, the CPU's instruction against the table, LevelDB's mask.
#include "common/crc32c.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

namespace ibdkit {
namespace {

TEST(Crc32c, KnownValues)
{
    // RFC 3720 (iSCSI) appendix B.4 and LevelDB's util/crc32c_test.cc.
    std::vector<unsigned char> buf(32, 0);
    for (auto fn : {Crc32c, Crc32cPortable}) {
        EXPECT_EQ(fn(0, "123456789", 9), 0xE3069283u);
        std::fill(buf.begin(), buf.end(), 0x00);
        EXPECT_EQ(fn(0, buf.data(), 32), 0x8A9136AAu);
        std::fill(buf.begin(), buf.end(), 0xFF);
        EXPECT_EQ(fn(0, buf.data(), 32), 0x62A8AB43u);
        for (int i = 0; i < 32; ++i) buf[i] = static_cast<unsigned char>(i);
        EXPECT_EQ(fn(0, buf.data(), 32), 0x46DD794Eu);
        for (int i = 0; i < 32; ++i) buf[i] = static_cast<unsigned char>(31 - i);
        EXPECT_EQ(fn(0, buf.data(), 32), 0x113FDB5Cu);
        EXPECT_EQ(fn(0, "", 0), 0u);
    }
}

TEST(Crc32c, InstructionAndTableAgreeAtEveryLengthAndAlignment)
{
    std::mt19937 rng(7);
    // Every length up to two groups of three 256-byte stretches (the instruction's three chains) and
    // beyond, then longer ones, so every mix of long groups, short groups (3 x 32) and tail is met.
    std::vector<unsigned char> buf(5000);
    for (auto& b : buf) b = static_cast<unsigned char>(rng());
    for (std::size_t start = 0; start < 9; ++start) {
        for (std::size_t n = 0; start + n <= 4900; n += n < 1700 ? 1 : 37) {
            ASSERT_EQ(Crc32c(0, buf.data() + start, n), Crc32cPortable(0, buf.data() + start, n)) << start << "+" << n;
        }
    }
    // Continuing a CRC over a split input equals one pass over the whole.
    const uint32_t whole = Crc32c(0, buf.data(), buf.size());
    for (std::size_t cut : {0, 1, 7, 8, 9, 95, 96, 97, 150, 299, 300, 767, 768, 769, 4096, 4999, 5000}) {
        EXPECT_EQ(Crc32c(Crc32c(0, buf.data(), cut), buf.data() + cut, buf.size() - cut), whole);
        EXPECT_EQ(Crc32cPortable(Crc32cPortable(0, buf.data(), cut), buf.data() + cut, buf.size() - cut), whole);
    }
    RecordProperty("accelerated", Crc32cAccelerated() ? "yes" : "no");
}

TEST(Crc32c, InstructionAndTableAgreeOnEdgeLengthsUpTo1MiB)
{
    std::mt19937 rng(11);
    std::vector<unsigned char> buf((1 << 20) + 2); // the longest length, read from offset 1
    for (auto& b : buf) b = static_cast<unsigned char>(rng());
    std::vector<std::size_t> lengths = {0, 1, 55, 56, 63, 64, 65, 4101, 16384 + 5, 1 << 20, (1 << 20) + 1};
    for (std::size_t k = 2; k <= 64; k += 3) lengths.push_back(64 * k);
    for (std::size_t n : lengths) {
        EXPECT_EQ(Crc32c(0, buf.data(), n), Crc32cPortable(0, buf.data(), n)) << n;
        EXPECT_EQ(Crc32c(0x12345678, buf.data() + 1, n), Crc32cPortable(0x12345678, buf.data() + 1, n)) << "unaligned " << n;
    }
}

// IBDKIT_EXPECT_CRC32C_ACCELERATED=1 or 0 (scripts/test_arm64.sh, per emulated CPU) says whether
// the CPU's instruction must have been chosen; IBDKIT_DISABLE_CPU_FEATURES forces the table.
TEST(Crc32c, ChoiceFollowsTheCpu)
{
    if (const char* want = std::getenv("IBDKIT_EXPECT_CRC32C_ACCELERATED"); want && *want) {
        EXPECT_EQ(Crc32cAccelerated(), std::string(want) == "1");
    }
    if (const char* off = std::getenv("IBDKIT_DISABLE_CPU_FEATURES"); off && *off && std::string(off) != "0") {
        EXPECT_FALSE(Crc32cAccelerated());
    }
    RecordProperty("accelerated", Crc32cAccelerated() ? "yes" : "no");
}

TEST(Crc32c, LevelDbMaskRoundTripsAndDiffers)
{
    const uint32_t crc = Crc32c(0, "foo", 3);
    EXPECT_NE(Crc32cMask(crc), crc);
    EXPECT_NE(Crc32cMask(Crc32cMask(crc)), crc);
    EXPECT_EQ(Crc32cUnmask(Crc32cMask(crc)), crc);
    EXPECT_EQ(Crc32cUnmask(Crc32cUnmask(Crc32cMask(Crc32cMask(crc)))), crc);
}

} // namespace
} // namespace ibdkit

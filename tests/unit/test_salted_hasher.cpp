// The salted outpoint hasher (src/coins/salted_hasher.h) that tables keyed by outpoints of blocks
// use (the UTXO cache, SwiftSync's recent coins): outpoints whose txids were ground to one value of
// the unsalted OutPointHasher (the same first word, the same index) spread over the salted one's
// values, and two hashers hash alike only by chance.
#include "coins/salted_hasher.h"

#include <gtest/gtest.h>

#include <array>
#include <set>

namespace ibdkit {
namespace {

OutPoint GroundOutPoint(uint64_t k)
{
    std::array<uint8_t, 32> b{}; // the first word (bytes 0-7) stays zero, as a grinder would keep it
    for (int i = 0; i < 8; ++i) b[16 + i] = uint8_t(k >> (8 * i));
    return OutPoint{Txid(uint256(std::span<const uint8_t, 32>(b))), 0};
}

TEST(SaltedOutPointHasher, OutpointsGroundToOneUnsaltedValueSpread)
{
    std::set<std::size_t> plain, salted;
    const SaltedOutPointHasher h;
    for (uint64_t k = 0; k < 1000; ++k) {
        plain.insert(OutPointHasher{}(GroundOutPoint(k)));
        salted.insert(h(GroundOutPoint(k)) % 4096); // a table's bucket, not only the whole word
    }
    EXPECT_EQ(plain.size(), 1u) << "the unsalted hasher reads only the first word and the index";
    EXPECT_GE(salted.size(), 800u); // 1,000 keys in 4,096 buckets: ~890 distinct when uniform
}

TEST(SaltedOutPointHasher, EachHasherHasItsOwnSalt)
{
    const SaltedOutPointHasher a, b;
    int same = 0;
    for (uint64_t k = 0; k < 64; ++k) same += a(GroundOutPoint(k)) == b(GroundOutPoint(k));
    EXPECT_LT(same, 64);
}

} // namespace
} // namespace ibdkit

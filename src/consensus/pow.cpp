#include <ibdkit/consensus/pow.h>

#include <ibdkit/chain/params.h>

#include <cassert>
#include <cstring>

namespace ibdkit {

arith_uint256& arith_uint256::operator<<=(unsigned shift) noexcept
{
    const arith_uint256 a(*this);
    m_pn.fill(0);
    const int k = int(shift / 32);
    shift %= 32;
    for (int i = 0; i < WIDTH; i++) {
        if (i + k + 1 < WIDTH && shift != 0) m_pn[i + k + 1] |= (a.m_pn[i] >> (32 - shift));
        if (i + k < WIDTH) m_pn[i + k] |= (a.m_pn[i] << shift);
    }
    return *this;
}

arith_uint256& arith_uint256::operator>>=(unsigned shift) noexcept
{
    const arith_uint256 a(*this);
    m_pn.fill(0);
    const int k = int(shift / 32);
    shift %= 32;
    for (int i = 0; i < WIDTH; i++) {
        if (i - k - 1 >= 0 && shift != 0) m_pn[i - k - 1] |= (a.m_pn[i] << (32 - shift));
        if (i - k >= 0) m_pn[i - k] |= (a.m_pn[i] >> shift);
    }
    return *this;
}

arith_uint256& arith_uint256::operator+=(const arith_uint256& b) noexcept
{
    uint64_t carry = 0;
    for (int i = 0; i < WIDTH; i++) {
        const uint64_t n = carry + m_pn[i] + b.m_pn[i];
        m_pn[i] = uint32_t(n);
        carry = n >> 32;
    }
    return *this;
}

arith_uint256& arith_uint256::operator-=(const arith_uint256& b) noexcept
{
    arith_uint256 neg = ~b;
    neg += arith_uint256(1);
    return *this += neg;
}

arith_uint256& arith_uint256::operator*=(uint32_t b) noexcept
{
    uint64_t carry = 0;
    for (int i = 0; i < WIDTH; i++) {
        const uint64_t n = carry + uint64_t(b) * m_pn[i];
        m_pn[i] = uint32_t(n);
        carry = n >> 32;
    }
    return *this;
}

arith_uint256& arith_uint256::operator/=(const arith_uint256& b) noexcept
{
    arith_uint256 div = b;
    arith_uint256 num = *this;
    *this = arith_uint256();
    const int num_bits = int(num.bits());
    const int div_bits = int(div.bits());
    assert(div_bits != 0 && "division by zero");
    if (div_bits == 0 || div_bits > num_bits) return *this;
    int shift = num_bits - div_bits;
    div <<= unsigned(shift);
    while (shift >= 0) {
        if (num >= div) {
            num -= div;
            m_pn[shift / 32] |= (1U << (shift & 31));
        }
        div >>= 1;
        shift--;
    }
    return *this;
}

int arith_uint256::CompareTo(const arith_uint256& b) const noexcept
{
    for (int i = WIDTH - 1; i >= 0; i--) {
        if (m_pn[i] < b.m_pn[i]) return -1;
        if (m_pn[i] > b.m_pn[i]) return 1;
    }
    return 0;
}

unsigned arith_uint256::bits() const noexcept
{
    for (int pos = WIDTH - 1; pos >= 0; pos--) {
        if (m_pn[pos]) {
            for (int nbits = 31; nbits > 0; nbits--) {
                if (m_pn[pos] & 1U << nbits) return unsigned(32 * pos + nbits + 1);
            }
            return unsigned(32 * pos + 1);
        }
    }
    return 0;
}

arith_uint256& arith_uint256::SetCompact(uint32_t compact, bool* negative, bool* overflow) noexcept
{
    const int size = int(compact >> 24);
    uint32_t word = compact & 0x007fffff;
    if (size <= 3) {
        word >>= 8 * (3 - size);
        *this = arith_uint256(word);
    } else {
        *this = arith_uint256(word);
        *this <<= unsigned(8 * (size - 3));
    }
    if (negative) *negative = word != 0 && (compact & 0x00800000) != 0;
    if (overflow) *overflow = word != 0 && ((size > 34) || (word > 0xff && size > 33) || (word > 0xffff && size > 32));
    return *this;
}

uint32_t arith_uint256::GetCompact(bool negative) const noexcept
{
    int size = int((bits() + 7) / 8);
    uint32_t compact = 0;
    if (size <= 3) {
        compact = uint32_t(GetLow64() << 8 * (3 - size));
    } else {
        const arith_uint256 bn = *this >> unsigned(8 * (size - 3));
        compact = uint32_t(bn.GetLow64());
    }
    if (compact & 0x00800000) {
        compact >>= 8;
        size++;
    }
    compact |= uint32_t(size) << 24;
    compact |= (negative && (compact & 0x007fffff) ? 0x00800000 : 0);
    return compact;
}

std::string arith_uint256::GetHex() const { return ArithToUint256(*this).ToHex(); }

arith_uint256 UintToArith256(const uint256& a) noexcept
{
    arith_uint256 b;
    for (int x = 0; x < arith_uint256::WIDTH; ++x) b.m_pn[x] = LoadLE<uint32_t>(a.data() + x * 4);
    return b;
}

uint256 ArithToUint256(const arith_uint256& a) noexcept
{
    uint256 b;
    for (int x = 0; x < arith_uint256::WIDTH; ++x) StoreLE<uint32_t>(b.data() + x * 4, a.m_pn[x]);
    return b;
}

std::optional<arith_uint256> DeriveTarget(uint32_t bits, const uint256& pow_limit) noexcept
{
    bool negative = false, overflow = false;
    arith_uint256 target;
    target.SetCompact(bits, &negative, &overflow);
    if (negative || target == arith_uint256(0) || overflow || target > UintToArith256(pow_limit)) return std::nullopt;
    return target;
}

bool CheckProofOfWork(const uint256& hash, uint32_t bits, const ConsensusParams& params) noexcept
{
    const auto target = DeriveTarget(bits, params.pow_limit);
    if (!target) return false;
    return !(UintToArith256(hash) > *target);
}

arith_uint256 GetBlockProof(uint32_t bits) noexcept
{
    bool negative = false, overflow = false;
    arith_uint256 target;
    target.SetCompact(bits, &negative, &overflow);
    if (negative || overflow || target == arith_uint256(0)) return arith_uint256(0);
    // 2^256 / (target + 1) = ~target / (target + 1) + 1, as 2^256 does not fit.
    return (~target / (target + arith_uint256(1))) + arith_uint256(1);
}

double GetDifficulty(uint32_t bits) noexcept
{
    int shift = int((bits >> 24) & 0xff);
    double diff = double(0x0000ffff) / double(bits & 0x00ffffff);
    while (shift < 29) {
        diff *= 256.0;
        shift++;
    }
    while (shift > 29) {
        diff /= 256.0;
        shift--;
    }
    return diff;
}

} // namespace ibdkit

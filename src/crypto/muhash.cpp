// MuHash3072 and ChaCha20 (include/ibdkit/crypto/muhash.h).
//
// Arithmetic: schoolbook 48×48-limb products with unsigned __int128, reduced with
// 2^3072 ≡ 1103717 (mod p) twice, then at most one subtraction of p. Inversion is Fermat's
// a^(p−2): about 3,100 squarings and multiplications, run once per Finalize.
#include "crypto/muhash.h"

#include <ibdkit/crypto/sha256.h>
#include <ibdkit/encoding/endian.h>

#include <cstring>

namespace ibdkit {

namespace {

inline uint32_t Rotl(uint32_t v, int c) noexcept { return (v << c) | (v >> (32 - c)); }

inline void QuarterRound(uint32_t& a, uint32_t& b, uint32_t& c, uint32_t& d) noexcept
{
    a += b; d ^= a; d = Rotl(d, 16);
    c += d; b ^= c; b = Rotl(b, 12);
    a += b; d ^= a; d = Rotl(d, 8);
    c += d; b ^= c; b = Rotl(b, 7);
}

constexpr uint64_t MAX_PRIME_DIFF = 1103717; // p = 2^3072 − MAX_PRIME_DIFF
using u128 = unsigned __int128;

} // namespace

void ChaCha20Block(const uint8_t key[32], uint32_t counter, const uint8_t nonce[12], uint8_t out[64]) noexcept
{
    uint32_t in[16] = {0x61707865, 0x3320646e, 0x79622d32, 0x6b206574};
    for (int i = 0; i < 8; ++i) in[4 + i] = LoadLE<uint32_t>(key + 4 * i);
    in[12] = counter;
    for (int i = 0; i < 3; ++i) in[13 + i] = LoadLE<uint32_t>(nonce + 4 * i);
    uint32_t x[16];
    std::memcpy(x, in, sizeof(x));
    for (int round = 0; round < 10; ++round) {
        QuarterRound(x[0], x[4], x[8], x[12]);
        QuarterRound(x[1], x[5], x[9], x[13]);
        QuarterRound(x[2], x[6], x[10], x[14]);
        QuarterRound(x[3], x[7], x[11], x[15]);
        QuarterRound(x[0], x[5], x[10], x[15]);
        QuarterRound(x[1], x[6], x[11], x[12]);
        QuarterRound(x[2], x[7], x[8], x[13]);
        QuarterRound(x[3], x[4], x[9], x[14]);
    }
    for (int i = 0; i < 16; ++i) {
        const uint32_t v = x[i] + in[i];
        out[4 * i] = uint8_t(v);
        out[4 * i + 1] = uint8_t(v >> 8);
        out[4 * i + 2] = uint8_t(v >> 16);
        out[4 * i + 3] = uint8_t(v >> 24);
    }
}

Num3072::Num3072(std::span<const uint8_t, BYTE_SIZE> bytes) noexcept
{
    for (int i = 0; i < LIMBS; ++i) m_limbs[i] = LoadLE<uint64_t>(bytes.data() + 8 * i);
}

void Num3072::SetToOne() noexcept
{
    m_limbs[0] = 1;
    for (int i = 1; i < LIMBS; ++i) m_limbs[i] = 0;
}

bool Num3072::IsOverflow() const noexcept
{
    if (m_limbs[0] < ~uint64_t(0) - (MAX_PRIME_DIFF - 1)) return false;
    for (int i = 1; i < LIMBS; ++i) {
        if (m_limbs[i] != ~uint64_t(0)) return false;
    }
    return true;
}

void Num3072::FullReduce() noexcept
{
    // value − p = value + MAX_PRIME_DIFF − 2^3072: add and drop the carry out of the top limb.
    uint64_t carry = MAX_PRIME_DIFF;
    for (int i = 0; i < LIMBS && carry; ++i) {
        const u128 s = u128(m_limbs[i]) + carry;
        m_limbs[i] = uint64_t(s);
        carry = uint64_t(s >> 64);
    }
}

void Num3072::Multiply(const Num3072& a) noexcept
{
    uint64_t prod[2 * LIMBS] = {};
    for (int i = 0; i < LIMBS; ++i) {
        uint64_t carry = 0;
        const u128 ai = m_limbs[i];
        for (int j = 0; j < LIMBS; ++j) {
            const u128 t = ai * a.m_limbs[j] + prod[i + j] + carry;
            prod[i + j] = uint64_t(t);
            carry = uint64_t(t >> 64);
        }
        prod[i + LIMBS] = carry;
    }
    // lo + hi·2^3072 ≡ lo + hi·MAX_PRIME_DIFF.
    uint64_t carry = 0;
    for (int i = 0; i < LIMBS; ++i) {
        const u128 t = u128(prod[LIMBS + i]) * MAX_PRIME_DIFF + prod[i] + carry;
        m_limbs[i] = uint64_t(t);
        carry = uint64_t(t >> 64);
    }
    // carry < 2^21: fold once more; a carry out of that fold leaves a tiny value to wrap.
    u128 fold = u128(carry) * MAX_PRIME_DIFF;
    for (int i = 0; i < LIMBS && fold; ++i) {
        const u128 t = u128(m_limbs[i]) + fold;
        m_limbs[i] = uint64_t(t);
        fold = t >> 64;
    }
    if (fold) {
        // The sum passed 2^3072 once: the limbs now hold value − 2^3072 (small); add MAX_PRIME_DIFF.
        uint64_t c = MAX_PRIME_DIFF;
        for (int i = 0; i < LIMBS && c; ++i) {
            const u128 t = u128(m_limbs[i]) + c;
            m_limbs[i] = uint64_t(t);
            c = uint64_t(t >> 64);
        }
    }
    if (IsOverflow()) FullReduce();
}

Num3072 Num3072::GetInverse() const noexcept
{
    // a^(p−2) (Fermat); p − 2 = 2^3072 − 1103719: every limb all ones except the lowest.
    Num3072 base = *this;
    if (base.IsOverflow()) base.FullReduce();
    // Exponent limbs of p − 2.
    uint64_t e[LIMBS];
    for (int i = 0; i < LIMBS; ++i) e[i] = ~uint64_t(0);
    e[0] = ~uint64_t(0) - (MAX_PRIME_DIFF + 1); // 2^64 − 1103719
    Num3072 r;
    for (int bit = LIMBS * 64 - 1; bit >= 0; --bit) {
        r.Multiply(r);
        if ((e[bit / 64] >> (bit % 64)) & 1) r.Multiply(base);
    }
    return r;
}

void Num3072::Divide(const Num3072& a) noexcept
{
    if (IsOverflow()) FullReduce();
    Multiply(a.GetInverse());
}

void Num3072::ToBytes(std::span<uint8_t, BYTE_SIZE> out) const noexcept
{
    for (int i = 0; i < LIMBS; ++i) WriteLE64(reinterpret_cast<std::byte*>(out.data() + 8 * i), m_limbs[i]);
}

Num3072 MuHash3072::ToNum3072(std::span<const uint8_t> element) noexcept
{
    uint8_t key[32];
    Sha256().Write(element).Finalize(key);
    static constexpr uint8_t NONCE[12] = {};
    uint8_t stream[Num3072::BYTE_SIZE];
    for (uint32_t block = 0; block < Num3072::BYTE_SIZE / 64; ++block) {
        ChaCha20Block(key, block, NONCE, stream + 64 * block);
    }
    return Num3072(std::span<const uint8_t, Num3072::BYTE_SIZE>(stream));
}

MuHash3072::MuHash3072(std::span<const uint8_t> element) noexcept : m_numerator(ToNum3072(element)) {}

MuHash3072& MuHash3072::Insert(std::span<const uint8_t> element) noexcept
{
    m_numerator.Multiply(ToNum3072(element));
    return *this;
}

MuHash3072& MuHash3072::Remove(std::span<const uint8_t> element) noexcept
{
    m_denominator.Multiply(ToNum3072(element));
    return *this;
}

MuHash3072& MuHash3072::operator*=(const MuHash3072& other) noexcept
{
    m_numerator.Multiply(other.m_numerator);
    m_denominator.Multiply(other.m_denominator);
    return *this;
}

MuHash3072& MuHash3072::operator/=(const MuHash3072& other) noexcept
{
    m_numerator.Multiply(other.m_denominator);
    m_denominator.Multiply(other.m_numerator);
    return *this;
}

std::array<uint8_t, 32> MuHash3072::Finalize() noexcept
{
    m_numerator.Divide(m_denominator);
    m_denominator.SetToOne();
    uint8_t data[Num3072::BYTE_SIZE];
    m_numerator.ToBytes(std::span<uint8_t, Num3072::BYTE_SIZE>(data));
    std::array<uint8_t, 32> out;
    Sha256().Write(data, sizeof(data)).Finalize(out.data());
    return out;
}

std::array<uint8_t, MuHash3072::SERIALIZED_SIZE> MuHash3072::Serialize() const noexcept
{
    std::array<uint8_t, SERIALIZED_SIZE> out;
    m_numerator.ToBytes(std::span<uint8_t, Num3072::BYTE_SIZE>(out.data(), Num3072::BYTE_SIZE));
    m_denominator.ToBytes(std::span<uint8_t, Num3072::BYTE_SIZE>(out.data() + Num3072::BYTE_SIZE, Num3072::BYTE_SIZE));
    return out;
}

MuHash3072 MuHash3072::Deserialize(std::span<const uint8_t, SERIALIZED_SIZE> bytes) noexcept
{
    MuHash3072 h;
    h.m_numerator = Num3072(bytes.first<Num3072::BYTE_SIZE>());
    h.m_denominator = Num3072(bytes.last<Num3072::BYTE_SIZE>());
    return h;
}

} // namespace ibdkit

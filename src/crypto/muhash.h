// src/crypto/muhash.h — MuHash3072, the rolling set hash of Bitcoin Core's `gettxoutsetinfo
// hash_type=muhash` (crypto/muhash.h), and the ChaCha20 block function it draws its keystream from.
//
// An element is mapped to a number: SHA256(bytes) keys a ChaCha20 keystream (nonce 0, counter 0);
// its first 384 bytes, little-endian, are a 3072-bit number. The set's hash is the product of its
// elements' numbers modulo the prime 2^3072 − 1103717 (removals multiply a denominator). Finalize
// divides, writes the 384 bytes little-endian and hashes them with SHA256; Core prints the 32 bytes
// reversed. Format facts: docs/formats.md §10; design notes: docs/chainstate.md.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>

namespace ibdkit {

/// RFC 8439 ChaCha20 block function: 64 bytes of keystream for (key, counter, nonce).
void ChaCha20Block(const uint8_t key[32], uint32_t counter, const uint8_t nonce[12], uint8_t out[64]) noexcept;

/// A number modulo 2^3072 − 1103717, stored as 48 little-endian 64-bit limbs. Results of Multiply
/// are fully reduced; a deserialized value may not be (Core accepts that and reduces later).
class Num3072 {
public:
    static constexpr std::size_t BYTE_SIZE = 384;
    static constexpr int LIMBS = 48;

    Num3072() noexcept { SetToOne(); }
    explicit Num3072(std::span<const uint8_t, BYTE_SIZE> bytes) noexcept;

    void SetToOne() noexcept;
    /// this = this · a (mod p).
    void Multiply(const Num3072& a) noexcept;
    /// this = this · a⁻¹ (mod p). a must not be 0 mod p (it never is for MuHash elements).
    void Divide(const Num3072& a) noexcept;
    /// 384 bytes little-endian (the value as stored; reduced after Multiply/Divide).
    void ToBytes(std::span<uint8_t, BYTE_SIZE> out) const noexcept;

    friend bool operator==(const Num3072&, const Num3072&) = default;

private:
    bool IsOverflow() const noexcept; ///< value ≥ p
    void FullReduce() noexcept;       ///< subtract p once
    Num3072 GetInverse() const noexcept;
    uint64_t m_limbs[LIMBS];
};

class MuHash3072 {
public:
    static constexpr std::size_t SERIALIZED_SIZE = 2 * Num3072::BYTE_SIZE;

    /// The empty set.
    MuHash3072() noexcept = default;
    /// The set holding one element.
    explicit MuHash3072(std::span<const uint8_t> element) noexcept;

    MuHash3072& Insert(std::span<const uint8_t> element) noexcept;
    MuHash3072& Remove(std::span<const uint8_t> element) noexcept;
    /// Union / difference of the sets.
    MuHash3072& operator*=(const MuHash3072& other) noexcept;
    MuHash3072& operator/=(const MuHash3072& other) noexcept;

    /// SHA256 of the reduced numerator/denominator in internal byte order (Core's uint256); the
    /// display form is these bytes reversed. Leaves the value unchanged (denominator becomes 1).
    std::array<uint8_t, 32> Finalize() noexcept;

    /// Core's serialization: numerator then denominator, each 48 limbs as little-endian u64.
    std::array<uint8_t, SERIALIZED_SIZE> Serialize() const noexcept;
    static MuHash3072 Deserialize(std::span<const uint8_t, SERIALIZED_SIZE> bytes) noexcept;

private:
    static Num3072 ToNum3072(std::span<const uint8_t> element) noexcept;
    Num3072 m_numerator;
    Num3072 m_denominator;
};

} // namespace ibdkit

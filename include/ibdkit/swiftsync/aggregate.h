// ibdkit/swiftsync/aggregate.h — SwiftSync's hash aggregate (BIP 457): each element is hashed with
// a secret per-run salt, the digest is read as a 256-bit unsigned integer, and the integers are
// summed modulo 2^256. Two aggregates are kept, one over the outputs created (and not hinted
// unspent) and one over the inputs spent; a history is accepted when they are equal at the end.
//
// Elements (docs/swiftsync.md, *The aggregate*):
//   coins mode      LE32(height·2 + coinbase) | CompactSize(script length) | script | LE64(amount)
//                   | txid (32, internal order) | LE32(vout)       — BIP 457's Coin
//   outpoints mode  txid (32) | LE32(vout)                          — BIP 457's assume-valid extension
// Hash: SHA-256(salt ‖ element); the 32-byte digest is read little-endian (byte 0 least significant).
//
// The salt is what keeps an attacker from grinding elements whose sum cancels: it is drawn from the
// kernel for every run and never shown. `Salt` therefore has no text form at all (no operator<<,
// no hex); the only way its bytes leave it is `CopyForWorker`, which a distributed driver calls to
// hand the same salt to its workers explicitly.
#pragma once

#include <ibdkit/coins/coin.h>
#include <ibdkit/primitives/transaction.h>
#include <ibdkit/crypto/sha256.h>

#include <array>
#include <cstddef>
#include <cstdint>
#include <iosfwd>
#include <optional>
#include <span>
#include <string_view>
#include <vector>

namespace ibdkit::swiftsync {

/// The secret of one SwiftSync run: 32 random bytes, wiped when the object goes.
class Salt {
public:
    static constexpr std::size_t SIZE = 32;

    /// 32 bytes from the kernel's random source (getrandom). Throws std::runtime_error if the
    /// kernel gives none (an environment failure, never a weaker fallback).
    static Salt Random();
    /// A salt whose bytes were drawn elsewhere: a worker receives its driver's salt this way, and
    /// tests fix one. Never build one from anything but random bytes in a real run.
    static Salt FromBytes(std::span<const uint8_t, SIZE> bytes) noexcept;

    /// Writes the salt's bytes to `out`: the one way they leave the object, for a driver handing
    /// the salt to its workers. Whoever holds the copy must keep it off logs, files and screens.
    void CopyForWorker(std::span<uint8_t, SIZE> out) const noexcept;

    Salt(const Salt& other) noexcept;
    Salt& operator=(const Salt& other) noexcept;
    ~Salt();

    /// No text form, on purpose: streaming a salt does not compile.
    friend std::ostream& operator<<(std::ostream&, const Salt&) = delete;

private:
    Salt() = default;
    friend class SaltedHasher;
    std::array<uint8_t, SIZE> m_bytes{};
};

/// A number modulo 2^256 as four 64-bit limbs, least significant first. Addition and subtraction
/// wrap, so partial aggregates (per thread, per range of blocks) combine by adding them in any order.
class Aggregate {
public:
    Aggregate() = default;

    /// Adds (subtracts) a 32-byte digest read little-endian.
    void Add(std::span<const uint8_t, 32> digest) noexcept;
    void Sub(std::span<const uint8_t, 32> digest) noexcept;

    Aggregate& operator+=(const Aggregate& o) noexcept;
    Aggregate& operator-=(const Aggregate& o) noexcept;
    friend Aggregate operator+(Aggregate a, const Aggregate& b) noexcept { return a += b; }
    friend Aggregate operator-(Aggregate a, const Aggregate& b) noexcept { return a -= b; }
    friend bool operator==(const Aggregate&, const Aggregate&) noexcept = default;

    bool IsZero() const noexcept { return (m_limbs[0] | m_limbs[1] | m_limbs[2] | m_limbs[3]) == 0; }
    const std::array<uint64_t, 4>& limbs() const noexcept { return m_limbs; }

    /// The value as 32 little-endian bytes, and back: how a partial travels between processes.
    std::array<uint8_t, 32> ToBytes() const noexcept;
    static Aggregate FromBytes(std::span<const uint8_t, 32> bytes) noexcept;

private:
    std::array<uint64_t, 4> m_limbs{};
};

/// What an aggregate's elements are.
enum class AggregateMode : uint8_t {
    Coins,     ///< BIP 457's Coin: height, coinbase flag, script, amount, outpoint
    OutPoints, ///< the outpoint alone (BIP 457's extension to assume-valid)
};

/// Every mode's name, in AggregateMode's order: the one spelling the CLI's options, Python's `mode`
/// and a verdict's "mode" field use.
inline constexpr std::array<std::string_view, 2> AGGREGATE_MODE_NAMES{"coins", "outpoints"};
/// `mode`'s name in AGGREGATE_MODE_NAMES ("coins" or "outpoints").
std::string_view AggregateModeName(AggregateMode mode) noexcept;
/// The mode whose name is exactly `name` (case-sensitive); nullopt for any other text.
/// ParseAggregateMode(AggregateModeName(m)) == m for every mode.
std::optional<AggregateMode> ParseAggregateMode(std::string_view name) noexcept;

/// BIP 457's Coin element for `coin` created at `outpoint` (layout in the header comment).
std::vector<uint8_t> CoinElement(const OutPoint& outpoint, const Coin& coin);
/// The outpoints-mode element: txid | LE32(vout).
std::array<uint8_t, 36> OutPointElement(const OutPoint& outpoint) noexcept;

/// SHA-256 with the salt written first. Copyable and usable from many threads at once (each call
/// starts from a copy of the salted state); the salted state is wiped when the object goes.
class SaltedHasher {
public:
    explicit SaltedHasher(const Salt& salt) noexcept;
    SaltedHasher(const SaltedHasher&) noexcept = default;
    ~SaltedHasher();

    /// SHA-256(salt ‖ element).
    std::array<uint8_t, 32> Hash(std::span<const uint8_t> element) const noexcept;
    std::array<uint8_t, 32> HashOutPoint(const OutPoint& outpoint) const noexcept;
    std::array<uint8_t, 32> HashCoin(const OutPoint& outpoint, const Coin& coin) const;
    /// The element of `mode` for the coin at `outpoint`, hashed.
    std::array<uint8_t, 32> HashElement(AggregateMode mode, const OutPoint& outpoint, const Coin& coin) const
    {
        return mode == AggregateMode::Coins ? HashCoin(outpoint, coin) : HashOutPoint(outpoint);
    }

private:
    Sha256 m_salted;
};

} // namespace ibdkit::swiftsync

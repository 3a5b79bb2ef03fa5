// SwiftSync's salted hash aggregate (BIP 457): the salt, the 256-bit sum, the elements.
#include <ibdkit/swiftsync/aggregate.h>

#include <ibdkit/encoding/endian.h>
#include <ibdkit/encoding/serialize.h>

#include "memory/cleanse.h"

#include <sys/random.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>

namespace ibdkit::swiftsync {

// ---- Salt ------------------------------------------------------------------------------------

Salt Salt::Random()
{
    Salt s;
    std::size_t got = 0;
    while (got < SIZE) {
        const ssize_t n = ::getrandom(s.m_bytes.data() + got, SIZE - got, 0);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) throw std::runtime_error("getrandom failed: no random bytes for the SwiftSync salt");
        got += std::size_t(n);
    }
    return s;
}

Salt Salt::FromBytes(std::span<const uint8_t, SIZE> bytes) noexcept
{
    Salt s;
    std::memcpy(s.m_bytes.data(), bytes.data(), SIZE);
    return s;
}

void Salt::CopyForWorker(std::span<uint8_t, SIZE> out) const noexcept
{
    std::memcpy(out.data(), m_bytes.data(), SIZE);
}

Salt::Salt(const Salt& other) noexcept : m_bytes(other.m_bytes) {}

Salt& Salt::operator=(const Salt& other) noexcept
{
    m_bytes = other.m_bytes;
    return *this;
}

Salt::~Salt() { CleanseSecret(m_bytes.data(), m_bytes.size()); }

// ---- Aggregate -------------------------------------------------------------------------------

namespace {

std::array<uint64_t, 4> LimbsOf(std::span<const uint8_t, 32> digest) noexcept
{
    return {LoadLE<uint64_t>(digest.data()), LoadLE<uint64_t>(digest.data() + 8), LoadLE<uint64_t>(digest.data() + 16),
            LoadLE<uint64_t>(digest.data() + 24)};
}

// a += b mod 2^256, the carry running through every limb.
void AddLimbs(std::array<uint64_t, 4>& a, const std::array<uint64_t, 4>& b) noexcept
{
    uint64_t carry = 0;
    for (std::size_t i = 0; i < 4; ++i) {
        const uint64_t s = a[i] + b[i];
        const uint64_t c1 = s < a[i];
        a[i] = s + carry;
        carry = c1 | uint64_t(a[i] < s);
    }
}

// a -= b mod 2^256, the borrow running through every limb.
void SubLimbs(std::array<uint64_t, 4>& a, const std::array<uint64_t, 4>& b) noexcept
{
    uint64_t borrow = 0;
    for (std::size_t i = 0; i < 4; ++i) {
        const uint64_t d = a[i] - b[i];
        const uint64_t b1 = a[i] < b[i];
        a[i] = d - borrow;
        borrow = b1 | uint64_t(d < borrow);
    }
}

} // namespace

void Aggregate::Add(std::span<const uint8_t, 32> digest) noexcept { AddLimbs(m_limbs, LimbsOf(digest)); }
void Aggregate::Sub(std::span<const uint8_t, 32> digest) noexcept { SubLimbs(m_limbs, LimbsOf(digest)); }

Aggregate& Aggregate::operator+=(const Aggregate& o) noexcept
{
    AddLimbs(m_limbs, o.m_limbs);
    return *this;
}

Aggregate& Aggregate::operator-=(const Aggregate& o) noexcept
{
    SubLimbs(m_limbs, o.m_limbs);
    return *this;
}

std::array<uint8_t, 32> Aggregate::ToBytes() const noexcept
{
    std::array<uint8_t, 32> out;
    for (std::size_t i = 0; i < 4; ++i) StoreLE<uint64_t>(out.data() + 8 * i, m_limbs[i]);
    return out;
}

Aggregate Aggregate::FromBytes(std::span<const uint8_t, 32> bytes) noexcept
{
    Aggregate a;
    a.m_limbs = LimbsOf(bytes);
    return a;
}

// ---- modes -----------------------------------------------------------------------------------

static_assert(std::size_t(AggregateMode::Coins) == 0 && std::size_t(AggregateMode::OutPoints) == 1,
              "AGGREGATE_MODE_NAMES is indexed by AggregateMode");

std::string_view AggregateModeName(AggregateMode mode) noexcept
{
    return AGGREGATE_MODE_NAMES[mode == AggregateMode::Coins ? 0 : 1];
}

std::optional<AggregateMode> ParseAggregateMode(std::string_view name) noexcept
{
    for (std::size_t i = 0; i < AGGREGATE_MODE_NAMES.size(); ++i) {
        if (AGGREGATE_MODE_NAMES[i] == name) return AggregateMode(i);
    }
    return std::nullopt;
}

// ---- elements --------------------------------------------------------------------------------

namespace {

// Appends to a byte vector (a WriteStream for CompactSize).
struct VectorSink {
    std::vector<uint8_t>& out;
    void write(std::span<const std::byte> b)
    {
        const auto* p = reinterpret_cast<const uint8_t*>(b.data());
        out.insert(out.end(), p, p + b.size());
    }
};

} // namespace

std::vector<uint8_t> CoinElement(const OutPoint& outpoint, const Coin& coin)
{
    const Script& script = coin.out.script_pubkey;
    std::vector<uint8_t> out;
    out.reserve(4 + 9 + script.size() + 8 + 36);
    uint8_t buf[8];
    // BIP 455's height-and-coinbase code, as a 32-bit little-endian integer.
    WriteLE32(buf, (coin.height << 1) | uint32_t(coin.coinbase));
    out.insert(out.end(), buf, buf + 4);
    VectorSink sink{out};
    WriteCompactSize(sink, script.size());
    out.insert(out.end(), script.begin(), script.end());
    WriteLE64(buf, uint64_t(coin.out.value));
    out.insert(out.end(), buf, buf + 8);
    const auto op = OutPointElement(outpoint);
    out.insert(out.end(), op.begin(), op.end());
    return out;
}

std::array<uint8_t, 36> OutPointElement(const OutPoint& outpoint) noexcept
{
    std::array<uint8_t, 36> out;
    std::memcpy(out.data(), outpoint.hash.data(), 32);
    WriteLE32(out.data() + 32, outpoint.n);
    return out;
}

// ---- SaltedHasher ----------------------------------------------------------------------------

SaltedHasher::SaltedHasher(const Salt& salt) noexcept { m_salted.Write(salt.m_bytes.data(), Salt::SIZE); }

SaltedHasher::~SaltedHasher() { CleanseSecret(&m_salted, sizeof(m_salted)); }

std::array<uint8_t, 32> SaltedHasher::Hash(std::span<const uint8_t> element) const noexcept
{
    Sha256 h = m_salted;
    h.Write(element);
    std::array<uint8_t, 32> out;
    h.Finalize(out.data());
    CleanseSecret(&h, sizeof(h));
    return out;
}

std::array<uint8_t, 32> SaltedHasher::HashOutPoint(const OutPoint& outpoint) const noexcept
{
    const auto e = OutPointElement(outpoint);
    return Hash(e);
}

std::array<uint8_t, 32> SaltedHasher::HashCoin(const OutPoint& outpoint, const Coin& coin) const
{
    // CoinElement's bytes, written piece by piece: no allocation per element.
    const Script& script = coin.out.script_pubkey;
    uint8_t head[4 + 9];
    WriteLE32(head, (coin.height << 1) | uint32_t(coin.coinbase));
    std::size_t n = 4;
    const uint64_t len = script.size();
    if (len < 0xfd) {
        head[n++] = uint8_t(len);
    } else if (len <= 0xffff) {
        head[n++] = 0xfd;
        WriteLE16(head + n, uint16_t(len));
        n += 2;
    } else {
        head[n++] = 0xfe;
        WriteLE32(head + n, uint32_t(len));
        n += 4;
    }
    uint8_t tail[8 + 36];
    WriteLE64(tail, uint64_t(coin.out.value));
    std::memcpy(tail + 8, outpoint.hash.data(), 32);
    WriteLE32(tail + 40, outpoint.n);
    Sha256 h = m_salted;
    h.Write(head, n).Write(script.data(), script.size()).Write(tail, sizeof tail);
    std::array<uint8_t, 32> out;
    h.Finalize(out.data());
    CleanseSecret(&h, sizeof(h));
    return out;
}

} // namespace ibdkit::swiftsync

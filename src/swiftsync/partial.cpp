// A range's Partial as bytes and its unspent coins as sorted runs (swiftsync/partial.h).
#include <ibdkit/swiftsync/partial.h>

#include <ibdkit/coins/coins_db.h>
#include <ibdkit/encoding/serialize.h>
#include <ibdkit/primitives/amount.h>

#include "stream/streams.h"

#include <algorithm>
#include <cassert>
#include <cstring>
#include <queue>
#include <string>

namespace ibdkit::swiftsync {

namespace {

bool Printable(std::string_view s) noexcept
{
    return std::all_of(s.begin(), s.end(), [](char c) { return c >= 0x20 && c <= 0x7e; });
}

/// The magic, then a version byte that must be one of `versions`; returns it.
template <std::size_t N>
uint8_t ReadMagic(SpanReader& r, const std::array<uint8_t, N>& magic, std::initializer_list<uint8_t> versions, const char* what)
{
    std::array<uint8_t, N> got{};
    r >> got;
    if (got != magic) throw DecodeError(Errc::BadMagic, (std::string("not a SwiftSync ") + what).c_str());
    uint8_t v = 0;
    r >> v;
    if (std::find(versions.begin(), versions.end(), v) == versions.end()) {
        throw DecodeError(Errc::InvalidValue, (std::string("unknown ") + what + " version " + std::to_string(v)).c_str());
    }
    return v;
}

AggregateMode ReadPartialVersion(SpanReader& r)
{
    const uint8_t v = ReadMagic(r, PARTIAL_MAGIC, {PARTIAL_VERSION, PARTIAL_VERSION_COINS}, "partial");
    return v == PARTIAL_VERSION_COINS ? AggregateMode::Coins : AggregateMode::OutPoints;
}

/// A coins-mode partial's tail: script-checked inputs, then the BIP30 coinbases (one a block at
/// most, heights increasing within the range; read one by one, never reserved from the count).
void ReadCoinsModeFields(SpanReader& r, Partial& p)
{
    r >> p.script_checked_inputs;
    if (p.script_checked_inputs > p.counts.inputs) throw DecodeError(Errc::InvalidValue, "more script-checked inputs than inputs");
    const uint64_t n = ReadCompactSize(r, false);
    if (n > p.counts.blocks) throw DecodeError(Errc::InvalidValue, "more BIP30 coinbases than blocks");
    for (uint64_t i = 0; i < n; ++i) {
        uint32_t height = 0;
        Txid txid;
        r >> height >> txid;
        const uint32_t floor = p.bip30_coinbases.empty() ? p.from : p.bip30_coinbases.back().second + 1;
        if (height < floor || height > p.to) throw DecodeError(Errc::InvalidValue, "BIP30 coinbase heights not increasing within the range");
        p.bip30_coinbases.emplace_back(txid, height);
    }
}

std::pair<uint32_t, uint32_t> ReadRange(SpanReader& r)
{
    uint32_t first = 0, last = 0;
    r >> first >> last;
    if (first < 1 || first > last) {
        throw DecodeError(Errc::InvalidValue, ("range " + std::to_string(first) + ".." + std::to_string(last) + " is not 1 <= first <= last").c_str());
    }
    return {first, last};
}

Aggregate ReadAggregate(SpanReader& r)
{
    std::array<uint8_t, 32> b{};
    r >> b;
    return Aggregate::FromBytes(b);
}

/// A coin's chainstate key in place: 'C' | txid | VARINT(n), at most 38 bytes, no allocation.
struct KeyBytes {
    static constexpr std::size_t MAX = 1 + 32 + 5;
    std::array<uint8_t, MAX> bytes{};
    uint8_t size{0};

    KeyBytes() = default;
    explicit KeyBytes(const OutPoint& op) { Serialize(*this, CoinKey{op}); }
    /// The stream interface Serialize writes through.
    void write(std::span<const std::byte> src)
    {
        assert(size + src.size() <= MAX);
        std::memcpy(bytes.data() + size, src.data(), src.size());
        size = uint8_t(size + src.size());
    }
    std::span<const uint8_t> span() const noexcept { return {bytes.data(), size}; }
    friend bool operator<(const KeyBytes& a, const KeyBytes& b) noexcept
    {
        return std::lexicographical_compare(a.bytes.begin(), a.bytes.begin() + a.size, b.bytes.begin(), b.bytes.begin() + b.size);
    }
    friend bool operator==(const KeyBytes& a, const KeyBytes& b) noexcept
    {
        return a.size == b.size && std::equal(a.bytes.begin(), a.bytes.begin() + a.size, b.bytes.begin());
    }
};

} // namespace

std::vector<uint8_t> SerializePartial(const Partial& p)
{
    assert(p.from >= 1 && p.from <= p.to);
    std::vector<uint8_t> out;
    VectorWriter w(out, 0);
    const bool coins = p.mode == AggregateMode::Coins;
    assert(coins || (p.script_checked_inputs == 0 && p.bip30_coinbases.empty()));
    w << PARTIAL_MAGIC << (coins ? PARTIAL_VERSION_COINS : PARTIAL_VERSION) << p.from << p.to << p.agg_in.ToBytes() << p.agg_out.ToBytes();
    const RangeCounts& c = p.counts;
    w << c.blocks << c.transactions << c.inputs << c.outputs << c.unspent << c.unspendable << p.supply;
    if (!p.failure) {
        w << uint8_t{0};
    } else {
        assert(p.failure->reason.size() <= MAX_FAILURE_REASON && Printable(p.failure->reason));
        w << uint8_t{1} << p.failure->height << p.failure->hash;
        WriteCompactSize(w, p.failure->reason.size());
        w.write(std::as_bytes(std::span(p.failure->reason)));
    }
    if (!coins) return out;
    w << p.script_checked_inputs;
    WriteCompactSize(w, p.bip30_coinbases.size());
    for (const auto& [txid, height] : p.bip30_coinbases) w << height << txid;
    return out;
}

Result<Partial> DeserializePartial(std::span<const uint8_t> bytes)
{
    return CatchDecode([&] {
        SpanReader r(bytes);
        Partial p;
        p.mode = ReadPartialVersion(r);
        std::tie(p.from, p.to) = ReadRange(r);
        p.agg_in = ReadAggregate(r);
        p.agg_out = ReadAggregate(r);
        RangeCounts& c = p.counts;
        r >> c.blocks >> c.transactions >> c.inputs >> c.outputs >> c.unspent >> c.unspendable >> p.supply;
        if (c.unspent > c.outputs) throw DecodeError(Errc::InvalidValue, "more unspent outputs than outputs");
        if (c.blocks > uint64_t(p.to - p.from) + 1) throw DecodeError(Errc::InvalidValue, "more blocks than the range holds");
        uint8_t has_failure = 0;
        r >> has_failure;
        if (has_failure > 1) throw DecodeError(Errc::InvalidValue, "failure flag other than 0 or 1");
        if (has_failure) {
            BlockFailure f;
            r >> f.height >> f.hash;
            if (f.height < p.from || f.height > p.to) throw DecodeError(Errc::InvalidValue, "failure outside the range");
            const uint64_t n = ReadCompactSize(r);
            if (n > MAX_FAILURE_REASON) throw DecodeError(Errc::SizeTooLarge, "failure reason too long");
            const auto text = r.ReadSpan(std::size_t(n));
            f.reason.assign(reinterpret_cast<const char*>(text.data()), text.size());
            if (!Printable(f.reason)) throw DecodeError(Errc::InvalidValue, "failure reason not printable");
            p.failure = std::move(f);
        }
        if (p.mode == AggregateMode::Coins) ReadCoinsModeFields(r, p);
        if (!r.empty()) throw DecodeError(Errc::TrailingData, "bytes after the partial");
        return p;
    });
}

Result<std::vector<uint8_t>> SerializeUnspentRun(uint32_t first, uint32_t last, std::span<const std::pair<OutPoint, Coin>> coins)
{
    assert(first >= 1 && first <= last);
    struct Keyed {
        KeyBytes key;
        const Coin* coin;
    };
    std::vector<Keyed> keyed;
    keyed.reserve(coins.size());
    for (const auto& [op, coin] : coins) keyed.push_back({KeyBytes(op), &coin});
    std::sort(keyed.begin(), keyed.end(), [](const Keyed& a, const Keyed& b) { return a.key < b.key; });
    for (std::size_t i = 1; i < keyed.size(); ++i) {
        if (keyed[i].key == keyed[i - 1].key) {
            return Error{Errc::InvalidValue, "two hinted-unspent coins with one outpoint (a repeated transaction id): no UTXO set holds both"};
        }
    }
    std::vector<uint8_t> out;
    VectorWriter w(out, 0);
    w << UNSPENT_RUN_MAGIC << UNSPENT_RUN_VERSION << first << last << uint64_t(keyed.size());
    for (const Keyed& k : keyed) {
        w.write(std::as_bytes(k.key.span()));
        w << *k.coin;
    }
    return out;
}

Result<UnspentRunReader> UnspentRunReader::Open(std::span<const uint8_t> bytes)
{
    return CatchDecode([&] {
        SpanReader r(bytes);
        ReadMagic(r, UNSPENT_RUN_MAGIC, {UNSPENT_RUN_VERSION}, "unspent run");
        UnspentRunReader u;
        std::tie(u.m_first, u.m_last) = ReadRange(r);
        r >> u.m_count;
        u.m_rest = bytes.subspan(bytes.size() - r.size());
        return u;
    });
}

Result<bool> UnspentRunReader::Next(OutPoint& outpoint, Coin& coin)
{
    return CatchDecode([&] {
        SpanReader r(m_rest);
        if (m_read == m_count) {
            if (!r.empty()) throw DecodeError(Errc::TrailingData, "bytes after the run's last record");
            return false;
        }
        CoinKey key;
        r >> key >> coin;
        const std::size_t used = m_rest.size() - r.size();
        // The key must be the canonical form (a VARINT has one), so the merge can compare bytes.
        const KeyBytes canonical(key.outpoint);
        if (used < canonical.size) throw DecodeError(Errc::InvalidValue, "non-canonical coin key");
        const std::span<const uint8_t> key_bytes = m_rest.first(std::min<std::size_t>(canonical.size, used));
        if (!std::equal(key_bytes.begin(), key_bytes.end(), canonical.bytes.begin(), canonical.bytes.begin() + canonical.size)) {
            throw DecodeError(Errc::InvalidValue, "non-canonical coin key");
        }
        if (m_read > 0 && !std::lexicographical_compare(m_key.begin(), m_key.end(), key_bytes.begin(), key_bytes.end())) {
            throw DecodeError(Errc::InvalidValue, "run records not in strictly increasing key order");
        }
        // So is the value (a script or amount has one compressed form): equal sets give equal runs.
        const std::span<const uint8_t> value_bytes = m_rest.subspan(canonical.size, used - canonical.size);
        m_value.clear();
        VectorWriter vw(m_value, 0);
        vw << coin;
        if (!std::equal(value_bytes.begin(), value_bytes.end(), m_value.begin(), m_value.end())) {
            throw DecodeError(Errc::InvalidValue, "non-canonical coin value");
        }
        if (coin.height < m_first || coin.height > m_last) throw DecodeError(Errc::InvalidValue, "coin height outside the run's range");
        if (!MoneyRange(coin.out.value)) throw DecodeError(Errc::InvalidValue, "coin amount outside MoneyRange");
        m_key.assign(key_bytes.begin(), key_bytes.end());
        m_rest = m_rest.subspan(used);
        outpoint = key.outpoint;
        ++m_read;
        return true;
    });
}

struct UnspentRunMerger::Impl {
    struct Head {
        std::size_t run;
        OutPoint outpoint;
        Coin coin;
    };
    std::vector<UnspentRunReader> readers;
    std::vector<Head> heads; ///< a heap of the runs' next records, smallest key on top
    std::vector<uint8_t> last_key;
    bool started{false};

    bool Greater(const Head& a, const Head& b) const
    {
        const auto ka = readers[a.run].key(), kb = readers[b.run].key();
        return std::lexicographical_compare(kb.begin(), kb.end(), ka.begin(), ka.end());
    }
    std::optional<Error> Advance(std::size_t run)
    {
        Head h{run, {}, {}};
        auto more = readers[run].Next(h.outpoint, h.coin);
        if (!more) return Error{more.error().code, "run " + std::to_string(run) + ": " + more.error().message};
        if (!*more) return std::nullopt;
        heads.push_back(std::move(h));
        std::push_heap(heads.begin(), heads.end(), [this](const Head& a, const Head& b) { return Greater(a, b); });
        return std::nullopt;
    }
};

UnspentRunMerger::UnspentRunMerger() : m_impl(std::make_unique<Impl>()) {}
UnspentRunMerger::~UnspentRunMerger() = default;

Result<std::unique_ptr<UnspentRunMerger>> UnspentRunMerger::Open(std::span<const std::span<const uint8_t>> runs)
{
    std::unique_ptr<UnspentRunMerger> m(new UnspentRunMerger());
    for (std::size_t i = 0; i < runs.size(); ++i) {
        auto r = UnspentRunReader::Open(runs[i]);
        if (!r) return Error{r.error().code, "run " + std::to_string(i) + ": " + r.error().message};
        m->m_impl->readers.push_back(std::move(*r));
    }
    return m;
}

Result<bool> UnspentRunMerger::Next(OutPoint& outpoint, Coin& coin)
{
    Impl& s = *m_impl;
    if (!s.started) {
        s.started = true;
        for (std::size_t i = 0; i < s.readers.size(); ++i) {
            if (auto e = s.Advance(i)) return *e;
        }
    }
    if (s.heads.empty()) return false;
    const auto greater = [&s](const Impl::Head& a, const Impl::Head& b) { return s.Greater(a, b); };
    std::pop_heap(s.heads.begin(), s.heads.end(), greater);
    Impl::Head top = std::move(s.heads.back());
    s.heads.pop_back();
    const auto key = s.readers[top.run].key();
    if (!s.last_key.empty() && std::equal(key.begin(), key.end(), s.last_key.begin(), s.last_key.end())) {
        return Error{Errc::InvalidValue, "an outpoint in two runs: the runs' ranges overlap"};
    }
    s.last_key.assign(key.begin(), key.end());
    outpoint = top.outpoint;
    coin = std::move(top.coin);
    if (auto e = s.Advance(top.run)) return *e;
    return true;
}

} // namespace ibdkit::swiftsync

// The messages of BIP 434 (`feature`) and BIP 455 (`getbspent`, `bspent`, and its reconstructable
// scripts), declared in wire/protocol.h with their layouts. A `bspent` comes from a peer whose
// coins are untrusted until SwiftSync's aggregate balances, so its decoder assumes the worst: every
// count is checked against the bytes that could hold it before anything is reserved, and the
// coins' vector grows only as their bytes are really read.
#include "wire/protocol.h"

#include "stream/streams.h"
#include "wire/message.h"

#include <algorithm>
#include <array>
#include <cstring>

namespace ibdkit {

static_assert(MAX_BSPENT_COINS == MAX_PROTOCOL_MESSAGE_LENGTH / MIN_BSPENT_COIN_SIZE);

namespace {

using Writer = VectorWriter<std::vector<uint8_t>>;

// Opcodes of the reconstructable forms' expansions.
constexpr uint8_t OP_0 = 0x00;
constexpr uint8_t OP_1 = 0x51;
constexpr uint8_t OP_DUP = 0x76;
constexpr uint8_t OP_EQUAL = 0x87;
constexpr uint8_t OP_EQUALVERIFY = 0x88;
constexpr uint8_t OP_HASH160 = 0xa9;
constexpr uint8_t OP_CHECKSIG = 0xac;

// BIP 455's prefixes.
enum ScriptForm : uint8_t {
    UNKNOWN = 0x00,
    P2PKH = 0x01,
    P2PK_EVEN = 0x02,
    P2PK_ODD = 0x03,
    P2PK_FULL = 0x04,
    P2SH = 0x05,
    P2WSH = 0x06,
    P2WPKH = 0x07,
    P2TR = 0x08,
};

// One row of the table: the bytes before the payload, the payload's length, the bytes after it.
// For P2PK the key's first byte is both part of the expansion and the prefix itself.
struct Shape {
    std::array<uint8_t, 3> head;
    uint8_t head_size;
    uint8_t payload;
    uint8_t tail; // 0: none
};

Shape ShapeOf(ScriptForm form)
{
    switch (form) {
    case P2PKH: return {{OP_DUP, OP_HASH160, 20}, 3, 20, OP_EQUALVERIFY}; // then OP_CHECKSIG
    case P2PK_EVEN: return {{33, 0x02, 0}, 2, 32, OP_CHECKSIG};
    case P2PK_ODD: return {{33, 0x03, 0}, 2, 32, OP_CHECKSIG};
    case P2PK_FULL: return {{65, 0x04, 0}, 2, 64, OP_CHECKSIG};
    case P2SH: return {{OP_HASH160, 20, 0}, 2, 20, OP_EQUAL};
    case P2WSH: return {{OP_0, 32, 0}, 2, 32, 0};
    case P2WPKH: return {{OP_0, 20, 0}, 2, 20, 0};
    case P2TR: return {{OP_1, 32, 0}, 2, 32, 0};
    case UNKNOWN: break;
    }
    return {{}, 0, 0, 0};
}

std::size_t ExpandedSize(ScriptForm form)
{
    const Shape s = ShapeOf(form);
    return std::size_t(s.head_size) + s.payload + (s.tail != 0 ? 1 : 0) + (form == P2PKH ? 1 : 0);
}

bool Matches(std::span<const uint8_t> script, ScriptForm form)
{
    const Shape s = ShapeOf(form);
    if (script.size() != ExpandedSize(form)) return false;
    if (!std::equal(s.head.begin(), s.head.begin() + s.head_size, script.begin())) return false;
    const std::size_t after = std::size_t(s.head_size) + s.payload;
    if (s.tail != 0 && script[after] != s.tail) return false;
    return form != P2PKH || script[after + 1] == OP_CHECKSIG;
}

constexpr std::array<ScriptForm, 8> KNOWN_FORMS{P2PKH, P2PK_EVEN, P2PK_ODD, P2PK_FULL, P2SH, P2WSH, P2WPKH, P2TR};

Script ReadReconstructableScript(SpanReader& r)
{
    uint8_t prefix = 0;
    Unserialize(r, prefix);
    if (prefix == UNKNOWN) {
        // The length is bounded by the bytes present: ReadSpan refuses more before any copy.
        const uint64_t n = ReadCompactSize(r);
        const auto bytes = r.ReadSpan(std::size_t(n));
        return Script(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size());
    }
    if (prefix > P2TR) throw DecodeError(Errc::InvalidValue, "bspent: unknown reconstructable script prefix");
    const auto form = ScriptForm(prefix);
    const Shape s = ShapeOf(form);
    const auto payload = r.ReadSpan(s.payload);
    std::array<uint8_t, 67> buf{}; // the longest expansion: uncompressed P2PK
    std::size_t n = 0;
    for (uint8_t i = 0; i < s.head_size; ++i) buf[n++] = s.head[i];
    std::memcpy(buf.data() + n, payload.data(), payload.size());
    n += payload.size();
    if (s.tail != 0) buf[n++] = s.tail;
    if (form == P2PKH) buf[n++] = OP_CHECKSIG;
    return Script(buf.data(), n);
}

void WriteReconstructableScript(Writer& w, std::span<const uint8_t> script)
{
    for (const ScriptForm form : KNOWN_FORMS) {
        if (!Matches(script, form)) continue;
        const Shape s = ShapeOf(form);
        Serialize(w, uint8_t(form));
        w.write(MakeByteSpan(script.subspan(s.head_size, s.payload)));
        return;
    }
    Serialize(w, uint8_t(UNKNOWN));
    WriteCompactSize(w, script.size());
    w.write(MakeByteSpan(script));
}

void WriteCoin(Writer& w, const BspentCoin& c)
{
    Serialize(w, c.input_index);
    Serialize(w, uint32_t(c.height << 1 | uint32_t(c.coinbase)));
    WriteReconstructableScript(w, c.script.span());
    WriteCompactSize(w, c.compressed_amount);
}

BspentCoin ReadCoin(SpanReader& r)
{
    BspentCoin c;
    Unserialize(r, c.input_index);
    uint32_t code = 0;
    Unserialize(r, code);
    c.height = code >> 1;
    c.coinbase = (code & 1) != 0;
    c.script = ReadReconstructableScript(r);
    // Compressed amounts exceed MAX_SIZE (which bounds lengths, not values): no range check.
    c.compressed_amount = ReadCompactSize(r, false);
    return c;
}

template <typename Fn>
auto DecodeExactly(std::span<const uint8_t> payload, const char* trailing, Fn&& fn)
    -> Result<decltype(fn(std::declval<SpanReader&>()))>
{
    return CatchDecode([&] {
        SpanReader r(payload);
        auto m = fn(r);
        if (!r.empty()) throw DecodeError(Errc::TrailingData, trailing);
        return m;
    });
}

} // namespace

void AppendReconstructableScript(std::vector<uint8_t>& out, std::span<const uint8_t> script)
{
    Writer w(out, out.size());
    WriteReconstructableScript(w, script);
}

Result<Script> DecodeReconstructableScript(std::span<const uint8_t> in, std::size_t* used)
{
    return CatchDecode([&] {
        SpanReader r(in);
        Script s = ReadReconstructableScript(r);
        if (used) *used = in.size() - r.size();
        return s;
    });
}

std::vector<uint8_t> EncodeFeature(const FeatureMessage& m)
{
    std::vector<uint8_t> out;
    Writer w(out, 0);
    Serialize(w, m.id);
    Serialize(w, m.data);
    return out;
}

Result<FeatureMessage> DecodeFeature(std::span<const uint8_t> payload)
{
    return DecodeExactly(payload, "feature: bytes after featuredata", [](SpanReader& r) {
        FeatureMessage m;
        const uint64_t id_size = ReadCompactSize(r);
        if (id_size > MAX_FEATURE_ID_LENGTH) throw DecodeError(Errc::SizeTooLarge, "feature: featureid longer than 80 bytes");
        if (id_size < MIN_FEATURE_ID_LENGTH) throw DecodeError(Errc::InvalidValue, "feature: featureid shorter than 4 bytes");
        const auto id = r.ReadSpan(std::size_t(id_size));
        m.id.assign(reinterpret_cast<const char*>(id.data()), id.size());
        const uint64_t data_size = ReadCompactSize(r);
        if (data_size > MAX_FEATURE_DATA_LENGTH) throw DecodeError(Errc::SizeTooLarge, "feature: featuredata longer than 512 bytes");
        const auto data = r.ReadSpan(std::size_t(data_size));
        m.data.assign(reinterpret_cast<const uint8_t*>(data.data()), reinterpret_cast<const uint8_t*>(data.data()) + data.size());
        return m;
    });
}

std::vector<uint8_t> EncodeGetBspent(const GetBspentMessage& m)
{
    std::vector<uint8_t> out;
    Writer w(out, 0);
    Serialize(w, m.block_hash);
    Serialize(w, m.cutoff);
    return out;
}

Result<GetBspentMessage> DecodeGetBspent(std::span<const uint8_t> payload)
{
    return DecodeExactly(payload, "getbspent: bytes after cutoff", [](SpanReader& r) {
        GetBspentMessage m;
        Unserialize(r, m.block_hash);
        Unserialize(r, m.cutoff);
        return m;
    });
}

std::vector<uint8_t> EncodeBspent(const BspentMessage& m)
{
    std::vector<uint8_t> out;
    out.reserve(32 + 9 + m.coins.size() * 36);
    Writer w(out, 0);
    Serialize(w, m.block_hash);
    WriteCompactSize(w, m.coins.size());
    for (const BspentCoin& c : m.coins) WriteCoin(w, c);
    return out;
}

Result<BspentMessage> DecodeBspent(std::span<const uint8_t> payload)
{
    if (payload.size() > MAX_PROTOCOL_MESSAGE_LENGTH) {
        return Error{Errc::OversizedMessage, "bspent: payload larger than 4,000,000 bytes"};
    }
    return DecodeExactly(payload, "bspent: bytes after the last coin", [](SpanReader& r) {
        BspentMessage m;
        Unserialize(r, m.block_hash);
        const uint64_t n = ReadCompactSize(r, false);
        if (n > MAX_BSPENT_COINS) throw DecodeError(Errc::SizeTooLarge, "bspent: more coins than a message can hold");
        if (n * MIN_BSPENT_COIN_SIZE > r.size()) throw DecodeError(Errc::EndOfData, "bspent: shorter than its count");
        UnserializeVectorWith(r, m.coins, n, [&](SpanReader& s, BspentCoin& c) {
            c = ReadCoin(s);
            const std::size_t i = m.coins.size() - 1;
            if (i > 0 && m.coins[i - 1].input_index >= c.input_index) {
                throw DecodeError(Errc::InvalidValue, "bspent: input indexes not strictly increasing");
            }
        });
        return m;
    });
}

} // namespace ibdkit

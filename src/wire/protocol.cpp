#include "wire/protocol.h"

#include "stream/streams.h"
#include "wire/message.h"

#include <cstdio>

namespace ibdkit {

namespace {

using Writer = VectorWriter<std::vector<uint8_t>>;

void WriteAddress(Writer& w, const VersionAddress& a)
{
    Serialize(w, a.services);
    Serialize(w, a.ip);
    const std::array<uint8_t, 2> port{uint8_t(a.port >> 8), uint8_t(a.port)};
    Serialize(w, port);
}

VersionAddress ReadAddress(SpanReader& r)
{
    VersionAddress a;
    Unserialize(r, a.services);
    Unserialize(r, a.ip);
    std::array<uint8_t, 2> port{};
    Unserialize(r, port);
    a.port = uint16_t(port[0] << 8 | port[1]);
    return a;
}

// A CompactSize count, refused above `limit` before anything is allocated for it.
uint64_t ReadCount(SpanReader& r, std::size_t limit, const char* what)
{
    const uint64_t n = ReadCompactSize(r);
    if (n > limit) {
        throw DecodeError(Errc::SizeTooLarge, what);
    }
    return n;
}

std::string ReadLimitedString(SpanReader& r, std::size_t limit, const char* what)
{
    const uint64_t n = ReadCount(r, limit, what);
    auto bytes = r.ReadSpan(std::size_t(n));
    return std::string(reinterpret_cast<const char*>(bytes.data()), bytes.size());
}

template <typename Fn>
auto Decode(std::span<const uint8_t> payload, Fn&& fn) -> Result<decltype(fn(std::declval<SpanReader&>()))>
{
    return CatchDecode([&] {
        SpanReader r(payload);
        return fn(r);
    });
}

const char* RejectCodeName(uint8_t code)
{
    switch (code) {
    case 0x01: return "malformed";
    case 0x10: return "invalid";
    case 0x11: return "obsolete";
    case 0x12: return "duplicate";
    case 0x40: return "nonstandard";
    case 0x41: return "dust";
    case 0x42: return "insufficientfee";
    case 0x43: return "checkpoint";
    }
    return "unknown";
}

} // namespace

VersionAddress VersionAddress::FromIPv4(std::array<uint8_t, 4> v4, uint16_t port, uint64_t services) noexcept
{
    VersionAddress a;
    a.services = services;
    a.ip[10] = 0xff;
    a.ip[11] = 0xff;
    for (int i = 0; i < 4; ++i) a.ip[std::size_t(12 + i)] = v4[std::size_t(i)];
    a.port = port;
    return a;
}

std::string SanitizePeerText(std::string_view text)
{
    static constexpr std::string_view SAFE_CHARS = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ01234567890 .,;-_/:?@()";
    std::string out;
    for (const char c : text) {
        if (SAFE_CHARS.find(c) != std::string_view::npos) out.push_back(c);
    }
    return out;
}

std::string RejectMessage::ToString() const
{
    char code_text[48];
    std::snprintf(code_text, sizeof code_text, "%s 0x%02x", RejectCodeName(code), unsigned(code));
    std::string s = "reject of '" + SanitizePeerText(message) + "' (" + code_text + "): " + SanitizePeerText(reason);
    if (hash) s += " [" + hash->ToHex() + "]";
    return s;
}

std::vector<uint8_t> EncodeVersion(const VersionMessage& m)
{
    std::vector<uint8_t> out;
    Writer w(out, 0);
    Serialize(w, m.version);
    Serialize(w, m.services);
    Serialize(w, m.time);
    WriteAddress(w, m.addr_recv);
    WriteAddress(w, m.addr_from);
    Serialize(w, m.nonce);
    Serialize(w, m.user_agent);
    Serialize(w, m.start_height);
    Serialize(w, uint8_t(m.relay ? 1 : 0));
    return out;
}

std::vector<uint8_t> EncodePing(uint64_t nonce)
{
    std::vector<uint8_t> out;
    Writer w(out, 0);
    Serialize(w, nonce);
    return out;
}

std::vector<uint8_t> EncodeLocator(const LocatorMessage& m)
{
    std::vector<uint8_t> out;
    Writer w(out, 0);
    Serialize(w, m.version);
    Serialize(w, m.locator);
    Serialize(w, m.hash_stop);
    return out;
}

std::vector<uint8_t> EncodeHeaders(std::span<const BlockHeader> headers)
{
    std::vector<uint8_t> out;
    out.reserve(3 + headers.size() * 81);
    Writer w(out, 0);
    WriteCompactSize(w, headers.size());
    for (const auto& h : headers) {
        Serialize(w, h);
        WriteCompactSize(w, 0);
    }
    return out;
}

std::vector<uint8_t> EncodeInv(std::span<const Inv> invs)
{
    std::vector<uint8_t> out;
    out.reserve(3 + invs.size() * 36);
    Writer w(out, 0);
    WriteCompactSize(w, invs.size());
    for (const auto& i : invs) {
        Serialize(w, i.type);
        Serialize(w, i.hash);
    }
    return out;
}

std::vector<uint8_t> EncodeReject(const RejectMessage& m)
{
    std::vector<uint8_t> out;
    Writer w(out, 0);
    Serialize(w, m.message);
    Serialize(w, m.code);
    Serialize(w, m.reason);
    if (m.hash) Serialize(w, *m.hash);
    return out;
}

std::vector<uint8_t> MakeMessage(const std::array<uint8_t, 4>& magic, std::string_view command, std::span<const uint8_t> payload)
{
    std::vector<uint8_t> out;
    out.reserve(MESSAGE_HEADER_SIZE + payload.size());
    Writer w(out, 0);
    WriteMessage(w, magic, command, payload);
    return out;
}

Result<VersionMessage> DecodeVersion(std::span<const uint8_t> payload)
{
    return Decode(payload, [](SpanReader& r) {
        VersionMessage m;
        Unserialize(r, m.version);
        Unserialize(r, m.services);
        Unserialize(r, m.time);
        m.addr_recv = ReadAddress(r);
        // Core reads each later group only when bytes remain (net_processing.cpp): the payload
        // may end after addr_recv, after the nonce, the user agent or the start height; fields
        // not reached keep their defaults (an empty user agent, height 0, relay true).
        m.user_agent.clear();
        m.relay = true;
        if (!r.empty()) {
            m.addr_from = ReadAddress(r); // read as one unit with the nonce, as Core's ignore(26)
            Unserialize(r, m.nonce);
        }
        if (!r.empty()) m.user_agent = ReadLimitedString(r, MAX_SUBVERSION_LENGTH, "version: user agent longer than 256 bytes");
        if (!r.empty()) Unserialize(r, m.start_height);
        if (!r.empty()) {
            uint8_t relay = 0;
            Unserialize(r, relay);
            m.relay = relay != 0;
        }
        return m; // later fields, if any, are ignored (as Core does)
    });
}

Result<uint64_t> DecodePing(std::span<const uint8_t> payload)
{
    return Decode(payload, [](SpanReader& r) {
        uint64_t nonce = 0;
        Unserialize(r, nonce);
        return nonce; // bytes after the nonce are ignored, as Core does
    });
}

Result<LocatorMessage> DecodeLocator(std::span<const uint8_t> payload)
{
    return Decode(payload, [](SpanReader& r) {
        LocatorMessage m;
        Unserialize(r, m.version);
        const uint64_t n = ReadCount(r, MAX_LOCATOR_SZ, "locator with more than 101 hashes");
        m.locator.resize(std::size_t(n));
        for (auto& h : m.locator) Unserialize(r, h);
        Unserialize(r, m.hash_stop);
        return m; // trailing bytes ignored, as Core does
    });
}

Result<std::vector<BlockHeader>> DecodeHeaders(std::span<const uint8_t> payload)
{
    return Decode(payload, [](SpanReader& r) {
        const uint64_t n = ReadCount(r, MAX_HEADERS_RESULTS, "headers message with more than 2000 headers");
        std::vector<BlockHeader> out;
        out.reserve(std::size_t(n)); // bounded by MAX_HEADERS_RESULTS
        for (uint64_t i = 0; i < n; ++i) {
            BlockHeader h;
            Unserialize(r, h);
            (void)ReadCompactSize(r); // the transaction count: read (range-checked) and ignored, as Core
            out.push_back(h);
        }
        return out; // trailing bytes ignored, as Core does
    });
}

Result<std::vector<Inv>> DecodeInv(std::span<const uint8_t> payload)
{
    return Decode(payload, [](SpanReader& r) {
        const uint64_t n = ReadCount(r, MAX_INV_SZ, "inventory with more than 50000 entries");
        if (r.size() < n * 36) throw DecodeError(Errc::EndOfData, "inventory shorter than its count");
        std::vector<Inv> out;
        out.resize(std::size_t(n));
        for (auto& i : out) {
            Unserialize(r, i.type);
            Unserialize(r, i.hash);
        }
        return out; // trailing bytes ignored, as Core does
    });
}

Result<RejectMessage> DecodeReject(std::span<const uint8_t> payload)
{
    return Decode(payload, [](SpanReader& r) {
        RejectMessage m;
        m.message = ReadLimitedString(r, COMMAND_SIZE, "reject: command longer than 12 bytes");
        Unserialize(r, m.code);
        m.reason = ReadLimitedString(r, 111, "reject: reason longer than 111 bytes");
        if (r.size() >= 32) {
            uint256 h;
            Unserialize(r, h);
            m.hash = h;
        }
        return m;
    });
}

Result<std::vector<AddrEntry>> DecodeAddr(std::span<const uint8_t> payload)
{
    return Decode(payload, [](SpanReader& r) {
        const uint64_t n = ReadCount(r, MAX_ADDR_TO_SEND, "addr message with more than 1000 addresses");
        if (r.size() < n * 30) throw DecodeError(Errc::EndOfData, "addr message shorter than its count");
        std::vector<AddrEntry> out(static_cast<std::size_t>(n));
        for (AddrEntry& a : out) {
            Unserialize(r, a.time);
            a.addr = ReadAddress(r);
        }
        return out; // trailing bytes ignored, as Core does
    });
}

std::vector<uint8_t> EncodeAddr(std::span<const AddrEntry> addrs)
{
    std::vector<uint8_t> out;
    out.reserve(3 + addrs.size() * 30);
    Writer w(out, 0);
    WriteCompactSize(w, addrs.size());
    for (const AddrEntry& a : addrs) {
        Serialize(w, a.time);
        WriteAddress(w, a.addr);
    }
    return out;
}

Result<Block> DecodeBlockMessage(std::span<const uint8_t> payload, std::size_t* used)
{
    return CatchDecode([&] { return UnserializeBlockFrom(payload, used); }); // one block; the rest ignored
}

std::vector<BlockHash> MakeLocator(std::span<const BlockHash> chain, const std::optional<BlockHash>& first)
{
    std::vector<BlockHash> out;
    if (first) out.push_back(*first);
    auto add = [&](const BlockHash& h) {
        if (out.size() < MAX_LOCATOR_SZ && !(first && h == *first)) out.push_back(h);
    };
    if (chain.empty()) return out;
    int64_t h = int64_t(chain.size()) - 1;
    int64_t step = 1;
    for (std::size_t entries = 1; h > 0; ++entries) {
        add(chain[std::size_t(h)]);
        if (entries > 10) step *= 2;
        h -= step;
    }
    add(chain[0]);
    return out;
}

} // namespace ibdkit

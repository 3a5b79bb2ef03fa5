#include <ibdkit/coins/address.h>

#include <ibdkit/crypto/sha256.h>
#include <ibdkit/primitives/script_ops.h>

#include <array>
#include <cstdint>
#include <cstring>
#include <string>

namespace ibdkit {

namespace {

// BIP173 checksum (polymod). One step shifts a 5-bit symbol v in and folds the 5 bits shifted out
// back with the generators. The whole map is linear over GF(2) in the symbols, so the checksum of a
// string is the XOR of each symbol's own contribution, which depends only on the symbol and on how
// many symbols follow it: POLY_TERM[d][v]. Summing table entries has no dependency chain (the
// step-by-step loop has one through every symbol). The initial state 1 is a symbol 1 in front.
constexpr uint32_t PolymodStep(uint32_t c, uint32_t v)
{
    constexpr uint32_t GEN[5] = {0x3b6a57b2, 0x26508e6d, 0x1ea119fa, 0x3d4233dd, 0x2a1462b3};
    const uint32_t top = c >> 25;
    c = ((c & 0x1ffffff) << 5) ^ v;
    for (int i = 0; i < 5; ++i) {
        if (top & (1u << i)) c ^= GEN[i];
    }
    return c;
}
/// Longest string summed: 1 + hrp expansion (9 for "bcrt") + version + 64 data symbols + 6.
constexpr std::size_t MAX_POLY_SYMBOLS = 96;
constexpr auto POLY_TERM = [] {
    std::array<std::array<uint32_t, 32>, MAX_POLY_SYMBOLS> t{};
    for (uint32_t v = 0; v < 32; ++v) {
        uint32_t c = PolymodStep(0, v);
        for (std::size_t d = 0; d < MAX_POLY_SYMBOLS; ++d) {
            t[d][v] = c;
            c = PolymodStep(c, 0);
        }
    }
    return t;
}();

struct NetParams {
    uint8_t p2pkh, p2sh;
    const char* hrp;
    std::size_t hrp_len;
};

const NetParams& Params(AddressNetwork n)
{
    static constexpr NetParams MAIN{0x00, 0x05, "bc", 2};
    static constexpr NetParams TEST{0x6f, 0xc4, "tb", 2};
    static constexpr NetParams REGTEST{0x6f, 0xc4, "bcrt", 4};
    switch (n) {
    case AddressNetwork::Main: return MAIN;
    case AddressNetwork::Test:
    case AddressNetwork::Signet: return TEST;
    case AddressNetwork::Regtest: break;
    }
    return REGTEST;
}

const char* BASE58 = "123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz";

/// Base58Check of payload (version byte + hash, at most 21 bytes here). Works on 32-bit limbs,
/// dividing by 58^5 per pass, instead of Core's byte-at-a-time loop (same output). Writes into
/// out (at most 35 characters for 21 bytes) and returns the length.
std::size_t EncodeBase58Check(const uint8_t* payload, std::size_t len, char* out)
{
    uint8_t data[64];
    std::memcpy(data, payload, len);
    uint8_t h[32];
    Sha256dOf(std::span<const uint8_t>(data, len), h);
    std::memcpy(data + len, h, 4);
    const std::size_t n = len + 4;
    std::size_t zeros = 0;
    while (zeros < n && data[zeros] == 0) ++zeros;
    uint32_t words[16] = {};
    const std::size_t nw = (n + 3) / 4, pad = nw * 4 - n;
    for (std::size_t i = 0; i < n; ++i) {
        uint32_t& w = words[(i + pad) / 4];
        w = (w << 8) | data[i];
    }
    constexpr uint32_t B58_5 = 58u * 58u * 58u * 58u * 58u;
    char rev[96];
    std::size_t nd = 0, first = 0;
    while (first < nw) {
        uint64_t rem = 0;
        for (std::size_t i = first; i < nw; ++i) {
            const uint64_t cur = (rem << 32) | words[i];
            words[i] = uint32_t(cur / B58_5);
            rem = cur % B58_5;
        }
        while (first < nw && words[first] == 0) ++first;
        const uint32_t r = uint32_t(rem); // < 58^5 < 2^32; five independent digits
        rev[nd] = char(r % 58);
        rev[nd + 1] = char(r / 58 % 58);
        rev[nd + 2] = char(r / (58 * 58) % 58);
        rev[nd + 3] = char(r / (58 * 58 * 58) % 58);
        rev[nd + 4] = char(r / (58 * 58 * 58 * 58));
        nd += 5;
    }
    while (nd > 0 && rev[nd - 1] == 0) --nd;
    std::memset(out, '1', zeros);
    for (std::size_t i = 0; i < nd; ++i) out[zeros + i] = BASE58[uint8_t(rev[nd - 1 - i])];
    return zeros + nd;
}

/// Bech32/bech32m of a witness program (at most 40 bytes): writes into out, returns the length.
std::size_t EncodeSegwit(const NetParams& p, int version, std::span<const uint8_t> program, char* out)
{
    static constexpr char CHARSET[] = "qpzry9x8gf2tvdw0s3jn54khce6mua7l";
    // The checksummed string: 1 (initial state), hrp high bits, 0, hrp low bits, version, the
    // program in 5-bit groups, six zeros (the zeros contribute nothing).
    uint8_t v[MAX_POLY_SYMBOLS];
    std::size_t nv = 0;
    v[nv++] = 1;
    for (std::size_t i = 0; i < p.hrp_len; ++i) v[nv++] = uint8_t(p.hrp[i]) >> 5;
    v[nv++] = 0;
    for (std::size_t i = 0; i < p.hrp_len; ++i) v[nv++] = uint8_t(p.hrp[i]) & 31;
    const std::size_t data_start = nv;
    v[nv++] = uint8_t(version);
    uint32_t acc = 0;
    int bits = 0;
    for (uint8_t b : program) {
        acc = (acc << 8) | b;
        bits += 8;
        while (bits >= 5) {
            bits -= 5;
            v[nv++] = uint8_t((acc >> bits) & 31);
        }
    }
    if (bits) v[nv++] = uint8_t((acc << (5 - bits)) & 31);
    const std::size_t data_end = nv;
    const std::size_t last = nv + 6 - 1; // distance of symbol i from the end: last - i
    uint32_t c0 = 0, c1 = 0;
    std::size_t i = 0;
    for (; i + 2 <= nv; i += 2) {
        c0 ^= POLY_TERM[last - i][v[i]];
        c1 ^= POLY_TERM[last - i - 1][v[i + 1]];
    }
    if (i < nv) c0 ^= POLY_TERM[last - i][v[i]];
    const uint32_t c = c0 ^ c1;
    const uint32_t mod = c ^ (version == 0 ? 1 : 0x2bc830a3); // bech32 / bech32m (BIP350)
    std::memcpy(out, p.hrp, p.hrp_len);
    out[p.hrp_len] = '1';
    std::size_t o = p.hrp_len + 1;
    for (std::size_t k = data_start; k < data_end; ++k) out[o++] = CHARSET[v[k]];
    for (int k = 0; k < 6; ++k) out[o++] = CHARSET[(mod >> (5 * (5 - k))) & 31];
    return o;
}

} // namespace

std::optional<AddressNetwork> ParseAddressNetwork(std::string_view n) noexcept
{
    if (n == "main" || n == "mainnet") return AddressNetwork::Main;
    if (n == "test" || n == "testnet" || n == "testnet3" || n == "testnet4") return AddressNetwork::Test;
    if (n == "signet") return AddressNetwork::Signet;
    if (n == "regtest") return AddressNetwork::Regtest;
    return std::nullopt;
}

std::optional<std::string> EncodeAddress(const Script& s, AddressNetwork net)
{
    return EncodeAddress(s, Solver(s.span()), net);
}

std::optional<std::string> EncodeAddress(const Script& s, TxoutType type, AddressNetwork net)
{
    char buf[MAX_ADDRESS_LENGTH];
    const std::size_t n = EncodeAddressInto(s, type, net, buf);
    if (n == 0) return std::nullopt;
    return std::string(buf, n);
}

std::size_t EncodeAddressInto(const Script& s, TxoutType type, AddressNetwork net, char* out) noexcept
{
    const NetParams& p = Params(net);
    switch (type) {
    case TxoutType::PUBKEYHASH: {
        uint8_t d[21] = {p.p2pkh};
        std::memcpy(d + 1, s.data() + 3, 20);
        return EncodeBase58Check(d, sizeof(d), out);
    }
    case TxoutType::SCRIPTHASH: {
        uint8_t d[21] = {p.p2sh};
        std::memcpy(d + 1, s.data() + 2, 20);
        return EncodeBase58Check(d, sizeof(d), out);
    }
    case TxoutType::WITNESS_V0_KEYHASH:
    case TxoutType::WITNESS_V0_SCRIPTHASH:
    case TxoutType::WITNESS_V1_TAPROOT:
    case TxoutType::ANCHOR:
    case TxoutType::WITNESS_UNKNOWN: {
        int version = 0;
        std::span<const uint8_t> program;
        if (!IsWitnessProgram(s.span(), version, program)) return 0; // not reached
        return EncodeSegwit(p, version, program, out);
    }
    case TxoutType::PUBKEY: // Core's PubKeyDestination has no address
    case TxoutType::MULTISIG:
    case TxoutType::NULL_DATA:
    case TxoutType::NONSTANDARD: break;
    }
    return 0;
}

} // namespace ibdkit

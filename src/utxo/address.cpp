#include <ibdkit/utxo/address.h>

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

constexpr uint32_t B58_5 = 58u * 58u * 58u * 58u * 58u; // < 2^30
/// Base58Check input: a 21-byte payload and its 4-byte checksum.
constexpr std::size_t B58_BYTES = 25;
/// Limbs in base 58^5 of a 25-byte number (58^35 > 2^200).
constexpr std::size_t B58_LIMBS = 7;
/// The number is read in 24-bit chunks, least significant first (the last one holds one byte).
constexpr std::size_t B58_CHUNKS = (B58_BYTES + 2) / 3;
/// POW24[j][k] = limb j of 2^(24k) in base 58^5.
constexpr auto POW24 = [] {
    std::array<std::array<uint64_t, B58_CHUNKS>, B58_LIMBS> t{};
    std::array<uint64_t, B58_LIMBS> v{1};
    for (std::size_t k = 0; k < B58_CHUNKS; ++k) {
        for (std::size_t j = 0; j < B58_LIMBS; ++j) t[j][k] = v[j];
        uint64_t carry = 0;
        for (std::size_t j = 0; j < B58_LIMBS; ++j) {
            const uint64_t x = (v[j] << 24) + carry;
            v[j] = x % B58_5;
            carry = x / B58_5;
        }
    }
    return t;
}();

/// Base58Check of a 21-byte payload (version byte + hash). Instead of Core's byte-at-a-time
/// division loop (same output): the number is the sum of chunk x 2^(24k), with 2^(24k) tabled in
/// base 58^5, so the limbs are independent multiply-adds and one carry pass (no long division).
/// Writes into out (at most 35 characters) and returns the length.
std::size_t EncodeBase58Check(const uint8_t* payload, std::size_t len, char* out)
{
    uint8_t data[B58_BYTES];
    if (len + 4 != B58_BYTES) return 0; // not reached: P2PKH/P2SH payloads only
    std::memcpy(data, payload, len);
    uint8_t h[32];
    Sha256dOf(std::span<const uint8_t>(data, len), h);
    std::memcpy(data + len, h, 4);
    std::size_t zeros = 0;
    while (zeros < B58_BYTES && data[zeros] == 0) ++zeros;
    uint64_t chunk[B58_CHUNKS];
    for (std::size_t k = 0; k < B58_CHUNKS; ++k) {
        const std::size_t end = B58_BYTES - 3 * k; // chunk k: bytes [end - 3, end), clipped at 0
        uint64_t c = data[end - 1];
        if (end >= 2) c |= uint64_t(data[end - 2]) << 8;
        if (end >= 3) c |= uint64_t(data[end - 3]) << 16;
        chunk[k] = c;
    }
    uint64_t acc[B58_LIMBS]; // each < 9 * 2^24 * 58^5 < 2^58
    for (std::size_t j = 0; j < B58_LIMBS; ++j) {
        uint64_t sum = 0;
        for (std::size_t k = 0; k < B58_CHUNKS; ++k) sum += chunk[k] * POW24[j][k];
        acc[j] = sum;
    }
    char rev[B58_LIMBS * 5]; // digits, least significant first
    uint64_t carry = 0;
    for (std::size_t j = 0; j < B58_LIMBS; ++j) {
        const uint64_t x = acc[j] + carry;
        const uint32_t r = uint32_t(x % B58_5); // five independent digits
        carry = x / B58_5;
        rev[5 * j] = char(r % 58);
        rev[5 * j + 1] = char(r / 58 % 58);
        rev[5 * j + 2] = char(r / (58 * 58) % 58);
        rev[5 * j + 3] = char(r / (58 * 58 * 58) % 58);
        rev[5 * j + 4] = char(r / (58 * 58 * 58 * 58));
    }
    std::size_t nd = B58_LIMBS * 5;
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
    // Data symbols (written out at once): version, then the program in 5-bit groups, five bytes
    // (eight symbols) at a time, then the tail.
    std::memcpy(out, p.hrp, p.hrp_len);
    out[p.hrp_len] = '1';
    char* o = out + p.hrp_len + 1;
    auto put = [&](uint8_t sym) {
        v[nv++] = sym;
        *o++ = CHARSET[sym];
    };
    put(uint8_t(version));
    const uint8_t* prog = program.data();
    const std::size_t n = program.size();
    std::size_t at = 0;
    for (; at + 5 <= n; at += 5) {
        const uint64_t x = (uint64_t(prog[at]) << 32) | (uint64_t(prog[at + 1]) << 24) |
                           (uint64_t(prog[at + 2]) << 16) | (uint64_t(prog[at + 3]) << 8) | prog[at + 4];
        for (int k = 0; k < 8; ++k) put(uint8_t((x >> (35 - 5 * k)) & 31));
    }
    uint32_t acc = 0;
    int bits = 0;
    for (; at < n; ++at) {
        acc = (acc << 8) | prog[at];
        bits += 8;
        while (bits >= 5) {
            bits -= 5;
            put(uint8_t((acc >> bits) & 31));
        }
    }
    if (bits) put(uint8_t((acc << (5 - bits)) & 31));
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
    for (int k = 0; k < 6; ++k) *o++ = CHARSET[(mod >> (5 * (5 - k))) & 31];
    return std::size_t(o - out);
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
    return EncodeAddressInto(s.span(), type, net, out);
}

std::size_t EncodeAddressInto(std::span<const uint8_t> s, TxoutType type, AddressNetwork net, char* out) noexcept
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
        if (!IsWitnessProgram(s, version, program)) return 0; // not reached
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

#include <ibdkit/coins/address.h>

#include <ibdkit/crypto/sha256.h>
#include <ibdkit/primitives/script_ops.h>

#include <array>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>

namespace ibdkit {

namespace {

// BIP173 checksum (polymod): one step shifts a 5-bit symbol into the 30-bit state; the 5 bits
// shifted out select an XOR of the generator terms (GEN_XOR). The step is linear over GF(2), so two
// steps at once take the 10 bits shifted out through one table (POLYMOD2) — half the serial
// dependency chain, which is what the checksum's time is. The hrp's part is a constant per network.
constexpr std::array<uint32_t, 32> GEN_XOR = [] {
    constexpr uint32_t GEN[5] = {0x3b6a57b2, 0x26508e6d, 0x1ea119fa, 0x3d4233dd, 0x2a1462b3};
    std::array<uint32_t, 32> t{};
    for (uint32_t b = 0; b < 32; ++b) {
        for (int i = 0; i < 5; ++i) {
            if (b & (1u << i)) t[b] ^= GEN[i];
        }
    }
    return t;
}();

constexpr uint32_t PolymodStep(uint32_t c, uint32_t v) noexcept { return (((c & 0x1ffffff) << 5) ^ v) ^ GEN_XOR[c >> 25]; }

constexpr std::array<uint32_t, 1024> POLYMOD2 = [] {
    std::array<uint32_t, 1024> t{};
    for (uint32_t x = 0; x < 1024; ++x) t[x] = PolymodStep(PolymodStep(x << 20, 0), 0);
    return t;
}();

/// Two symbols a then b.
constexpr uint32_t PolymodStep2(uint32_t c, uint32_t a, uint32_t b) noexcept
{
    return ((c & 0xfffff) << 10) ^ (a << 5) ^ b ^ POLYMOD2[c >> 20];
}

/// The polymod state after the hrp's expansion (high bits, 0, low bits), from the initial 1.
constexpr uint32_t HrpState(std::string_view hrp) noexcept
{
    uint32_t c = 1;
    for (char ch : hrp) c = PolymodStep(c, uint32_t(uint8_t(ch)) >> 5);
    c = PolymodStep(c, 0);
    for (char ch : hrp) c = PolymodStep(c, uint32_t(uint8_t(ch)) & 31);
    return c;
}

static_assert(PolymodStep2(0x2345678, 7, 30) == PolymodStep(PolymodStep(0x2345678, 7), 30));
static_assert(PolymodStep2(0x3fffffff, 31, 31) == PolymodStep(PolymodStep(0x3fffffff, 31), 31));

struct NetParams {
    uint8_t p2pkh, p2sh;
    std::string_view hrp;
    uint32_t hrp_state; ///< HrpState(hrp)
};

constexpr NetParams MAIN_PARAMS{0x00, 0x05, "bc", HrpState("bc")};
constexpr NetParams TEST_PARAMS{0x6f, 0xc4, "tb", HrpState("tb")};
constexpr NetParams REGTEST_PARAMS{0x6f, 0xc4, "bcrt", HrpState("bcrt")};

const NetParams& Params(AddressNetwork n) noexcept
{
    switch (n) {
    case AddressNetwork::Main: return MAIN_PARAMS;
    case AddressNetwork::Test:
    case AddressNetwork::Signet: return TEST_PARAMS;
    case AddressNetwork::Regtest: break;
    }
    return REGTEST_PARAMS;
}

const char* BASE58 = "123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz";

/// Base58Check of payload (version byte + hash, at most 21 bytes here). Works on 32-bit limbs,
/// dividing by 58^5 per pass, instead of Core's byte-at-a-time loop (same output).
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
        // The five digits of rem < 58^5 from independent divisions (no serial chain).
        const uint32_t r = uint32_t(rem);
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

std::size_t EncodeSegwit(std::string_view hrp, uint32_t hrp_state, int version, std::span<const uint8_t> program,
                         char* out) noexcept
{
    static constexpr char CHARSET[] = "qpzry9x8gf2tvdw0s3jn54khce6mua7l";
    // Data: version + the program in 5-bit groups (at most 1 + 64 symbols), then six zeros.
    uint8_t v[1 + 64 + 6 + 1];
    std::size_t nv = 0;
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
    for (int i = 0; i < 6; ++i) v[nv++] = 0;
    uint32_t c = hrp_state;
    std::size_t i = 0;
    for (; i + 1 < nv; i += 2) c = PolymodStep2(c, v[i], v[i + 1]);
    if (i < nv) c = PolymodStep(c, v[i]);
    const uint32_t mod = c ^ (version == 0 ? 1 : 0x2bc830a3); // bech32 / bech32m (BIP350)
    std::memcpy(out, hrp.data(), hrp.size());
    out[hrp.size()] = '1';
    std::size_t o = hrp.size() + 1;
    for (std::size_t k = 0; k < data_end; ++k) out[o++] = CHARSET[v[k]];
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
    const std::size_t n = EncodeAddressTo(s, type, net, buf);
    if (n == 0) return std::nullopt;
    return std::string(buf, n);
}

std::size_t EncodeAddressTo(const Script& s, TxoutType type, AddressNetwork net, char* out) noexcept
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
        return EncodeSegwit(p.hrp, p.hrp_state, version, program, out);
    }
    case TxoutType::PUBKEY: // Core's PubKeyDestination has no address
    case TxoutType::MULTISIG:
    case TxoutType::NULL_DATA:
    case TxoutType::NONSTANDARD: break;
    }
    return 0;
}

} // namespace ibdkit

#include <ibdkit/coins/address.h>

#include <ibdkit/crypto/sha256.h>
#include <ibdkit/primitives/script_ops.h>

#include <array>
#include <cstdint>
#include <cstring>
#include <string>

namespace ibdkit {

namespace {

struct NetParams {
    uint8_t p2pkh, p2sh;
    const char* hrp;
};

NetParams Params(AddressNetwork n)
{
    switch (n) {
    case AddressNetwork::Main: return {0x00, 0x05, "bc"};
    case AddressNetwork::Test:
    case AddressNetwork::Signet: return {0x6f, 0xc4, "tb"};
    case AddressNetwork::Regtest: break;
    }
    return {0x6f, 0xc4, "bcrt"};
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
        for (int k = 0; k < 5; ++k) {
            rev[nd++] = char(rem % 58);
            rem /= 58;
        }
    }
    while (nd > 0 && rev[nd - 1] == 0) --nd;
    std::memset(out, '1', zeros);
    for (std::size_t i = 0; i < nd; ++i) out[zeros + i] = BASE58[uint8_t(rev[nd - 1 - i])];
    return zeros + nd;
}

/// Bech32/bech32m of a witness program (at most 40 bytes): writes into out, returns the length.
std::size_t EncodeSegwit(const char* hrp, int version, std::span<const uint8_t> program, char* out)
{
    static constexpr char CHARSET[] = "qpzry9x8gf2tvdw0s3jn54khce6mua7l";
    const std::size_t hrp_len = std::strlen(hrp);
    // Checksum input: hrp high bits, 0, hrp low bits, data, six zeros. Data: version + 5-bit groups.
    uint8_t v[16 + 1 + 66 + 6];
    std::size_t nv = 0;
    for (std::size_t i = 0; i < hrp_len; ++i) v[nv++] = uint8_t(hrp[i]) >> 5;
    v[nv++] = 0;
    for (std::size_t i = 0; i < hrp_len; ++i) v[nv++] = uint8_t(hrp[i]) & 31;
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
    for (int i = 0; i < 6; ++i) v[nv++] = 0;
    // BIP173 polymod, branch-free: the generator terms for the 5 bits shifted out, from a table.
    static constexpr std::array<uint32_t, 32> GEN_XOR = [] {
        constexpr uint32_t GEN[5] = {0x3b6a57b2, 0x26508e6d, 0x1ea119fa, 0x3d4233dd, 0x2a1462b3};
        std::array<uint32_t, 32> t{};
        for (uint32_t b = 0; b < 32; ++b) {
            for (int i = 0; i < 5; ++i) {
                if (b & (1u << i)) t[b] ^= GEN[i];
            }
        }
        return t;
    }();
    uint32_t c = 1;
    for (std::size_t i = 0; i < nv; ++i) {
        const uint32_t c0 = c >> 25;
        c = (((c & 0x1ffffff) << 5) ^ v[i]) ^ GEN_XOR[c0];
    }
    const uint32_t mod = c ^ (version == 0 ? 1 : 0x2bc830a3); // bech32 / bech32m (BIP350)
    std::memcpy(out, hrp, hrp_len);
    out[hrp_len] = '1';
    std::size_t o = hrp_len + 1;
    for (std::size_t i = data_start; i < data_end; ++i) out[o++] = CHARSET[v[i]];
    for (int i = 0; i < 6; ++i) out[o++] = CHARSET[(mod >> (5 * (5 - i))) & 31];
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
    const NetParams p = Params(net);
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
        return EncodeSegwit(p.hrp, version, program, out);
    }
    case TxoutType::PUBKEY: // Core's PubKeyDestination has no address
    case TxoutType::MULTISIG:
    case TxoutType::NULL_DATA:
    case TxoutType::NONSTANDARD: break;
    }
    return 0;
}

} // namespace ibdkit

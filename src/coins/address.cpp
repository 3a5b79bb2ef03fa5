#include <ibdkit/coins/address.h>

#include <ibdkit/crypto/sha256.h>
#include <ibdkit/primitives/script_ops.h>

#include <cstdint>
#include <vector>

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

std::string EncodeBase58Check(std::vector<uint8_t> data)
{
    uint8_t h[32];
    Sha256dOf(data, h);
    data.insert(data.end(), h, h + 4);
    std::size_t zeros = 0;
    while (zeros < data.size() && data[zeros] == 0) ++zeros;
    std::vector<uint8_t> b58((data.size() - zeros) * 138 / 100 + 1);
    std::size_t length = 0;
    for (std::size_t k = zeros; k < data.size(); ++k) {
        int carry = data[k];
        std::size_t i = 0;
        for (auto it = b58.rbegin(); (carry != 0 || i < length) && it != b58.rend(); ++it, ++i) {
            carry += 256 * (*it);
            *it = uint8_t(carry % 58);
            carry /= 58;
        }
        length = i;
    }
    auto it = b58.begin() + std::ptrdiff_t(b58.size() - length);
    while (it != b58.end() && *it == 0) ++it;
    std::string out(zeros, '1');
    for (; it != b58.end(); ++it) out += BASE58[*it];
    return out;
}

uint32_t Bech32Polymod(const std::vector<uint8_t>& v)
{
    uint32_t c = 1;
    for (uint8_t d : v) {
        const uint8_t c0 = uint8_t(c >> 25);
        c = ((c & 0x1ffffff) << 5) ^ d;
        if (c0 & 1) c ^= 0x3b6a57b2;
        if (c0 & 2) c ^= 0x26508e6d;
        if (c0 & 4) c ^= 0x1ea119fa;
        if (c0 & 8) c ^= 0x3d4233dd;
        if (c0 & 16) c ^= 0x2a1462b3;
    }
    return c;
}

std::string EncodeSegwit(const std::string& hrp, int version, std::span<const uint8_t> program)
{
    static const char* CHARSET = "qpzry9x8gf2tvdw0s3jn54khce6mua7l";
    std::vector<uint8_t> data{uint8_t(version)};
    uint32_t acc = 0;
    int bits = 0;
    for (uint8_t b : program) {
        acc = (acc << 8) | b;
        bits += 8;
        while (bits >= 5) {
            bits -= 5;
            data.push_back(uint8_t((acc >> bits) & 31));
        }
    }
    if (bits) data.push_back(uint8_t((acc << (5 - bits)) & 31));
    std::vector<uint8_t> check;
    for (char c : hrp) check.push_back(uint8_t(c) >> 5);
    check.push_back(0);
    for (char c : hrp) check.push_back(uint8_t(c) & 31);
    check.insert(check.end(), data.begin(), data.end());
    check.insert(check.end(), 6, 0);
    const uint32_t constant = version == 0 ? 1 : 0x2bc830a3; // bech32 / bech32m (BIP350)
    const uint32_t mod = Bech32Polymod(check) ^ constant;
    std::string out = hrp + "1";
    for (uint8_t d : data) out += CHARSET[d];
    for (int i = 0; i < 6; ++i) out += CHARSET[(mod >> (5 * (5 - i))) & 31];
    return out;
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
    const NetParams p = Params(net);
    switch (type) {
    case TxoutType::PUBKEYHASH: {
        std::vector<uint8_t> d{p.p2pkh};
        d.insert(d.end(), s.data() + 3, s.data() + 23);
        return EncodeBase58Check(std::move(d));
    }
    case TxoutType::SCRIPTHASH: {
        std::vector<uint8_t> d{p.p2sh};
        d.insert(d.end(), s.data() + 2, s.data() + 22);
        return EncodeBase58Check(std::move(d));
    }
    case TxoutType::WITNESS_V0_KEYHASH:
    case TxoutType::WITNESS_V0_SCRIPTHASH:
    case TxoutType::WITNESS_V1_TAPROOT:
    case TxoutType::ANCHOR:
    case TxoutType::WITNESS_UNKNOWN: {
        int version = 0;
        std::span<const uint8_t> program;
        if (!IsWitnessProgram(s.span(), version, program)) return std::nullopt; // not reached
        return EncodeSegwit(p.hrp, version, program);
    }
    case TxoutType::PUBKEY: // Core's PubKeyDestination has no address
    case TxoutType::MULTISIG:
    case TxoutType::NULL_DATA:
    case TxoutType::NONSTANDARD: break;
    }
    return std::nullopt;
}

} // namespace ibdkit

#include <ibdkit/coins/address.h>

#include <ibdkit/crypto/sha256.h>

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

bool IsOpN(uint8_t op) { return op == 0x00 || (op >= 0x51 && op <= 0x60); }
int DecodeOpN(uint8_t op) { return op == 0 ? 0 : op - 0x50; }

bool IsWitnessProgram(const Script& s, int& version, std::span<const uint8_t>& program)
{
    if (s.size() < 4 || s.size() > 42) return false;
    if (!IsOpN(s[0])) return false;
    if (std::size_t(s[1]) + 2 != s.size()) return false;
    version = DecodeOpN(s[0]);
    program = std::span<const uint8_t>(s.data() + 2, s.size() - 2);
    return true;
}

bool IsP2PKH(const Script& s)
{
    return s.size() == 25 && s[0] == 0x76 && s[1] == 0xa9 && s[2] == 20 && s[23] == 0x88 && s[24] == 0xac;
}
bool IsP2SH(const Script& s) { return s.size() == 23 && s[0] == 0xa9 && s[1] == 20 && s[22] == 0x87; }

bool IsPubKeyScript(const Script& s)
{
    if (s.size() == 35 && s[0] == 33 && s[34] == 0xac) return s[1] == 0x02 || s[1] == 0x03;
    if (s.size() == 67 && s[0] == 65 && s[66] == 0xac) return s[1] == 0x04 || s[1] == 0x06 || s[1] == 0x07;
    return false;
}

/// Core's IsPushOnly-after-OP_RETURN check for nulldata.
bool IsNullData(const Script& s)
{
    if (s.size() < 1 || s[0] != 0x6a) return false;
    std::size_t i = 1;
    while (i < s.size()) {
        const uint8_t op = s[i++];
        if (op > 0x60) return false; // not a push / small number
        std::size_t len = 0;
        if (op < 0x4c) len = op;
        else if (op == 0x4c) { if (i + 1 > s.size()) return false; len = s[i]; i += 1; }
        else if (op == 0x4d) { if (i + 2 > s.size()) return false; len = s[i] | (s[i + 1] << 8); i += 2; }
        else if (op == 0x4e) { if (i + 4 > s.size()) return false; len = std::size_t(s[i]) | (std::size_t(s[i + 1]) << 8) | (std::size_t(s[i + 2]) << 16) | (std::size_t(s[i + 3]) << 24); i += 4; }
        if (i + len > s.size()) return false;
        i += len;
    }
    return true;
}

bool IsMultisig(const Script& s)
{
    // OP_m <pubkey>... OP_n OP_CHECKMULTISIG with 1 <= m <= n <= 20 keys of 33/65 bytes.
    if (s.size() < 3 || s[s.size() - 1] != 0xae) return false;
    const uint8_t m_op = s[0], n_op = s[s.size() - 2];
    if (m_op < 0x51 || m_op > 0x60 || n_op < 0x51 || n_op > 0x60) return false;
    const int m = m_op - 0x50, n = n_op - 0x50;
    if (m > n) return false;
    std::size_t i = 1;
    int keys = 0;
    while (i < s.size() - 2) {
        const uint8_t len = s[i];
        if (len != 33 && len != 65) return false;
        if (i + 1 + len > s.size() - 2) return false;
        i += 1 + len;
        ++keys;
    }
    return keys == n;
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

std::string_view ScriptTypeName(const Script& s) noexcept
{
    int version;
    std::span<const uint8_t> program;
    if (IsP2SH(s)) return "scripthash";
    if (IsWitnessProgram(s, version, program)) {
        if (version == 0 && program.size() == 20) return "witness_v0_keyhash";
        if (version == 0 && program.size() == 32) return "witness_v0_scripthash";
        if (version == 1 && program.size() == 32) return "witness_v1_taproot";
        if (version == 1 && program.size() == 2 && program[0] == 0x4e && program[1] == 0x73) return "anchor";
        if (version != 0) return "witness_unknown";
        return "nonstandard";
    }
    if (IsNullData(s)) return "nulldata";
    if (IsPubKeyScript(s)) return "pubkey";
    if (IsP2PKH(s)) return "pubkeyhash";
    if (IsMultisig(s)) return "multisig";
    return "nonstandard";
}

std::optional<std::string> EncodeAddress(const Script& s, AddressNetwork net)
{
    const NetParams p = Params(net);
    if (IsP2PKH(s)) {
        std::vector<uint8_t> d{p.p2pkh};
        d.insert(d.end(), s.data() + 3, s.data() + 23);
        return EncodeBase58Check(std::move(d));
    }
    if (IsP2SH(s)) {
        std::vector<uint8_t> d{p.p2sh};
        d.insert(d.end(), s.data() + 2, s.data() + 22);
        return EncodeBase58Check(std::move(d));
    }
    int version;
    std::span<const uint8_t> program;
    if (IsWitnessProgram(s, version, program)) {
        if (version == 0 && program.size() != 20 && program.size() != 32) return std::nullopt;
        return EncodeSegwit(p.hrp, version, program);
    }
    return std::nullopt;
}

} // namespace ibdkit

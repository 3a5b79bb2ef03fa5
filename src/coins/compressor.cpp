#include <ibdkit/coins/compressor.h>

#include <secp256k1.h>

#include <cstring>

namespace ibdkit {

uint64_t CompressAmount(uint64_t n) noexcept
{
    if (n == 0) return 0;
    int e = 0;
    while (((n % 10) == 0) && e < 9) {
        n /= 10;
        e++;
    }
    if (e < 9) {
        const int d = int(n % 10);
        n /= 10;
        return 1 + (n * 9 + uint64_t(d) - 1) * 10 + uint64_t(e);
    }
    return 1 + (n - 1) * 10 + 9;
}

uint64_t DecompressAmount(uint64_t x) noexcept
{
    // x = 0  OR  x = 1+10*(9*n + d - 1) + e  OR  x = 1+10*(n - 1) + 9
    if (x == 0) return 0;
    x--;
    int e = int(x % 10);
    x /= 10;
    uint64_t n = 0;
    if (e < 9) {
        const uint64_t d = (x % 9) + 1;
        x /= 9;
        n = x * 10 + d; // unsigned: wraps on absurd database values, exactly as Core
    } else {
        n = x + 1;
    }
    while (e) {
        n *= 10;
        e--;
    }
    return n;
}

namespace {

bool IsToKeyId(std::span<const uint8_t> s) noexcept
{
    return s.size() == 25 && s[0] == 0x76 /*OP_DUP*/ && s[1] == 0xa9 /*OP_HASH160*/ && s[2] == 20 &&
           s[23] == 0x88 /*OP_EQUALVERIFY*/ && s[24] == 0xac /*OP_CHECKSIG*/;
}

bool IsToScriptId(std::span<const uint8_t> s) noexcept
{
    return s.size() == 23 && s[0] == 0xa9 && s[1] == 20 && s[22] == 0x87 /*OP_EQUAL*/;
}

bool IsValidUncompressedPoint(const uint8_t* key65) noexcept
{
    secp256k1_pubkey pk;
    return secp256k1_ec_pubkey_parse(secp256k1_context_static, &pk, key65, 65) == 1;
}

} // namespace

bool CompressScript(std::span<const uint8_t> script, CompressedScript& out)
{
    if (IsToKeyId(script)) {
        out.size = 21;
        out.bytes[0] = 0x00;
        std::memcpy(&out.bytes[1], script.data() + 3, 20);
        return true;
    }
    if (IsToScriptId(script)) {
        out.size = 21;
        out.bytes[0] = 0x01;
        std::memcpy(&out.bytes[1], script.data() + 2, 20);
        return true;
    }
    if (script.size() == 35 && script[0] == 33 && script[34] == 0xac && (script[1] == 0x02 || script[1] == 0x03)) {
        out.size = 33;
        out.bytes[0] = script[1];
        std::memcpy(&out.bytes[1], script.data() + 2, 32);
        return true;
    }
    // An uncompressed key is special-cased only when it is a valid point (Core's IsFullyValid);
    // otherwise it is stored raw.
    if (script.size() == 67 && script[0] == 65 && script[66] == 0xac && script[1] == 0x04 &&
        IsValidUncompressedPoint(script.data() + 1)) {
        out.size = 33;
        out.bytes[0] = uint8_t(0x04 | (script[65] & 0x01));
        std::memcpy(&out.bytes[1], script.data() + 2, 32);
        return true;
    }
    return false;
}

bool DecompressScript(Script& script, unsigned n_size, std::span<const uint8_t> in)
{
    switch (n_size) {
    case 0x00: {
        if (in.size() < 20) return false;
        script.resize_uninit(25);
        uint8_t* p = script.data();
        p[0] = 0x76;
        p[1] = 0xa9;
        p[2] = 20;
        std::memcpy(p + 3, in.data(), 20);
        p[23] = 0x88;
        p[24] = 0xac;
        return true;
    }
    case 0x01: {
        if (in.size() < 20) return false;
        script.resize_uninit(23);
        uint8_t* p = script.data();
        p[0] = 0xa9;
        p[1] = 20;
        std::memcpy(p + 2, in.data(), 20);
        p[22] = 0x87;
        return true;
    }
    case 0x02:
    case 0x03: {
        if (in.size() < 32) return false;
        script.resize_uninit(35);
        uint8_t* p = script.data();
        p[0] = 33;
        p[1] = uint8_t(n_size);
        std::memcpy(p + 2, in.data(), 32);
        p[34] = 0xac;
        return true;
    }
    case 0x04:
    case 0x05: {
        if (in.size() < 32) return false;
        uint8_t vch[33];
        vch[0] = uint8_t(n_size - 2);
        std::memcpy(vch + 1, in.data(), 32);
        secp256k1_pubkey pk;
        if (!secp256k1_ec_pubkey_parse(secp256k1_context_static, &pk, vch, 33)) {
            script.clear();
            return false;
        }
        uint8_t full[65];
        size_t len = 65;
        secp256k1_ec_pubkey_serialize(secp256k1_context_static, full, &len, &pk, SECP256K1_EC_UNCOMPRESSED);
        script.resize_uninit(67);
        uint8_t* p = script.data();
        p[0] = 65;
        std::memcpy(p + 1, full, 65);
        p[66] = 0xac;
        return true;
    }
    default:
        return false;
    }
}

} // namespace ibdkit

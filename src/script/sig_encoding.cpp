// src/script/sig_encoding.cpp — the encoding rules for signatures and keys that DERSIG (BIP66),
// LOW_S, STRICTENC and WITNESS_PUBKEYTYPE add (Core's CheckSignatureEncoding and
// CheckPubKeyEncoding), checked before any signature is verified.
#include "script/eval_internal.h"

#include <algorithm>
#include <array>

namespace ibdkit {

namespace {

using namespace script_detail;

/// BIP66's strict DER with a hash-type byte: 0x30 len 0x02 lenR R 0x02 lenS S hashtype, where R
/// and S are non-empty, non-negative and without superfluous leading zero bytes.
bool IsStrictDer(View sig) noexcept
{
    const std::size_t size = sig.size();
    if (size < 9 || size > 73) return false;
    if (sig[0] != 0x30 || sig[1] != size - 3) return false;
    const std::size_t len_r = sig[3];
    if (5 + len_r >= size) return false;
    const std::size_t len_s = sig[5 + len_r];
    if (len_r + len_s + 7 != size) return false;

    auto integer_ok = [&](std::size_t marker, std::size_t len) {
        if (sig[marker] != 0x02 || len == 0) return false;
        const uint8_t first = sig[marker + 2];
        if (first & 0x80) return false;                                       // negative
        if (len > 1 && first == 0x00 && !(sig[marker + 3] & 0x80)) return false; // padded
        return true;
    };
    return integer_ok(2, len_r) && integer_ok(4 + len_r, len_s);
}

/// The curve order's half, big-endian: S above it is "high".
constexpr std::array<uint8_t, 32> HALF_ORDER{
    0x7f, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
    0x5d, 0x57, 0x6e, 0x73, 0x57, 0xa4, 0x50, 0x1d, 0xdf, 0xe9, 0x2f, 0x46, 0x68, 0x1b, 0x20, 0xa0};
constexpr std::array<uint8_t, 32> ORDER{
    0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xfe,
    0xba, 0xae, 0xdc, 0xe6, 0xaf, 0x48, 0xa0, 0x3b, 0xbf, 0xd2, 0x5e, 0x8c, 0xd0, 0x36, 0x41, 0x41};

/// A DER integer as 32 big-endian bytes; false if it needs more (then it is at least the order).
bool ToScalarBytes(View integer, std::array<uint8_t, 32>& out) noexcept
{
    while (!integer.empty() && integer[0] == 0) integer = integer.subspan(1);
    if (integer.size() > 32) return false;
    out.fill(0);
    std::copy(integer.begin(), integer.end(), out.end() - integer.size());
    return true;
}

/// Core's CPubKey::CheckLowS on a strict-DER signature (hash type included): libsecp256k1's lax
/// parse turns R or S at or above the order into zero, which is not high; otherwise S must be at
/// most half the order.
bool HasLowS(View sig) noexcept
{
    const std::size_t len_r = sig[3];
    const View r = sig.subspan(4, len_r);
    const View s = sig.subspan(6 + len_r, sig[5 + len_r]);
    std::array<uint8_t, 32> r32, s32;
    if (!ToScalarBytes(r, r32) || !ToScalarBytes(s, s32)) return true;
    if (r32 >= ORDER || s32 >= ORDER) return true;
    return s32 <= HALF_ORDER;
}

bool IsDefinedHashType(View sig) noexcept
{
    if (sig.empty()) return false;
    const uint8_t base = sig.back() & uint8_t(~SIGHASH_ANYONECANPAY);
    return base >= SIGHASH_ALL && base <= SIGHASH_SINGLE;
}

bool IsCompressedOrUncompressedKey(View key) noexcept
{
    if (key.size() < 33) return false;
    if (key[0] == 0x04) return key.size() == 65;
    if (key[0] == 0x02 || key[0] == 0x03) return key.size() == 33;
    return false;
}

bool IsCompressedKey(View key) noexcept
{
    return key.size() == 33 && (key[0] == 0x02 || key[0] == 0x03);
}

} // namespace

bool script_detail::CheckKeyEncoding(View key, ScriptFlags flags, SigVersion sigversion, ScriptError* error)
{
    if ((flags & SCRIPT_VERIFY_STRICTENC) && !IsCompressedOrUncompressedKey(key)) return Fail(error, ScriptError::PUBKEYTYPE);
    if ((flags & SCRIPT_VERIFY_WITNESS_PUBKEYTYPE) && sigversion == SigVersion::WITNESS_V0 && !IsCompressedKey(key)) {
        return Fail(error, ScriptError::WITNESS_PUBKEYTYPE);
    }
    return true;
}

bool CheckSignatureEncoding(std::span<const uint8_t> sig, ScriptFlags flags, ScriptError* error)
{
    // An empty signature is the canonical way to fail a CHECKSIG on purpose.
    if (sig.empty()) return true;
    if ((flags & (SCRIPT_VERIFY_DERSIG | SCRIPT_VERIFY_LOW_S | SCRIPT_VERIFY_STRICTENC)) && !IsStrictDer(sig)) {
        return Fail(error, ScriptError::SIG_DER);
    }
    if ((flags & SCRIPT_VERIFY_LOW_S) && !HasLowS(sig)) return Fail(error, ScriptError::SIG_HIGH_S);
    if ((flags & SCRIPT_VERIFY_STRICTENC) && !IsDefinedHashType(sig)) return Fail(error, ScriptError::SIG_HASHTYPE);
    return true;
}

} // namespace ibdkit

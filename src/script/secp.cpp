// src/script/secp.cpp — ECDSA and Schnorr verification and the taproot tweak check over
// libsecp256k1, answering as Core's CPubKey and XOnlyPubKey do.
#include "script/secp.h"

#include <secp256k1.h>
#include <secp256k1_extrakeys.h>
#include <secp256k1_schnorrsig.h>

#include <array>
#include <cstring>
#include <optional>

namespace ibdkit::script_detail {

namespace {

// One verification context for the process, made on first use (thread-safe static
// initialization) and never destroyed: verifying needs no mutable context state, so every thread
// shares it.
const secp256k1_context* VerifyContext()
{
    static const secp256k1_context* const ctx = secp256k1_context_create(SECP256K1_CONTEXT_VERIFY);
    return ctx;
}

// The length a public key must have for its first byte, as Core's CPubKey::GetLen: 33 for the
// compressed headers, 65 for uncompressed (04) and hybrid (06, 07), 0 (never valid) otherwise.
// CPubKey refuses a key of any other size before libsecp256k1 sees it.
std::size_t PubKeyLengthForHeader(uint8_t header) noexcept
{
    if (header == 0x02 || header == 0x03) return 33;
    if (header == 0x04 || header == 0x06 || header == 0x07) return 65;
    return 0;
}

// A reader over DER-ish bytes that never reads past the end.
struct LaxReader {
    std::span<const uint8_t> in;
    std::size_t pos{0};

    bool AtEnd() const noexcept { return pos == in.size(); }
    std::size_t Left() const noexcept { return in.size() - pos; }
};

// Reads a length as the lax parser understands it. A short form byte is the length. A long form
// byte 0x80|n is followed by n length bytes, of which leading zeros are ignored and at most three
// significant ones are accepted (a longer length could not fit the signature anyway).
std::optional<std::size_t> ReadLaxIntegerLength(LaxReader& r)
{
    if (r.AtEnd()) return std::nullopt;
    std::size_t len_byte = r.in[r.pos++];
    if (!(len_byte & 0x80)) return len_byte;
    std::size_t count = len_byte - 0x80;
    if (count > r.Left()) return std::nullopt;
    while (count > 0 && r.in[r.pos] == 0) {
        ++r.pos;
        --count;
    }
    if (count >= 4) return std::nullopt;
    std::size_t len = 0;
    for (; count > 0; --count) len = (len << 8) | r.in[r.pos++];
    return len;
}

// Reads "02 <len> <bytes>" and returns the integer's bytes (still with their leading zeros).
std::optional<std::span<const uint8_t>> ReadLaxInteger(LaxReader& r)
{
    if (r.AtEnd() || r.in[r.pos] != 0x02) return std::nullopt;
    ++r.pos;
    const auto len = ReadLaxIntegerLength(r);
    if (!len || *len > r.Left()) return std::nullopt;
    std::span<const uint8_t> value = r.in.subspan(r.pos, *len);
    r.pos += *len;
    return value;
}

// Right-aligns a big-endian integer into 32 bytes, ignoring its leading zeros. False if more than
// 32 significant bytes remain.
bool PutScalar(std::span<const uint8_t> value, uint8_t* out32)
{
    while (!value.empty() && value.front() == 0) value = value.subspan(1);
    if (value.size() > 32) return false;
    std::memset(out32, 0, 32);
    if (!value.empty()) std::memcpy(out32 + 32 - value.size(), value.data(), value.size());
    return true;
}

// The signature parser Core uses for consensus (ecdsa_signature_parse_der_lax in its pubkey.cpp),
// which accepts every encoding the chain held before BIP66 made DER strict: a sequence tag 0x30
// whose length is skipped unread (the long form only skips its length bytes), then R and S as
// "02 <len> <bytes>" with long-form lengths, negative values and excess zero padding allowed, and
// anything after S ignored.
//
// Where Core's parser "succeeds" with the all-zero signature (R or S larger than 32 bytes or not
// below the group order) verification must fail, so this answers nullopt for those too: the
// verdict is the same, false.
std::optional<secp256k1_ecdsa_signature> ParseDerLax(std::span<const uint8_t> der)
{
    LaxReader r{der, 0};
    if (r.AtEnd() || r.in[r.pos] != 0x30) return std::nullopt;
    ++r.pos;
    if (r.AtEnd()) return std::nullopt;
    const std::size_t seq_len_byte = r.in[r.pos++];
    if (seq_len_byte & 0x80) {
        const std::size_t skip = seq_len_byte - 0x80;
        if (skip > r.Left()) return std::nullopt;
        r.pos += skip;
    }
    const auto r_bytes = ReadLaxInteger(r);
    if (!r_bytes) return std::nullopt;
    const auto s_bytes = ReadLaxInteger(r);
    if (!s_bytes) return std::nullopt;

    std::array<uint8_t, 64> compact{};
    if (!PutScalar(*r_bytes, compact.data()) || !PutScalar(*s_bytes, compact.data() + 32)) return std::nullopt;
    secp256k1_ecdsa_signature sig;
    if (!secp256k1_ecdsa_signature_parse_compact(VerifyContext(), &sig, compact.data())) return std::nullopt;
    return sig;
}

} // namespace

std::optional<std::array<uint8_t, 64>> ParseDerLaxCompact(std::span<const uint8_t> der)
{
    auto sig = ParseDerLax(der);
    if (!sig) return std::nullopt;
    std::array<uint8_t, 64> out;
    secp256k1_ecdsa_signature_serialize_compact(VerifyContext(), out.data(), &*sig);
    return out;
}

bool PubKeySizeMatchesHeader(std::span<const uint8_t> pubkey) noexcept
{
    return !pubkey.empty() && PubKeyLengthForHeader(pubkey[0]) == pubkey.size();
}

bool VerifyEcdsa(std::span<const uint8_t> pubkey, std::span<const uint8_t> der, const uint256& hash)
{
    if (!PubKeySizeMatchesHeader(pubkey)) return false;
    const secp256k1_context* ctx = VerifyContext();
    secp256k1_pubkey key;
    if (!secp256k1_ec_pubkey_parse(ctx, &key, pubkey.data(), pubkey.size())) return false;
    auto sig = ParseDerLax(der);
    if (!sig) return false;
    // libsecp256k1 verifies only low-S signatures; consensus accepts either half (LOW_S is a
    // policy flag), so the signature is brought to its low-S twin first.
    secp256k1_ecdsa_signature_normalize(ctx, &*sig, &*sig);
    return secp256k1_ecdsa_verify(ctx, &*sig, hash.data(), &key) == 1;
}

bool VerifySchnorr(std::span<const uint8_t> xonly_pubkey, std::span<const uint8_t> sig64, const uint256& hash)
{
    if (xonly_pubkey.size() != 32 || sig64.size() != 64) return false;
    const secp256k1_context* ctx = VerifyContext();
    secp256k1_xonly_pubkey key;
    if (!secp256k1_xonly_pubkey_parse(ctx, &key, xonly_pubkey.data())) return false;
    return secp256k1_schnorrsig_verify(ctx, sig64.data(), hash.data(), 32, &key) == 1;
}

bool CheckTapTweak(std::span<const uint8_t> internal_key, const uint256& tweak, std::span<const uint8_t> output_key, bool parity)
{
    if (internal_key.size() != 32 || output_key.size() != 32) return false;
    const secp256k1_context* ctx = VerifyContext();
    secp256k1_xonly_pubkey internal;
    if (!secp256k1_xonly_pubkey_parse(ctx, &internal, internal_key.data())) return false;
    return secp256k1_xonly_pubkey_tweak_add_check(ctx, output_key.data(), parity ? 1 : 0, &internal, tweak.data()) == 1;
}

} // namespace ibdkit::script_detail

// src/script/secp.h — the signature primitives the interpreter needs (private: wraps libsecp256k1).
//
// Each function answers as Core's CPubKey / XOnlyPubKey does, so the interpreter's verdicts are
// Core's; libsecp256k1 never appears outside src/script/ (and src/gen/, which signs).
#pragma once

#include <ibdkit/primitives/hash.h>

#include <array>
#include <cstdint>
#include <optional>
#include <span>

namespace ibdkit::script_detail {

/// Core's CPubKey size rule (IsValid after Set): non-empty, and 33 bytes for a 02/03 header or 65
/// for 04/06/07. Every other key is invalid whatever its bytes.
bool PubKeySizeMatchesHeader(std::span<const uint8_t> pubkey) noexcept;

/// Core's CPubKey::Verify: `pubkey` in any encoding libsecp256k1 parses (33 or 65 bytes, hybrid
/// included, as Core), `der` a signature without its hash-type byte parsed leniently (Core's
/// ecdsa_signature_parse_der_lax), normalized to low S, then verified over `hash`.
bool VerifyEcdsa(std::span<const uint8_t> pubkey, std::span<const uint8_t> der, const uint256& hash);

/// The lax DER parser alone, for tests and fuzzing: R and S as 64 big-endian bytes, or nullopt
/// where VerifyEcdsa refuses the encoding (including the values Core's parser turns into the
/// all-zero signature: an integer of more than 32 significant bytes, or one not below the order).
std::optional<std::array<uint8_t, 64>> ParseDerLaxCompact(std::span<const uint8_t> der);

/// BIP340 verification of a 64-byte signature by a 32-byte x-only key over `hash`.
bool VerifySchnorr(std::span<const uint8_t> xonly_pubkey, std::span<const uint8_t> sig64, const uint256& hash);

/// BIP341's commitment check (Core's XOnlyPubKey::CheckTapTweak): `output_key` with `parity` is
/// `internal_key` + tweak·G.
bool CheckTapTweak(std::span<const uint8_t> internal_key, const uint256& tweak, std::span<const uint8_t> output_key, bool parity);

} // namespace ibdkit::script_detail

// src/gen/keys.h — keys and taproot outputs for the chain generator (private: wraps secp256k1).
//
// Keys serve three purposes: realistic public keys in outputs nobody spends (P2PK, bare multisig),
// taproot outputs whose script path (a leaf that pushes true) can be spent without a key, and the
// signing identities of a signed chain (gen/signer.h).
#pragma once

#include <ibdkit/primitives/hash.h>

#include <secp256k1.h>

#include <array>
#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

namespace ibdkit::gen_detail {

/// The generator's one libsecp256k1 context (no randomization: every key it makes is public
/// test data, and signing stays deterministic).
const secp256k1_context* GenContext();
/// Throws std::logic_error naming `what` unless libsecp256k1 returned success (a generator bug).
void RequireSecp(bool ok, const char* what);

/// BIP340 tagged hash: SHA256(SHA256(tag) || SHA256(tag) || data).
uint256 TaggedHash(std::string_view tag, std::span<const uint8_t> data);

/// Valid secp256k1 public keys derived from a seed, in three encodings.
struct KeyPool {
    std::vector<std::array<uint8_t, 33>> compressed;
    std::vector<std::array<uint8_t, 65>> uncompressed;
    std::vector<std::array<uint8_t, 32>> xonly;
};

/// The secret key of pool key `index` for `seed` (a valid scalar; deterministic).
std::array<uint8_t, 32> SecretKeyOf(uint64_t seed, std::size_t index);

/// `count` key pairs whose secret keys are SecretKeyOf(seed, 0 .. count - 1).
KeyPool MakeKeyPool(uint64_t seed, std::size_t count);

/// A taproot output with one script leaf (leaf version 0xc0) over an internal key.
struct TaprootScriptOutput {
    std::array<uint8_t, 32> output_key;  ///< x-only tweaked key Q (the witness program)
    std::vector<uint8_t> control_block;  ///< (0xc0 | parity(Q)) || internal x-only key
    std::vector<uint8_t> leaf_script;
};

/// Q = P + H_TapTweak(P || H_TapLeaf(0xc0 || script))·G for the internal key of pool key `index`
/// (BIP341). Aborts (programmer error) if secp256k1 rejects the tweak (probability ~2^-128).
TaprootScriptOutput MakeTaprootScriptOutput(uint64_t seed, std::size_t index, std::span<const uint8_t> leaf_script);

} // namespace ibdkit::gen_detail

// src/gen/signer.h — signed spends for the chain generator (private: wraps secp256k1).
//
// The generator's keyless outputs (P2SH/P2WSH/P2TR of OP_TRUE) never reach a signature check. A
// signed chain spends the types mainnet spends, with real signatures a full validator must check:
// P2PKH, P2WPKH, P2TR key path, 2-of-3 multisig in P2SH and in P2WSH, and a tapscript leaf
// `<key> OP_CHECKSIG`. Keys come from a seed, ECDSA nonces from RFC 6979 and BIP340's auxiliary
// randomness from the message, so the same chain is the same bytes on every machine.
#pragma once

#include <ibdkit/primitives/script.h>
#include <ibdkit/primitives/transaction.h>

#include <array>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <vector>

namespace ibdkit::gen_detail {

/// An output type that needs a signature to spend.
enum class SignedKind : uint8_t {
    P2PKH,
    P2WPKH,
    P2TR_KEY,       ///< key path of a tweaked key without a script tree
    P2SH_MULTISIG,  ///< 2-of-3 CHECKMULTISIG redeem script
    P2WSH_MULTISIG, ///< the same script as a P2WSH witness script
    TAPSCRIPT,      ///< script path through one leaf `<x-only key> OP_CHECKSIG`
};
inline constexpr std::size_t SIGNED_KINDS = 6;

/// How one input of a transaction is signed: its kind and which of the signer's identities owns it.
struct SignedSpend {
    SignedKind kind;
    uint8_t variant;
};

/// `count` signing identities (≤ 256) derived from `seed`, with every script each kind needs
/// precomputed, so that making an output or placing a spend costs no curve operation; only
/// SignInputs does.
class Signer {
public:
    Signer(uint64_t seed, std::size_t count);
    ~Signer();
    Signer(const Signer&) = delete;
    Signer& operator=(const Signer&) = delete;

    std::size_t Count() const noexcept;
    /// The output script of identity `variant` for `kind`.
    Script ScriptPubKey(SignedKind kind, uint8_t variant) const;
    /// Fills `in`'s scriptSig and witness with the spend's final shape and placeholder signatures
    /// of the largest size (72-byte DER + hash type, 64-byte BIP340), so the transaction's weight
    /// is known before it is signed; SignInputs replaces them.
    void Place(TxIn& in, const SignedSpend& spend) const;
    /// Signs every input of `mtx` that `how` names (how.size() == inputs; nullopt: not signed
    /// here), after every input and output is in place. `spent` holds the output each input
    /// spends (value and script), which BIP143 and BIP341 sign. SIGHASH_ALL throughout (taproot's
    /// SIGHASH_DEFAULT, a 64-byte signature).
    void SignInputs(MutableTransaction& mtx, std::span<const TxOut> spent, std::span<const std::optional<SignedSpend>> how) const;

private:
    struct Impl;
    std::unique_ptr<Impl> m_impl;
};

} // namespace ibdkit::gen_detail

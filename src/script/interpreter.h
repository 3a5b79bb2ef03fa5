// src/script/interpreter.h — Bitcoin's script interpreter, with Core's consensus semantics.
//
// Legacy scripts, P2SH (BIP16), strict DER (BIP66), CHECKLOCKTIMEVERIFY (BIP65),
// CHECKSEQUENCEVERIFY (BIP112), NULLDUMMY (BIP147), segwit v0 (BIP141/143) and taproot with
// tapscript (BIP340/341/342), every limit (script size, stack, op count, element size, sigops,
// tapscript's validation weight) and every signature-hash rule of Core's script/interpreter.cpp.
// The flags, errors and their strings are Core's, bit for bit and letter for letter, so a verdict
// can be compared with Core's engine (python/tests) and a reject reason read as Core's.
//
// Scripts are read as views (std::span) into the decoded transaction's bytes: verifying an input
// copies no script. The per-transaction hashes of BIP143 and BIP341 are computed once
// (PrecomputedTxData) and shared by all of a transaction's inputs.
#pragma once

#include <ibdkit/crypto/sha256.h>
#include <ibdkit/primitives/consensus_constants.h>
#include <ibdkit/primitives/hash.h>
#include <ibdkit/primitives/transaction.h>
#include <ibdkit/script/flags.h>
#include <ibdkit/script/script_error.h>

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <vector>

namespace ibdkit {

// The flags (ScriptFlags, SCRIPT_VERIFY_*): script/flags.h.

/// Which rules a script runs under (Core's SigVersion).
enum class SigVersion {
    BASE = 0,       ///< bare scripts and P2SH redeem scripts
    WITNESS_V0 = 1, ///< P2WPKH and P2WSH (BIP141/143)
    TAPROOT = 2,    ///< witness v1 key path (BIP341)
    TAPSCRIPT = 3,  ///< witness v1 script path, leaf version 0xc0 (BIP342)
};

inline constexpr std::size_t MAX_SCRIPT_ELEMENT_SIZE = 520;
inline constexpr int MAX_OPS_PER_SCRIPT = 201;
// MAX_PUBKEYS_PER_MULTISIG and MAX_SCRIPT_SIZE: primitives/consensus_constants.h (shared with sigop
// counting and the coins compressor).
inline constexpr std::size_t MAX_STACK_SIZE = 1000;
inline constexpr uint32_t LOCKTIME_THRESHOLD = 500000000;
inline constexpr int64_t VALIDATION_WEIGHT_PER_SIGOP_PASSED = 50;
inline constexpr int64_t VALIDATION_WEIGHT_OFFSET = 50;
inline constexpr uint8_t TAPROOT_LEAF_MASK = 0xfe;
inline constexpr uint8_t TAPROOT_LEAF_TAPSCRIPT = 0xc0;
inline constexpr uint8_t ANNEX_TAG = 0x50;
inline constexpr std::size_t TAPROOT_CONTROL_BASE_SIZE = 33;
inline constexpr std::size_t TAPROOT_CONTROL_NODE_SIZE = 32;
inline constexpr std::size_t TAPROOT_CONTROL_MAX_NODE_COUNT = 128;
inline constexpr std::size_t TAPROOT_CONTROL_MAX_SIZE =
    TAPROOT_CONTROL_BASE_SIZE + TAPROOT_CONTROL_NODE_SIZE * TAPROOT_CONTROL_MAX_NODE_COUNT;

/// Signature hash types (the last byte of an ECDSA signature; of a 65-byte Schnorr signature).
enum : uint8_t {
    SIGHASH_DEFAULT = 0, ///< taproot only: ALL, with a 64-byte signature
    SIGHASH_ALL = 1,
    SIGHASH_NONE = 2,
    SIGHASH_SINGLE = 3,
    SIGHASH_ANYONECANPAY = 0x80,
    SIGHASH_OUTPUT_MASK = 3,
    SIGHASH_INPUT_MASK = 0x80,
};

/// What a script's execution carries between its parts (Core's ScriptExecutionData): the tapleaf
/// hash, the last executed OP_CODESEPARATOR, the annex and the validation weight left.
struct ScriptExecutionData {
    bool tapleaf_hash_init{false};
    uint256 tapleaf_hash;
    bool codeseparator_pos_init{false};
    uint32_t codeseparator_pos{0xffffffff}; ///< opcode position of the last executed OP_CODESEPARATOR
    bool annex_init{false};
    bool annex_present{false};
    uint256 annex_hash; ///< single SHA-256 of compact_size(size) || annex
    bool validation_weight_left_init{false};
    int64_t validation_weight_left{0};
};

/// A transaction's hashes that every input's signature hash shares, computed once (Core's
/// PrecomputedTransactionData): BIP143's (double SHA-256) when some input is segwit v0, BIP341's
/// (single SHA-256) when some input spends a witness v1 output. Holds the spent outputs, one per
/// input, which BIP341 signs and which a checker reads for the amount.
///
/// It also holds message prefixes as SHA-256 states, which every signature of a kind hashes alike
/// (docs/sighash.md): legacy SIGHASH_ALL in front of each input (version, input count, the inputs
/// before it; for two or more inputs without a witness), BIP143 SIGHASH_ALL, BIP341
/// SIGHASH_DEFAULT. A signature hash resumes from its prefix instead of hashing it again.
struct PrecomputedTxData {
    uint256 prevouts_single_hash, sequences_single_hash, outputs_single_hash;
    uint256 spent_amounts_single_hash, spent_scripts_single_hash;
    bool bip341_taproot_ready{false};
    /// With bip341_taproot_ready and two or more taproot inputs: the SIGHASH_DEFAULT message's
    /// state before its per-input part (tag, epoch, type, version, lock time, the five hashes).
    Sha256 bip341_default_prefix;
    bool bip341_default_prefix_ready{false};
    uint256 hash_prevouts, hash_sequence, hash_outputs;
    bool bip143_segwit_ready{false};
    /// With bip143_segwit_ready: BIP143's message state after version, hashPrevouts and
    /// hashSequence, which every SIGHASH_ALL signature of the transaction starts with.
    Sha256 bip143_all_prefix;
    std::vector<Sha256> legacy_prefix; ///< one state per input; empty when not worth making
    std::vector<TxOut> spent_outputs;
    bool spent_outputs_ready{false};

    PrecomputedTxData() = default;
    /// Computes what `tx`'s inputs need, replacing whatever an earlier Init left (the object may
    /// be reused). `spent_outputs` is one TxOut per input, in input order,
    /// or empty if unknown (then no BIP341 hashes: a taproot spend fails as Core's does without
    /// them). With `force`, every set is computed whatever the inputs spend (signing, tests).
    void Init(const Transaction& tx, std::vector<TxOut> spent_outputs, bool force = false);
};

/// Checks signatures and lock times for the interpreter (Core's BaseSignatureChecker). The base
/// class accepts nothing: a script that needs a signature or a lock time fails under it.
class SignatureChecker {
public:
    virtual ~SignatureChecker() = default;
    /// `sig` with its hash-type byte; `script_code` the script the signature commits to (after
    /// OP_CODESEPARATOR and, for BASE, FindAndDelete of the signature).
    virtual bool CheckEcdsaSignature(std::span<const uint8_t> sig, std::span<const uint8_t> pubkey,
                                     std::span<const uint8_t> script_code, SigVersion sigversion) const;
    /// `sig` of 64 or 65 bytes, `pubkey` x-only (32 bytes). Sets *error on failure.
    virtual bool CheckSchnorrSignature(std::span<const uint8_t> sig, std::span<const uint8_t> pubkey, SigVersion sigversion,
                                       ScriptExecutionData& execdata, ScriptError* error) const;
    /// The script's lock time (a CScriptNum up to 5 bytes, already known to be ≥ 0).
    virtual bool CheckLockTime(int64_t lock_time) const;
    virtual bool CheckSequence(int64_t sequence) const;
};

/// The checker for input `input` of a real transaction spending `amount` (Core's
/// TransactionSignatureChecker with MissingDataBehavior::FAIL): signatures are verified with
/// libsecp256k1 over Core's signature hashes (script/sighash.h). `txdata` must outlive it; without
/// it, the hashes are computed per call (slow, for tools and tests only).
class TransactionSignatureChecker : public SignatureChecker {
public:
    TransactionSignatureChecker(const Transaction& tx, uint32_t input, Amount amount, const PrecomputedTxData* txdata = nullptr)
        : m_tx(tx), m_input(input), m_amount(amount), m_txdata(txdata)
    {
    }
    bool CheckEcdsaSignature(std::span<const uint8_t> sig, std::span<const uint8_t> pubkey, std::span<const uint8_t> script_code,
                             SigVersion sigversion) const override;
    bool CheckSchnorrSignature(std::span<const uint8_t> sig, std::span<const uint8_t> pubkey, SigVersion sigversion,
                               ScriptExecutionData& execdata, ScriptError* error) const override;
    bool CheckLockTime(int64_t lock_time) const override;
    bool CheckSequence(int64_t sequence) const override;

private:
    /// The last legacy or segwit v0 signature hash with what it was made from. CHECKMULTISIG
    /// tries a signature against key after key, and its signatures usually share the hash type
    /// and script code: each such try reuses the hash (Core's SigHashCache does the same).
    struct SighashCache {
        bool valid{false};
        int32_t hash_type{0};
        SigVersion sigversion{SigVersion::BASE};
        std::vector<uint8_t> script_code;
        uint256 hash;
    };

    const Transaction& m_tx;
    uint32_t m_input;
    Amount m_amount;
    const PrecomputedTxData* m_txdata;
    mutable SighashCache m_sighash_cache;
};

/// Core's CheckSignatureEncoding: the encoding rules that DERSIG, LOW_S and STRICTENC add for an
/// ECDSA signature with its hash type (an empty signature passes).
bool CheckSignatureEncoding(std::span<const uint8_t> sig, ScriptFlags flags, ScriptError* error);

/// A script's stack: byte strings, bottom first.
using ScriptStack = std::vector<std::vector<uint8_t>>;

/// Runs `script` on `stack` (Core's EvalScript). On failure returns false and sets *error (if
/// given); on success *error is SCRIPT_ERR_OK. Work is bounded by the consensus limits whatever the
/// input: no more than MAX_SCRIPT_SIZE bytes of script (outside tapscript), MAX_OPS_PER_SCRIPT
/// counted ops, MAX_STACK_SIZE elements of at most MAX_SCRIPT_ELEMENT_SIZE bytes.
bool EvalScript(ScriptStack& stack, std::span<const uint8_t> script, ScriptFlags flags, const SignatureChecker& checker,
                SigVersion sigversion, ScriptExecutionData& execdata, ScriptError* error = nullptr);
bool EvalScript(ScriptStack& stack, std::span<const uint8_t> script, ScriptFlags flags, const SignatureChecker& checker,
                SigVersion sigversion, ScriptError* error = nullptr);

/// Verifies that `script_sig` and `witness` satisfy `script_pubkey` under `flags` (Core's
/// VerifyScript): P2SH, witness programs v0 and v1, CLEANSTACK and the rest.
bool VerifyScript(std::span<const uint8_t> script_sig, std::span<const uint8_t> script_pubkey, const ScriptWitness* witness,
                  ScriptFlags flags, const SignatureChecker& checker, ScriptError* error = nullptr);

} // namespace ibdkit

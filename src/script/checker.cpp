// src/script/checker.cpp — the signature checkers: the base SignatureChecker, which accepts
// nothing, and TransactionSignatureChecker's signature and lock-time checks (Core's
// GenericTransactionSignatureChecker with MissingDataBehavior::FAIL).
#include "script/interpreter.h"
#include "script/sighash.h"

#include "script/secp.h"

#include <algorithm>
#include <cassert>

namespace ibdkit {

namespace {

constexpr uint32_t SEQUENCE_LOCKTIME_DISABLE_FLAG = 1u << 31;
constexpr uint32_t SEQUENCE_LOCKTIME_TYPE_FLAG = 1u << 22;
constexpr uint32_t SEQUENCE_LOCKTIME_MASK = 0x0000ffff;

} // namespace

bool SignatureChecker::CheckEcdsaSignature(std::span<const uint8_t>, std::span<const uint8_t>, std::span<const uint8_t>,
                                           SigVersion) const
{
    return false;
}

bool SignatureChecker::CheckSchnorrSignature(std::span<const uint8_t>, std::span<const uint8_t>, SigVersion,
                                             ScriptExecutionData&, ScriptError*) const
{
    return false;
}

bool SignatureChecker::CheckLockTime(int64_t) const { return false; }
bool SignatureChecker::CheckSequence(int64_t) const { return false; }

bool TransactionSignatureChecker::CheckLockTime(int64_t lock_time) const
{
    const int64_t tx_lock_time = m_tx.lock_time();
    // Heights compare with heights and times with times.
    if ((tx_lock_time < LOCKTIME_THRESHOLD) != (lock_time < LOCKTIME_THRESHOLD)) return false;
    if (lock_time > tx_lock_time) return false;
    // A final input would let the transaction in whatever its lock time says.
    return m_tx.vin()[m_input].sequence != TxIn::SEQUENCE_FINAL;
}

bool TransactionSignatureChecker::CheckSequence(int64_t sequence) const
{
    const int64_t tx_sequence = m_tx.vin()[m_input].sequence;
    // BIP68 applies from version 2 (compared unsigned, as the field is) and to inputs without the
    // disable flag.
    if (m_tx.version() < 2) return false;
    if (tx_sequence & SEQUENCE_LOCKTIME_DISABLE_FLAG) return false;
    constexpr int64_t mask = SEQUENCE_LOCKTIME_TYPE_FLAG | SEQUENCE_LOCKTIME_MASK;
    const int64_t tx_masked = tx_sequence & mask;
    const int64_t script_masked = sequence & mask;
    // Blocks compare with blocks and time with time.
    if ((tx_masked < SEQUENCE_LOCKTIME_TYPE_FLAG) != (script_masked < SEQUENCE_LOCKTIME_TYPE_FLAG)) return false;
    return script_masked <= tx_masked;
}

bool TransactionSignatureChecker::CheckEcdsaSignature(std::span<const uint8_t> sig, std::span<const uint8_t> pubkey,
                                                      std::span<const uint8_t> script_code, SigVersion sigversion) const
{
    // The hash type is the signature's last byte, read as Core reads it: an unsigned byte widened
    // to the int32 that the legacy and BIP143 messages end with.
    if (sig.empty()) return false;
    const int32_t hash_type = sig.back();
    const std::span<const uint8_t> der = sig.first(sig.size() - 1);
    // A key of a size its header byte does not announce is refused before any hashing, as CPubKey
    // refuses it.
    if (!script_detail::PubKeySizeMatchesHeader(pubkey)) return false;
    // BIP143 signs the amount; a checker made without one (negative) cannot check such a signature.
    if (sigversion == SigVersion::WITNESS_V0 && m_amount < 0) return false;
    SighashCache& cache = m_sighash_cache;
    // The cache compares the script code's bytes, not where they are: a FindAndDelete buffer can
    // be freed and another made at the same address.
    if (!(cache.valid && cache.hash_type == hash_type && cache.sigversion == sigversion &&
          std::equal(script_code.begin(), script_code.end(), cache.script_code.begin(), cache.script_code.end()))) {
        cache.hash = SignatureHash(script_code, m_tx, m_input, hash_type, m_amount, sigversion, m_txdata);
        cache.hash_type = hash_type;
        cache.sigversion = sigversion;
        cache.script_code.assign(script_code.begin(), script_code.end());
        cache.valid = true;
    }
    return script_detail::VerifyEcdsa(pubkey, der, cache.hash);
}

bool TransactionSignatureChecker::CheckSchnorrSignature(std::span<const uint8_t> sig, std::span<const uint8_t> pubkey,
                                                        SigVersion sigversion, ScriptExecutionData& execdata,
                                                        ScriptError* error) const
{
    assert(sigversion == SigVersion::TAPROOT || sigversion == SigVersion::TAPSCRIPT);
    assert(pubkey.size() == 32); // the interpreter only hands 32-byte keys here
    auto fail = [error](ScriptError e) {
        if (error) *error = e;
        return false;
    };
    // An empty signature in tapscript never gets here (it is a clean "false" there); everywhere
    // else every size but 64 and 65 is an error.
    if (sig.size() != 64 && sig.size() != 65) return fail(ScriptError::SCHNORR_SIG_SIZE);
    uint8_t hash_type = SIGHASH_DEFAULT;
    if (sig.size() == 65) {
        hash_type = sig.back();
        sig = sig.first(64);
        // DEFAULT must be implicit (64 bytes): an explicit 0x00 would give one signature two
        // encodings.
        if (hash_type == SIGHASH_DEFAULT) return fail(ScriptError::SCHNORR_SIG_HASHTYPE);
    }
    // BIP341 signs every spent output: without them (no txdata) there is no message to check,
    // and Core answers false without naming an error.
    if (m_txdata == nullptr) return false;
    uint256 sighash;
    if (!SignatureHashSchnorr(sighash, execdata, m_tx, m_input, hash_type, sigversion, *m_txdata)) {
        return fail(ScriptError::SCHNORR_SIG_HASHTYPE);
    }
    if (!script_detail::VerifySchnorr(pubkey, sig, sighash)) return fail(ScriptError::SCHNORR_SIG);
    return true;
}

} // namespace ibdkit

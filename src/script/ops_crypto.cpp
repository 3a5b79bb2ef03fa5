// src/script/ops_crypto.cpp — the hash opcodes, OP_CODESEPARATOR and the signature opcodes
// (CHECKSIG, CHECKSIGVERIFY, CHECKMULTISIG, CHECKMULTISIGVERIFY, tapscript's CHECKSIGADD), with the
// script code a legacy or segwit v0 signature commits to (FindAndDelete).
#include "script/eval_internal.h"

#include <ibdkit/crypto/sha256.h>

#include "crypto/ripemd160.h"

#include <algorithm>

namespace ibdkit::script_detail {

namespace {

/// Core's FindAndDelete: removes every occurrence of `pattern` that starts at an op boundary of
/// `script` (repeatedly, so adjacent copies all go). Returns the count; if `out` is given, writes
/// the remaining script to it.
std::size_t FindAndDelete(View script, View pattern, Bytes* out)
{
    if (pattern.empty()) return 0;
    const uint8_t* const begin = script.data();
    const uint8_t* const end = begin + script.size();
    const uint8_t* pc = begin;
    const uint8_t* kept_from = begin; // start of the bytes not yet copied to *out
    std::size_t found = 0;
    if (out) out->clear();
    while (true) {
        if (out) out->insert(out->end(), kept_from, pc);
        while (std::size_t(end - pc) >= pattern.size() && std::equal(pattern.begin(), pattern.end(), pc)) {
            pc += pattern.size();
            ++found;
        }
        kept_from = pc;
        uint8_t opcode;
        if (!GetScriptOp(pc, end, opcode)) break;
    }
    if (out) out->insert(out->end(), kept_from, end);
    return found;
}

/// The script code for CHECK(MULTI)SIG in BASE and WITNESS_V0: a span of the script from its last
/// executed OP_CODESEPARATOR, or (BASE, after FindAndDelete) a buffer of its own.
class ScriptCode {
public:
    explicit ScriptCode(View code) : m_view(code) {}
    View view() const noexcept { return m_view; }

    /// Removes the push of `sig` (BASE scripts). False with SIG_FINDANDDELETE if found under
    /// CONST_SCRIPTCODE.
    bool DeleteSignature(View sig, ScriptFlags flags, ScriptError* error)
    {
        // Signatures from a script are at most 520 bytes; a caller's initial stack may hold more.
        uint8_t small[MAX_SCRIPT_ELEMENT_SIZE + 5];
        Bytes large;
        uint8_t* pattern = small;
        if (sig.size() > MAX_SCRIPT_ELEMENT_SIZE) {
            large.resize(sig.size() + 5);
            pattern = large.data();
        }
        const std::size_t n = WritePush(pattern, sig);
        const View p(pattern, n);
        if (FindAndDelete(m_view, p, nullptr) == 0) return true;
        if (flags & SCRIPT_VERIFY_CONST_SCRIPTCODE) return Fail(error, ScriptError::SIG_FINDANDDELETE);
        FindAndDelete(m_view, p, &m_spare);
        m_own.swap(m_spare);
        m_view = View(m_own);
        return true;
    }

private:
    View m_view;
    Bytes m_own, m_spare;
};

/// CHECKSIG in tapscript (BIP342). False ends the script; `success` is the signature's verdict.
bool ChecksigTapscript(EvalState& s, View sig, View pubkey, bool& success)
{
    // The order matters for consensus: the budget is charged for every non-empty signature
    // (unknown key types included), an empty key fails even with an empty signature, and a
    // non-empty signature that does not verify fails the script.
    success = !sig.empty();
    if (success) {
        s.execdata.validation_weight_left -= VALIDATION_WEIGHT_PER_SIGOP_PASSED;
        if (s.execdata.validation_weight_left < 0) return s.Fail(ScriptError::TAPSCRIPT_VALIDATION_WEIGHT);
    }
    if (pubkey.empty()) return s.Fail(ScriptError::PUBKEYTYPE);
    if (pubkey.size() == 32) {
        if (success && !s.checker.CheckSchnorrSignature(sig, pubkey, SigVersion::TAPSCRIPT, s.execdata, s.error)) return false;
    } else if (s.flags & SCRIPT_VERIFY_DISCOURAGE_UPGRADABLE_PUBKEYTYPE) {
        return s.Fail(ScriptError::DISCOURAGE_UPGRADABLE_PUBKEYTYPE);
    }
    return true;
}

/// CHECKSIG in BASE and WITNESS_V0 scripts.
bool ChecksigEcdsa(EvalState& s, View sig, View pubkey, bool& success)
{
    ScriptCode script_code(View(s.code_start, s.end));
    if (s.sigversion == SigVersion::BASE && !script_code.DeleteSignature(sig, s.flags, s.error)) return false;
    if (!CheckSignatureEncoding(sig, s.flags, s.error) || !CheckKeyEncoding(pubkey, s.flags, s.sigversion, s.error)) return false;
    success = s.checker.CheckEcdsaSignature(sig, pubkey, script_code.view(), s.sigversion);
    if (!success && (s.flags & SCRIPT_VERIFY_NULLFAIL) && !sig.empty()) return s.Fail(ScriptError::SIG_NULLFAIL);
    return true;
}

/// RIPEMD160, SHA1, SHA256, HASH160, HASH256: the top element replaced by its digest.
bool ExecHashOp(EvalState& s, uint8_t opcode)
{
    if (s.stack.empty()) return s.Fail(ScriptError::INVALID_STACK_OPERATION);
    Bytes& elem = s.Top(1);
    uint8_t digest[32];
    std::size_t size = 32;
    if (opcode == OP_RIPEMD160) {
        Ripemd160().Write(elem).Finalize(digest);
        size = 20;
    } else if (opcode == OP_SHA1) {
        Sha1().Write(elem).Finalize(digest);
        size = 20;
    } else if (opcode == OP_SHA256) {
        Sha256().Write(elem.data(), elem.size()).Finalize(digest);
    } else if (opcode == OP_HASH160) {
        Hash160(elem, digest);
        size = 20;
    } else {
        Sha256dOf(elem, digest);
    }
    elem.assign(digest, digest + size);
    return true;
}

bool ExecChecksig(EvalState& s, uint8_t opcode)
{
    if (s.stack.size() < 2) return s.Fail(ScriptError::INVALID_STACK_OPERATION);
    const View sig = s.Top(2), pubkey = s.Top(1);
    bool success = false;
    if (s.sigversion == SigVersion::TAPSCRIPT) {
        if (!ChecksigTapscript(s, sig, pubkey, success)) return false;
    } else if (!ChecksigEcdsa(s, sig, pubkey, success)) {
        return false;
    }
    s.Pop();
    s.Pop();
    return s.PushVerdict(success, opcode == OP_CHECKSIGVERIFY, ScriptError::CHECKSIGVERIFY);
}

/// (sig n pubkey -- n + success), tapscript only.
bool ExecChecksigAdd(EvalState& s)
{
    if (s.sigversion != SigVersion::TAPSCRIPT) return s.Fail(ScriptError::BAD_OPCODE);
    if (s.stack.size() < 3) return s.Fail(ScriptError::INVALID_STACK_OPERATION);
    int64_t n;
    if (!s.Num(2, n)) return s.Fail(ScriptError::UNKNOWN_ERROR);
    bool success = false;
    if (!ChecksigTapscript(s, s.Top(3), s.Top(1), success)) return false;
    s.Pop();
    s.Pop();
    s.Pop();
    s.PushNum(n + (success ? 1 : 0));
    return true;
}

bool ExecCheckMultisig(EvalState& s, uint8_t opcode)
{
    if (s.sigversion == SigVersion::TAPSCRIPT) return s.Fail(ScriptError::TAPSCRIPT_CHECKMULTISIG);
    // Stack, top first: n_keys, n_keys keys, n_sigs, n_sigs signatures, a dummy element.
    if (s.stack.empty()) return s.Fail(ScriptError::INVALID_STACK_OPERATION);
    int64_t keys64;
    if (!s.Num(1, keys64)) return s.Fail(ScriptError::UNKNOWN_ERROR);
    const int n_keys = ClampToInt(keys64);
    if (n_keys < 0 || n_keys > MAX_PUBKEYS_PER_MULTISIG) return s.Fail(ScriptError::PUBKEY_COUNT);
    s.op_count += n_keys;
    if (s.op_count > MAX_OPS_PER_SCRIPT) return s.Fail(ScriptError::OP_COUNT);
    const std::size_t first_key = 2;                              // depth of the first key
    const std::size_t sigs_at = first_key + std::size_t(n_keys); // depth of n_sigs
    if (s.stack.size() < sigs_at) return s.Fail(ScriptError::INVALID_STACK_OPERATION);
    int64_t sigs64;
    if (!s.Num(sigs_at, sigs64)) return s.Fail(ScriptError::UNKNOWN_ERROR);
    const int n_sigs = ClampToInt(sigs64);
    if (n_sigs < 0 || n_sigs > n_keys) return s.Fail(ScriptError::SIG_COUNT);
    const std::size_t first_sig = sigs_at + 1;
    const std::size_t dummy_at = first_sig + std::size_t(n_sigs);
    if (s.stack.size() < dummy_at) return s.Fail(ScriptError::INVALID_STACK_OPERATION);

    ScriptCode script_code(View(s.code_start, s.end));
    if (s.sigversion == SigVersion::BASE) {
        for (int k = 0; k < n_sigs; ++k) {
            if (!script_code.DeleteSignature(s.Top(first_sig + std::size_t(k)), s.flags, s.error)) return false;
        }
    }

    // Signatures must match keys in order; a key may be skipped, a signature not.
    bool success = true;
    std::size_t sig_depth = first_sig, key_depth = first_key;
    int sigs_left = n_sigs, keys_left = n_keys;
    while (success && sigs_left > 0) {
        const View sig = s.Top(sig_depth), key = s.Top(key_depth);
        if (!CheckSignatureEncoding(sig, s.flags, s.error) || !CheckKeyEncoding(key, s.flags, s.sigversion, s.error)) return false;
        if (s.checker.CheckEcdsaSignature(sig, key, script_code.view(), s.sigversion)) {
            ++sig_depth;
            --sigs_left;
        }
        ++key_depth;
        --keys_left;
        if (sigs_left > keys_left) success = false;
    }

    // NULLFAIL: after a failure every signature must be empty.
    if (!success && (s.flags & SCRIPT_VERIFY_NULLFAIL)) {
        for (std::size_t d = first_sig; d < dummy_at; ++d) {
            if (!s.Top(d).empty()) return s.Fail(ScriptError::SIG_NULLFAIL);
        }
    }
    // The dummy element (an off-by-one of the original code) must be empty under NULLDUMMY.
    if ((s.flags & SCRIPT_VERIFY_NULLDUMMY) && !s.Top(dummy_at).empty()) return s.Fail(ScriptError::SIG_NULLDUMMY);
    s.stack.resize(s.stack.size() - dummy_at);
    return s.PushVerdict(success, opcode == OP_CHECKMULTISIGVERIFY, ScriptError::CHECKMULTISIGVERIFY);
}

} // namespace

bool ExecCryptoOp(EvalState& s, uint8_t opcode, const uint8_t* pc, uint32_t opcode_pos)
{
    switch (opcode) {
    case OP_RIPEMD160: case OP_SHA1: case OP_SHA256: case OP_HASH160: case OP_HASH256:
        return ExecHashOp(s, opcode);
    case OP_CODESEPARATOR:
        // Executed ones only: the signed code starts after it, and tapscript signs its position.
        s.code_start = pc;
        s.execdata.codeseparator_pos = opcode_pos;
        return true;
    case OP_CHECKSIG:
    case OP_CHECKSIGVERIFY:
        return ExecChecksig(s, opcode);
    case OP_CHECKSIGADD:
        return ExecChecksigAdd(s);
    case OP_CHECKMULTISIG:
    case OP_CHECKMULTISIGVERIFY:
        return ExecCheckMultisig(s, opcode);
    default:
        return s.Fail(ScriptError::BAD_OPCODE);
    }
}

} // namespace ibdkit::script_detail

// The script interpreter (include/ibdkit/script/interpreter.h): EvalScript, VerifyScript and the
// witness programs, the signature-encoding rules, the lock-time checks and the base checker.
//
// Behaviour follows Core's script/interpreter.cpp rule for rule (it is the specification); the
// code is organised around spans of the script's bytes instead:
//  - a script is walked in place with GetScriptOp; pushes copy their bytes onto the stack, nothing
//    else is copied. The script code a signature commits to is a span of the running script,
//    except in a BASE script whose signature occurs in it (FindAndDelete), which is the only case
//    that builds a new buffer.
//  - numbers (Core's CScriptNum) are decoded to int64 by ReadNum, which refuses over-long and,
//    with MINIMALDATA, non-minimal encodings; a refusal is Core's scriptnum_error, which Core's
//    EvalScript reports as UNKNOWN_ERROR, as here.
//  - the IF/ELSE/ENDIF state is two integers (depth and the depth of the first false branch).
//
// Where Core asserts on a caller's mistake (EvalScript with SigVersion::TAPROOT, CLEANSTACK without
// P2SH and WITNESS), this code answers without aborting: UNKNOWN_ERROR for the former, the plain
// stack-size rule for the latter. Consensus and policy callers never pass such arguments.
#include <ibdkit/script/interpreter.h>

#include <ibdkit/crypto/ripemd160.h>
#include <ibdkit/crypto/sha256.h>
#include <ibdkit/primitives/script_ops.h>

#include "script/secp.h"

#include <algorithm>
#include <array>
#include <cstring>
#include <string_view>

namespace ibdkit {

namespace {

using View = std::span<const uint8_t>;
using Bytes = std::vector<uint8_t>;

// Opcodes that script_ops.h does not name (values as in Core's opcodetype).
enum : uint8_t {
    OP_NOP = 0x61,
    OP_VER = 0x62,
    OP_IF = 0x63,
    OP_NOTIF = 0x64,
    OP_VERIF = 0x65,
    OP_VERNOTIF = 0x66,
    OP_ELSE = 0x67,
    OP_ENDIF = 0x68,
    OP_VERIFY = 0x69,
    OP_TOALTSTACK = 0x6b,
    OP_FROMALTSTACK = 0x6c,
    OP_2DROP = 0x6d,
    OP_2DUP = 0x6e,
    OP_3DUP = 0x6f,
    OP_2OVER = 0x70,
    OP_2ROT = 0x71,
    OP_2SWAP = 0x72,
    OP_IFDUP = 0x73,
    OP_DEPTH = 0x74,
    OP_DROP = 0x75,
    OP_NIP = 0x77,
    OP_OVER = 0x78,
    OP_PICK = 0x79,
    OP_ROLL = 0x7a,
    OP_ROT = 0x7b,
    OP_SWAP = 0x7c,
    OP_TUCK = 0x7d,
    OP_CAT = 0x7e,
    OP_SUBSTR = 0x7f,
    OP_LEFT = 0x80,
    OP_RIGHT = 0x81,
    OP_SIZE = 0x82,
    OP_INVERT = 0x83,
    OP_AND = 0x84,
    OP_OR = 0x85,
    OP_XOR = 0x86,
    OP_RESERVED1 = 0x89,
    OP_RESERVED2 = 0x8a,
    OP_1ADD = 0x8b,
    OP_1SUB = 0x8c,
    OP_2MUL = 0x8d,
    OP_2DIV = 0x8e,
    OP_NEGATE = 0x8f,
    OP_ABS = 0x90,
    OP_NOT = 0x91,
    OP_0NOTEQUAL = 0x92,
    OP_ADD = 0x93,
    OP_SUB = 0x94,
    OP_MUL = 0x95,
    OP_DIV = 0x96,
    OP_MOD = 0x97,
    OP_LSHIFT = 0x98,
    OP_RSHIFT = 0x99,
    OP_BOOLAND = 0x9a,
    OP_BOOLOR = 0x9b,
    OP_NUMEQUAL = 0x9c,
    OP_NUMEQUALVERIFY = 0x9d,
    OP_NUMNOTEQUAL = 0x9e,
    OP_LESSTHAN = 0x9f,
    OP_GREATERTHAN = 0xa0,
    OP_LESSTHANOREQUAL = 0xa1,
    OP_GREATERTHANOREQUAL = 0xa2,
    OP_MIN = 0xa3,
    OP_MAX = 0xa4,
    OP_WITHIN = 0xa5,
    OP_RIPEMD160 = 0xa6,
    OP_SHA1 = 0xa7,
    OP_SHA256 = 0xa8,
    OP_HASH256 = 0xaa,
    OP_CODESEPARATOR = 0xab,
    OP_NOP1 = 0xb0,
    OP_CHECKLOCKTIMEVERIFY = 0xb1,
    OP_CHECKSEQUENCEVERIFY = 0xb2,
    OP_NOP4 = 0xb3,
    OP_NOP10 = 0xb9,
    OP_CHECKSIGADD = 0xba,
};

constexpr uint32_t SEQUENCE_LOCKTIME_DISABLE_FLAG = 1u << 31;
constexpr uint32_t SEQUENCE_LOCKTIME_TYPE_FLAG = 1u << 22;
constexpr uint32_t SEQUENCE_LOCKTIME_MASK = 0x0000ffff;

bool Fail(ScriptError* error, ScriptError e)
{
    if (error) *error = e;
    return false;
}
bool Succeed(ScriptError* error)
{
    if (error) *error = ScriptError::OK;
    return true;
}

// ---- numbers and truth --------------------------------------------------------------------------

constexpr std::size_t NUM_SIZE = 4;      // operands of arithmetic
constexpr std::size_t LOCKTIME_SIZE = 5; // operands of CHECKLOCKTIMEVERIFY / CHECKSEQUENCEVERIFY

/// Decodes a little-endian sign-magnitude number of at most `max_size` bytes; with `minimal`, the
/// encoding must be the shortest (no trailing 0x00 / 0x80 byte that the byte before it does not
/// need for its sign bit). False where Core's CScriptNum throws.
bool ReadNum(View v, bool minimal, std::size_t max_size, int64_t& out) noexcept
{
    if (v.size() > max_size) return false;
    if (v.empty()) {
        out = 0;
        return true;
    }
    const uint8_t last = v.back();
    if (minimal && (last & 0x7f) == 0 && (v.size() == 1 || (v[v.size() - 2] & 0x80) == 0)) return false;
    uint64_t magnitude = 0;
    for (std::size_t i = 0; i < v.size(); ++i) magnitude |= uint64_t(v[i]) << (8 * i);
    if (last & 0x80) {
        magnitude &= ~(uint64_t(0x80) << (8 * (v.size() - 1)));
        out = -int64_t(magnitude);
    } else {
        out = int64_t(magnitude);
    }
    return true;
}

/// The shortest encoding of `value` (|value| < 2^62 here: operands are at most 5 bytes).
void WriteNum(Bytes& out, int64_t value)
{
    uint8_t buf[9];
    std::size_t n = 0;
    if (value != 0) {
        const bool negative = value < 0;
        uint64_t magnitude = negative ? 0 - uint64_t(value) : uint64_t(value);
        while (magnitude) {
            buf[n++] = uint8_t(magnitude);
            magnitude >>= 8;
        }
        if (buf[n - 1] & 0x80) {
            buf[n++] = negative ? 0x80 : 0x00;
        } else if (negative) {
            buf[n - 1] |= 0x80;
        }
    }
    out.assign(buf, buf + n);
}

/// Core's CastToBool: any non-zero byte, except a lone sign bit at the end (negative zero).
bool IsTrue(View v) noexcept
{
    for (std::size_t i = 0; i < v.size(); ++i) {
        if (v[i] != 0) return !(i + 1 == v.size() && v[i] == 0x80);
    }
    return false;
}

/// CScriptNum::getint: the value clamped to int's range.
int ClampToInt(int64_t v) noexcept
{
    if (v > INT32_MAX) return INT32_MAX;
    if (v < INT32_MIN) return INT32_MIN;
    return int(v);
}

/// MINIMALDATA's rule for a push: the smallest opcode that pushes these bytes.
bool IsMinimalPush(View data, uint8_t opcode) noexcept
{
    const std::size_t n = data.size();
    if (n == 0) return opcode == OP_0;
    if (n == 1 && data[0] >= 1 && data[0] <= 16) return opcode == OP_1 + (data[0] - 1);
    if (n == 1 && data[0] == 0x81) return opcode == OP_1NEGATE;
    if (n <= 75) return opcode == n;
    if (n <= 255) return opcode == OP_PUSHDATA1;
    if (n <= 65535) return opcode == OP_PUSHDATA2;
    return true;
}

/// Writes the push of `data` (the shortest PUSHDATA form, as Core's `CScript() << data`) to `out`,
/// returning the number of bytes (at most 5 + data.size()).
std::size_t WritePush(uint8_t* out, View data) noexcept
{
    std::size_t n = 0;
    const std::size_t size = data.size();
    if (size < OP_PUSHDATA1) {
        out[n++] = uint8_t(size);
    } else if (size <= 0xff) {
        out[n++] = OP_PUSHDATA1;
        out[n++] = uint8_t(size);
    } else if (size <= 0xffff) {
        out[n++] = OP_PUSHDATA2;
        out[n++] = uint8_t(size);
        out[n++] = uint8_t(size >> 8);
    } else {
        out[n++] = OP_PUSHDATA4;
        for (int i = 0; i < 4; ++i) out[n++] = uint8_t(size >> (8 * i));
    }
    if (size) std::memcpy(out + n, data.data(), size);
    return n + size;
}

// ---- signature and key encodings ----------------------------------------------------------------

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

bool CheckKeyEncoding(View key, ScriptFlags flags, SigVersion sigversion, ScriptError* error)
{
    if ((flags & SCRIPT_VERIFY_STRICTENC) && !IsCompressedOrUncompressedKey(key)) return Fail(error, ScriptError::PUBKEYTYPE);
    if ((flags & SCRIPT_VERIFY_WITNESS_PUBKEYTYPE) && sigversion == SigVersion::WITNESS_V0 && !IsCompressedKey(key)) {
        return Fail(error, ScriptError::WITNESS_PUBKEYTYPE);
    }
    return true;
}

// ---- script code -------------------------------------------------------------------------------

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
        uint8_t pattern[MAX_SCRIPT_ELEMENT_SIZE + 5];
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

// ---- the condition stack ------------------------------------------------------------------------

/// The IF/NOTIF/ELSE/ENDIF nesting as its depth and the depth of the outermost false branch:
/// whether to execute needs nothing else (Core's ConditionStack idea).
class Conditions {
public:
    bool Empty() const noexcept { return m_depth == 0; }
    bool AllTrue() const noexcept { return m_first_false == NONE; }
    void Push(bool value) noexcept
    {
        if (!value && m_first_false == NONE) m_first_false = m_depth;
        ++m_depth;
    }
    void Pop() noexcept
    {
        --m_depth;
        if (m_first_false == m_depth) m_first_false = NONE;
    }
    void ToggleTop() noexcept
    {
        // Only the outermost false branch is observable: flipping it, or making the top the first
        // false one, changes the answer; flipping anything nested inside a false branch does not.
        if (m_first_false == NONE) {
            m_first_false = m_depth - 1;
        } else if (m_first_false == m_depth - 1) {
            m_first_false = NONE;
        }
    }

private:
    static constexpr std::size_t NONE = SIZE_MAX;
    std::size_t m_depth{0};
    std::size_t m_first_false{NONE};
};

bool IsDisabledOpcode(uint8_t op) noexcept
{
    switch (op) {
    case OP_CAT: case OP_SUBSTR: case OP_LEFT: case OP_RIGHT: case OP_INVERT: case OP_AND: case OP_OR: case OP_XOR:
    case OP_2MUL: case OP_2DIV: case OP_MUL: case OP_DIV: case OP_MOD: case OP_LSHIFT: case OP_RSHIFT:
        return true;
    default:
        return false;
    }
}

/// BIP342's OP_SUCCESSx opcodes.
bool IsOpSuccess(uint8_t op) noexcept
{
    return op == 0x50 || op == 0x62 || (op >= 0x7e && op <= 0x81) || (op >= 0x83 && op <= 0x86) ||
           (op >= 0x89 && op <= 0x8a) || (op >= 0x8d && op <= 0x8e) || (op >= 0x95 && op <= 0x99) ||
           (op >= 0xbb && op <= 0xfe);
}

// ---- signature checks -------------------------------------------------------------------------

/// CHECKSIG in tapscript (BIP342). False ends the script; `success` is the signature's verdict.
bool ChecksigTapscript(View sig, View pubkey, ScriptExecutionData& execdata, ScriptFlags flags,
                       const SignatureChecker& checker, ScriptError* error, bool& success)
{
    // The order matters for consensus: the budget is charged for every non-empty signature
    // (unknown key types included), an empty key fails even with an empty signature, and a
    // non-empty signature that does not verify fails the script.
    success = !sig.empty();
    if (success) {
        execdata.validation_weight_left -= VALIDATION_WEIGHT_PER_SIGOP_PASSED;
        if (execdata.validation_weight_left < 0) return Fail(error, ScriptError::TAPSCRIPT_VALIDATION_WEIGHT);
    }
    if (pubkey.empty()) return Fail(error, ScriptError::PUBKEYTYPE);
    if (pubkey.size() == 32) {
        if (success && !checker.CheckSchnorrSignature(sig, pubkey, SigVersion::TAPSCRIPT, execdata, error)) return false;
    } else if (flags & SCRIPT_VERIFY_DISCOURAGE_UPGRADABLE_PUBKEYTYPE) {
        return Fail(error, ScriptError::DISCOURAGE_UPGRADABLE_PUBKEYTYPE);
    }
    return true;
}

/// CHECKSIG in BASE and WITNESS_V0 scripts.
bool ChecksigEcdsa(View sig, View pubkey, View code, ScriptFlags flags, const SignatureChecker& checker,
                   SigVersion sigversion, ScriptError* error, bool& success)
{
    ScriptCode script_code(code);
    if (sigversion == SigVersion::BASE && !script_code.DeleteSignature(sig, flags, error)) return false;
    if (!CheckSignatureEncoding(sig, flags, error) || !CheckKeyEncoding(pubkey, flags, sigversion, error)) return false;
    success = checker.CheckEcdsaSignature(sig, pubkey, script_code.view(), sigversion);
    if (!success && (flags & SCRIPT_VERIFY_NULLFAIL) && !sig.empty()) return Fail(error, ScriptError::SIG_NULLFAIL);
    return true;
}

// ---- hashing helpers ----------------------------------------------------------------------------

/// BIP340's tagged hash: SHA-256 preceded by SHA-256(tag) twice.
Sha256 TaggedHasher(std::string_view tag)
{
    uint8_t tag_hash[32];
    Sha256().Write(std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(tag.data()), tag.size())).Finalize(tag_hash);
    Sha256 h;
    h.Write(tag_hash, 32).Write(tag_hash, 32);
    return h;
}

void WriteCompactSizeTo(Sha256& h, uint64_t n)
{
    uint8_t buf[9];
    std::size_t len = 0;
    if (n < 253) {
        buf[len++] = uint8_t(n);
    } else if (n <= 0xffff) {
        buf[len++] = 253;
        for (int i = 0; i < 2; ++i) buf[len++] = uint8_t(n >> (8 * i));
    } else if (n <= 0xffffffff) {
        buf[len++] = 254;
        for (int i = 0; i < 4; ++i) buf[len++] = uint8_t(n >> (8 * i));
    } else {
        buf[len++] = 255;
        for (int i = 0; i < 8; ++i) buf[len++] = uint8_t(n >> (8 * i));
    }
    h.Write(buf, len);
}

uint256 Finish(Sha256& h)
{
    uint256 out;
    h.Finalize(out.data());
    return out;
}

uint64_t CompactSizeLength(uint64_t n) noexcept
{
    return n < 253 ? 1 : n <= 0xffff ? 3 : n <= 0xffffffff ? 5 : 9;
}

} // namespace

// ---- public helpers -----------------------------------------------------------------------------

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

// ---- EvalScript ---------------------------------------------------------------------------------

bool EvalScript(ScriptStack& stack, std::span<const uint8_t> script, ScriptFlags flags, const SignatureChecker& checker,
                SigVersion sigversion, ScriptExecutionData& execdata, ScriptError* error)
{
    if (error) *error = ScriptError::UNKNOWN_ERROR;
    if (sigversion == SigVersion::TAPROOT) return false; // key paths have no script (Core asserts)
    const bool legacy_limits = sigversion == SigVersion::BASE || sigversion == SigVersion::WITNESS_V0;
    if (legacy_limits && script.size() > MAX_SCRIPT_SIZE) return Fail(error, ScriptError::SCRIPT_SIZE);

    const uint8_t* pc = script.data();
    const uint8_t* const end = pc + script.size();
    const uint8_t* code_start = pc; // after the last executed OP_CODESEPARATOR
    const bool minimal = (flags & SCRIPT_VERIFY_MINIMALDATA) != 0;
    int op_count = 0;
    uint32_t opcode_pos = 0;
    execdata.codeseparator_pos = 0xffffffff;
    execdata.codeseparator_pos_init = true;

    Conditions conditions;
    ScriptStack altstack;
    Bytes num_buf;
    static const Bytes FALSE_BYTES;
    static const Bytes TRUE_BYTES{1};

    // Element i from the top (1 = top); callers check the depth first.
    auto top = [&stack](std::size_t i) -> Bytes& { return stack[stack.size() - i]; };
    auto pop = [&stack]() { stack.pop_back(); };
    auto num = [&](std::size_t i, int64_t& out) { return ReadNum(top(i), minimal, NUM_SIZE, out); };
    auto push_num = [&](int64_t v) {
        WriteNum(num_buf, v);
        stack.push_back(num_buf);
    };
    auto push_bool = [&](bool v) { stack.push_back(v ? TRUE_BYTES : FALSE_BYTES); };

    for (; pc < end; ++opcode_pos) {
        const bool executing = conditions.AllTrue();
        uint8_t opcode;
        View data;
        if (!GetScriptOp(pc, end, opcode, &data)) return Fail(error, ScriptError::BAD_OPCODE);
        if (data.size() > MAX_SCRIPT_ELEMENT_SIZE) return Fail(error, ScriptError::PUSH_SIZE);
        // OP_RESERVED (below OP_16) is the one non-push that is not counted.
        if (legacy_limits && opcode > OP_16 && ++op_count > MAX_OPS_PER_SCRIPT) return Fail(error, ScriptError::OP_COUNT);
        // These fail wherever they appear, executed or not (CVE-2010-5137).
        if (IsDisabledOpcode(opcode)) return Fail(error, ScriptError::DISABLED_OPCODE);
        if (opcode == OP_CODESEPARATOR && sigversion == SigVersion::BASE && (flags & SCRIPT_VERIFY_CONST_SCRIPTCODE)) {
            return Fail(error, ScriptError::OP_CODESEPARATOR);
        }

        if (opcode <= OP_PUSHDATA4) {
            if (executing) {
                if (minimal && !IsMinimalPush(data, opcode)) return Fail(error, ScriptError::MINIMALDATA);
                stack.emplace_back(data.begin(), data.end());
            }
        } else if (executing || (opcode >= OP_IF && opcode <= OP_ENDIF)) {
            switch (opcode) {
            case OP_1NEGATE:
            case OP_1: case OP_1 + 1: case OP_1 + 2: case OP_1 + 3: case OP_1 + 4: case OP_1 + 5: case OP_1 + 6:
            case OP_1 + 7: case OP_1 + 8: case OP_1 + 9: case OP_1 + 10: case OP_1 + 11: case OP_1 + 12:
            case OP_1 + 13: case OP_1 + 14: case OP_16:
                push_num(int64_t(opcode) - (OP_1 - 1));
                break;

            // ---- control
            case OP_NOP:
                break;

            case OP_CHECKLOCKTIMEVERIFY:
            case OP_CHECKSEQUENCEVERIFY: {
                const bool is_cltv = opcode == OP_CHECKLOCKTIMEVERIFY;
                // Before their soft forks these are NOP2 and NOP3 (and not discouraged).
                if (!(flags & (is_cltv ? SCRIPT_VERIFY_CHECKLOCKTIMEVERIFY : SCRIPT_VERIFY_CHECKSEQUENCEVERIFY))) break;
                if (stack.empty()) return Fail(error, ScriptError::INVALID_STACK_OPERATION);
                // Five bytes: lock times and sequences are unsigned 32-bit values.
                int64_t value;
                if (!ReadNum(top(1), minimal, LOCKTIME_SIZE, value)) return Fail(error, ScriptError::UNKNOWN_ERROR);
                if (value < 0) return Fail(error, ScriptError::NEGATIVE_LOCKTIME);
                if (is_cltv) {
                    if (!checker.CheckLockTime(value)) return Fail(error, ScriptError::UNSATISFIED_LOCKTIME);
                } else {
                    // The disable flag in the operand leaves room for future soft forks: a NOP.
                    if (value & SEQUENCE_LOCKTIME_DISABLE_FLAG) break;
                    if (!checker.CheckSequence(value)) return Fail(error, ScriptError::UNSATISFIED_LOCKTIME);
                }
                break;
            }

            case OP_NOP1: case OP_NOP4: case OP_NOP4 + 1: case OP_NOP4 + 2: case OP_NOP4 + 3: case OP_NOP4 + 4:
            case OP_NOP4 + 5: case OP_NOP10:
                if (flags & SCRIPT_VERIFY_DISCOURAGE_UPGRADABLE_NOPS) return Fail(error, ScriptError::DISCOURAGE_UPGRADABLE_NOPS);
                break;

            case OP_IF:
            case OP_NOTIF: {
                bool value = false;
                if (executing) {
                    if (stack.empty()) return Fail(error, ScriptError::UNBALANCED_CONDITIONAL);
                    const Bytes& cond = top(1);
                    const bool minimal_form = cond.empty() || (cond.size() == 1 && cond[0] == 1);
                    // Consensus in tapscript; policy (MINIMALIF) for witness v0.
                    if (sigversion == SigVersion::TAPSCRIPT && !minimal_form) return Fail(error, ScriptError::TAPSCRIPT_MINIMALIF);
                    if (sigversion == SigVersion::WITNESS_V0 && (flags & SCRIPT_VERIFY_MINIMALIF) && !minimal_form) {
                        return Fail(error, ScriptError::MINIMALIF);
                    }
                    value = IsTrue(cond) != (opcode == OP_NOTIF);
                    pop();
                }
                conditions.Push(value);
                break;
            }

            case OP_ELSE:
                if (conditions.Empty()) return Fail(error, ScriptError::UNBALANCED_CONDITIONAL);
                conditions.ToggleTop();
                break;

            case OP_ENDIF:
                if (conditions.Empty()) return Fail(error, ScriptError::UNBALANCED_CONDITIONAL);
                conditions.Pop();
                break;

            case OP_VERIFY:
                if (stack.empty()) return Fail(error, ScriptError::INVALID_STACK_OPERATION);
                if (!IsTrue(top(1))) return Fail(error, ScriptError::VERIFY);
                pop();
                break;

            case OP_RETURN:
                return Fail(error, ScriptError::OP_RETURN);

            // ---- stack
            case OP_TOALTSTACK:
                if (stack.empty()) return Fail(error, ScriptError::INVALID_STACK_OPERATION);
                altstack.push_back(std::move(top(1)));
                pop();
                break;

            case OP_FROMALTSTACK:
                if (altstack.empty()) return Fail(error, ScriptError::INVALID_ALTSTACK_OPERATION);
                stack.push_back(std::move(altstack.back()));
                altstack.pop_back();
                break;

            case OP_2DROP:
                if (stack.size() < 2) return Fail(error, ScriptError::INVALID_STACK_OPERATION);
                pop();
                pop();
                break;

            case OP_2DUP:
            case OP_3DUP:
            case OP_2OVER: {
                // Copies `count` elements starting `depth` from the top onto the top.
                const std::size_t count = opcode == OP_3DUP ? 3 : 2;
                const std::size_t depth = opcode == OP_2OVER ? 4 : count;
                if (stack.size() < depth) return Fail(error, ScriptError::INVALID_STACK_OPERATION);
                for (std::size_t k = 0; k < count; ++k) stack.push_back(Bytes(top(depth)));
                break;
            }

            case OP_2ROT: {
                if (stack.size() < 6) return Fail(error, ScriptError::INVALID_STACK_OPERATION);
                // x1 x2 x3 x4 x5 x6 -> x3 x4 x5 x6 x1 x2
                const auto first = stack.end() - 6;
                std::rotate(first, first + 2, stack.end());
                break;
            }

            case OP_2SWAP:
                if (stack.size() < 4) return Fail(error, ScriptError::INVALID_STACK_OPERATION);
                std::swap(top(4), top(2));
                std::swap(top(3), top(1));
                break;

            case OP_IFDUP:
                if (stack.empty()) return Fail(error, ScriptError::INVALID_STACK_OPERATION);
                if (IsTrue(top(1))) stack.push_back(Bytes(top(1)));
                break;

            case OP_DEPTH:
                push_num(int64_t(stack.size()));
                break;

            case OP_DROP:
                if (stack.empty()) return Fail(error, ScriptError::INVALID_STACK_OPERATION);
                pop();
                break;

            case OP_DUP:
                if (stack.empty()) return Fail(error, ScriptError::INVALID_STACK_OPERATION);
                stack.push_back(Bytes(top(1)));
                break;

            case OP_NIP:
                if (stack.size() < 2) return Fail(error, ScriptError::INVALID_STACK_OPERATION);
                stack.erase(stack.end() - 2);
                break;

            case OP_OVER:
                if (stack.size() < 2) return Fail(error, ScriptError::INVALID_STACK_OPERATION);
                stack.push_back(Bytes(top(2)));
                break;

            case OP_PICK:
            case OP_ROLL: {
                // (xn ... x2 x1 x0 n -- xn ... x2 x1 x0 xn), ROLL moves instead of copying.
                if (stack.size() < 2) return Fail(error, ScriptError::INVALID_STACK_OPERATION);
                int64_t n64;
                if (!num(1, n64)) return Fail(error, ScriptError::UNKNOWN_ERROR);
                const int n = ClampToInt(n64);
                pop();
                if (n < 0 || std::size_t(n) >= stack.size()) return Fail(error, ScriptError::INVALID_STACK_OPERATION);
                const auto it = stack.end() - 1 - n;
                if (opcode == OP_PICK) {
                    stack.push_back(Bytes(*it));
                } else {
                    std::rotate(it, it + 1, stack.end());
                }
                break;
            }

            case OP_ROT:
                // x1 x2 x3 -> x2 x3 x1
                if (stack.size() < 3) return Fail(error, ScriptError::INVALID_STACK_OPERATION);
                std::rotate(stack.end() - 3, stack.end() - 2, stack.end());
                break;

            case OP_SWAP:
                if (stack.size() < 2) return Fail(error, ScriptError::INVALID_STACK_OPERATION);
                std::swap(top(2), top(1));
                break;

            case OP_TUCK:
                // x1 x2 -> x2 x1 x2
                if (stack.size() < 2) return Fail(error, ScriptError::INVALID_STACK_OPERATION);
                stack.insert(stack.end() - 2, Bytes(top(1)));
                break;

            case OP_SIZE:
                if (stack.empty()) return Fail(error, ScriptError::INVALID_STACK_OPERATION);
                push_num(int64_t(top(1).size()));
                break;

            // ---- bitwise
            case OP_EQUAL:
            case OP_EQUALVERIFY: {
                if (stack.size() < 2) return Fail(error, ScriptError::INVALID_STACK_OPERATION);
                const bool equal = top(2) == top(1);
                pop();
                pop();
                push_bool(equal);
                if (opcode == OP_EQUALVERIFY) {
                    if (!equal) return Fail(error, ScriptError::EQUALVERIFY);
                    pop();
                }
                break;
            }

            // ---- arithmetic
            case OP_1ADD: case OP_1SUB: case OP_NEGATE: case OP_ABS: case OP_NOT: case OP_0NOTEQUAL: {
                if (stack.empty()) return Fail(error, ScriptError::INVALID_STACK_OPERATION);
                int64_t a;
                if (!num(1, a)) return Fail(error, ScriptError::UNKNOWN_ERROR);
                int64_t r = 0;
                switch (opcode) {
                case OP_1ADD: r = a + 1; break;
                case OP_1SUB: r = a - 1; break;
                case OP_NEGATE: r = -a; break;
                case OP_ABS: r = a < 0 ? -a : a; break;
                case OP_NOT: r = a == 0; break;
                default: r = a != 0; break; // OP_0NOTEQUAL
                }
                pop();
                push_num(r);
                break;
            }

            case OP_ADD: case OP_SUB: case OP_BOOLAND: case OP_BOOLOR: case OP_NUMEQUAL: case OP_NUMEQUALVERIFY:
            case OP_NUMNOTEQUAL: case OP_LESSTHAN: case OP_GREATERTHAN: case OP_LESSTHANOREQUAL:
            case OP_GREATERTHANOREQUAL: case OP_MIN: case OP_MAX: {
                if (stack.size() < 2) return Fail(error, ScriptError::INVALID_STACK_OPERATION);
                int64_t a, b;
                if (!num(2, a) || !num(1, b)) return Fail(error, ScriptError::UNKNOWN_ERROR);
                int64_t r = 0;
                switch (opcode) {
                case OP_ADD: r = a + b; break;
                case OP_SUB: r = a - b; break;
                case OP_BOOLAND: r = a != 0 && b != 0; break;
                case OP_BOOLOR: r = a != 0 || b != 0; break;
                case OP_NUMEQUAL: case OP_NUMEQUALVERIFY: r = a == b; break;
                case OP_NUMNOTEQUAL: r = a != b; break;
                case OP_LESSTHAN: r = a < b; break;
                case OP_GREATERTHAN: r = a > b; break;
                case OP_LESSTHANOREQUAL: r = a <= b; break;
                case OP_GREATERTHANOREQUAL: r = a >= b; break;
                case OP_MIN: r = std::min(a, b); break;
                default: r = std::max(a, b); break; // OP_MAX
                }
                pop();
                pop();
                push_num(r);
                if (opcode == OP_NUMEQUALVERIFY) {
                    if (!IsTrue(top(1))) return Fail(error, ScriptError::NUMEQUALVERIFY);
                    pop();
                }
                break;
            }

            case OP_WITHIN: {
                // (x min max -- min <= x < max)
                if (stack.size() < 3) return Fail(error, ScriptError::INVALID_STACK_OPERATION);
                int64_t x, lo, hi;
                if (!num(3, x) || !num(2, lo) || !num(1, hi)) return Fail(error, ScriptError::UNKNOWN_ERROR);
                pop();
                pop();
                pop();
                push_bool(lo <= x && x < hi);
                break;
            }

            // ---- crypto
            case OP_RIPEMD160: case OP_SHA1: case OP_SHA256: case OP_HASH160: case OP_HASH256: {
                if (stack.empty()) return Fail(error, ScriptError::INVALID_STACK_OPERATION);
                Bytes& elem = top(1);
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
                break;
            }

            case OP_CODESEPARATOR:
                // Executed ones only: the signed code starts after it, and tapscript signs its position.
                code_start = pc;
                execdata.codeseparator_pos = opcode_pos;
                break;

            case OP_CHECKSIG:
            case OP_CHECKSIGVERIFY: {
                if (stack.size() < 2) return Fail(error, ScriptError::INVALID_STACK_OPERATION);
                const View sig = top(2), pubkey = top(1);
                bool success = false;
                if (sigversion == SigVersion::TAPSCRIPT) {
                    if (!ChecksigTapscript(sig, pubkey, execdata, flags, checker, error, success)) return false;
                } else if (!ChecksigEcdsa(sig, pubkey, View(code_start, end), flags, checker, sigversion, error, success)) {
                    return false;
                }
                pop();
                pop();
                push_bool(success);
                if (opcode == OP_CHECKSIGVERIFY) {
                    if (!success) return Fail(error, ScriptError::CHECKSIGVERIFY);
                    pop();
                }
                break;
            }

            case OP_CHECKSIGADD: {
                // (sig n pubkey -- n + success), tapscript only.
                if (sigversion != SigVersion::TAPSCRIPT) return Fail(error, ScriptError::BAD_OPCODE);
                if (stack.size() < 3) return Fail(error, ScriptError::INVALID_STACK_OPERATION);
                int64_t n;
                if (!num(2, n)) return Fail(error, ScriptError::UNKNOWN_ERROR);
                bool success = false;
                if (!ChecksigTapscript(top(3), top(1), execdata, flags, checker, error, success)) return false;
                pop();
                pop();
                pop();
                push_num(n + (success ? 1 : 0));
                break;
            }

            case OP_CHECKMULTISIG:
            case OP_CHECKMULTISIGVERIFY: {
                if (sigversion == SigVersion::TAPSCRIPT) return Fail(error, ScriptError::TAPSCRIPT_CHECKMULTISIG);
                // Stack, top first: n_keys, n_keys keys, n_sigs, n_sigs signatures, a dummy element.
                if (stack.empty()) return Fail(error, ScriptError::INVALID_STACK_OPERATION);
                int64_t keys64;
                if (!num(1, keys64)) return Fail(error, ScriptError::UNKNOWN_ERROR);
                const int n_keys = ClampToInt(keys64);
                if (n_keys < 0 || n_keys > MAX_PUBKEYS_PER_MULTISIG) return Fail(error, ScriptError::PUBKEY_COUNT);
                op_count += n_keys;
                if (op_count > MAX_OPS_PER_SCRIPT) return Fail(error, ScriptError::OP_COUNT);
                const std::size_t first_key = 2;                    // depth of the first key
                const std::size_t sigs_at = first_key + std::size_t(n_keys); // depth of n_sigs
                if (stack.size() < sigs_at) return Fail(error, ScriptError::INVALID_STACK_OPERATION);
                int64_t sigs64;
                if (!num(sigs_at, sigs64)) return Fail(error, ScriptError::UNKNOWN_ERROR);
                const int n_sigs = ClampToInt(sigs64);
                if (n_sigs < 0 || n_sigs > n_keys) return Fail(error, ScriptError::SIG_COUNT);
                const std::size_t first_sig = sigs_at + 1;
                const std::size_t dummy_at = first_sig + std::size_t(n_sigs);
                if (stack.size() < dummy_at) return Fail(error, ScriptError::INVALID_STACK_OPERATION);

                ScriptCode script_code(View(code_start, end));
                if (sigversion == SigVersion::BASE) {
                    for (int k = 0; k < n_sigs; ++k) {
                        if (!script_code.DeleteSignature(top(first_sig + std::size_t(k)), flags, error)) return false;
                    }
                }

                // Signatures must match keys in order; a key may be skipped, a signature not.
                bool success = true;
                std::size_t sig_depth = first_sig, key_depth = first_key;
                int sigs_left = n_sigs, keys_left = n_keys;
                while (success && sigs_left > 0) {
                    const View sig = top(sig_depth), key = top(key_depth);
                    if (!CheckSignatureEncoding(sig, flags, error) || !CheckKeyEncoding(key, flags, sigversion, error)) return false;
                    if (checker.CheckEcdsaSignature(sig, key, script_code.view(), sigversion)) {
                        ++sig_depth;
                        --sigs_left;
                    }
                    ++key_depth;
                    --keys_left;
                    if (sigs_left > keys_left) success = false;
                }

                // NULLFAIL: after a failure every signature must be empty.
                if (!success && (flags & SCRIPT_VERIFY_NULLFAIL)) {
                    for (std::size_t d = first_sig; d < dummy_at; ++d) {
                        if (!top(d).empty()) return Fail(error, ScriptError::SIG_NULLFAIL);
                    }
                }
                // The dummy element (an off-by-one of the original code) must be empty under NULLDUMMY.
                if ((flags & SCRIPT_VERIFY_NULLDUMMY) && !top(dummy_at).empty()) return Fail(error, ScriptError::SIG_NULLDUMMY);
                stack.resize(stack.size() - dummy_at);
                push_bool(success);
                if (opcode == OP_CHECKMULTISIGVERIFY) {
                    if (!success) return Fail(error, ScriptError::CHECKMULTISIGVERIFY);
                    pop();
                }
                break;
            }

            default:
                // OP_RESERVED, OP_VER, OP_RESERVED1/2, and OP_VERIF/OP_VERNOTIF even unexecuted.
                return Fail(error, ScriptError::BAD_OPCODE);
            }
        }

        if (stack.size() + altstack.size() > MAX_STACK_SIZE) return Fail(error, ScriptError::STACK_SIZE);
    }

    if (!conditions.Empty()) return Fail(error, ScriptError::UNBALANCED_CONDITIONAL);
    return Succeed(error);
}

bool EvalScript(ScriptStack& stack, std::span<const uint8_t> script, ScriptFlags flags, const SignatureChecker& checker,
                SigVersion sigversion, ScriptError* error)
{
    ScriptExecutionData execdata;
    return EvalScript(stack, script, flags, checker, sigversion, execdata, error);
}

// ---- witness programs ---------------------------------------------------------------------------

namespace {

constexpr std::size_t WITNESS_V0_KEYHASH_SIZE = 20;
constexpr std::size_t WITNESS_V0_SCRIPTHASH_SIZE = 32;
constexpr std::size_t WITNESS_V1_TAPROOT_SIZE = 32;

/// Runs a witness script on the witness stack `args` and requires exactly one true element after.
bool ExecuteWitnessScript(std::span<const std::vector<uint8_t>> args, View script, ScriptFlags flags, SigVersion sigversion,
                          const SignatureChecker& checker, ScriptExecutionData& execdata, ScriptError* error)
{
    if (sigversion == SigVersion::TAPSCRIPT) {
        // An OP_SUCCESSx anywhere (before any decoding failure) makes the script succeed: BIP342's
        // upgrade hook. Checked before any other rule.
        const uint8_t* pc = script.data();
        const uint8_t* const end = pc + script.size();
        while (pc < end) {
            uint8_t opcode;
            if (!GetScriptOp(pc, end, opcode)) return Fail(error, ScriptError::BAD_OPCODE);
            if (IsOpSuccess(opcode)) {
                if (flags & SCRIPT_VERIFY_DISCOURAGE_OP_SUCCESS) return Fail(error, ScriptError::DISCOURAGE_OP_SUCCESS);
                return Succeed(error);
            }
        }
        if (args.size() > MAX_STACK_SIZE) return Fail(error, ScriptError::STACK_SIZE);
    }
    for (const auto& elem : args) {
        if (elem.size() > MAX_SCRIPT_ELEMENT_SIZE) return Fail(error, ScriptError::PUSH_SIZE);
    }
    ScriptStack stack(args.begin(), args.end());
    if (!EvalScript(stack, script, flags, checker, sigversion, execdata, error)) return false;
    if (stack.size() != 1) return Fail(error, ScriptError::CLEANSTACK);
    if (!IsTrue(stack.back())) return Fail(error, ScriptError::EVAL_FALSE);
    return true;
}

uint256 TapleafHash(uint8_t leaf_version, View script)
{
    Sha256 h = TaggedHasher("TapLeaf");
    h.Write(&leaf_version, 1);
    WriteCompactSizeTo(h, script.size());
    h.Write(script);
    return Finish(h);
}

/// BIP341's commitment: the control block's path hashed up from the leaf gives the merkle root,
/// and the output key is the internal key tweaked by it.
bool VerifyTaprootCommitment(View control, View program, const uint256& tapleaf_hash)
{
    static const Sha256 branch_hasher = TaggedHasher("TapBranch");
    static const Sha256 tweak_hasher = TaggedHasher("TapTweak");
    const View internal_key = control.subspan(1, TAPROOT_CONTROL_BASE_SIZE - 1);
    uint256 node = tapleaf_hash;
    for (std::size_t off = TAPROOT_CONTROL_BASE_SIZE; off < control.size(); off += TAPROOT_CONTROL_NODE_SIZE) {
        const View sibling = control.subspan(off, TAPROOT_CONTROL_NODE_SIZE);
        Sha256 h = branch_hasher;
        // The smaller hash goes first (lexicographic byte order).
        if (std::lexicographical_compare(node.begin(), node.end(), sibling.begin(), sibling.end())) {
            h.Write(node.span()).Write(sibling);
        } else {
            h.Write(sibling).Write(node.span());
        }
        node = Finish(h);
    }
    Sha256 t = tweak_hasher;
    t.Write(internal_key).Write(node.span());
    const uint256 tweak = Finish(t);
    return script_detail::CheckTapTweak(internal_key, tweak, program, (control[0] & 1) != 0);
}

uint64_t WitnessSerializedSize(const ScriptWitness& witness) noexcept
{
    uint64_t size = CompactSizeLength(witness.stack.size());
    for (const auto& elem : witness.stack) size += CompactSizeLength(elem.size()) + elem.size();
    return size;
}

bool VerifyWitnessProgram(const ScriptWitness& witness, int version, View program, ScriptFlags flags,
                          const SignatureChecker& checker, ScriptError* error, bool is_p2sh)
{
    std::span<const std::vector<uint8_t>> args(witness.stack);
    ScriptExecutionData execdata;

    if (version == 0) {
        if (program.size() == WITNESS_V0_SCRIPTHASH_SIZE) {
            // P2WSH: the last element is the script, committed to by its SHA-256.
            if (args.empty()) return Fail(error, ScriptError::WITNESS_PROGRAM_WITNESS_EMPTY);
            const View script = args.back();
            args = args.first(args.size() - 1);
            uint8_t hash[32];
            Sha256().Write(script.data(), script.size()).Finalize(hash);
            if (!std::equal(program.begin(), program.end(), hash)) return Fail(error, ScriptError::WITNESS_PROGRAM_MISMATCH);
            return ExecuteWitnessScript(args, script, flags, SigVersion::WITNESS_V0, checker, execdata, error);
        }
        if (program.size() == WITNESS_V0_KEYHASH_SIZE) {
            // P2WPKH: signature and key, run through the P2PKH script of the program.
            if (args.size() != 2) return Fail(error, ScriptError::WITNESS_PROGRAM_MISMATCH);
            uint8_t script[25] = {OP_DUP, OP_HASH160, 20};
            std::copy(program.begin(), program.end(), script + 3);
            script[23] = OP_EQUALVERIFY;
            script[24] = OP_CHECKSIG;
            return ExecuteWitnessScript(args, View(script, 25), flags, SigVersion::WITNESS_V0, checker, execdata, error);
        }
        return Fail(error, ScriptError::WITNESS_PROGRAM_WRONG_LENGTH);
    }

    if (version == 1 && program.size() == WITNESS_V1_TAPROOT_SIZE && !is_p2sh) {
        if (!(flags & SCRIPT_VERIFY_TAPROOT)) return Succeed(error);
        if (args.empty()) return Fail(error, ScriptError::WITNESS_PROGRAM_WITNESS_EMPTY);
        // With two or more elements, a last one starting 0x50 is the annex: signed, not executed.
        if (args.size() >= 2 && !args.back().empty() && args.back()[0] == ANNEX_TAG) {
            const View annex = args.back();
            args = args.first(args.size() - 1);
            Sha256 h;
            WriteCompactSizeTo(h, annex.size());
            h.Write(annex);
            execdata.annex_hash = Finish(h);
            execdata.annex_present = true;
        } else {
            execdata.annex_present = false;
        }
        execdata.annex_init = true;

        if (args.size() == 1) {
            // Key path: one signature by the output key. A checker that refuses without naming an
            // error (no spent outputs to sign) leaves UNKNOWN_ERROR, never OK.
            if (error) *error = ScriptError::UNKNOWN_ERROR;
            if (!checker.CheckSchnorrSignature(args[0], program, SigVersion::TAPROOT, execdata, error)) return false;
            return Succeed(error);
        }
        // Script path: ... script control_block.
        const View control = args.back();
        const View script = args[args.size() - 2];
        args = args.first(args.size() - 2);
        if (control.size() < TAPROOT_CONTROL_BASE_SIZE || control.size() > TAPROOT_CONTROL_MAX_SIZE ||
            (control.size() - TAPROOT_CONTROL_BASE_SIZE) % TAPROOT_CONTROL_NODE_SIZE != 0) {
            return Fail(error, ScriptError::TAPROOT_WRONG_CONTROL_SIZE);
        }
        const uint8_t leaf_version = control[0] & TAPROOT_LEAF_MASK;
        execdata.tapleaf_hash = TapleafHash(leaf_version, script);
        if (!VerifyTaprootCommitment(control, program, execdata.tapleaf_hash)) {
            return Fail(error, ScriptError::WITNESS_PROGRAM_MISMATCH);
        }
        execdata.tapleaf_hash_init = true;
        if (leaf_version == TAPROOT_LEAF_TAPSCRIPT) {
            // BIP342's budget: the whole witness's serialized size plus the offset.
            execdata.validation_weight_left = int64_t(WitnessSerializedSize(witness)) + VALIDATION_WEIGHT_OFFSET;
            execdata.validation_weight_left_init = true;
            return ExecuteWitnessScript(args, script, flags, SigVersion::TAPSCRIPT, checker, execdata, error);
        }
        // Unknown leaf versions succeed: room for future soft forks.
        if (flags & SCRIPT_VERIFY_DISCOURAGE_UPGRADABLE_TAPROOT_VERSION) {
            return Fail(error, ScriptError::DISCOURAGE_UPGRADABLE_TAPROOT_VERSION);
        }
        return Succeed(error);
    }

    // Pay-to-anchor (OP_1 <0x4e73>) is a known program that anyone can spend.
    if (!is_p2sh && version == 1 && program.size() == 2 && program[0] == 0x4e && program[1] == 0x73) return true;
    // Other versions and sizes: unencumbered until a soft fork gives them meaning.
    if (flags & SCRIPT_VERIFY_DISCOURAGE_UPGRADABLE_WITNESS_PROGRAM) {
        return Fail(error, ScriptError::DISCOURAGE_UPGRADABLE_WITNESS_PROGRAM);
    }
    return true;
}

} // namespace

// ---- VerifyScript -------------------------------------------------------------------------------

bool VerifyScript(std::span<const uint8_t> script_sig, std::span<const uint8_t> script_pubkey, const ScriptWitness* witness,
                  ScriptFlags flags, const SignatureChecker& checker, ScriptError* error)
{
    static const ScriptWitness EMPTY_WITNESS;
    if (witness == nullptr) witness = &EMPTY_WITNESS;
    if (error) *error = ScriptError::UNKNOWN_ERROR;
    bool had_witness = false;

    if ((flags & SCRIPT_VERIFY_SIGPUSHONLY) && !IsPushOnly(script_sig)) return Fail(error, ScriptError::SIG_PUSHONLY);

    ScriptStack stack;
    if (!EvalScript(stack, script_sig, flags, checker, SigVersion::BASE, error)) return false;
    const bool p2sh = (flags & SCRIPT_VERIFY_P2SH) && IsPayToScriptHash(script_pubkey);
    // P2SH runs the redeem script on the stack the scriptSig left; keep it before the
    // scriptPubKey consumes it.
    ScriptStack p2sh_stack;
    if (p2sh) p2sh_stack = stack;
    if (!EvalScript(stack, script_pubkey, flags, checker, SigVersion::BASE, error)) return false;
    if (stack.empty() || !IsTrue(stack.back())) return Fail(error, ScriptError::EVAL_FALSE);

    int version;
    View program;
    if ((flags & SCRIPT_VERIFY_WITNESS) && IsWitnessProgram(script_pubkey, version, program)) {
        had_witness = true;
        // A native witness spend's scriptSig must be empty, or it could be malleated.
        if (!script_sig.empty()) return Fail(error, ScriptError::WITNESS_MALLEATED);
        if (!VerifyWitnessProgram(*witness, version, program, flags, checker, error, false)) return false;
        // The witness left its own verdict; CLEANSTACK is about it, not the legacy stack.
        stack.resize(1);
    }

    if (p2sh) {
        if (!IsPushOnly(script_sig)) return Fail(error, ScriptError::SIG_PUSHONLY);
        stack.swap(p2sh_stack);
        // A push-only scriptSig that made HASH160 <h> EQUAL true left at least one element.
        const Bytes redeem = std::move(stack.back());
        stack.pop_back();
        if (!EvalScript(stack, redeem, flags, checker, SigVersion::BASE, error)) return false;
        if (stack.empty() || !IsTrue(stack.back())) return Fail(error, ScriptError::EVAL_FALSE);

        if ((flags & SCRIPT_VERIFY_WITNESS) && IsWitnessProgram(redeem, version, program)) {
            had_witness = true;
            // The scriptSig must be exactly the push of the redeem script.
            uint8_t expected[MAX_SCRIPT_ELEMENT_SIZE + 5];
            const std::size_t n = WritePush(expected, redeem); // a witness program is at most 42 bytes
            if (!std::equal(script_sig.begin(), script_sig.end(), expected, expected + n)) {
                return Fail(error, ScriptError::WITNESS_MALLEATED_P2SH);
            }
            if (!VerifyWitnessProgram(*witness, version, program, flags, checker, error, true)) return false;
            stack.resize(1);
        }
    }

    // CLEANSTACK (policy) requires P2SH and WITNESS with it; Core asserts that, we only apply it.
    if ((flags & SCRIPT_VERIFY_CLEANSTACK) && stack.size() != 1) return Fail(error, ScriptError::CLEANSTACK);

    // A witness where no witness program was run could be stripped or changed at will.
    if ((flags & SCRIPT_VERIFY_WITNESS) && !had_witness && !witness->IsNull()) {
        return Fail(error, ScriptError::WITNESS_UNEXPECTED);
    }
    return Succeed(error);
}

} // namespace ibdkit

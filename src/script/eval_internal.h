// src/script/eval_internal.h — what the interpreter's files share (private to src/script/): the
// opcodes script_ops.h does not name, the number and push helpers, the signature-encoding rules,
// and the state one EvalScript run carries between its opcode handlers.
//
// EvalScript (eval.cpp) walks the script and dispatches each executed opcode to the handler of its
// group: flow control (eval.cpp), stack and arithmetic (ops_stack.cpp), hashing and signature
// checks (ops_crypto.cpp). The witness programs and VerifyScript are witness.cpp; the encoding
// rules sig_encoding.cpp.
#pragma once

#include "script/interpreter.h"

#include <ibdkit/primitives/script_ops.h>

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

namespace ibdkit::script_detail {

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

inline bool Fail(ScriptError* error, ScriptError e)
{
    if (error) *error = e;
    return false;
}
inline bool Succeed(ScriptError* error)
{
    if (error) *error = ScriptError::OK;
    return true;
}

// ---- numbers, truth and pushes ------------------------------------------------------------------

inline constexpr std::size_t NUM_SIZE = 4;      // operands of arithmetic
inline constexpr std::size_t LOCKTIME_SIZE = 5; // operands of CHECKLOCKTIMEVERIFY / CHECKSEQUENCEVERIFY

/// Decodes a little-endian sign-magnitude number of at most `max_size` bytes; with `minimal`, the
/// encoding must be the shortest (no trailing 0x00 / 0x80 byte that the byte before it does not
/// need for its sign bit). False where Core's CScriptNum throws.
inline bool ReadNum(View v, bool minimal, std::size_t max_size, int64_t& out) noexcept
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
void WriteNum(Bytes& out, int64_t value);

/// Core's CastToBool: any non-zero byte, except a lone sign bit at the end (negative zero).
inline bool IsTrue(View v) noexcept
{
    for (std::size_t i = 0; i < v.size(); ++i) {
        if (v[i] != 0) return !(i + 1 == v.size() && v[i] == 0x80);
    }
    return false;
}

/// CScriptNum::getint: the value clamped to int's range.
inline int ClampToInt(int64_t v) noexcept
{
    if (v > INT32_MAX) return INT32_MAX;
    if (v < INT32_MIN) return INT32_MIN;
    return int(v);
}

/// MINIMALDATA's rule for a push: the smallest opcode that pushes these bytes.
bool IsMinimalPush(View data, uint8_t opcode) noexcept;

/// Writes the push of `data` (the shortest PUSHDATA form, as Core's `CScript() << data`) to `out`,
/// returning the number of bytes (at most 5 + data.size()).
std::size_t WritePush(uint8_t* out, View data) noexcept;

/// BIP342's OP_SUCCESSx opcodes.
inline bool IsOpSuccess(uint8_t op) noexcept
{
    return op == 0x50 || op == 0x62 || (op >= 0x7e && op <= 0x81) || (op >= 0x83 && op <= 0x86) ||
           (op >= 0x89 && op <= 0x8a) || (op >= 0x8d && op <= 0x8e) || (op >= 0x95 && op <= 0x99) ||
           (op >= 0xbb && op <= 0xfe);
}

// ---- encodings (sig_encoding.cpp) -------------------------------------------------------------

/// The key rules of STRICTENC and WITNESS_PUBKEYTYPE (Core's CheckPubKeyEncoding).
bool CheckKeyEncoding(View key, ScriptFlags flags, SigVersion sigversion, ScriptError* error);

// ---- one EvalScript run -------------------------------------------------------------------------

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

/// What the opcode handlers of one EvalScript run read and change.
struct EvalState {
    ScriptStack& stack;
    ScriptStack altstack;
    ScriptFlags flags;
    const SignatureChecker& checker;
    SigVersion sigversion;
    ScriptExecutionData& execdata;
    ScriptError* error;
    bool minimal; ///< MINIMALDATA
    const uint8_t* code_start; ///< after the last executed OP_CODESEPARATOR
    const uint8_t* end;        ///< the script's end
    int op_count{0};
    Conditions conditions;
    Bytes num_buf;

    bool Fail(ScriptError e) const { return script_detail::Fail(error, e); }
    /// Element i from the top (1 = top); callers check the depth first.
    Bytes& Top(std::size_t i) { return stack[stack.size() - i]; }
    void Pop() { stack.pop_back(); }
    bool Num(std::size_t i, int64_t& out) { return ReadNum(Top(i), minimal, NUM_SIZE, out); }
    void PushNum(int64_t v)
    {
        WriteNum(num_buf, v);
        stack.push_back(num_buf);
    }
    void PushBool(bool v)
    {
        if (v) {
            stack.emplace_back(1, uint8_t{1});
        } else {
            stack.emplace_back();
        }
    }
    /// Pushes a comparison's or signature check's verdict; the VERIFY form (`verify`) then fails
    /// with `verify_error` if it is false and otherwise pops it again.
    bool PushVerdict(bool ok, bool verify, ScriptError verify_error)
    {
        PushBool(ok);
        if (!verify) return true;
        if (!ok) return Fail(verify_error);
        Pop();
        return true;
    }
};

/// The opcode handlers by group; each answers false with *error set when the script fails, and
/// BAD_OPCODE for an opcode of its range it does not define.
bool ExecStackOp(EvalState& s, uint8_t opcode);  // ops_stack.cpp: stack moves, SIZE, EQUAL
bool ExecArithOp(EvalState& s, uint8_t opcode);  // ops_stack.cpp: numbers
/// Hashes, OP_CODESEPARATOR and the signature checks; `pc` is just after the opcode, `opcode_pos`
/// its position (tapscript signs the last executed OP_CODESEPARATOR's).
bool ExecCryptoOp(EvalState& s, uint8_t opcode, const uint8_t* pc, uint32_t opcode_pos); // ops_crypto.cpp

} // namespace ibdkit::script_detail

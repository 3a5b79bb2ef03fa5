// src/script/eval.cpp — EvalScript (include/ibdkit/script/interpreter.h): the walk over a script,
// the rules every opcode passes before it runs, the flow-control opcodes, and the dispatch of the
// others to their group's handler (src/script/eval_internal.h).
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
// Where Core asserts on a caller's mistake (EvalScript with SigVersion::TAPROOT), this code answers
// UNKNOWN_ERROR without aborting. Consensus and policy callers never pass such arguments.
#include "script/eval_internal.h"

#include <array>
#include <cstring>

namespace ibdkit {

namespace script_detail {

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

} // namespace script_detail

namespace {

using namespace script_detail;

constexpr uint32_t SEQUENCE_LOCKTIME_DISABLE_FLAG = 1u << 31;

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

/// Which handler runs an executed non-push opcode.
enum class OpGroup : uint8_t { BAD, SMALL_NUMBER, FLOW, STACK, ARITH, CRYPTO };

constexpr std::array<OpGroup, 256> MakeOpGroups()
{
    std::array<OpGroup, 256> g{};
    g[OP_1NEGATE] = OpGroup::SMALL_NUMBER;
    for (int op = OP_1; op <= OP_16; ++op) g[op] = OpGroup::SMALL_NUMBER;
    g[OP_NOP] = OpGroup::FLOW;
    for (int op = OP_IF; op <= OP_RETURN; ++op) g[op] = OpGroup::FLOW; // OP_VERIF/VERNOTIF fail there
    for (int op = OP_NOP1; op <= OP_NOP10; ++op) g[op] = OpGroup::FLOW;
    for (int op = OP_TOALTSTACK; op <= OP_TUCK; ++op) g[op] = OpGroup::STACK;
    g[OP_SIZE] = g[OP_EQUAL] = g[OP_EQUALVERIFY] = OpGroup::STACK;
    for (int op = OP_1ADD; op <= OP_WITHIN; ++op) g[op] = OpGroup::ARITH;
    for (int op = OP_RIPEMD160; op <= OP_CHECKMULTISIGVERIFY; ++op) g[op] = OpGroup::CRYPTO;
    g[OP_CHECKSIGADD] = OpGroup::CRYPTO;
    return g;
}
constexpr std::array<OpGroup, 256> OP_GROUPS = MakeOpGroups();

/// CHECKLOCKTIMEVERIFY and CHECKSEQUENCEVERIFY (BIP65, BIP112).
bool ExecLockTimeOp(EvalState& s, uint8_t opcode)
{
    const bool is_cltv = opcode == OP_CHECKLOCKTIMEVERIFY;
    // Before their soft forks these are NOP2 and NOP3 (and not discouraged).
    if (!(s.flags & (is_cltv ? SCRIPT_VERIFY_CHECKLOCKTIMEVERIFY : SCRIPT_VERIFY_CHECKSEQUENCEVERIFY))) return true;
    if (s.stack.empty()) return s.Fail(ScriptError::INVALID_STACK_OPERATION);
    // Five bytes: lock times and sequences are unsigned 32-bit values.
    int64_t value;
    if (!ReadNum(s.Top(1), s.minimal, LOCKTIME_SIZE, value)) return s.Fail(ScriptError::UNKNOWN_ERROR);
    if (value < 0) return s.Fail(ScriptError::NEGATIVE_LOCKTIME);
    if (is_cltv) {
        if (!s.checker.CheckLockTime(value)) return s.Fail(ScriptError::UNSATISFIED_LOCKTIME);
    } else {
        // The disable flag in the operand leaves room for future soft forks: a NOP.
        if (value & SEQUENCE_LOCKTIME_DISABLE_FLAG) return true;
        if (!s.checker.CheckSequence(value)) return s.Fail(ScriptError::UNSATISFIED_LOCKTIME);
    }
    return true;
}

/// The flow-control opcodes: NOPs, lock times, IF/NOTIF/ELSE/ENDIF (which run unexecuted too, with
/// `executing` false), VERIFY and RETURN.
bool ExecFlowOp(EvalState& s, uint8_t opcode, bool executing)
{
    switch (opcode) {
    case OP_NOP:
        return true;
    case OP_CHECKLOCKTIMEVERIFY:
    case OP_CHECKSEQUENCEVERIFY:
        return ExecLockTimeOp(s, opcode);
    case OP_NOP1: case OP_NOP4: case OP_NOP4 + 1: case OP_NOP4 + 2: case OP_NOP4 + 3: case OP_NOP4 + 4:
    case OP_NOP4 + 5: case OP_NOP10:
        if (s.flags & SCRIPT_VERIFY_DISCOURAGE_UPGRADABLE_NOPS) return s.Fail(ScriptError::DISCOURAGE_UPGRADABLE_NOPS);
        return true;
    case OP_IF:
    case OP_NOTIF: {
        bool value = false;
        if (executing) {
            if (s.stack.empty()) return s.Fail(ScriptError::UNBALANCED_CONDITIONAL);
            const Bytes& cond = s.Top(1);
            const bool minimal_form = cond.empty() || (cond.size() == 1 && cond[0] == 1);
            // Consensus in tapscript; policy (MINIMALIF) for witness v0.
            if (s.sigversion == SigVersion::TAPSCRIPT && !minimal_form) return s.Fail(ScriptError::TAPSCRIPT_MINIMALIF);
            if (s.sigversion == SigVersion::WITNESS_V0 && (s.flags & SCRIPT_VERIFY_MINIMALIF) && !minimal_form) {
                return s.Fail(ScriptError::MINIMALIF);
            }
            value = IsTrue(cond) != (opcode == OP_NOTIF);
            s.Pop();
        }
        s.conditions.Push(value);
        return true;
    }
    case OP_ELSE:
        if (s.conditions.Empty()) return s.Fail(ScriptError::UNBALANCED_CONDITIONAL);
        s.conditions.ToggleTop();
        return true;
    case OP_ENDIF:
        if (s.conditions.Empty()) return s.Fail(ScriptError::UNBALANCED_CONDITIONAL);
        s.conditions.Pop();
        return true;
    case OP_VERIFY:
        if (s.stack.empty()) return s.Fail(ScriptError::INVALID_STACK_OPERATION);
        if (!IsTrue(s.Top(1))) return s.Fail(ScriptError::VERIFY);
        s.Pop();
        return true;
    case OP_RETURN:
        return s.Fail(ScriptError::OP_RETURN);
    default:
        // OP_VER, and OP_VERIF/OP_VERNOTIF even unexecuted.
        return s.Fail(ScriptError::BAD_OPCODE);
    }
}

} // namespace

bool EvalScript(ScriptStack& stack, std::span<const uint8_t> script, ScriptFlags flags, const SignatureChecker& checker,
                SigVersion sigversion, ScriptExecutionData& execdata, ScriptError* error)
{
    if (error) *error = ScriptError::UNKNOWN_ERROR;
    if (sigversion == SigVersion::TAPROOT) return false; // key paths have no script (Core asserts)
    const bool legacy_limits = sigversion == SigVersion::BASE || sigversion == SigVersion::WITNESS_V0;
    if (legacy_limits && script.size() > MAX_SCRIPT_SIZE) return Fail(error, ScriptError::SCRIPT_SIZE);

    const uint8_t* pc = script.data();
    const uint8_t* const end = pc + script.size();
    const bool minimal = (flags & SCRIPT_VERIFY_MINIMALDATA) != 0;
    EvalState s{stack, {}, flags, checker, sigversion, execdata, error, minimal, pc, end, 0, {}, {}};
    uint32_t opcode_pos = 0;
    execdata.codeseparator_pos = 0xffffffff;
    execdata.codeseparator_pos_init = true;

    for (; pc < end; ++opcode_pos) {
        const bool executing = s.conditions.AllTrue();
        uint8_t opcode;
        View data;
        if (!GetScriptOp(pc, end, opcode, &data)) return Fail(error, ScriptError::BAD_OPCODE);
        if (data.size() > MAX_SCRIPT_ELEMENT_SIZE) return Fail(error, ScriptError::PUSH_SIZE);
        // OP_RESERVED (below OP_16) is the one non-push that is not counted.
        if (legacy_limits && opcode > OP_16 && ++s.op_count > MAX_OPS_PER_SCRIPT) return Fail(error, ScriptError::OP_COUNT);
        // These fail wherever they appear, executed or not (CVE-2010-5137).
        if (IsDisabledOpcode(opcode)) return Fail(error, ScriptError::DISABLED_OPCODE);
        if (opcode == OP_CODESEPARATOR && sigversion == SigVersion::BASE && (flags & SCRIPT_VERIFY_CONST_SCRIPTCODE)) {
            return Fail(error, ScriptError::OP_CODESEPARATOR);
        }

        if (opcode <= OP_PUSHDATA4) {
            if (executing) {
                if (s.minimal && !IsMinimalPush(data, opcode)) return Fail(error, ScriptError::MINIMALDATA);
                stack.emplace_back(data.begin(), data.end());
            }
        } else if (executing || (opcode >= OP_IF && opcode <= OP_ENDIF)) {
            bool ok;
            switch (OP_GROUPS[opcode]) {
            case OpGroup::SMALL_NUMBER:
                s.PushNum(int64_t(opcode) - (OP_1 - 1));
                ok = true;
                break;
            case OpGroup::FLOW: ok = ExecFlowOp(s, opcode, executing); break;
            case OpGroup::STACK: ok = ExecStackOp(s, opcode); break;
            case OpGroup::ARITH: ok = ExecArithOp(s, opcode); break;
            case OpGroup::CRYPTO: ok = ExecCryptoOp(s, opcode, pc, opcode_pos); break;
            default:
                // OP_RESERVED, OP_VER, OP_RESERVED1/2 and the undefined opcodes.
                ok = Fail(error, ScriptError::BAD_OPCODE);
                break;
            }
            if (!ok) return false;
        }

        if (stack.size() + s.altstack.size() > MAX_STACK_SIZE) return Fail(error, ScriptError::STACK_SIZE);
    }

    if (!s.conditions.Empty()) return Fail(error, ScriptError::UNBALANCED_CONDITIONAL);
    return Succeed(error);
}

bool EvalScript(ScriptStack& stack, std::span<const uint8_t> script, ScriptFlags flags, const SignatureChecker& checker,
                SigVersion sigversion, ScriptError* error)
{
    ScriptExecutionData execdata;
    return EvalScript(stack, script, flags, checker, sigversion, execdata, error);
}

} // namespace ibdkit

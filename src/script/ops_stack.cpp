// src/script/ops_stack.cpp — the stack opcodes (moves, copies, SIZE, EQUAL) and the arithmetic on
// script numbers, as Core's EvalScript runs them (src/script/eval_internal.h).
#include "script/eval_internal.h"

#include <algorithm>
#include <utility>

namespace ibdkit::script_detail {

bool ExecStackOp(EvalState& s, uint8_t opcode)
{
    ScriptStack& stack = s.stack;
    // The depth each opcode reads; checked first, as Core checks it.
    auto need = [&](std::size_t depth) { return stack.size() >= depth; };
    switch (opcode) {
    case OP_TOALTSTACK:
        if (!need(1)) return s.Fail(ScriptError::INVALID_STACK_OPERATION);
        s.altstack.push_back(std::move(s.Top(1)));
        s.Pop();
        return true;
    case OP_FROMALTSTACK:
        if (s.altstack.empty()) return s.Fail(ScriptError::INVALID_ALTSTACK_OPERATION);
        stack.push_back(std::move(s.altstack.back()));
        s.altstack.pop_back();
        return true;
    case OP_2DROP:
        if (!need(2)) return s.Fail(ScriptError::INVALID_STACK_OPERATION);
        s.Pop();
        s.Pop();
        return true;
    case OP_2DUP:
    case OP_3DUP:
    case OP_2OVER: {
        // Copies `count` elements starting `depth` from the top onto the top.
        const std::size_t count = opcode == OP_3DUP ? 3 : 2;
        const std::size_t depth = opcode == OP_2OVER ? 4 : count;
        if (!need(depth)) return s.Fail(ScriptError::INVALID_STACK_OPERATION);
        for (std::size_t k = 0; k < count; ++k) stack.push_back(Bytes(s.Top(depth)));
        return true;
    }
    case OP_2ROT: {
        if (!need(6)) return s.Fail(ScriptError::INVALID_STACK_OPERATION);
        // x1 x2 x3 x4 x5 x6 -> x3 x4 x5 x6 x1 x2
        const auto first = stack.end() - 6;
        std::rotate(first, first + 2, stack.end());
        return true;
    }
    case OP_2SWAP:
        if (!need(4)) return s.Fail(ScriptError::INVALID_STACK_OPERATION);
        std::swap(s.Top(4), s.Top(2));
        std::swap(s.Top(3), s.Top(1));
        return true;
    case OP_IFDUP:
        if (!need(1)) return s.Fail(ScriptError::INVALID_STACK_OPERATION);
        if (IsTrue(s.Top(1))) stack.push_back(Bytes(s.Top(1)));
        return true;
    case OP_DEPTH:
        s.PushNum(int64_t(stack.size()));
        return true;
    case OP_DROP:
        if (!need(1)) return s.Fail(ScriptError::INVALID_STACK_OPERATION);
        s.Pop();
        return true;
    case OP_DUP:
        if (!need(1)) return s.Fail(ScriptError::INVALID_STACK_OPERATION);
        stack.push_back(Bytes(s.Top(1)));
        return true;
    case OP_NIP:
        if (!need(2)) return s.Fail(ScriptError::INVALID_STACK_OPERATION);
        stack.erase(stack.end() - 2);
        return true;
    case OP_OVER:
        if (!need(2)) return s.Fail(ScriptError::INVALID_STACK_OPERATION);
        stack.push_back(Bytes(s.Top(2)));
        return true;
    case OP_PICK:
    case OP_ROLL: {
        // (xn ... x2 x1 x0 n -- xn ... x2 x1 x0 xn), ROLL moves instead of copying.
        if (!need(2)) return s.Fail(ScriptError::INVALID_STACK_OPERATION);
        int64_t n64;
        if (!s.Num(1, n64)) return s.Fail(ScriptError::UNKNOWN_ERROR);
        const int n = ClampToInt(n64);
        s.Pop();
        if (n < 0 || std::size_t(n) >= stack.size()) return s.Fail(ScriptError::INVALID_STACK_OPERATION);
        const auto it = stack.end() - 1 - n;
        if (opcode == OP_PICK) {
            stack.push_back(Bytes(*it));
        } else {
            std::rotate(it, it + 1, stack.end());
        }
        return true;
    }
    case OP_ROT:
        // x1 x2 x3 -> x2 x3 x1
        if (!need(3)) return s.Fail(ScriptError::INVALID_STACK_OPERATION);
        std::rotate(stack.end() - 3, stack.end() - 2, stack.end());
        return true;
    case OP_SWAP:
        if (!need(2)) return s.Fail(ScriptError::INVALID_STACK_OPERATION);
        std::swap(s.Top(2), s.Top(1));
        return true;
    case OP_TUCK:
        // x1 x2 -> x2 x1 x2
        if (!need(2)) return s.Fail(ScriptError::INVALID_STACK_OPERATION);
        stack.insert(stack.end() - 2, Bytes(s.Top(1)));
        return true;
    case OP_SIZE:
        if (!need(1)) return s.Fail(ScriptError::INVALID_STACK_OPERATION);
        s.PushNum(int64_t(s.Top(1).size()));
        return true;
    case OP_EQUAL:
    case OP_EQUALVERIFY: {
        if (!need(2)) return s.Fail(ScriptError::INVALID_STACK_OPERATION);
        const bool equal = s.Top(2) == s.Top(1);
        s.Pop();
        s.Pop();
        return s.PushVerdict(equal, opcode == OP_EQUALVERIFY, ScriptError::EQUALVERIFY);
    }
    default:
        return s.Fail(ScriptError::BAD_OPCODE);
    }
}

namespace {

/// (a -- f(a)): 1ADD, 1SUB, NEGATE, ABS, NOT, 0NOTEQUAL.
bool ExecUnaryOp(EvalState& s, uint8_t opcode)
{
    if (s.stack.empty()) return s.Fail(ScriptError::INVALID_STACK_OPERATION);
    int64_t a;
    if (!s.Num(1, a)) return s.Fail(ScriptError::UNKNOWN_ERROR);
    int64_t r = 0;
    switch (opcode) {
    case OP_1ADD: r = a + 1; break;
    case OP_1SUB: r = a - 1; break;
    case OP_NEGATE: r = -a; break;
    case OP_ABS: r = a < 0 ? -a : a; break;
    case OP_NOT: r = a == 0; break;
    default: r = a != 0; break; // OP_0NOTEQUAL
    }
    s.Pop();
    s.PushNum(r);
    return true;
}

/// (a b -- f(a, b)), NUMEQUALVERIFY then verifying the result.
bool ExecBinaryOp(EvalState& s, uint8_t opcode)
{
    if (s.stack.size() < 2) return s.Fail(ScriptError::INVALID_STACK_OPERATION);
    int64_t a, b;
    if (!s.Num(2, a) || !s.Num(1, b)) return s.Fail(ScriptError::UNKNOWN_ERROR);
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
    s.Pop();
    s.Pop();
    s.PushNum(r);
    if (opcode == OP_NUMEQUALVERIFY) {
        if (!IsTrue(s.Top(1))) return s.Fail(ScriptError::NUMEQUALVERIFY);
        s.Pop();
    }
    return true;
}

} // namespace

bool ExecArithOp(EvalState& s, uint8_t opcode)
{
    switch (opcode) {
    case OP_1ADD: case OP_1SUB: case OP_NEGATE: case OP_ABS: case OP_NOT: case OP_0NOTEQUAL:
        return ExecUnaryOp(s, opcode);
    case OP_ADD: case OP_SUB: case OP_BOOLAND: case OP_BOOLOR: case OP_NUMEQUAL: case OP_NUMEQUALVERIFY:
    case OP_NUMNOTEQUAL: case OP_LESSTHAN: case OP_GREATERTHAN: case OP_LESSTHANOREQUAL:
    case OP_GREATERTHANOREQUAL: case OP_MIN: case OP_MAX:
        return ExecBinaryOp(s, opcode);
    case OP_WITHIN: {
        // (x min max -- min <= x < max)
        if (s.stack.size() < 3) return s.Fail(ScriptError::INVALID_STACK_OPERATION);
        int64_t x, lo, hi;
        if (!s.Num(3, x) || !s.Num(2, lo) || !s.Num(1, hi)) return s.Fail(ScriptError::UNKNOWN_ERROR);
        s.Pop();
        s.Pop();
        s.Pop();
        s.PushBool(lo <= x && x < hi);
        return true;
    }
    default:
        // The disabled ones never get here; OP_RESERVED1/2 are outside this group.
        return s.Fail(ScriptError::BAD_OPCODE);
    }
}

} // namespace ibdkit::script_detail

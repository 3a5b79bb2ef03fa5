// ibdkit/script/script_error.h — why a script failed: Core's ScriptError values and strings.
//
// The strings are Core's ScriptErrorString, letter for letter: a block that fails a script is
// rejected with "block-script-verify-flag-failed (<string>)" on both sides.
#pragma once

#include <optional>
#include <string_view>

namespace ibdkit {

enum class ScriptError {
    OK = 0,
    UNKNOWN_ERROR,
    EVAL_FALSE,
    OP_RETURN,
    // Max sizes
    SCRIPT_SIZE,
    PUSH_SIZE,
    OP_COUNT,
    STACK_SIZE,
    SIG_COUNT,
    PUBKEY_COUNT,
    // Failed verify operations
    VERIFY,
    EQUALVERIFY,
    CHECKMULTISIGVERIFY,
    CHECKSIGVERIFY,
    NUMEQUALVERIFY,
    // Logical/Format/Canonical errors
    BAD_OPCODE,
    DISABLED_OPCODE,
    INVALID_STACK_OPERATION,
    INVALID_ALTSTACK_OPERATION,
    UNBALANCED_CONDITIONAL,
    // CHECKLOCKTIMEVERIFY and CHECKSEQUENCEVERIFY
    NEGATIVE_LOCKTIME,
    UNSATISFIED_LOCKTIME,
    // Malleability
    SIG_HASHTYPE,
    SIG_DER,
    MINIMALDATA,
    SIG_PUSHONLY,
    SIG_HIGH_S,
    SIG_NULLDUMMY,
    PUBKEYTYPE,
    CLEANSTACK,
    MINIMALIF,
    SIG_NULLFAIL,
    // Softfork safeness
    DISCOURAGE_UPGRADABLE_NOPS,
    DISCOURAGE_UPGRADABLE_WITNESS_PROGRAM,
    DISCOURAGE_UPGRADABLE_TAPROOT_VERSION,
    DISCOURAGE_OP_SUCCESS,
    DISCOURAGE_UPGRADABLE_PUBKEYTYPE,
    // Segregated witness
    WITNESS_PROGRAM_WRONG_LENGTH,
    WITNESS_PROGRAM_WITNESS_EMPTY,
    WITNESS_PROGRAM_MISMATCH,
    WITNESS_MALLEATED,
    WITNESS_MALLEATED_P2SH,
    WITNESS_UNEXPECTED,
    WITNESS_PUBKEYTYPE,
    // Taproot
    SCHNORR_SIG_SIZE,
    SCHNORR_SIG_HASHTYPE,
    SCHNORR_SIG,
    TAPROOT_WRONG_CONTROL_SIZE,
    TAPSCRIPT_VALIDATION_WEIGHT,
    TAPSCRIPT_CHECKMULTISIG,
    TAPSCRIPT_MINIMALIF,
    // Constant scriptCode
    OP_CODESEPARATOR,
    SIG_FINDANDDELETE,

    ERROR_COUNT
};

/// Core's ScriptErrorString ("Script evaluated without error but finished with a false/empty top
/// stack element", …).
std::string_view ScriptErrorString(ScriptError error) noexcept;

/// The name the test vectors use for an error ("OK", "EVAL_FALSE", "SIG_DER", …).
std::string_view ScriptErrorName(ScriptError error) noexcept;
/// The error of a test-vector name; nullopt if unknown.
std::optional<ScriptError> ParseScriptErrorName(std::string_view name) noexcept;

} // namespace ibdkit

// Script errors' strings and test-vector names (include/ibdkit/script/script_error.h), and the
// script flags' names (include/ibdkit/script/interpreter.h).
#include "script/interpreter.h"
#include <ibdkit/script/script_error.h>

#include <array>
#include <string>

namespace ibdkit {

namespace {

struct ErrorText {
    ScriptError error;
    std::string_view name;    // as script_tests.json spells it
    std::string_view message; // Core's ScriptErrorString
};

// One row per error, in enum order (checked by the static_assert below).
constexpr std::array<ErrorText, std::size_t(ScriptError::ERROR_COUNT)> ERROR_TEXTS{{
    {ScriptError::OK, "OK", "No error"},
    {ScriptError::UNKNOWN_ERROR, "UNKNOWN_ERROR", "unknown error"},
    {ScriptError::EVAL_FALSE, "EVAL_FALSE", "Script evaluated without error but finished with a false/empty top stack element"},
    {ScriptError::OP_RETURN, "OP_RETURN", "OP_RETURN was encountered"},
    {ScriptError::SCRIPT_SIZE, "SCRIPT_SIZE", "Script is too big"},
    {ScriptError::PUSH_SIZE, "PUSH_SIZE", "Push value size limit exceeded"},
    {ScriptError::OP_COUNT, "OP_COUNT", "Operation limit exceeded"},
    {ScriptError::STACK_SIZE, "STACK_SIZE", "Stack size limit exceeded"},
    {ScriptError::SIG_COUNT, "SIG_COUNT", "Signature count negative or greater than pubkey count"},
    {ScriptError::PUBKEY_COUNT, "PUBKEY_COUNT", "Pubkey count negative or limit exceeded"},
    {ScriptError::VERIFY, "VERIFY", "Script failed an OP_VERIFY operation"},
    {ScriptError::EQUALVERIFY, "EQUALVERIFY", "Script failed an OP_EQUALVERIFY operation"},
    {ScriptError::CHECKMULTISIGVERIFY, "CHECKMULTISIGVERIFY", "Script failed an OP_CHECKMULTISIGVERIFY operation"},
    {ScriptError::CHECKSIGVERIFY, "CHECKSIGVERIFY", "Script failed an OP_CHECKSIGVERIFY operation"},
    {ScriptError::NUMEQUALVERIFY, "NUMEQUALVERIFY", "Script failed an OP_NUMEQUALVERIFY operation"},
    {ScriptError::BAD_OPCODE, "BAD_OPCODE", "Opcode missing or not understood"},
    {ScriptError::DISABLED_OPCODE, "DISABLED_OPCODE", "Attempted to use a disabled opcode"},
    {ScriptError::INVALID_STACK_OPERATION, "INVALID_STACK_OPERATION", "Operation not valid with the current stack size"},
    {ScriptError::INVALID_ALTSTACK_OPERATION, "INVALID_ALTSTACK_OPERATION", "Operation not valid with the current altstack size"},
    {ScriptError::UNBALANCED_CONDITIONAL, "UNBALANCED_CONDITIONAL", "Invalid OP_IF construction"},
    {ScriptError::NEGATIVE_LOCKTIME, "NEGATIVE_LOCKTIME", "Negative locktime"},
    {ScriptError::UNSATISFIED_LOCKTIME, "UNSATISFIED_LOCKTIME", "Locktime requirement not satisfied"},
    {ScriptError::SIG_HASHTYPE, "SIG_HASHTYPE", "Signature hash type missing or not understood"},
    {ScriptError::SIG_DER, "SIG_DER", "Non-canonical DER signature"},
    {ScriptError::MINIMALDATA, "MINIMALDATA", "Data push larger than necessary"},
    {ScriptError::SIG_PUSHONLY, "SIG_PUSHONLY", "Only push operators allowed in signatures"},
    {ScriptError::SIG_HIGH_S, "SIG_HIGH_S", "Non-canonical signature: S value is unnecessarily high"},
    {ScriptError::SIG_NULLDUMMY, "SIG_NULLDUMMY", "Dummy CHECKMULTISIG argument must be zero"},
    {ScriptError::PUBKEYTYPE, "PUBKEYTYPE", "Public key is neither compressed or uncompressed"},
    {ScriptError::CLEANSTACK, "CLEANSTACK", "Stack size must be exactly one after execution"},
    {ScriptError::MINIMALIF, "MINIMALIF", "OP_IF/NOTIF argument must be minimal"},
    {ScriptError::SIG_NULLFAIL, "NULLFAIL", "Signature must be zero for failed CHECK(MULTI)SIG operation"},
    {ScriptError::DISCOURAGE_UPGRADABLE_NOPS, "DISCOURAGE_UPGRADABLE_NOPS", "NOPx reserved for soft-fork upgrades"},
    {ScriptError::DISCOURAGE_UPGRADABLE_WITNESS_PROGRAM, "DISCOURAGE_UPGRADABLE_WITNESS_PROGRAM", "Witness version reserved for soft-fork upgrades"},
    {ScriptError::DISCOURAGE_UPGRADABLE_TAPROOT_VERSION, "DISCOURAGE_UPGRADABLE_TAPROOT_VERSION", "Taproot version reserved for soft-fork upgrades"},
    {ScriptError::DISCOURAGE_OP_SUCCESS, "DISCOURAGE_OP_SUCCESS", "OP_SUCCESSx reserved for soft-fork upgrades"},
    {ScriptError::DISCOURAGE_UPGRADABLE_PUBKEYTYPE, "DISCOURAGE_UPGRADABLE_PUBKEYTYPE", "Public key version reserved for soft-fork upgrades"},
    {ScriptError::WITNESS_PROGRAM_WRONG_LENGTH, "WITNESS_PROGRAM_WRONG_LENGTH", "Witness program has incorrect length"},
    {ScriptError::WITNESS_PROGRAM_WITNESS_EMPTY, "WITNESS_PROGRAM_WITNESS_EMPTY", "Witness program was passed an empty witness"},
    {ScriptError::WITNESS_PROGRAM_MISMATCH, "WITNESS_PROGRAM_MISMATCH", "Witness program hash mismatch"},
    {ScriptError::WITNESS_MALLEATED, "WITNESS_MALLEATED", "Witness requires empty scriptSig"},
    {ScriptError::WITNESS_MALLEATED_P2SH, "WITNESS_MALLEATED_P2SH", "Witness requires only-redeemscript scriptSig"},
    {ScriptError::WITNESS_UNEXPECTED, "WITNESS_UNEXPECTED", "Witness provided for non-witness script"},
    {ScriptError::WITNESS_PUBKEYTYPE, "WITNESS_PUBKEYTYPE", "Using non-compressed keys in segwit"},
    {ScriptError::SCHNORR_SIG_SIZE, "SCHNORR_SIG_SIZE", "Invalid Schnorr signature size"},
    {ScriptError::SCHNORR_SIG_HASHTYPE, "SCHNORR_SIG_HASHTYPE", "Invalid Schnorr signature hash type"},
    {ScriptError::SCHNORR_SIG, "SCHNORR_SIG", "Invalid Schnorr signature"},
    {ScriptError::TAPROOT_WRONG_CONTROL_SIZE, "TAPROOT_WRONG_CONTROL_SIZE", "Invalid Taproot control block size"},
    {ScriptError::TAPSCRIPT_VALIDATION_WEIGHT, "TAPSCRIPT_VALIDATION_WEIGHT", "Too much signature validation relative to witness weight"},
    {ScriptError::TAPSCRIPT_CHECKMULTISIG, "TAPSCRIPT_CHECKMULTISIG", "OP_CHECKMULTISIG(VERIFY) is not available in tapscript"},
    {ScriptError::TAPSCRIPT_MINIMALIF, "TAPSCRIPT_MINIMALIF", "OP_IF/NOTIF argument must be minimal in tapscript"},
    {ScriptError::OP_CODESEPARATOR, "OP_CODESEPARATOR", "Using OP_CODESEPARATOR in non-witness script"},
    {ScriptError::SIG_FINDANDDELETE, "SIG_FINDANDDELETE", "Signature is found in scriptCode"},
}};

constexpr bool RowsInEnumOrder()
{
    for (std::size_t i = 0; i < ERROR_TEXTS.size(); ++i) {
        if (std::size_t(ERROR_TEXTS[i].error) != i) return false;
    }
    return true;
}
static_assert(RowsInEnumOrder(), "ERROR_TEXTS must list every ScriptError in enum order");

// Core's flag names, index = bit position.
constexpr std::array<std::string_view, 21> FLAG_NAMES{
    "P2SH", "STRICTENC", "DERSIG", "LOW_S", "NULLDUMMY", "SIGPUSHONLY", "MINIMALDATA",
    "DISCOURAGE_UPGRADABLE_NOPS", "CLEANSTACK", "CHECKLOCKTIMEVERIFY", "CHECKSEQUENCEVERIFY", "WITNESS",
    "DISCOURAGE_UPGRADABLE_WITNESS_PROGRAM", "MINIMALIF", "NULLFAIL", "WITNESS_PUBKEYTYPE", "CONST_SCRIPTCODE",
    "TAPROOT", "DISCOURAGE_UPGRADABLE_TAPROOT_VERSION", "DISCOURAGE_OP_SUCCESS", "DISCOURAGE_UPGRADABLE_PUBKEYTYPE",
};
static_assert((1u << FLAG_NAMES.size()) == SCRIPT_VERIFY_END_MARKER);

} // namespace

std::string_view ScriptErrorString(ScriptError error) noexcept
{
    const auto i = std::size_t(error);
    if (i >= ERROR_TEXTS.size()) return "unknown error";
    return ERROR_TEXTS[i].message;
}

std::string_view ScriptErrorName(ScriptError error) noexcept
{
    const auto i = std::size_t(error);
    if (i >= ERROR_TEXTS.size()) return "UNKNOWN_ERROR";
    return ERROR_TEXTS[i].name;
}

std::optional<ScriptError> ParseScriptErrorName(std::string_view name) noexcept
{
    for (const ErrorText& row : ERROR_TEXTS) {
        if (row.name == name) return row.error;
    }
    return std::nullopt;
}

std::optional<ScriptFlags> ParseScriptFlags(std::string_view text)
{
    ScriptFlags flags = SCRIPT_VERIFY_NONE;
    if (text.empty() || text == "NONE") return flags;
    while (true) {
        const std::size_t comma = text.find(',');
        const std::string_view word = text.substr(0, comma);
        bool known = false;
        for (std::size_t bit = 0; bit < FLAG_NAMES.size(); ++bit) {
            if (FLAG_NAMES[bit] == word) {
                flags |= ScriptFlags{1} << bit;
                known = true;
                break;
            }
        }
        if (!known) return std::nullopt;
        if (comma == std::string_view::npos) return flags;
        text.remove_prefix(comma + 1);
    }
}

std::string FormatScriptFlags(ScriptFlags flags)
{
    std::string out;
    for (std::size_t bit = 0; bit < FLAG_NAMES.size(); ++bit) {
        if (!(flags & (ScriptFlags{1} << bit))) continue;
        if (!out.empty()) out += ',';
        out += FLAG_NAMES[bit];
    }
    return out;
}

} // namespace ibdkit

// ibdkit/script/flags.h — script verification flags, Core's bits and names.
//
// A leaf header: the chain parameters name their exception blocks' flags with it (chain/params.h)
// without seeing the interpreter, which reads them (script/interpreter.h).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace ibdkit {

/// Script verification flags: Core's bit positions (script_verify_flag_name), so that a flag set
/// means the same number on both sides.
using ScriptFlags = uint32_t;
enum : ScriptFlags {
    SCRIPT_VERIFY_NONE = 0,
    SCRIPT_VERIFY_P2SH = 1u << 0,
    SCRIPT_VERIFY_STRICTENC = 1u << 1,
    SCRIPT_VERIFY_DERSIG = 1u << 2,
    SCRIPT_VERIFY_LOW_S = 1u << 3,
    SCRIPT_VERIFY_NULLDUMMY = 1u << 4,
    SCRIPT_VERIFY_SIGPUSHONLY = 1u << 5,
    SCRIPT_VERIFY_MINIMALDATA = 1u << 6,
    SCRIPT_VERIFY_DISCOURAGE_UPGRADABLE_NOPS = 1u << 7,
    SCRIPT_VERIFY_CLEANSTACK = 1u << 8,
    SCRIPT_VERIFY_CHECKLOCKTIMEVERIFY = 1u << 9,
    SCRIPT_VERIFY_CHECKSEQUENCEVERIFY = 1u << 10,
    SCRIPT_VERIFY_WITNESS = 1u << 11,
    SCRIPT_VERIFY_DISCOURAGE_UPGRADABLE_WITNESS_PROGRAM = 1u << 12,
    SCRIPT_VERIFY_MINIMALIF = 1u << 13,
    SCRIPT_VERIFY_NULLFAIL = 1u << 14,
    SCRIPT_VERIFY_WITNESS_PUBKEYTYPE = 1u << 15,
    SCRIPT_VERIFY_CONST_SCRIPTCODE = 1u << 16,
    SCRIPT_VERIFY_TAPROOT = 1u << 17,
    SCRIPT_VERIFY_DISCOURAGE_UPGRADABLE_TAPROOT_VERSION = 1u << 18,
    SCRIPT_VERIFY_DISCOURAGE_OP_SUCCESS = 1u << 19,
    SCRIPT_VERIFY_DISCOURAGE_UPGRADABLE_PUBKEYTYPE = 1u << 20,
    SCRIPT_VERIFY_END_MARKER = 1u << 21,
};

/// Parses Core's flag names as the test vectors write them ("P2SH,WITNESS", "NONE", ""):
/// nullopt for an unknown name.
std::optional<ScriptFlags> ParseScriptFlags(std::string_view comma_separated);
/// The names of the set flags, comma-separated, in bit order ("" for none).
std::string FormatScriptFlags(ScriptFlags flags);

} // namespace ibdkit

// ibdkit/primitives/script_ops.h — reading scripts op by op: sigop counting, output types,
// coinbase heights. Byte-level behaviour is Core's (script/script.cpp, script/solver.cpp).
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include <ibdkit/primitives/script.h>

namespace ibdkit {

/// The opcodes ibdkit refers to by name (values as in Core's opcodetype).
enum Opcode : uint8_t {
    OP_0 = 0x00,
    OP_PUSHDATA1 = 0x4c,
    OP_PUSHDATA2 = 0x4d,
    OP_PUSHDATA4 = 0x4e,
    OP_1NEGATE = 0x4f,
    OP_RESERVED = 0x50,
    OP_1 = 0x51,
    OP_16 = 0x60,
    OP_RETURN = 0x6a,
    OP_DUP = 0x76,
    OP_EQUAL = 0x87,
    OP_EQUALVERIFY = 0x88,
    OP_HASH160 = 0xa9,
    OP_CHECKSIG = 0xac,
    OP_CHECKSIGVERIFY = 0xad,
    OP_CHECKMULTISIG = 0xae,
    OP_CHECKMULTISIGVERIFY = 0xaf,
    OP_INVALIDOPCODE = 0xff,
};

/// Reads one op at pc (advancing it). Returns false at a truncated push (Core's GetScriptOp);
/// `data` receives the pushed bytes for push opcodes (empty otherwise).
bool GetScriptOp(const uint8_t*& pc, const uint8_t* end, uint8_t& opcode, std::span<const uint8_t>* data = nullptr) noexcept;

/// Core's CScript::GetSigOpCount: CHECKSIG(VERIFY) count 1, CHECKMULTISIG(VERIFY) count 20 (or
/// the preceding OP_1..OP_16 when `accurate`); stops at a malformed push.
unsigned GetSigOpCount(std::span<const uint8_t> script, bool accurate) noexcept;

/// Only push opcodes (OP_0..OP_16, OP_1NEGATE; OP_RESERVED counts as a push here, as in Core).
bool IsPushOnly(std::span<const uint8_t> script) noexcept;
bool IsPayToScriptHash(std::span<const uint8_t> script) noexcept;
/// BIP141 witness program: version (0..16) + one 2..40-byte push.
bool IsWitnessProgram(std::span<const uint8_t> script, int& version, std::span<const uint8_t>& program) noexcept;

/// Output script templates (Core's TxoutType).
enum class TxoutType {
    NONSTANDARD,
    ANCHOR,
    PUBKEY,
    PUBKEYHASH,
    SCRIPTHASH,
    MULTISIG,
    NULL_DATA,
    WITNESS_V0_SCRIPTHASH,
    WITNESS_V0_KEYHASH,
    WITNESS_V1_TAPROOT,
    WITNESS_UNKNOWN,
};
/// The template an output script matches (Core's Solver, type only).
TxoutType Solver(std::span<const uint8_t> script) noexcept;
/// Core's names: "nonstandard", "pubkeyhash", "witness_v1_taproot", …
std::string_view GetTxnOutputType(TxoutType t) noexcept;

/// `CScript() << height`: the prefix BIP34 requires of the coinbase scriptSig.
Script ScriptForHeight(int64_t height);
/// The number the coinbase scriptSig starts with (OP_0, OP_1..OP_16, OP_1NEGATE or a minimal
/// 1..8-byte push), if it starts with one. Meaningful as a BIP34 height for version ≥ 2 blocks.
std::optional<int64_t> DecodeCoinbaseHeight(std::span<const uint8_t> script_sig) noexcept;

/// Disassembly as Core's ScriptToAsmStr (without signature-hash decoding).
std::string ScriptToAsmStr(std::span<const uint8_t> script);

} // namespace ibdkit

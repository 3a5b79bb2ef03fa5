// src/script/sighash.h — the hashes signatures commit to: legacy, BIP143 and BIP341.
//
// Core's SignatureHash and SignatureHashSchnorr (script/interpreter.cpp), old quirks included: the
// legacy hash of SIGHASH_SINGLE without a matching output is the number one, and the legacy
// script code has its OP_CODESEPARATORs removed.
#pragma once

#include <ibdkit/primitives/hash.h>
#include <ibdkit/primitives/transaction.h>

#include "script/interpreter.h"

#include <cstdint>
#include <span>

namespace ibdkit {

/// Legacy (BASE) or BIP143 (WITNESS_V0) signature hash of input `input` of `tx` for `hash_type`
/// (the signature's last byte, taken as a signed 32-bit value as Core does). `txdata` supplies
/// BIP143's shared hashes if it has them; they are computed otherwise. `script_code` for BASE is
/// used as given apart from dropping its OP_CODESEPARATORs (the caller has done FindAndDelete).
uint256 SignatureHash(std::span<const uint8_t> script_code, const Transaction& tx, uint32_t input, int32_t hash_type,
                      Amount amount, SigVersion sigversion, const PrecomputedTxData* txdata = nullptr);

/// BIP341/342 signature hash (TAPROOT or TAPSCRIPT) into `out`. Returns false where Core's does:
/// an invalid hash type, SIGHASH_SINGLE without a matching output, or txdata without the BIP341
/// hashes (spent outputs unknown).
bool SignatureHashSchnorr(uint256& out, const ScriptExecutionData& execdata, const Transaction& tx, uint32_t input,
                          uint8_t hash_type, SigVersion sigversion, const PrecomputedTxData& txdata);

} // namespace ibdkit

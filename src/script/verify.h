// src/script/verify.h — the engine's per-input script check: ibdkit/script/verify.h's VerifyInput
// with the transaction's hashes precomputed by the caller, once for all its inputs.
#pragma once

#include <ibdkit/script/verify.h>

#include "script/interpreter.h"

#include <cstdint>
#include <span>

namespace ibdkit {

/// VerifyInput (ibdkit/script/verify.h) with `txdata`, the transaction's precomputed hashes
/// (PrecomputedTxData::Init with the same spent outputs); with nullptr they are computed here.
/// Expects, beside VerifyInput's preconditions, `txdata` made for this transaction.
InputVerdict VerifyInput(const Transaction& tx, uint32_t input, std::span<const TxOut> spent_outputs, ScriptFlags flags,
                         const PrecomputedTxData* txdata);

} // namespace ibdkit

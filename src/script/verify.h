// src/script/verify.h — verifying inputs' scripts: one input for tools, a block's inputs for the
// engine (under the block's flags: consensus/script_flags.h).
//
// VerifyInput is the whole of Core's per-input script check (CScriptCheck): the input's scriptSig
// and witness against the output it spends, under a block's flags, with Core's verdict and reject
// reason. The engine calls it for every input of a block whose scripts it checks; tools call it
// with spent outputs they got elsewhere (a UTXO set, Core's rev files, a JSON file).
#pragma once

#include <ibdkit/primitives/block.h>
#include <ibdkit/primitives/hash.h>
#include <ibdkit/primitives/transaction.h>

#include "script/interpreter.h"
#include "script/script_error.h"

#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace ibdkit {

/// The verdict on one input: OK, or the first rule it broke.
struct InputVerdict {
    ScriptError error{ScriptError::OK};

    bool ok() const noexcept { return error == ScriptError::OK; }
    /// Core's reject reason for a block with this input: "block-script-verify-flag-failed (<Core's
    /// ScriptErrorString>)"; empty when ok().
    std::string BlockRejectReason() const;
};

/// Verifies input `input` of `tx` against `spent_outputs` (one per input of `tx`, in input order;
/// BIP341 signs all of them) under `flags`. `txdata` is the transaction's precomputed hashes
/// (PrecomputedTxData::Init with the same spent outputs); without it they are computed here, once
/// per call. Expects (IBDKIT_EXPECTS, ibdkit/error.h: the process aborts otherwise) `input` below
/// the input count and spent_outputs.size() equal to it.
InputVerdict VerifyInput(const Transaction& tx, uint32_t input, std::span<const TxOut> spent_outputs, ScriptFlags flags,
                         const PrecomputedTxData* txdata = nullptr);

/// An input of a block that failed its scripts.
struct BlockInputFailure {
    std::size_t tx_index;    ///< the transaction's index in the block
    uint32_t input;          ///< the input's index in its transaction
    std::size_t block_input; ///< its index among the block's inputs after the coinbase
    InputVerdict verdict;
};

/// Verifies every input of `block` after its coinbase under `flags`, each transaction with its
/// hashes precomputed once; `spent` holds the outputs they spend in block order (one per input
/// after the coinbase: Core's rev-file order, or `block_866342.spent_utxos.json`'s). Returns the
/// failing inputs in block order (empty when every input passes). Expects spent.size() equal to
/// the block's input count after the coinbase (IBDKIT_EXPECTS).
std::vector<BlockInputFailure> VerifyBlockInputs(const Block& block, std::span<const TxOut> spent, ScriptFlags flags);

} // namespace ibdkit

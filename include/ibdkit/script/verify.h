// ibdkit/script/verify.h — Core's per-input script check (CScriptCheck) for tools: one input, or
// every input of a block, against the outputs they spend.
//
// An input's scriptSig and witness are run against the output it spends, under a block's flags
// (GetBlockScriptFlags, ibdkit/consensus/script_flags.h, or the names ParseScriptFlags reads),
// with Core's verdict and reject reason. The spent outputs come from wherever the caller has them:
// a UTXO set, Core's rev files (blockfile/undo_reader.h), a JSON file.
//
// Every function here reads only its arguments and throws nothing but allocation failures: any
// number of threads may verify at once, the same transaction or block included. Misuse (an input
// index or a spent-output count that does not fit the transaction or block) is a broken
// precondition (IBDKIT_EXPECTS, ibdkit/error.h: the process aborts with the function's name), not
// an error: a caller reading counts from untrusted input checks them first.
#pragma once

#include <ibdkit/primitives/block.h>
#include <ibdkit/primitives/transaction.h>
#include <ibdkit/script/flags.h>
#include <ibdkit/script/script_error.h>

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace ibdkit {

/// The verdict on one input: OK, or the first rule it broke.
struct InputVerdict {
    ScriptError error{ScriptError::OK};

    /// Whether the input's scripts passed.
    bool ok() const noexcept { return error == ScriptError::OK; }
    /// Core's reject reason for a block with this input: "block-script-verify-flag-failed (<Core's
    /// ScriptErrorString>)"; empty when ok().
    std::string BlockRejectReason() const;
};

/// Verifies input `input` of `tx` against `spent_outputs` (one per input of `tx`, in input order;
/// BIP341 signs all of them) under `flags`, computing the transaction's signature hashes once per
/// call. Returns the verdict; never fails otherwise. Expects `input` below the input count and
/// spent_outputs.size() equal to it.
InputVerdict VerifyInput(const Transaction& tx, uint32_t input, std::span<const TxOut> spent_outputs, ScriptFlags flags);

/// An input of a block that failed its scripts.
struct BlockInputFailure {
    std::size_t tx_index;    ///< the transaction's index in the block
    uint32_t input;          ///< the input's index in its transaction
    std::size_t block_input; ///< its index among the block's inputs after the coinbase
    InputVerdict verdict;
};

/// The number of inputs of `block` after its coinbase: how many spent outputs VerifyBlockInputs
/// takes. Counts nothing for a block without transactions.
std::size_t NonCoinbaseInputCount(const Block& block) noexcept;

/// Verifies every input of `block` after its coinbase under `flags`, each transaction with its
/// hashes computed once; `spent` holds the outputs they spend in block order (one per input after
/// the coinbase: Core's rev-file order, or `block_866342.spent_utxos.json`'s). Returns the failing
/// inputs in block order (empty when every input passes). Expects spent.size() equal to
/// NonCoinbaseInputCount(block).
std::vector<BlockInputFailure> VerifyBlockInputs(const Block& block, std::span<const TxOut> spent, ScriptFlags flags);

} // namespace ibdkit

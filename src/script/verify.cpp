// src/script/verify.cpp — one input's script check (Core's CScriptCheck), and a block's inputs
// (ibdkit/script/verify.h; the engine's overload with precomputed hashes: script/verify.h).
#include "script/verify.h"

#include <ibdkit/error.h>

#include <string>
#include <vector>

namespace ibdkit {

std::string InputVerdict::BlockRejectReason() const
{
    if (ok()) return {};
    return "block-script-verify-flag-failed (" + std::string(ScriptErrorString(error)) + ")";
}

InputVerdict VerifyInput(const Transaction& tx, uint32_t input, std::span<const TxOut> spent_outputs, ScriptFlags flags,
                         const PrecomputedTxData* txdata)
{
    const auto vin = tx.vin();
    IBDKIT_EXPECTS(input < vin.size(), "VerifyInput: the input is one of the transaction's");
    IBDKIT_EXPECTS(spent_outputs.size() == vin.size(), "VerifyInput: one spent output per input of the transaction");
    IBDKIT_EXPECTS(txdata == nullptr || !txdata->spent_outputs_ready || txdata->spent_outputs.size() == vin.size(),
                   "VerifyInput: txdata was made for this transaction");
    // Without the caller's hashes they are computed here, as Core's CheckInputScripts does for a
    // transaction whose txdata has no spent outputs yet.
    PrecomputedTxData local;
    if (txdata == nullptr) {
        local.Init(tx, std::vector<TxOut>(spent_outputs.begin(), spent_outputs.end()));
        txdata = &local;
    }

    const TxIn& in = vin[input];
    const TxOut& spent = spent_outputs[input];
    const TransactionSignatureChecker checker(tx, input, spent.value, txdata);
    InputVerdict verdict;
    verdict.error = ScriptError::UNKNOWN_ERROR;
    const bool ok = VerifyScript(in.script_sig.span(), spent.script_pubkey.span(), &in.witness, flags, checker, &verdict.error);
    if (ok) {
        verdict.error = ScriptError::OK;
    } else if (verdict.error == ScriptError::OK) {
        // A failure must never read as a pass (Core's CScriptCheck starts from UNKNOWN_ERROR).
        verdict.error = ScriptError::UNKNOWN_ERROR;
    }
    return verdict;
}

InputVerdict VerifyInput(const Transaction& tx, uint32_t input, std::span<const TxOut> spent_outputs, ScriptFlags flags)
{
    return VerifyInput(tx, input, spent_outputs, flags, nullptr);
}

std::size_t NonCoinbaseInputCount(const Block& block) noexcept
{
    std::size_t inputs = 0;
    for (std::size_t t = 1; t < block.vtx.size(); ++t) inputs += block.vtx[t].vin().size();
    return inputs;
}

std::vector<BlockInputFailure> VerifyBlockInputs(const Block& block, std::span<const TxOut> spent, ScriptFlags flags)
{
    IBDKIT_EXPECTS(spent.size() == NonCoinbaseInputCount(block), "VerifyBlockInputs: one spent output per input after the coinbase");
    std::vector<BlockInputFailure> failures;
    std::size_t next = 0;
    for (std::size_t t = 1; t < block.vtx.size(); ++t) {
        const Transaction& tx = block.vtx[t];
        const std::span<const TxOut> tx_spent = spent.subspan(next, tx.vin().size());
        PrecomputedTxData txdata;
        txdata.Init(tx, std::vector<TxOut>(tx_spent.begin(), tx_spent.end()));
        for (uint32_t i = 0; i < tx_spent.size(); ++i) {
            const InputVerdict v = VerifyInput(tx, i, tx_spent, flags, &txdata);
            if (!v.ok()) failures.push_back({t, i, next + i, v});
        }
        next += tx_spent.size();
    }
    return failures;
}

} // namespace ibdkit

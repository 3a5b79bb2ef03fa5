// ibdkit/consensus/validation.h — validation states: consensus invalidity is not an error.
//
// A check that finds a rule broken records a mode (invalid), a result category (Core's
// TxValidationResult / BlockValidationResult), Core's exact reject reason ("bad-txnmrklroot", …)
// and a debug message, and returns false.
//
// A state is a plain value (one thread at a time); nothing here throws but allocation.
#pragma once

#include <string>
#include <string_view>
#include <utility>

namespace ibdkit {

enum class TxValidationResult {
    TX_RESULT_UNSET = 0,
    TX_CONSENSUS,
    TX_INPUTS_NOT_STANDARD,
    TX_NOT_STANDARD,
    TX_MISSING_INPUTS,
    TX_PREMATURE_SPEND,
    TX_WITNESS_MUTATED,
    TX_WITNESS_STRIPPED,
    TX_CONFLICT,
    TX_MEMPOOL_POLICY,
    TX_NO_MEMPOOL,
    TX_RECONSIDERABLE,
    TX_UNKNOWN,
};

/// Same numbering as Core's BlockValidationResult (and libbitcoinkernel's C API).
enum class BlockValidationResult {
    BLOCK_RESULT_UNSET = 0,
    BLOCK_CONSENSUS,
    BLOCK_CACHED_INVALID,
    BLOCK_INVALID_HEADER,
    BLOCK_MUTATED,
    BLOCK_MISSING_PREV,
    BLOCK_INVALID_PREV,
    BLOCK_TIME_FUTURE,
    BLOCK_HEADER_LOW_WORK,
};

template <typename ResultT>
class ValidationState {
public:
    enum class Mode { VALID, INVALID, ERROR };

    /// Records an invalidity; always returns false so checks can `return state.Invalid(...)`. A
    /// state already in error stays so (the reason is still recorded).
    bool Invalid(ResultT result, std::string reject_reason, std::string debug_message = {})
    {
        m_result = result;
        m_reject_reason = std::move(reject_reason);
        m_debug_message = std::move(debug_message);
        if (m_mode != Mode::ERROR) m_mode = Mode::INVALID;
        return false;
    }
    /// Records an internal error (not a consensus verdict); a reject reason recorded before is kept.
    bool Error(std::string reject_reason)
    {
        if (m_mode == Mode::VALID) m_reject_reason = std::move(reject_reason);
        m_mode = Mode::ERROR;
        return false;
    }
    /// The verdict: no rule broken yet (valid), a rule broken (invalid: Invalid was called), or
    /// an internal error; and the mode itself.
    bool IsValid() const noexcept { return m_mode == Mode::VALID; }
    bool IsInvalid() const noexcept { return m_mode == Mode::INVALID; }
    bool IsError() const noexcept { return m_mode == Mode::ERROR; }
    Mode GetMode() const noexcept { return m_mode; }
    /// What Invalid recorded: the result class, Core's reject reason (the string Core reports, as
    /// "bad-txns-inputs-missingorspent") and its debug message; empty while valid.
    ResultT GetResult() const noexcept { return m_result; }
    const std::string& GetRejectReason() const noexcept { return m_reject_reason; }
    const std::string& GetDebugMessage() const noexcept { return m_debug_message; }
    /// "Valid", or "reason" / "reason, debug message" (Core's ToString).
    std::string ToString() const
    {
        if (IsValid()) return "Valid";
        if (!m_debug_message.empty()) return m_reject_reason + ", " + m_debug_message;
        return m_reject_reason;
    }

private:
    Mode m_mode{Mode::VALID};
    ResultT m_result{};
    std::string m_reject_reason;
    std::string m_debug_message;
};

using TxValidationState = ValidationState<TxValidationResult>;
using BlockValidationState = ValidationState<BlockValidationResult>;

/// Lower-case name of a result ("consensus", "mutated", …); "unknown" outside the enum. Thread-safe.
std::string_view BlockValidationResultName(BlockValidationResult r) noexcept;

} // namespace ibdkit

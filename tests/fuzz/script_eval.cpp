// Fuzz: the script interpreter on arbitrary scripts, stacks, witnesses and flags. EvalScript in
// every sigversion and VerifyScript must never crash, hang or allocate beyond the consensus
// limits; a failure always names an error and a success names OK; after an execution that started
// within the limits, the stack is within them too, and signature checks stay within the op limit.
//
// Input: flags (4 bytes), a mode byte, then chunks of [2-byte little-endian length][bytes]: the
// script, the scriptPubKey (VerifyScript), then stack / witness elements.
#include "script/interpreter.h"

#include <cstdlib>
#include <span>
#include <vector>

namespace {

using namespace ibdkit;

/// A checker that counts its calls and accepts signatures and lock times as the mode says.
class FuzzChecker : public SignatureChecker {
public:
    explicit FuzzChecker(bool accept) : m_accept(accept) {}
    bool CheckEcdsaSignature(std::span<const uint8_t>, std::span<const uint8_t>, std::span<const uint8_t> script_code,
                             SigVersion) const override
    {
        ++ecdsa_calls;
        if (script_code.size() > MAX_SCRIPT_SIZE * 4) std::abort();
        return m_accept;
    }
    bool CheckSchnorrSignature(std::span<const uint8_t> sig, std::span<const uint8_t> pubkey, SigVersion, ScriptExecutionData&,
                               ScriptError* error) const override
    {
        if (pubkey.size() != 32) std::abort(); // the interpreter only hands over x-only keys
        ++schnorr_calls;
        if (!m_accept && error) *error = ScriptError::SCHNORR_SIG;
        return m_accept && !sig.empty();
    }
    bool CheckLockTime(int64_t lock_time) const override
    {
        if (lock_time < 0) std::abort();
        return m_accept;
    }
    bool CheckSequence(int64_t sequence) const override
    {
        if (sequence < 0) std::abort();
        return m_accept;
    }
    mutable int ecdsa_calls{0};
    mutable int schnorr_calls{0};

private:
    bool m_accept;
};

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size)
{
    if (size < 5) return 0;
    const ScriptFlags flags = (uint32_t(data[0]) | uint32_t(data[1]) << 8 | uint32_t(data[2]) << 16 | uint32_t(data[3]) << 24) &
                              (SCRIPT_VERIFY_END_MARKER - 1);
    const uint8_t mode = data[4];
    std::span<const uint8_t> rest(data + 5, size - 5);

    std::vector<std::span<const uint8_t>> chunks;
    while (rest.size() >= 2 && chunks.size() < 2000) {
        std::size_t n = rest[0] | std::size_t(rest[1]) << 8;
        rest = rest.subspan(2);
        if (n > rest.size()) n = rest.size();
        chunks.push_back(rest.first(n));
        rest = rest.subspan(n);
    }
    if (chunks.size() < 2) return 0;

    FuzzChecker checker((mode & 0x80) != 0);
    bool within_limits = true;
    ScriptStack stack;
    for (std::size_t i = 2; i < chunks.size(); ++i) {
        stack.emplace_back(chunks[i].begin(), chunks[i].end());
        if (chunks[i].size() > MAX_SCRIPT_ELEMENT_SIZE) within_limits = false;
    }
    if (stack.size() > MAX_STACK_SIZE) within_limits = false;

    ScriptError error = ScriptError::OK;
    bool ok;
    switch (mode & 3) {
    case 0:
    case 1: {
        const SigVersion sv = (mode & 3) == 0 ? SigVersion::BASE : SigVersion::WITNESS_V0;
        ok = EvalScript(stack, chunks[0], flags, checker, sv, &error);
        if (checker.ecdsa_calls > MAX_OPS_PER_SCRIPT) std::abort();
        break;
    }
    case 2: {
        ScriptExecutionData execdata;
        execdata.validation_weight_left_init = true;
        execdata.validation_weight_left = (mode >> 2) * 100;
        ok = EvalScript(stack, chunks[0], flags, checker, SigVersion::TAPSCRIPT, execdata, &error);
        // Each passing signature costs 50 of the budget: the budget bounds the checks.
        if (checker.schnorr_calls > (mode >> 2) * 2 + 1) std::abort();
        break;
    }
    default: {
        ScriptWitness witness;
        witness.stack = stack;
        ok = VerifyScript(chunks[0], chunks[1], &witness, flags, checker, &error);
        if (checker.ecdsa_calls > 3 * MAX_OPS_PER_SCRIPT) std::abort();
        within_limits = false; // the stack above is the witness, not an execution's result
        break;
    }
    }
    if (ok != (error == ScriptError::OK)) std::abort();
    if (ok && within_limits) {
        if (stack.size() > MAX_STACK_SIZE) std::abort();
        for (const auto& e : stack) {
            if (e.size() > MAX_SCRIPT_ELEMENT_SIZE) std::abort();
        }
    }
    return 0;
}

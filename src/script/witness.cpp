// src/script/witness.cpp — VerifyScript (include/ibdkit/script/interpreter.h): the scriptSig and
// scriptPubKey, P2SH (BIP16) and the witness programs: segwit v0 (BIP141), taproot's key and script
// paths with the commitment of the control block (BIP341) and tapscript's budget (BIP342).
//
// Where Core asserts on a caller's mistake (CLEANSTACK without P2SH and WITNESS), this code applies
// the plain stack-size rule. Consensus and policy callers never pass such arguments.
#include "script/eval_internal.h"

#include "script/secp.h"

#include <ibdkit/crypto/sha256.h>
#include <ibdkit/encoding/serialize.h>

#include <algorithm>
#include <string_view>

namespace ibdkit {

namespace {

using namespace script_detail;

constexpr std::size_t WITNESS_V0_KEYHASH_SIZE = 20;
constexpr std::size_t WITNESS_V0_SCRIPTHASH_SIZE = 32;
constexpr std::size_t WITNESS_V1_TAPROOT_SIZE = 32;

// ---- hashing helpers ----------------------------------------------------------------------------

/// BIP340's tagged hash: SHA-256 preceded by SHA-256(tag) twice.
Sha256 TaggedHasher(std::string_view tag)
{
    uint8_t tag_hash[32];
    Sha256().Write(std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(tag.data()), tag.size())).Finalize(tag_hash);
    Sha256 h;
    h.Write(tag_hash, 32).Write(tag_hash, 32);
    return h;
}

void WriteCompactSizeTo(Sha256& h, uint64_t n)
{
    struct Sha256Stream { // Sha256 as a WriteStream (encoding/serialize.h)
        Sha256& sha;
        void write(std::span<const std::byte> bytes) noexcept { sha.Write(bytes); }
    } s{h};
    WriteCompactSize(s, n);
}

uint256 Finish(Sha256& h)
{
    uint256 out;
    h.Finalize(out.data());
    return out;
}

/// Runs a witness script on the witness stack `args` and requires exactly one true element after.
bool ExecuteWitnessScript(std::span<const std::vector<uint8_t>> args, View script, ScriptFlags flags, SigVersion sigversion,
                          const SignatureChecker& checker, ScriptExecutionData& execdata, ScriptError* error)
{
    if (sigversion == SigVersion::TAPSCRIPT) {
        // An OP_SUCCESSx anywhere (before any decoding failure) makes the script succeed: BIP342's
        // upgrade hook. Checked before any other rule.
        const uint8_t* pc = script.data();
        const uint8_t* const end = pc + script.size();
        while (pc < end) {
            uint8_t opcode;
            if (!GetScriptOp(pc, end, opcode)) return Fail(error, ScriptError::BAD_OPCODE);
            if (IsOpSuccess(opcode)) {
                if (flags & SCRIPT_VERIFY_DISCOURAGE_OP_SUCCESS) return Fail(error, ScriptError::DISCOURAGE_OP_SUCCESS);
                return Succeed(error);
            }
        }
        if (args.size() > MAX_STACK_SIZE) return Fail(error, ScriptError::STACK_SIZE);
    }
    for (const auto& elem : args) {
        if (elem.size() > MAX_SCRIPT_ELEMENT_SIZE) return Fail(error, ScriptError::PUSH_SIZE);
    }
    // Room for what P2WPKH's script and a 2-of-3 multisig push: no regrowth while it runs.
    ScriptStack stack;
    stack.reserve(args.size() + 4);
    stack.assign(args.begin(), args.end());
    if (!EvalScript(stack, script, flags, checker, sigversion, execdata, error)) return false;
    if (stack.size() != 1) return Fail(error, ScriptError::CLEANSTACK);
    if (!IsTrue(stack.back())) return Fail(error, ScriptError::EVAL_FALSE);
    return true;
}

uint256 TapleafHash(uint8_t leaf_version, View script)
{
    Sha256 h = TaggedHasher("TapLeaf");
    h.Write(&leaf_version, 1);
    WriteCompactSizeTo(h, script.size());
    h.Write(script);
    return Finish(h);
}

/// BIP341's commitment: the control block's path hashed up from the leaf gives the merkle root,
/// and the output key is the internal key tweaked by it.
bool VerifyTaprootCommitment(View control, View program, const uint256& tapleaf_hash)
{
    static const Sha256 branch_hasher = TaggedHasher("TapBranch");
    static const Sha256 tweak_hasher = TaggedHasher("TapTweak");
    const View internal_key = control.subspan(1, TAPROOT_CONTROL_BASE_SIZE - 1);
    uint256 node = tapleaf_hash;
    for (std::size_t off = TAPROOT_CONTROL_BASE_SIZE; off < control.size(); off += TAPROOT_CONTROL_NODE_SIZE) {
        const View sibling = control.subspan(off, TAPROOT_CONTROL_NODE_SIZE);
        Sha256 h = branch_hasher;
        // The smaller hash goes first (lexicographic byte order).
        if (std::lexicographical_compare(node.begin(), node.end(), sibling.begin(), sibling.end())) {
            h.Write(node.span()).Write(sibling);
        } else {
            h.Write(sibling).Write(node.span());
        }
        node = Finish(h);
    }
    Sha256 t = tweak_hasher;
    t.Write(internal_key).Write(node.span());
    const uint256 tweak = Finish(t);
    return script_detail::CheckTapTweak(internal_key, tweak, program, (control[0] & 1) != 0);
}

uint64_t WitnessSerializedSize(const ScriptWitness& witness) noexcept
{
    uint64_t size = GetSizeOfCompactSize(witness.stack.size());
    for (const auto& elem : witness.stack) size += GetSizeOfCompactSize(elem.size()) + elem.size();
    return size;
}

bool VerifyWitnessProgram(const ScriptWitness& witness, int version, View program, ScriptFlags flags,
                          const SignatureChecker& checker, ScriptError* error, bool is_p2sh)
{
    std::span<const std::vector<uint8_t>> args(witness.stack);
    ScriptExecutionData execdata;

    if (version == 0) {
        if (program.size() == WITNESS_V0_SCRIPTHASH_SIZE) {
            // P2WSH: the last element is the script, committed to by its SHA-256.
            if (args.empty()) return Fail(error, ScriptError::WITNESS_PROGRAM_WITNESS_EMPTY);
            const View script = args.back();
            args = args.first(args.size() - 1);
            uint8_t hash[32];
            Sha256().Write(script.data(), script.size()).Finalize(hash);
            if (!std::equal(program.begin(), program.end(), hash)) return Fail(error, ScriptError::WITNESS_PROGRAM_MISMATCH);
            return ExecuteWitnessScript(args, script, flags, SigVersion::WITNESS_V0, checker, execdata, error);
        }
        if (program.size() == WITNESS_V0_KEYHASH_SIZE) {
            // P2WPKH: signature and key, run through the P2PKH script of the program.
            if (args.size() != 2) return Fail(error, ScriptError::WITNESS_PROGRAM_MISMATCH);
            uint8_t script[25] = {OP_DUP, OP_HASH160, 20};
            std::copy(program.begin(), program.end(), script + 3);
            script[23] = OP_EQUALVERIFY;
            script[24] = OP_CHECKSIG;
            return ExecuteWitnessScript(args, View(script, 25), flags, SigVersion::WITNESS_V0, checker, execdata, error);
        }
        return Fail(error, ScriptError::WITNESS_PROGRAM_WRONG_LENGTH);
    }

    if (version == 1 && program.size() == WITNESS_V1_TAPROOT_SIZE && !is_p2sh) {
        if (!(flags & SCRIPT_VERIFY_TAPROOT)) return Succeed(error);
        if (args.empty()) return Fail(error, ScriptError::WITNESS_PROGRAM_WITNESS_EMPTY);
        // With two or more elements, a last one starting 0x50 is the annex: signed, not executed.
        if (args.size() >= 2 && !args.back().empty() && args.back()[0] == ANNEX_TAG) {
            const View annex = args.back();
            args = args.first(args.size() - 1);
            Sha256 h;
            WriteCompactSizeTo(h, annex.size());
            h.Write(annex);
            execdata.annex_hash = Finish(h);
            execdata.annex_present = true;
        } else {
            execdata.annex_present = false;
        }
        execdata.annex_init = true;

        if (args.size() == 1) {
            // Key path: one signature by the output key. A checker that refuses without naming an
            // error (no spent outputs to sign) leaves UNKNOWN_ERROR, never OK.
            if (error) *error = ScriptError::UNKNOWN_ERROR;
            if (!checker.CheckSchnorrSignature(args[0], program, SigVersion::TAPROOT, execdata, error)) return false;
            return Succeed(error);
        }
        // Script path: ... script control_block.
        const View control = args.back();
        const View script = args[args.size() - 2];
        args = args.first(args.size() - 2);
        if (control.size() < TAPROOT_CONTROL_BASE_SIZE || control.size() > TAPROOT_CONTROL_MAX_SIZE ||
            (control.size() - TAPROOT_CONTROL_BASE_SIZE) % TAPROOT_CONTROL_NODE_SIZE != 0) {
            return Fail(error, ScriptError::TAPROOT_WRONG_CONTROL_SIZE);
        }
        const uint8_t leaf_version = control[0] & TAPROOT_LEAF_MASK;
        execdata.tapleaf_hash = TapleafHash(leaf_version, script);
        if (!VerifyTaprootCommitment(control, program, execdata.tapleaf_hash)) {
            return Fail(error, ScriptError::WITNESS_PROGRAM_MISMATCH);
        }
        execdata.tapleaf_hash_init = true;
        if (leaf_version == TAPROOT_LEAF_TAPSCRIPT) {
            // BIP342's budget: the whole witness's serialized size plus the offset.
            execdata.validation_weight_left = int64_t(WitnessSerializedSize(witness)) + VALIDATION_WEIGHT_OFFSET;
            execdata.validation_weight_left_init = true;
            return ExecuteWitnessScript(args, script, flags, SigVersion::TAPSCRIPT, checker, execdata, error);
        }
        // Unknown leaf versions succeed: room for future soft forks.
        if (flags & SCRIPT_VERIFY_DISCOURAGE_UPGRADABLE_TAPROOT_VERSION) {
            return Fail(error, ScriptError::DISCOURAGE_UPGRADABLE_TAPROOT_VERSION);
        }
        return Succeed(error);
    }

    // Pay-to-anchor (OP_1 <0x4e73>) is a known program that anyone can spend.
    if (!is_p2sh && version == 1 && program.size() == 2 && program[0] == 0x4e && program[1] == 0x73) return true;
    // Other versions and sizes: unencumbered until a soft fork gives them meaning.
    if (flags & SCRIPT_VERIFY_DISCOURAGE_UPGRADABLE_WITNESS_PROGRAM) {
        return Fail(error, ScriptError::DISCOURAGE_UPGRADABLE_WITNESS_PROGRAM);
    }
    return true;
}
} // namespace

// ---- VerifyScript -------------------------------------------------------------------------------

bool VerifyScript(std::span<const uint8_t> script_sig, std::span<const uint8_t> script_pubkey, const ScriptWitness* witness,
                  ScriptFlags flags, const SignatureChecker& checker, ScriptError* error)
{
    static const ScriptWitness EMPTY_WITNESS;
    if (witness == nullptr) witness = &EMPTY_WITNESS;
    if (error) *error = ScriptError::UNKNOWN_ERROR;
    bool had_witness = false;

    if ((flags & SCRIPT_VERIFY_SIGPUSHONLY) && !IsPushOnly(script_sig)) return Fail(error, ScriptError::SIG_PUSHONLY);

    ScriptStack stack;
    // One allocation for what common spends push (P2PKH: four elements at most; a witness
    // program: two) instead of the vector's regrowth.
    stack.reserve(6);
    if (!EvalScript(stack, script_sig, flags, checker, SigVersion::BASE, error)) return false;
    const bool p2sh = (flags & SCRIPT_VERIFY_P2SH) && IsPayToScriptHash(script_pubkey);
    // P2SH runs the redeem script on the stack the scriptSig left; keep it before the
    // scriptPubKey consumes it.
    ScriptStack p2sh_stack;
    if (p2sh) p2sh_stack = stack;
    if (!EvalScript(stack, script_pubkey, flags, checker, SigVersion::BASE, error)) return false;
    if (stack.empty() || !IsTrue(stack.back())) return Fail(error, ScriptError::EVAL_FALSE);

    int version;
    View program;
    if ((flags & SCRIPT_VERIFY_WITNESS) && IsWitnessProgram(script_pubkey, version, program)) {
        had_witness = true;
        // A native witness spend's scriptSig must be empty, or it could be malleated.
        if (!script_sig.empty()) return Fail(error, ScriptError::WITNESS_MALLEATED);
        if (!VerifyWitnessProgram(*witness, version, program, flags, checker, error, false)) return false;
        // The witness left its own verdict; CLEANSTACK is about it, not the legacy stack.
        stack.resize(1);
    }

    if (p2sh) {
        if (!IsPushOnly(script_sig)) return Fail(error, ScriptError::SIG_PUSHONLY);
        stack.swap(p2sh_stack);
        // A push-only scriptSig that made HASH160 <h> EQUAL true left at least one element.
        const Bytes redeem = std::move(stack.back());
        stack.pop_back();
        if (!EvalScript(stack, redeem, flags, checker, SigVersion::BASE, error)) return false;
        if (stack.empty() || !IsTrue(stack.back())) return Fail(error, ScriptError::EVAL_FALSE);

        if ((flags & SCRIPT_VERIFY_WITNESS) && IsWitnessProgram(redeem, version, program)) {
            had_witness = true;
            // The scriptSig must be exactly the push of the redeem script.
            uint8_t expected[MAX_SCRIPT_ELEMENT_SIZE + 5];
            const std::size_t n = WritePush(expected, redeem); // a witness program is at most 42 bytes
            if (!std::equal(script_sig.begin(), script_sig.end(), expected, expected + n)) {
                return Fail(error, ScriptError::WITNESS_MALLEATED_P2SH);
            }
            if (!VerifyWitnessProgram(*witness, version, program, flags, checker, error, true)) return false;
            stack.resize(1);
        }
    }

    // CLEANSTACK (policy) requires P2SH and WITNESS with it; Core asserts that, we only apply it.
    if ((flags & SCRIPT_VERIFY_CLEANSTACK) && stack.size() != 1) return Fail(error, ScriptError::CLEANSTACK);

    // A witness where no witness program was run could be stripped or changed at will.
    if ((flags & SCRIPT_VERIFY_WITNESS) && !had_witness && !witness->IsNull()) {
        return Fail(error, ScriptError::WITNESS_UNEXPECTED);
    }
    return Succeed(error);
}

} // namespace ibdkit

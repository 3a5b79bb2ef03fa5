// The interpreter's rules one at a time, beside Core's vectors: the script code a signature sees
// (OP_CODESEPARATOR, FindAndDelete), signature encodings at their edges, number sizes and
// minimality, the limits, tapscript's own rules, and the lock-time checks.
#include <ibdkit/crypto/sha256.h>
#include <ibdkit/script/script_error.h>

#include "script/interpreter.h"

#include "script_test_util.h"
#include "test_util.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace ibdkit {
namespace {

using test::ParseHex;
using test::ParseScriptAsm;
using Bytes = std::vector<uint8_t>;

/// Records what the interpreter hands it; accepts every ECDSA signature (or none).
class RecordingChecker : public SignatureChecker {
public:
    explicit RecordingChecker(bool accept = true) : m_accept(accept) {}
    bool CheckEcdsaSignature(std::span<const uint8_t> sig, std::span<const uint8_t>, std::span<const uint8_t> script_code,
                             SigVersion) const override
    {
        codes.emplace_back(script_code.begin(), script_code.end());
        sigs.emplace_back(sig.begin(), sig.end());
        return m_accept;
    }
    bool CheckSchnorrSignature(std::span<const uint8_t>, std::span<const uint8_t>, SigVersion, ScriptExecutionData& execdata,
                               ScriptError* error) const override
    {
        separator_positions.push_back(execdata.codeseparator_pos);
        if (!m_accept && error) *error = ScriptError::SCHNORR_SIG;
        return m_accept;
    }
    mutable std::vector<Bytes> codes, sigs;
    mutable std::vector<uint32_t> separator_positions;

private:
    bool m_accept;
};

ScriptError Eval(const std::string& script, ScriptFlags flags = SCRIPT_VERIFY_NONE, SigVersion sv = SigVersion::BASE,
                 ScriptStack stack = {})
{
    ScriptError err;
    const SignatureChecker base;
    EvalScript(stack, ParseScriptAsm(script), flags, base, sv, &err);
    return err;
}

// A strict-DER signature 30 len 02 01 <r> 02 lenS <s> with hash type ALL.
Bytes Der(const Bytes& r, const Bytes& s)
{
    Bytes sig{0x30, uint8_t(4 + r.size() + s.size()), 0x02, uint8_t(r.size())};
    sig.insert(sig.end(), r.begin(), r.end());
    sig.push_back(0x02);
    sig.push_back(uint8_t(s.size()));
    sig.insert(sig.end(), s.begin(), s.end());
    sig.push_back(SIGHASH_ALL);
    return sig;
}

TEST(ScriptInterpreter, ScriptCodeStartsAfterTheLastExecutedCodeSeparator)
{
    const Bytes key = ParseHex("02" + std::string(64, '1'));
    RecordingChecker checker;
    Bytes script = ParseScriptAsm("1 CODESEPARATOR 0 IF CODESEPARATOR ENDIF DUP DROP");
    const std::size_t after_first = 2;
    test::AppendPush(script, key);
    script.push_back(0xac); // CHECKSIG
    ScriptStack stack{Bytes{0x01}};
    ScriptError err;
    ASSERT_TRUE(EvalScript(stack, script, SCRIPT_VERIFY_NONE, checker, SigVersion::BASE, &err)) << ScriptErrorName(err);
    ASSERT_EQ(checker.codes.size(), 1u);
    EXPECT_EQ(checker.codes[0], Bytes(script.begin() + after_first, script.end()));
    // Under CONST_SCRIPTCODE any OP_CODESEPARATOR in a BASE script fails, executed or not.
    stack = {Bytes{0x01}};
    EXPECT_FALSE(EvalScript(stack, script, SCRIPT_VERIFY_CONST_SCRIPTCODE, checker, SigVersion::BASE, &err));
    EXPECT_EQ(err, ScriptError::OP_CODESEPARATOR);
    stack = {Bytes{0x01}};
    EXPECT_TRUE(EvalScript(stack, script, SCRIPT_VERIFY_CONST_SCRIPTCODE, checker, SigVersion::WITNESS_V0, &err));
}

TEST(ScriptInterpreter, FindAndDeleteRemovesTheSignaturePushInBaseScriptsOnly)
{
    const Bytes sig = Der(Bytes{0x01}, Bytes{0x01});
    const Bytes key = ParseHex("03" + std::string(64, '2'));
    Bytes script;
    test::AppendPush(script, sig);
    script.push_back(0x75); // DROP
    test::AppendPush(script, sig);
    test::AppendPush(script, sig); // two adjacent copies: both go
    script.push_back(0x6d);        // 2DROP
    test::AppendPush(script, key);
    script.push_back(0xac);
    Bytes expected{0x75, 0x6d};
    test::AppendPush(expected, key);
    expected.push_back(0xac);

    RecordingChecker checker;
    ScriptStack stack{sig};
    ScriptError err;
    ASSERT_TRUE(EvalScript(stack, script, SCRIPT_VERIFY_NONE, checker, SigVersion::BASE, &err)) << ScriptErrorName(err);
    EXPECT_EQ(checker.codes.back(), expected);

    stack = {sig};
    ASSERT_TRUE(EvalScript(stack, script, SCRIPT_VERIFY_NONE, checker, SigVersion::WITNESS_V0, &err));
    EXPECT_EQ(checker.codes.back(), script);

    stack = {sig};
    EXPECT_FALSE(EvalScript(stack, script, SCRIPT_VERIFY_CONST_SCRIPTCODE, checker, SigVersion::BASE, &err));
    EXPECT_EQ(err, ScriptError::SIG_FINDANDDELETE);

    // Only at op boundaries: the same bytes inside a larger push stay.
    Bytes inner = Bytes{0x00};
    test::AppendPush(inner, sig);
    Bytes script2;
    test::AppendPush(script2, inner);
    script2.push_back(0x75);
    test::AppendPush(script2, key);
    script2.push_back(0xac);
    stack = {sig};
    ASSERT_TRUE(EvalScript(stack, script2, SCRIPT_VERIFY_NONE, checker, SigVersion::BASE, &err));
    EXPECT_EQ(checker.codes.back(), script2);
}

TEST(ScriptInterpreter, OversizedElementsOnACallersStackAreHandled)
{
    // EvalScript's own pushes are at most 520 bytes, a caller's stack is not: CHECKSIG and
    // CHECKMULTISIG must still work (found by tests/fuzz/script_eval.cpp).
    RecordingChecker checker(false);
    const Bytes sig(1066, 0x30);
    for (const char* script : {"CHECKSIG", "0 SWAP 1 0x21 0x02aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa 1 CHECKMULTISIG"}) {
        ScriptStack stack{sig};
        if (std::string(script) == "CHECKSIG") stack.push_back(Bytes(33, 0x02));
        ScriptError err;
        EXPECT_TRUE(EvalScript(stack, ParseScriptAsm(script), SCRIPT_VERIFY_NONE, checker, SigVersion::BASE, &err))
            << ScriptErrorName(err);
        ASSERT_FALSE(stack.empty());
        EXPECT_TRUE(stack.back().empty()); // false: the checker refused
    }
}

TEST(ScriptInterpreter, SignatureEncodingEdges)
{
    ScriptError err;
    const ScriptFlags low_s = SCRIPT_VERIFY_LOW_S;
    const Bytes half = ParseHex("7fffffffffffffffffffffffffffffff5d576e7357a4501ddfe92f46681b20a0");
    Bytes half_plus_one = half;
    half_plus_one.back() += 1;
    const Bytes order = ParseHex("00fffffffffffffffffffffffffffffffebaaedce6af48a03bbfd25e8cd0364141");
    EXPECT_TRUE(CheckSignatureEncoding(Der({0x01}, half), low_s, &err));
    EXPECT_FALSE(CheckSignatureEncoding(Der({0x01}, half_plus_one), low_s, &err));
    EXPECT_EQ(err, ScriptError::SIG_HIGH_S);
    // S at or above the order parses to zero (Core's lax parser): not high.
    EXPECT_TRUE(CheckSignatureEncoding(Der({0x01}, order), low_s, &err));
    // Not DER at all.
    EXPECT_FALSE(CheckSignatureEncoding(ParseHex("3006020101020101"), SCRIPT_VERIFY_DERSIG, &err));
    EXPECT_EQ(err, ScriptError::SIG_DER);
    EXPECT_TRUE(CheckSignatureEncoding(ParseHex("3006020101020101"), SCRIPT_VERIFY_NONE, &err));
    // Negative R, padded R.
    EXPECT_FALSE(CheckSignatureEncoding(Der({0x80}, {0x01}), SCRIPT_VERIFY_DERSIG, &err));
    EXPECT_FALSE(CheckSignatureEncoding(Der({0x00, 0x01}, {0x01}), SCRIPT_VERIFY_DERSIG, &err));
    EXPECT_TRUE(CheckSignatureEncoding(Der({0x00, 0x80}, {0x01}), SCRIPT_VERIFY_DERSIG, &err));
    // Hash types.
    Bytes sig = Der({0x01}, {0x01});
    for (int ht : {0x00, 0x04, 0x80, 0x84, 0x41}) {
        sig.back() = uint8_t(ht);
        EXPECT_FALSE(CheckSignatureEncoding(sig, SCRIPT_VERIFY_STRICTENC, &err)) << ht;
        EXPECT_EQ(err, ScriptError::SIG_HASHTYPE);
    }
    for (int ht : {0x01, 0x02, 0x03, 0x81, 0x82, 0x83}) {
        sig.back() = uint8_t(ht);
        EXPECT_TRUE(CheckSignatureEncoding(sig, SCRIPT_VERIFY_STRICTENC, &err)) << ht;
    }
    EXPECT_TRUE(CheckSignatureEncoding({}, SCRIPT_VERIFY_STRICTENC | SCRIPT_VERIFY_LOW_S, &err));
}

TEST(ScriptInterpreter, NumberSizesAndMinimality)
{
    // Arithmetic takes 4 bytes; a 5-byte result can be pushed but not used again.
    EXPECT_EQ(Eval("0x04 0xffffffff 1ADD DROP 1"), ScriptError::OK);
    EXPECT_EQ(Eval("0x04 0xffffff7f 1ADD 1ADD"), ScriptError::UNKNOWN_ERROR);
    EXPECT_EQ(Eval("0x05 0x0000000000 1ADD"), ScriptError::UNKNOWN_ERROR);
    // Non-minimal numbers only under MINIMALDATA.
    EXPECT_EQ(Eval("0x02 0x0100 1ADD"), ScriptError::OK);
    EXPECT_EQ(Eval("0x02 0x0100 1ADD", SCRIPT_VERIFY_MINIMALDATA), ScriptError::UNKNOWN_ERROR);
    EXPECT_EQ(Eval("0x02 0xff80 1ADD", SCRIPT_VERIFY_MINIMALDATA), ScriptError::OK);
    // Negative zero is false; 0x80 0x00 is not minimal.
    EXPECT_EQ(Eval("0x01 0x80 VERIFY"), ScriptError::VERIFY);
    EXPECT_EQ(Eval("0x01 0x80 0 NUMEQUAL VERIFY"), ScriptError::OK);
    // CHECKLOCKTIMEVERIFY reads 5 bytes (then the base checker refuses), not 6.
    EXPECT_EQ(Eval("0x05 0xffffffff00 CHECKLOCKTIMEVERIFY", SCRIPT_VERIFY_CHECKLOCKTIMEVERIFY), ScriptError::UNSATISFIED_LOCKTIME);
    EXPECT_EQ(Eval("0x06 0xffffffff0000 CHECKLOCKTIMEVERIFY", SCRIPT_VERIFY_CHECKLOCKTIMEVERIFY), ScriptError::UNKNOWN_ERROR);
    EXPECT_EQ(Eval("-1 CHECKLOCKTIMEVERIFY", SCRIPT_VERIFY_CHECKLOCKTIMEVERIFY), ScriptError::NEGATIVE_LOCKTIME);
    EXPECT_EQ(Eval("-1 CHECKLOCKTIMEVERIFY"), ScriptError::OK); // NOP2 before BIP65
    // CSV with the disable bit set is a NOP.
    EXPECT_EQ(Eval("0x05 0x0000008000 CHECKSEQUENCEVERIFY", SCRIPT_VERIFY_CHECKSEQUENCEVERIFY), ScriptError::OK);
}

TEST(ScriptInterpreter, Limits)
{
    std::string ops;
    for (int i = 0; i < 201; ++i) ops += "NOP ";
    EXPECT_EQ(Eval("1 " + ops), ScriptError::OK);
    EXPECT_EQ(Eval("1 " + ops + "NOP"), ScriptError::OP_COUNT);
    // Tapscript has no op limit.
    EXPECT_EQ(Eval("1 " + ops + "NOP", 0, SigVersion::TAPSCRIPT), ScriptError::OK);
    // 1000 stack elements, including the altstack.
    std::string pushes;
    for (int i = 0; i < 999; ++i) pushes += "1 ";
    EXPECT_EQ(Eval(pushes + "TOALTSTACK 1"), ScriptError::OK);
    EXPECT_EQ(Eval(pushes + "TOALTSTACK 1 1"), ScriptError::STACK_SIZE);
    // Element size and script size.
    Bytes big;
    test::AppendPush(big, Bytes(521, 1));
    ScriptStack stack;
    ScriptError err;
    const SignatureChecker base;
    EXPECT_FALSE(EvalScript(stack, big, 0, base, SigVersion::BASE, &err));
    EXPECT_EQ(err, ScriptError::PUSH_SIZE);
    EXPECT_FALSE(EvalScript(stack, Bytes(10001, 0x61), 0, base, SigVersion::BASE, &err));
    EXPECT_EQ(err, ScriptError::SCRIPT_SIZE);
    // Multisig keys count toward the op limit.
    EXPECT_EQ(Eval("0 0 20 CHECKMULTISIG", 0), ScriptError::INVALID_STACK_OPERATION);
    EXPECT_EQ(Eval("0 0 21 CHECKMULTISIG", 0), ScriptError::PUBKEY_COUNT);
}

TEST(ScriptInterpreter, DisabledAndReservedOpcodes)
{
    EXPECT_EQ(Eval("0 IF CAT ENDIF 1"), ScriptError::DISABLED_OPCODE);
    EXPECT_EQ(Eval("0 IF VERIF ENDIF 1"), ScriptError::BAD_OPCODE);
    EXPECT_EQ(Eval("0 IF RESERVED VER 0xba 0xff ENDIF 1"), ScriptError::OK);
    EXPECT_EQ(Eval("1 0xba"), ScriptError::BAD_OPCODE); // CHECKSIGADD outside tapscript
    EXPECT_EQ(Eval("NOP1 1", SCRIPT_VERIFY_DISCOURAGE_UPGRADABLE_NOPS), ScriptError::DISCOURAGE_UPGRADABLE_NOPS);
    EXPECT_EQ(Eval("0 IF NOP10 ENDIF 1", SCRIPT_VERIFY_DISCOURAGE_UPGRADABLE_NOPS), ScriptError::OK);
    EXPECT_EQ(Eval("1 IF 1 ELSE 0 ELSE 1 ENDIF"), ScriptError::OK); // ELSE toggles again
    EXPECT_EQ(Eval("1 IF"), ScriptError::UNBALANCED_CONDITIONAL);
    EXPECT_EQ(Eval("ENDIF"), ScriptError::UNBALANCED_CONDITIONAL);
}

TEST(ScriptInterpreter, TapscriptRules)
{
    const SigVersion ts = SigVersion::TAPSCRIPT;
    EXPECT_EQ(Eval("0x02 0x0100 IF ENDIF 1", 0, ts), ScriptError::TAPSCRIPT_MINIMALIF);
    EXPECT_EQ(Eval("2 IF ENDIF 1", 0, ts), ScriptError::TAPSCRIPT_MINIMALIF);
    EXPECT_EQ(Eval("2 IF ENDIF 1", 0, SigVersion::WITNESS_V0), ScriptError::OK);
    EXPECT_EQ(Eval("2 IF ENDIF 1", SCRIPT_VERIFY_MINIMALIF, SigVersion::WITNESS_V0), ScriptError::MINIMALIF);
    EXPECT_EQ(Eval("0 0 0 CHECKMULTISIG", 0, ts), ScriptError::TAPSCRIPT_CHECKMULTISIG);
    // Empty signature: a clean false; empty key: an error; unknown key types: success.
    const std::string key32 = "0x20 0x" + std::string(64, '3');
    EXPECT_EQ(Eval("0 " + key32 + " CHECKSIG NOT", 0, ts), ScriptError::OK);
    EXPECT_EQ(Eval("0 0 CHECKSIG", 0, ts), ScriptError::PUBKEYTYPE);

    ScriptExecutionData execdata;
    execdata.validation_weight_left_init = true;
    execdata.validation_weight_left = 100;
    RecordingChecker yes(true);
    ScriptStack stack;
    ScriptError err;
    // Two passing checks fit a budget of 100, the third does not.
    const Bytes sigs3 = ParseScriptAsm("1 0 " + key32 + " 0xba 1 SWAP " + key32 + " 0xba 1 SWAP 0x02 0x0102 0xba");
    EXPECT_FALSE(EvalScript(stack, sigs3, 0, yes, ts, execdata, &err));
    EXPECT_EQ(err, ScriptError::TAPSCRIPT_VALIDATION_WEIGHT);
    // An unknown key type passes (and costs budget); discouraged under its flag.
    stack.clear();
    execdata.validation_weight_left = 100;
    EXPECT_TRUE(EvalScript(stack, ParseScriptAsm("1 0x02 0x0102 CHECKSIG"), 0, yes, ts, execdata, &err));
    EXPECT_EQ(execdata.validation_weight_left, 50);
    stack.clear();
    EXPECT_FALSE(EvalScript(stack, ParseScriptAsm("1 0x02 0x0102 CHECKSIG"), SCRIPT_VERIFY_DISCOURAGE_UPGRADABLE_PUBKEYTYPE, yes,
                            ts, execdata, &err));
    EXPECT_EQ(err, ScriptError::DISCOURAGE_UPGRADABLE_PUBKEYTYPE);
    // OP_CODESEPARATOR's position (in ops) reaches the checker.
    stack.clear();
    execdata.validation_weight_left = 100;
    yes.separator_positions.clear();
    EXPECT_TRUE(EvalScript(stack, ParseScriptAsm("1 NOP CODESEPARATOR " + key32 + " CHECKSIG"), 0, yes, ts, execdata, &err));
    ASSERT_EQ(yes.separator_positions.size(), 1u);
    EXPECT_EQ(yes.separator_positions[0], 2u);
}

TEST(ScriptInterpreter, WitnessProgramsWithoutSignatures)
{
    const SignatureChecker base;
    ScriptError err;
    const ScriptFlags f = SCRIPT_VERIFY_P2SH | SCRIPT_VERIFY_WITNESS;
    // P2WSH of "1": witness [script].
    const Bytes one{0x51};
    uint8_t h[32];
    Sha256().Write(one).Finalize(h);
    Bytes spk(34, 0x00);
    spk[1] = 0x20;
    std::copy(h, h + 32, spk.begin() + 2);
    ScriptWitness w;
    w.stack = {one};
    EXPECT_TRUE(VerifyScript({}, spk, &w, f, base, &err)) << ScriptErrorName(err);
    EXPECT_FALSE(VerifyScript(Bytes{0x51}, spk, &w, f, base, &err));
    EXPECT_EQ(err, ScriptError::WITNESS_MALLEATED);
    w.stack = {Bytes{0x52}};
    EXPECT_FALSE(VerifyScript({}, spk, &w, f, base, &err));
    EXPECT_EQ(err, ScriptError::WITNESS_PROGRAM_MISMATCH);
    w.stack = {};
    EXPECT_FALSE(VerifyScript({}, spk, &w, f, base, &err));
    EXPECT_EQ(err, ScriptError::WITNESS_PROGRAM_WITNESS_EMPTY);
    // Unknown versions pass, or are discouraged; pay-to-anchor is never discouraged.
    const Bytes v2{0x52, 0x02, 0xaa, 0xbb};
    EXPECT_TRUE(VerifyScript({}, v2, &w, f, base, &err));
    EXPECT_FALSE(VerifyScript({}, v2, &w, f | SCRIPT_VERIFY_DISCOURAGE_UPGRADABLE_WITNESS_PROGRAM, base, &err));
    EXPECT_EQ(err, ScriptError::DISCOURAGE_UPGRADABLE_WITNESS_PROGRAM);
    const Bytes anchor{0x51, 0x02, 0x4e, 0x73};
    EXPECT_TRUE(VerifyScript({}, anchor, &w, f | SCRIPT_VERIFY_DISCOURAGE_UPGRADABLE_WITNESS_PROGRAM, base, &err));
    // A witness where no program runs.
    w.stack = {one};
    EXPECT_FALSE(VerifyScript({}, Bytes{0x51}, &w, f, base, &err));
    EXPECT_EQ(err, ScriptError::WITNESS_UNEXPECTED);
    // Taproot with a too-short control block.
    Bytes tr(34, 0x11);
    tr[0] = 0x51;
    tr[1] = 0x20;
    w.stack = {one, Bytes(34, 0xc0)};
    EXPECT_FALSE(VerifyScript({}, tr, &w, f | SCRIPT_VERIFY_TAPROOT, base, &err));
    EXPECT_EQ(err, ScriptError::TAPROOT_WRONG_CONTROL_SIZE);
    EXPECT_TRUE(VerifyScript({}, tr, &w, f, base, &err)); // before taproot: anyone can spend
}

} // namespace
} // namespace ibdkit

// Core's script_tests.json through VerifyScript: every case, with the crediting and spending
// transactions Core's script_tests.cpp builds, the exact expected error, and (as Core's DoTest)
// the verdict kept when flags are removed from a passing case or added to a failing one.
#include <ibdkit/crypto/sha256.h>
#include <ibdkit/script/script_error.h>

#include "script/interpreter.h"

#include "script_test_util.h"
#include "test_util.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <cmath>
#include <fstream>
#include <iostream>
#include <random>
#include <string>
#include <vector>

namespace ibdkit {
namespace {

using json = nlohmann::json;
using test::ParseHex;
using test::ParseScriptAsm;

json LoadVectors(const std::string& name)
{
    const std::string path = std::string(IBDKIT_TEST_DATA) + "/core-test-vectors/" + name;
    std::ifstream f(path);
    if (!f) throw std::runtime_error("cannot open " + path);
    return json::parse(f);
}

bool RunCase(const std::vector<uint8_t>& script_sig, const std::vector<uint8_t>& script_pubkey, const ScriptWitness& witness,
             ScriptFlags flags, Amount amount, ScriptError& error)
{
    const Transaction credit = test::BuildCreditingTransaction(script_pubkey, amount);
    const Transaction spend = test::BuildSpendingTransaction(script_sig, witness, credit);
    const TransactionSignatureChecker checker(spend, 0, credit.vout()[0].value);
    return VerifyScript(script_sig, script_pubkey, &witness, flags, checker, &error);
}

TEST(ScriptVectors, ScriptTestsJsonEveryCase)
{
    const json tests = LoadVectors("script_tests.json");
    const uint64_t seed = test::TestSeed();
    std::cout << "seed " << seed << " (IBDKIT_TEST_SEED)\n";
    std::mt19937_64 rng(seed);
    int cases = 0, passed = 0, comments = 0;

    for (const json& t : tests) {
        const std::string text = t.dump();
        SCOPED_TRACE(text);
        ScriptWitness witness;
        Amount amount = 0;
        std::size_t pos = 0;
        std::vector<uint8_t> tapscript;
        bool has_control_block = false;
        if (!t.empty() && t[0].is_array()) {
            const json& w = t[0];
            for (std::size_t i = 0; i + 1 < w.size(); ++i) {
                const std::string elem = w[i].get<std::string>();
                if (elem.rfind("#SCRIPT#", 0) == 0) {
                    tapscript = ParseScriptAsm(elem.substr(8));
                    witness.stack.push_back(tapscript);
                } else if (elem == "#CONTROLBLOCK#") {
                    witness.stack.push_back(test::BuildOneLeafTaproot(tapscript).control_block);
                    has_control_block = true;
                } else {
                    witness.stack.push_back(ParseHex(elem));
                }
            }
            amount = Amount(std::llround(w.back().get<double>() * 1e8));
            pos = 1;
        }
        if (t.size() < 4 + pos) {
            ASSERT_EQ(t.size(), 1u) << "bad test";
            ++comments;
            continue;
        }
        const std::vector<uint8_t> script_sig = ParseScriptAsm(t[pos].get<std::string>());
        const std::string spk_text = t[pos + 1].get<std::string>();
        std::vector<uint8_t> script_pubkey;
        if (spk_text == "0x51 0x20 #TAPROOTOUTPUT#") {
            ASSERT_TRUE(has_control_block);
            script_pubkey = {0x51, 0x20};
            const auto out = test::BuildOneLeafTaproot(tapscript).output_key;
            script_pubkey.insert(script_pubkey.end(), out.begin(), out.end());
        } else {
            script_pubkey = ParseScriptAsm(spk_text);
        }
        const auto flags_opt = ParseScriptFlags(t[pos + 2].get<std::string>());
        ASSERT_TRUE(flags_opt) << "unknown flag";
        ScriptFlags flags = *flags_opt;
        const auto expected_opt = ParseScriptErrorName(t[pos + 3].get<std::string>());
        ASSERT_TRUE(expected_opt) << "unknown error name";
        const ScriptError expected = *expected_opt;
        if (flags & SCRIPT_VERIFY_CLEANSTACK) flags |= SCRIPT_VERIFY_P2SH | SCRIPT_VERIFY_WITNESS;
        ++cases;

        ScriptError err = ScriptError::UNKNOWN_ERROR;
        const bool expect_ok = expected == ScriptError::OK;
        const bool ok = RunCase(script_sig, script_pubkey, witness, flags, amount, err);
        EXPECT_EQ(ok, expect_ok);
        EXPECT_EQ(ScriptErrorName(err), ScriptErrorName(expected));
        bool all_good = ok == expect_ok && err == expected;

        // Fewer flags cannot fail a passing case; more cannot pass a failing one.
        for (int k = 0; k < 16; ++k) {
            const ScriptFlags extra = ScriptFlags(rng()) & (SCRIPT_VERIFY_END_MARKER - 1);
            const ScriptFlags combined = expect_ok ? (flags & ~extra) : (flags | extra);
            if ((combined & SCRIPT_VERIFY_CLEANSTACK) && (~combined & (SCRIPT_VERIFY_P2SH | SCRIPT_VERIFY_WITNESS))) continue;
            if ((combined & SCRIPT_VERIFY_WITNESS) && !(combined & SCRIPT_VERIFY_P2SH)) continue;
            ScriptError e2;
            const bool ok2 = RunCase(script_sig, script_pubkey, witness, combined, amount, e2);
            EXPECT_EQ(ok2, expect_ok) << "with flags " << FormatScriptFlags(combined);
            all_good = all_good && ok2 == expect_ok;
        }
        passed += all_good;
    }
    std::cout << "script_tests.json: " << passed << " of " << cases << " cases pass (" << comments << " comments)\n";
    EXPECT_EQ(passed, cases);
    EXPECT_GT(cases, 1000);
}

TEST(ScriptErrors, NamesAndStringsRoundTrip)
{
    for (int i = 0; i < int(ScriptError::ERROR_COUNT); ++i) {
        const auto e = ScriptError(i);
        EXPECT_EQ(ParseScriptErrorName(ScriptErrorName(e)), e);
        EXPECT_FALSE(ScriptErrorString(e).empty());
    }
    EXPECT_EQ(ScriptErrorName(ScriptError::SIG_NULLFAIL), "NULLFAIL");
    EXPECT_EQ(ScriptErrorString(ScriptError::EVAL_FALSE),
              "Script evaluated without error but finished with a false/empty top stack element");
    EXPECT_EQ(ScriptErrorString(ScriptError::UNKNOWN_ERROR), "unknown error");
    EXPECT_EQ(ParseScriptErrorName("NOPE"), std::nullopt);
}

TEST(ScriptFlagNames, ParseAndFormat)
{
    EXPECT_EQ(ParseScriptFlags(""), SCRIPT_VERIFY_NONE);
    EXPECT_EQ(ParseScriptFlags("NONE"), SCRIPT_VERIFY_NONE);
    EXPECT_EQ(ParseScriptFlags("P2SH,WITNESS"), SCRIPT_VERIFY_P2SH | SCRIPT_VERIFY_WITNESS);
    EXPECT_EQ(ParseScriptFlags("P2SH,BOGUS"), std::nullopt);
    EXPECT_EQ(FormatScriptFlags(SCRIPT_VERIFY_WITNESS | SCRIPT_VERIFY_P2SH | SCRIPT_VERIFY_TAPROOT), "P2SH,WITNESS,TAPROOT");
    EXPECT_EQ(FormatScriptFlags(0), "");
    const ScriptFlags all = SCRIPT_VERIFY_END_MARKER - 1;
    EXPECT_EQ(ParseScriptFlags(FormatScriptFlags(all)), all);
}

} // namespace
} // namespace ibdkit

// Core's tx_valid.json and tx_invalid.json through CheckTransaction and VerifyScript, as Core's
// transaction_tests.cpp runs them: tx_valid's flags are the *excluded* flags (the transaction must
// pass with every other flag, still pass with fewer, and fail when any one excluded flag is turned
// on); tx_invalid's are the flags it must fail under (and still fail with more, and pass when any
// one is turned off); "BADTX" cases fail CheckTransaction instead.
#include "consensus/tx_check.h"
#include "script/interpreter.h"
#include <ibdkit/script/script_error.h>

#include "script_test_util.h"
#include "test_util.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <fstream>
#include <iostream>
#include <map>
#include <random>
#include <set>
#include <string>
#include <vector>

namespace ibdkit {
namespace {

using json = nlohmann::json;

constexpr ScriptFlags ALL_FLAGS = SCRIPT_VERIFY_END_MARKER - 1;

json LoadVectors(const std::string& name)
{
    const std::string path = std::string(IBDKIT_TEST_DATA) + "/core-test-vectors/" + name;
    std::ifstream f(path);
    if (!f) throw std::runtime_error("cannot open " + path);
    return json::parse(f);
}

// Core's TrimFlags / FillFlags: WITNESS needs P2SH, CLEANSTACK needs WITNESS.
ScriptFlags TrimFlags(ScriptFlags f)
{
    if (!(f & SCRIPT_VERIFY_P2SH)) f &= ~ScriptFlags(SCRIPT_VERIFY_WITNESS);
    if (!(f & SCRIPT_VERIFY_WITNESS)) f &= ~ScriptFlags(SCRIPT_VERIFY_CLEANSTACK);
    return f;
}
ScriptFlags FillFlags(ScriptFlags f)
{
    if (f & SCRIPT_VERIFY_CLEANSTACK) f |= SCRIPT_VERIFY_WITNESS;
    if (f & SCRIPT_VERIFY_WITNESS) f |= SCRIPT_VERIFY_P2SH;
    return f;
}
std::set<ScriptFlags> ExcludeIndividualFlags(ScriptFlags f)
{
    std::set<ScriptFlags> out;
    for (ScriptFlags bit = 1; bit < SCRIPT_VERIFY_END_MARKER; bit <<= 1) {
        const ScriptFlags g = TrimFlags(f & ~bit);
        if (g != f) out.insert(g);
    }
    return out;
}

struct TxCase {
    std::string text;
    Transaction tx;
    std::map<OutPoint, std::vector<uint8_t>> scripts;
    std::map<OutPoint, Amount> amounts;
    std::string flags;
};

std::optional<TxCase> ReadCase(const json& t)
{
    if (!t[0].is_array()) return std::nullopt; // a comment
    if (t.size() != 3 || !t[1].is_string() || !t[2].is_string()) throw std::runtime_error("bad test: " + t.dump());
    TxCase c;
    c.text = t.dump();
    for (const json& in : t[0]) {
        if (!in.is_array() || in.size() < 3 || in.size() > 4) throw std::runtime_error("bad input: " + c.text);
        const auto txid = Txid::FromHex(in[0].get<std::string>());
        if (!txid) throw std::runtime_error("bad txid: " + c.text);
        OutPoint op;
        op.hash = *txid;
        op.n = uint32_t(in[1].get<int64_t>());
        c.scripts[op] = test::ParseScriptAsm(in[2].get<std::string>());
        if (in.size() == 4) c.amounts[op] = in[3].get<int64_t>();
    }
    auto decoded = DecodeTransaction(test::ParseHex(t[1].get<std::string>()));
    if (!decoded) throw std::runtime_error("undecodable transaction: " + c.text);
    c.tx = std::move(decoded).value();
    c.flags = t[2].get<std::string>();
    return c;
}

/// Core's CheckTxScripts: every input verified, stopping at the first failure. Returns whether
/// the transaction's scripts all pass, and the error of the failing input.
bool TxScriptsPass(const TxCase& c, ScriptFlags flags, const PrecomputedTxData& txdata, ScriptError* first_error = nullptr)
{
    const auto vin = c.tx.vin();
    for (uint32_t i = 0; i < vin.size(); ++i) {
        const auto it = c.scripts.find(vin[i].prevout);
        if (it == c.scripts.end()) throw std::runtime_error("input without a prevout script: " + c.text);
        const auto amount_it = c.amounts.find(vin[i].prevout);
        const Amount amount = amount_it == c.amounts.end() ? 0 : amount_it->second;
        const TransactionSignatureChecker checker(c.tx, i, amount, &txdata);
        ScriptError err;
        if (!VerifyScript(vin[i].script_sig.span(), it->second, &vin[i].witness, flags, checker, &err)) {
            if (first_error) *first_error = err;
            return false;
        }
        EXPECT_EQ(err, ScriptError::OK);
    }
    if (first_error) *first_error = ScriptError::OK;
    return true;
}

TEST(ScriptTxVectors, TxValidJsonEveryCase)
{
    const json tests = LoadVectors("tx_valid.json");
    std::mt19937_64 rng(test::TestSeed());
    int cases = 0, passed = 0;
    for (const json& t : tests) {
        const auto c = ReadCase(t);
        if (!c) continue;
        SCOPED_TRACE(c->text);
        ++cases;
        bool good = true;
        TxValidationState state;
        EXPECT_TRUE(CheckTransaction(c->tx, state)) << state.ToString();
        good = good && state.IsValid();

        PrecomputedTxData txdata;
        txdata.Init(c->tx, {}); // as Core's harness: no spent outputs
        const auto excluded_opt = ParseScriptFlags(c->flags);
        ASSERT_TRUE(excluded_opt);
        const ScriptFlags excluded = *excluded_opt;
        EXPECT_EQ(ALL_FLAGS & ~excluded, FillFlags(ALL_FLAGS & ~excluded)) << "bad test flags";

        ScriptError err;
        const bool ok = TxScriptsPass(*c, ALL_FLAGS & ~excluded, txdata, &err);
        EXPECT_TRUE(ok) << ScriptErrorName(err);
        good = good && ok;
        // Removing flags never invalidates a valid transaction.
        for (ScriptFlags bit = 1; bit < SCRIPT_VERIFY_END_MARKER; bit <<= 1) {
            const bool one = TxScriptsPass(*c, TrimFlags(ALL_FLAGS & ~(excluded | bit)), txdata);
            const bool random = TxScriptsPass(*c, TrimFlags(ALL_FLAGS & ~(excluded | (ScriptFlags(rng()) & ALL_FLAGS))), txdata);
            EXPECT_TRUE(one) << "fails with " << FormatScriptFlags(bit) << " unset";
            EXPECT_TRUE(random);
            good = good && one && random;
        }
        // The excluded flags are needed: turning any one back on fails the transaction.
        for (const ScriptFlags combo : ExcludeIndividualFlags(excluded)) {
            const bool fails = !TxScriptsPass(*c, ALL_FLAGS & ~combo, txdata);
            EXPECT_TRUE(fails) << "too many flags excluded: passes with " << FormatScriptFlags(ALL_FLAGS & ~combo);
            good = good && fails;
        }
        passed += good;
    }
    std::cout << "tx_valid.json: " << passed << " of " << cases << " cases pass\n";
    EXPECT_EQ(passed, cases);
    EXPECT_GT(cases, 100);
}

TEST(ScriptTxVectors, TxInvalidJsonEveryCase)
{
    const json tests = LoadVectors("tx_invalid.json");
    std::mt19937_64 rng(test::TestSeed() + 1);
    int cases = 0, passed = 0, badtx = 0;
    for (const json& t : tests) {
        const auto c = ReadCase(t);
        if (!c) continue;
        SCOPED_TRACE(c->text);
        ++cases;
        TxValidationState state;
        if (!CheckTransaction(c->tx, state) || state.IsInvalid()) {
            EXPECT_EQ(c->flags, "BADTX");
            passed += c->flags == "BADTX";
            ++badtx;
            continue;
        }
        bool good = true;
        PrecomputedTxData txdata;
        txdata.Init(c->tx, {});
        const auto flags_opt = ParseScriptFlags(c->flags);
        ASSERT_TRUE(flags_opt) << "unknown flags (a BADTX case that passed CheckTransaction?)";
        const ScriptFlags flags = *flags_opt;
        EXPECT_EQ(flags, FillFlags(flags)) << "bad test flags";

        const bool fails = !TxScriptsPass(*c, flags, txdata);
        EXPECT_TRUE(fails) << "passes";
        good = good && fails;
        // Adding flags never validates an invalid transaction.
        for (ScriptFlags bit = 1; bit < SCRIPT_VERIFY_END_MARKER; bit <<= 1) {
            const bool one = !TxScriptsPass(*c, FillFlags(flags | bit), txdata);
            const bool random = !TxScriptsPass(*c, FillFlags(flags | (ScriptFlags(rng()) & ALL_FLAGS)), txdata);
            EXPECT_TRUE(one) << "passes with " << FormatScriptFlags(bit) << " set";
            EXPECT_TRUE(random);
            good = good && one && random;
        }
        // The flags are minimal: without any one of them the transaction passes.
        for (const ScriptFlags combo : ExcludeIndividualFlags(flags)) {
            const bool ok = TxScriptsPass(*c, combo, txdata);
            EXPECT_TRUE(ok) << "too many flags: fails with only " << FormatScriptFlags(combo);
            good = good && ok;
        }
        passed += good;
    }
    std::cout << "tx_invalid.json: " << passed << " of " << cases << " cases pass (" << badtx << " BADTX)\n";
    EXPECT_EQ(passed, cases);
    EXPECT_GT(cases, 80);
}

} // namespace
} // namespace ibdkit

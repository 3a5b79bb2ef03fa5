// Sigop cost (GetTransactionSigOpCost, bad-blk-sigops) and BIP68 sequence locks
// (bad-txns-nonfinal), from the spent outputs and coin heights, with Core's reasons.
#include "test_util.h"

#include <ibdkit/consensus/tx_verify.h>
#include <ibdkit/primitives/consensus_constants.h>

#include "consensus/tx_check.h"

#include <gtest/gtest.h>

namespace ibdkit {
namespace {

Script S(const std::string& hex)
{
    const auto b = test::ParseHex(hex);
    return Script(std::span<const uint8_t>(b));
}

/// A one-input, one-output transaction spending a non-null outpoint.
MutableTransaction Spend(const std::string& script_sig_hex, std::vector<std::vector<uint8_t>> witness = {})
{
    MutableTransaction m;
    m.version = 2;
    m.vin.resize(1);
    m.vin[0].prevout.hash.AsUint256().data()[0] = 1;
    m.vin[0].script_sig = S(script_sig_hex);
    m.vin[0].witness.stack = std::move(witness);
    m.vout.resize(1);
    m.vout[0].value = 1;
    m.vout[0].script_pubkey = S("51");
    return m;
}

TxOut Out(const std::string& spk_hex)
{
    TxOut o;
    o.value = 1000;
    o.script_pubkey = S(spk_hex);
    return o;
}

const std::string H20(40, '7'), H32(64, '7');

TEST(SigOpCost, LegacyCountsFourTimes)
{
    MutableTransaction cb;
    cb.vin.resize(1); // null prevout: a coinbase
    cb.vin[0].script_sig = S("0101");
    cb.vout.resize(1);
    cb.vout[0].script_pubkey = S("ac"); // OP_CHECKSIG
    EXPECT_EQ(GetTransactionSigOpCost(Transaction(cb), {}, {}), 4);
    // A spend whose own output has a CHECKMULTISIG (inaccurate: 20) and spends a P2PKH.
    MutableTransaction m = Spend("00");
    m.vout[0].script_pubkey = S("ae");
    const TxOut spent[] = {Out("76a914" + H20 + "88ac")};
    EXPECT_EQ(GetTransactionSigOpCost(Transaction(m), spent, {}), 80); // the spent P2PKH is not counted
}

TEST(SigOpCost, P2SHRedeemScriptCountedAccurately)
{
    // Redeem script OP_2 <k1> <k2> OP_2 OP_CHECKMULTISIG, pushed by the scriptSig: 2 sigops, × 4.
    const std::string key(66, '2');
    const std::string redeem = "52" "21" + key + "21" + key + "52" "ae";
    const std::string script_sig = "00" "47" + std::string(142, '3') + "4c" + "47" + redeem; // OP_0 <sig> <redeem>
    const Transaction tx(Spend(script_sig));
    const TxOut spent[] = {Out("a914" + H20 + "87")};
    EXPECT_EQ(GetP2SHSigOpCount(tx, spent), 2u);
    EXPECT_EQ(GetTransactionSigOpCost(tx, spent, {}), 8);
    EXPECT_EQ(GetTransactionSigOpCost(tx, spent, {false, false}), 0); // the BIP16 exception block's flags
    // A scriptSig with a non-push op: no P2SH sigops (Core returns 0).
    const Transaction bad(Spend("61" "01ac")); // OP_NOP <ac>
    EXPECT_EQ(GetP2SHSigOpCount(bad, spent), 0u);
}

TEST(SigOpCost, WitnessSigOpsFromTheSpentOutput)
{
    // P2WPKH: 1. P2WSH: the witness script's accurate count (OP_3 ... CHECKMULTISIG: 3).
    const Transaction wpkh(Spend("", {{0x30}, {0x02}}));
    const TxOut p2wpkh[] = {Out("0014" + H20)};
    EXPECT_EQ(GetTransactionSigOpCost(wpkh, p2wpkh, {}), 1);
    EXPECT_EQ(GetTransactionSigOpCost(wpkh, p2wpkh, {true, false}), 0);
    const Transaction wsh(Spend("", {{}, {0x53, 0xae}}));
    const TxOut p2wsh[] = {Out("0020" + H32)};
    EXPECT_EQ(GetTransactionSigOpCost(wsh, p2wsh, {}), 3);
    // P2WSH with an empty witness: 0. A v1 (taproot) output: 0.
    EXPECT_EQ(GetTransactionSigOpCost(Transaction(Spend("")), p2wsh, {}), 0);
    const TxOut p2tr[] = {Out("5120" + H32)};
    EXPECT_EQ(GetTransactionSigOpCost(wsh, p2tr, {}), 0);
    // P2SH-wrapped P2WPKH: the scriptSig pushes the witness program.
    const Transaction nested(Spend("16" "0014" + H20, {{0x30}, {0x02}}));
    const TxOut p2sh[] = {Out("a914" + H20 + "87")};
    EXPECT_EQ(GetTransactionSigOpCost(nested, p2sh, {}), 1);
}

TEST(SigOpCost, InputSharesAddUpToTheCost)
{
    // ConnectBlock's form: legacy × 4 plus each input's share (InputSigOpCost) is the whole cost,
    // for P2SH multisig, P2SH-wrapped P2WPKH, P2WSH and P2PKH inputs in one transaction.
    const std::string key(66, '2');
    const std::string redeem = "52" "21" + key + "21" + key + "52" "ae";
    MutableTransaction m = Spend("00" "47" + std::string(142, '3') + "4c" + "47" + redeem);
    m.vout[0].script_pubkey = S("ac");
    m.vin.resize(4);
    m.vin[1].script_sig = S("16" "0014" + H20);
    m.vin[1].witness.stack = {{0x30}, {0x02}};
    m.vin[2].witness.stack = {{}, {0x53, 0xae}};
    m.vin[3].script_sig = S("00");
    for (std::size_t i = 1; i < m.vin.size(); ++i) m.vin[i].prevout.n = uint32_t(i);
    const Transaction tx(m);
    const TxOut spent[] = {Out("a914" + H20 + "87"), Out("a914" + H20 + "87"), Out("0020" + H32), Out("76a914" + H20 + "88ac")};
    for (const SigOpFlags flags : {SigOpFlags{}, SigOpFlags{true, false}, SigOpFlags{false, false}}) {
        int64_t sum = int64_t(GetLegacySigOpCount(tx)) * WITNESS_SCALE_FACTOR;
        for (std::size_t i = 0; i < tx.vin().size(); ++i) sum += InputSigOpCost(tx.vin()[i], spent[i].script_pubkey.span(), flags);
        EXPECT_EQ(sum, GetTransactionSigOpCost(tx, spent, flags)) << flags.p2sh << flags.witness;
    }
    EXPECT_EQ(GetTransactionSigOpCost(tx, spent, {}), 4 + 8 + 1 + 3);
    EXPECT_EQ(InputSigOpCost(tx.vin()[1], spent[1].script_pubkey.span(), {}), 1);

    // The facts of an input do not depend on what it spends: the P2WSH input's witness script
    // counts only under a P2WSH output, a non-push-only scriptSig gives a P2SH output nothing.
    const InputSigOps wsh = InputSigOpsOf(tx.vin()[2]);
    EXPECT_EQ(wsh.witness_script, 3u);
    EXPECT_EQ(InputSigOpCost(wsh, Out("0020" + H32).script_pubkey.span(), {}), 3);
    EXPECT_EQ(InputSigOpCost(wsh, Out("0014" + H20).script_pubkey.span(), {}), 1);
    EXPECT_EQ(InputSigOpCost(wsh, Out("5120" + H32).script_pubkey.span(), {}), 0);
    EXPECT_EQ(InputSigOpCost(wsh, Out("76a914" + H20 + "88ac").script_pubkey.span(), {}), 0);
    const InputSigOps nonpush = InputSigOpsOf(Transaction(Spend("61" "01ae")).vin()[0]); // OP_NOP <ae>
    EXPECT_EQ(InputSigOpCost(nonpush, Out("a914" + H20 + "87").script_pubkey.span(), {}), 0);
    const InputSigOps p2sh_multisig = InputSigOpsOf(tx.vin()[0]);
    EXPECT_EQ(InputSigOpCost(p2sh_multisig, Out("a914" + H20 + "87").script_pubkey.span(), {}), 8);
    EXPECT_EQ(InputSigOpCost(p2sh_multisig, Out("a914" + H20 + "87").script_pubkey.span(), {false, false}), 0);
    // P2SH-wrapped P2WSH: the witness script's count, under the P2SH output only with witness on.
    const InputSigOps nested_wsh = InputSigOpsOf(Transaction(Spend("22" "0020" + H32, {{}, {0x53, 0xae}})).vin()[0]);
    EXPECT_EQ(InputSigOpCost(nested_wsh, Out("a914" + H20 + "87").script_pubkey.span(), {}), 3);
    EXPECT_EQ(InputSigOpCost(nested_wsh, Out("a914" + H20 + "87").script_pubkey.span(), {true, false}), 0);
}

TEST(SigOpCost, BlockLimitIsBadBlkSigops)
{
    BlockValidationState st;
    int64_t total = 0;
    EXPECT_TRUE(AddSigOpCost(total, MAX_BLOCK_SIGOPS_COST - 4, st));
    EXPECT_TRUE(AddSigOpCost(total, 4, st)); // exactly the limit
    EXPECT_FALSE(AddSigOpCost(total, 1, st));
    EXPECT_EQ(st.GetRejectReason(), "bad-blk-sigops");
    EXPECT_EQ(st.GetResult(), BlockValidationResult::BLOCK_CONSENSUS);
    EXPECT_EQ(st.GetDebugMessage(), "too many sigops");
}

TEST(SequenceLocks, HeightLocks)
{
    MutableTransaction m = Spend("");
    m.vin[0].sequence = 10; // 10 blocks after the coin's block
    const Transaction tx(m);
    const int heights[] = {100};
    const auto never = [](int) -> int64_t { ADD_FAILURE() << "no time lock here"; return 0; };
    const SequenceLocks l = CalculateSequenceLocks(tx, true, heights, never);
    EXPECT_EQ(l.min_height, 109);
    EXPECT_EQ(l.min_time, -1);
    BlockValidationState st;
    EXPECT_FALSE(CheckSequenceLocks(tx, 109, 0, true, heights, never, st));
    EXPECT_EQ(st.GetRejectReason(), "bad-txns-nonfinal");
    EXPECT_EQ(st.GetResult(), BlockValidationResult::BLOCK_CONSENSUS);
    EXPECT_EQ(st.GetDebugMessage(), "contains a non-BIP68-final transaction " + tx.GetHash().ToHex()); // Core's
    BlockValidationState ok;
    EXPECT_TRUE(CheckSequenceLocks(tx, 110, 0, true, heights, never, ok));
    // Before CSV, with version 1, or with the disable flag: no lock.
    EXPECT_TRUE(CheckSequenceLocks(tx, 101, 0, false, heights, never, ok));
    MutableTransaction v1 = m;
    v1.version = 1;
    EXPECT_TRUE(CheckSequenceLocks(Transaction(v1), 101, 0, true, heights, never, ok));
    MutableTransaction off = m;
    off.vin[0].sequence = 10u | (1u << 31);
    EXPECT_TRUE(CheckSequenceLocks(Transaction(off), 101, 0, true, heights, never, ok));
    // Version is compared unsigned (Core): 0xffffffff enforces BIP68.
    MutableTransaction neg = m;
    neg.version = 0xffffffffu;
    BlockValidationState st2;
    EXPECT_FALSE(CheckSequenceLocks(Transaction(neg), 109, 0, true, heights, never, st2));
    EXPECT_EQ(st2.GetRejectReason(), "bad-txns-nonfinal");
}

TEST(SequenceLocks, TimeLocksUseTheMedianTimePastBeforeTheCoin)
{
    MutableTransaction m = Spend("");
    m.vin[0].sequence = (1u << 22) | 2; // 2 × 512 s
    const Transaction tx(m);
    const int heights[] = {100};
    int asked = -1;
    const auto mtp = [&](int h) -> int64_t {
        asked = h;
        return 1'000'000;
    };
    const SequenceLocks l = CalculateSequenceLocks(tx, true, heights, mtp);
    EXPECT_EQ(asked, 99); // the block before the coin's
    EXPECT_EQ(l.min_time, 1'000'000 + 1024 - 1);
    EXPECT_EQ(l.min_height, -1);
    BlockValidationState st;
    EXPECT_FALSE(CheckSequenceLocks(tx, 500, 1'001'023, true, heights, mtp, st));
    EXPECT_EQ(st.GetRejectReason(), "bad-txns-nonfinal");
    BlockValidationState ok;
    EXPECT_TRUE(CheckSequenceLocks(tx, 500, 1'001'024, true, heights, mtp, ok));
    // A coin in the genesis block reads height 0 (max(h - 1, 0)).
    const int genesis[] = {0};
    (void)CalculateSequenceLocks(tx, true, genesis, mtp);
    EXPECT_EQ(asked, 0);
}

} // namespace
} // namespace ibdkit

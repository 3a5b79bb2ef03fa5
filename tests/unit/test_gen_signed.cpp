// Signed chains (gen-chain --signed): every input carries a real signature that Core's script
// rules accept, and a changed signature, amount or spent script is caught.
#include "test_util.h"

#include <ibdkit/chain/params.h>
#include <ibdkit/consensus/script_flags.h>

#include "gen/chain_gen.h"
#include "script/verify.h"

#include <gtest/gtest.h>

#include <map>
#include <vector>

namespace ibdkit {
namespace {

struct SignedChain {
    std::vector<Block> blocks; // heights 1..N
    std::map<OutPoint, TxOut> made;
    ChainGenStats stats;
};

SignedChain MakeSignedChain(ChainProfile profile, int blocks, uint64_t target_bytes)
{
    ChainGenOptions o;
    o.profile = profile;
    o.blocks = blocks;
    o.target_bytes = target_bytes;
    o.seed = 11;
    o.start_time = 1'700'000'000;
    o.signed_spends = true;
    ChainGenerator gen(o);
    SignedChain c;
    while (!gen.Done()) c.blocks.push_back(gen.Next());
    c.stats = gen.Stats();
    return c;
}

// Walks the chain as a validator would: the spent outputs of each transaction from the outputs
// made before it, every input verified under the block's flags.
template <typename Each>
void ForEachInput(const SignedChain& c, Each&& each)
{
    std::map<OutPoint, TxOut> utxo;
    const ConsensusParams& params = GetChainParams(ChainType::REGTEST).consensus;
    for (std::size_t b = 0; b < c.blocks.size(); ++b) {
        const Block& block = c.blocks[b];
        const int height = int(b) + 1;
        const ScriptFlags flags = GetBlockScriptFlags(params, height, block.GetHash());
        for (const Transaction& tx : block.vtx) {
            if (!tx.IsCoinBase()) {
                std::vector<TxOut> spent;
                for (const TxIn& in : tx.vin()) {
                    auto it = utxo.find(in.prevout);
                    ASSERT_NE(it, utxo.end()) << "height " << height << " spends a missing output";
                    spent.push_back(it->second);
                    utxo.erase(it);
                }
                each(tx, spent, flags, height);
            }
            for (uint32_t i = 0; i < tx.vout().size(); ++i) utxo.emplace(OutPoint{tx.GetHash(), i}, tx.vout()[i]);
        }
    }
}

TEST(GenSigned, EveryInputOfASignedChainVerifies)
{
    for (ChainProfile profile : {ChainProfile::Default, ChainProfile::Mainnet}) {
        SCOPED_TRACE(profile == ChainProfile::Default ? "default profile" : "mainnet profile");
        const SignedChain c = MakeSignedChain(profile, 160, 3'000'000);
        EXPECT_GT(c.stats.signed_inputs, 200u);
        EXPECT_EQ(c.stats.signed_inputs, c.stats.inputs) << "every spent output needs a signature";
        uint64_t verified = 0;
        ForEachInput(c, [&](const Transaction& tx, const std::vector<TxOut>& spent, ScriptFlags flags, int height) {
            PrecomputedTxData txdata;
            txdata.Init(tx, spent);
            for (uint32_t i = 0; i < tx.vin().size(); ++i) {
                const InputVerdict v = VerifyInput(tx, i, spent, flags, &txdata);
                ASSERT_TRUE(v.ok()) << "height " << height << " tx " << tx.GetHash().ToHex() << " input " << i << ": "
                                    << v.BlockRejectReason();
                ++verified;
            }
        });
        EXPECT_EQ(verified, c.stats.inputs);
    }
}

TEST(GenSigned, EveryKindIsSpent)
{
    const SignedChain c = MakeSignedChain(ChainProfile::Default, 400, 12'000'000);
    EXPECT_GT(c.stats.spent_signed_p2pkh, 0u);
    EXPECT_GT(c.stats.spent_signed_p2wpkh, 0u);
    EXPECT_GT(c.stats.spent_signed_p2tr_key, 0u);
    EXPECT_GT(c.stats.spent_signed_multisig, 0u);
    EXPECT_GT(c.stats.spent_signed_tapscript, 0u);
}

TEST(GenSigned, AChangedSignatureAmountOrScriptFails)
{
    const SignedChain c = MakeSignedChain(ChainProfile::Default, 130, 1'000'000);
    int checked = 0;
    ForEachInput(c, [&](const Transaction& tx, const std::vector<TxOut>& spent, ScriptFlags flags, int) {
        if (checked >= 40) return;
        for (uint32_t i = 0; i < tx.vin().size() && checked < 40; ++i, ++checked) {
            // A wrong amount: every segwit signature commits to it; a legacy one does not.
            std::vector<TxOut> wrong_amount = spent;
            wrong_amount[i].value += 1;
            const bool segwit = !spent[i].script_pubkey.empty() && (spent[i].script_pubkey[0] == 0x00 || spent[i].script_pubkey[0] == 0x51);
            if (segwit) {
                EXPECT_FALSE(VerifyInput(tx, i, wrong_amount, flags).ok());
            }
            // A wrong spent script: the input no longer matches what it spends.
            std::vector<TxOut> wrong_script = spent;
            wrong_script[i].script_pubkey = spent[(i + 1) % spent.size()].script_pubkey;
            if (spent.size() > 1 && !(wrong_script[i].script_pubkey == spent[i].script_pubkey)) {
                EXPECT_FALSE(VerifyInput(tx, i, wrong_script, flags).ok());
            }
            // A flipped bit in the first signature byte string (scriptSig or witness).
            MutableTransaction m = tx.ToMutable();
            TxIn& in = m.vin[i];
            if (!in.witness.stack.empty() && !in.witness.stack[0].empty()) {
                auto& sig = in.witness.stack[0].empty() ? in.witness.stack[1] : in.witness.stack[0];
                sig[sig.size() / 2] ^= 0x01;
            } else if (!in.witness.stack.empty()) {
                in.witness.stack[1][in.witness.stack[1].size() / 2] ^= 0x01; // multisig: after the dummy
            } else {
                const std::size_t at = in.script_sig[0] == 0 ? 5 : 4; // inside the first signature
                in.script_sig.data()[at] ^= 0x01;
            }
            const Transaction bad(m);
            EXPECT_FALSE(VerifyInput(bad, i, spent, flags).ok()) << "input " << i << " with a flipped signature bit";
        }
    });
    EXPECT_EQ(checked, 40);
}

TEST(GenSigned, SameOptionsSameBytes)
{
    const SignedChain a = MakeSignedChain(ChainProfile::Mainnet, 120, 1'000'000);
    const SignedChain b = MakeSignedChain(ChainProfile::Mainnet, 120, 1'000'000);
    EXPECT_EQ(a.stats.tip, b.stats.tip);
}

} // namespace
} // namespace ibdkit

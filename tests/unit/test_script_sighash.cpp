// Signature hashes and the signature primitives against Core's vectors: sighash.json (legacy),
// bip341_wallet_vectors.json (BIP341 key path and tweaks), plus the lax DER parser's edges.
#include <ibdkit/crypto/sha256.h>
#include <ibdkit/primitives/block.h>
#include <ibdkit/primitives/transaction.h>

#include "script/interpreter.h"
#include "script/sighash.h"

#include "script/secp.h"
#include "test_primitives_data.h"
#include "test_util.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <secp256k1.h>

#include <algorithm>
#include <fstream>
#include <random>
#include <string>

namespace ibdkit {
namespace {

nlohmann::json ReadJson(const std::string& rel)
{
    auto p = test::TestData(rel);
    if (!p) throw std::runtime_error("tests/data is incomplete: " + rel);
    std::ifstream f(*p);
    return nlohmann::json::parse(f);
}

Transaction TxFromHex(const std::string& hex)
{
    auto tx = DecodeTransaction(test::ParseHex(hex));
    if (!tx) throw std::runtime_error("undecodable transaction " + hex.substr(0, 40));
    return std::move(*tx);
}

uint256 Uint256FromInternalHex(const std::string& hex)
{
    const auto b = test::ParseHex(hex);
    if (b.size() != 32) throw std::runtime_error("not 32 bytes: " + hex);
    return uint256(std::span<const uint8_t, 32>(b.data(), 32));
}

uint256 BipTaggedHash(std::string_view tag, std::span<const uint8_t> data)
{
    uint8_t t[32];
    Sha256().Write(reinterpret_cast<const uint8_t*>(tag.data()), tag.size()).Finalize(t);
    uint256 out;
    Sha256().Write(t, 32).Write(t, 32).Write(data).Finalize(out.data());
    return out;
}

// n - x for a 32-byte scalar x (n the group order), big-endian, with a leading zero byte so that
// DER reads it as positive.
std::vector<uint8_t> NegateScalar(const std::vector<uint8_t>& x)
{
    const auto n = test::ParseHex("fffffffffffffffffffffffffffffffebaaedce6af48a03bbfd25e8cd0364141");
    std::vector<uint8_t> out(33, 0);
    int borrow = 0;
    for (int i = 31; i >= 0; --i) {
        int d = int(n[i]) - int(x[i]) - borrow;
        borrow = d < 0;
        out[i + 1] = uint8_t(d + (borrow ? 256 : 0));
    }
    return out;
}

TEST(ScriptSighash, CoreLegacyVectors)
{
    const auto tests = ReadJson("core-test-vectors/sighash.json");
    std::size_t checked = 0;
    for (const auto& t : tests) {
        if (t.size() == 1) continue; // comment
        ASSERT_EQ(t.size(), 5u) << t.dump();
        const Transaction tx = TxFromHex(t[0].get<std::string>());
        const auto script = test::ParseHex(t[1].get<std::string>());
        const uint32_t input = t[2].get<uint32_t>();
        const int32_t hash_type = t[3].get<int32_t>();
        // Core prints the hash byte-reversed (uint256::GetHex), as ToHex does.
        const std::string expected = t[4].get<std::string>();
        ASSERT_LT(input, tx.vin().size());
        const uint256 got = SignatureHash(script, tx, input, hash_type, 0, SigVersion::BASE);
        EXPECT_EQ(got.ToHex(), expected) << t.dump();
        // The same from the precomputed states in front of each input (PrecomputedTxData).
        PrecomputedTxData txdata;
        txdata.Init(tx, {}, /*force=*/true);
        ASSERT_EQ(txdata.legacy_prefix.size(), tx.vin().size());
        EXPECT_EQ(SignatureHash(script, tx, input, hash_type, 0, SigVersion::BASE, &txdata).ToHex(), expected) << t.dump();
        ++checked;
    }
    EXPECT_EQ(checked, 500u);
}

TEST(ScriptSighash, LegacySingleWithoutOutputIsOne)
{
    MutableTransaction mtx;
    mtx.vin.resize(2);
    mtx.vout.resize(1);
    mtx.vout[0].value = 5;
    const Transaction tx(mtx);
    uint256 one;
    one.data()[0] = 1;
    EXPECT_EQ(SignatureHash({}, tx, 1, SIGHASH_SINGLE, 0, SigVersion::BASE), one);
    EXPECT_EQ(SignatureHash({}, tx, 1, SIGHASH_SINGLE | SIGHASH_ANYONECANPAY, 0, SigVersion::BASE), one);
    EXPECT_NE(SignatureHash({}, tx, 0, SIGHASH_SINGLE, 0, SigVersion::BASE), one);
    // BIP143 has no such quirk: the output hash is zero instead.
    EXPECT_NE(SignatureHash({}, tx, 1, SIGHASH_SINGLE, 0, SigVersion::WITNESS_V0), one);
}

TEST(ScriptSighash, LegacyScriptCodeDropsCodeSeparators)
{
    MutableTransaction mtx;
    mtx.vin.resize(1);
    mtx.vout.resize(1);
    mtx.vout[0].value = 1;
    const Transaction tx(mtx);
    // OP_1 OP_CODESEPARATOR OP_2 OP_CODESEPARATOR hashes as OP_1 OP_2; a push of the byte 0xab is
    // data and stays.
    const std::vector<uint8_t> with = {0x51, 0xab, 0x52, 0xab};
    const std::vector<uint8_t> without = {0x51, 0x52};
    EXPECT_EQ(SignatureHash(with, tx, 0, SIGHASH_ALL, 0, SigVersion::BASE),
              SignatureHash(without, tx, 0, SIGHASH_ALL, 0, SigVersion::BASE));
    const std::vector<uint8_t> pushed = {0x01, 0xab};
    EXPECT_NE(SignatureHash(pushed, tx, 0, SIGHASH_ALL, 0, SigVersion::BASE),
              SignatureHash(std::vector<uint8_t>{}, tx, 0, SIGHASH_ALL, 0, SigVersion::BASE));
    // BIP143 signs the script code as given.
    EXPECT_NE(SignatureHash(with, tx, 0, SIGHASH_ALL, 0, SigVersion::WITNESS_V0),
              SignatureHash(without, tx, 0, SIGHASH_ALL, 0, SigVersion::WITNESS_V0));
}

// BIP143's own example (native P2WPKH, second input): the sighash with and without txdata.
TEST(ScriptSighash, Bip143NativeP2wpkhExample)
{
    const Transaction tx = TxFromHex(
        "0100000002fff7f7881a8099afa6940d42d1e7f6362bec38171ea3edf433541db4e4ad969f0000000000eeffffffef51e1b804cc89d1"
        "82d279655c3aa89e815b1b309fe287d9b2b55d57b90ec68a0100000000ffffffff02202cb206000000001976a9148280b37df378db99"
        "f66f85c95a783a76ac7a6d5988ac9093510d000000001976a9143bde42dbee7e4dbe6a21b2d50ce2f0167faa815988ac11000000");
    const auto script_code = test::ParseHex("76a9141d0f172a0ecb48aee1be1f2687d2963ae33f71a188ac");
    const Amount amount = 600000000;
    const std::string expected = "c37af31116d1b27caf68aae9e3ac82f1477929014d5b917657d0eb49478cb670";
    EXPECT_EQ(SignatureHash(script_code, tx, 1, SIGHASH_ALL, amount, SigVersion::WITNESS_V0).ToInternalHex(), expected);
    PrecomputedTxData txdata;
    txdata.Init(tx, {}, /*force=*/true);
    EXPECT_TRUE(txdata.bip143_segwit_ready);
    EXPECT_FALSE(txdata.bip341_taproot_ready); // no spent outputs
    EXPECT_EQ(SignatureHash(script_code, tx, 1, SIGHASH_ALL, amount, SigVersion::WITNESS_V0, &txdata).ToInternalHex(), expected);
    EXPECT_EQ(txdata.hash_prevouts.ToInternalHex(), "96b827c8483d4e9b96712b6713a7b68d6e8003a781feba36c31143470b4efd37");
    EXPECT_EQ(txdata.hash_sequence.ToInternalHex(), "52b0a642eea2fb7ae638c36f6252b6750293dbe574a806984b8e4d8548339a3b");
    EXPECT_EQ(txdata.hash_outputs.ToInternalHex(), "863ef3e1a92afbfdb97f31ad0fc7683ee943e9abcf2501590ff8f6551f47e5e5");
}

// Which hash sets Init computes, decided as Core decides: by the witness-bearing inputs and the
// outputs they spend.
TEST(ScriptSighash, PrecomputeDecidesFromWitnessInputsAndSpentOutputs)
{
    const Script p2wpkh(test::ParseHex("00141d0f172a0ecb48aee1be1f2687d2963ae33f71a1"));
    const Script p2tr(test::ParseHex("5120" + std::string(64, 'a')));
    const Script p2pkh(test::ParseHex("76a9141d0f172a0ecb48aee1be1f2687d2963ae33f71a188ac"));
    auto make = [](std::vector<bool> witness) {
        MutableTransaction m;
        m.vin.resize(witness.size());
        for (std::size_t i = 0; i < witness.size(); ++i) {
            m.vin[i].prevout.n = uint32_t(i);
            if (witness[i]) m.vin[i].witness.stack = {{0x01}};
        }
        m.vout.resize(1);
        m.vout[0].value = 1;
        return Transaction(m);
    };
    auto outs = [](std::vector<Script> scripts) {
        std::vector<TxOut> v;
        for (auto& sc : scripts) v.push_back(TxOut{1000, sc});
        return v;
    };
    struct Want {
        bool bip143, bip341;
    };
    auto check = [](const Transaction& tx, std::vector<TxOut> spent, bool force, Want want, const char* what) {
        PrecomputedTxData d;
        d.Init(tx, std::move(spent), force);
        EXPECT_EQ(d.bip143_segwit_ready, want.bip143) << what;
        EXPECT_EQ(d.bip341_taproot_ready, want.bip341) << what;
    };
    check(make({false, false}), outs({p2pkh, p2tr}), false, {false, false}, "no witness: nothing");
    check(make({true, false}), outs({p2wpkh, p2pkh}), false, {true, false}, "segwit v0 spend");
    check(make({true, false}), outs({p2tr, p2pkh}), false, {false, true}, "taproot spend");
    check(make({true, true}), outs({p2tr, p2wpkh}), false, {true, true}, "both kinds");
    check(make({false, true}), outs({p2wpkh, p2tr}), false, {false, true}, "a witness decides, not the output");
    // Spent outputs unknown: a witness input is taken for v0; BIP341 cannot be computed.
    check(make({true}), {}, false, {true, false}, "taproot without spent outputs");
    check(make({false}), outs({p2pkh}), true, {true, true}, "force");
    check(make({false}), {}, true, {true, false}, "force without spent outputs");

    // Reused for another transaction (as the engine reuses one per transaction slot), nothing of
    // the first counts as ready for the second.
    PrecomputedTxData reused;
    reused.Init(make({true, true}), outs({p2tr, p2wpkh}));
    ASSERT_TRUE(reused.bip143_segwit_ready && reused.bip341_taproot_ready && reused.spent_outputs_ready);
    reused.Init(make({false}), {});
    EXPECT_FALSE(reused.bip143_segwit_ready);
    EXPECT_FALSE(reused.bip341_taproot_ready);
    EXPECT_FALSE(reused.spent_outputs_ready);
}

struct Bip341Tx {
    Transaction tx;
    std::vector<TxOut> utxos;
};

Bip341Tx LoadKeyPathTx(const nlohmann::json& vec)
{
    Bip341Tx r{TxFromHex(vec["given"]["rawUnsignedTx"].get<std::string>()), {}};
    for (const auto& u : vec["given"]["utxosSpent"]) {
        TxOut out;
        out.value = u["amountSats"].get<Amount>();
        out.script_pubkey = Script(test::ParseHex(u["scriptPubKey"].get<std::string>()));
        r.utxos.push_back(std::move(out));
    }
    return r;
}

TEST(ScriptSighash, Bip341KeyPathVectors)
{
    const auto tests = ReadJson("core-test-vectors/bip341_wallet_vectors.json");
    std::size_t inputs_checked = 0;
    for (const auto& vec : tests["keyPathSpending"]) {
        Bip341Tx b = LoadKeyPathTx(vec);
        PrecomputedTxData txdata;
        txdata.Init(b.tx, b.utxos, /*force=*/true);
        ASSERT_TRUE(txdata.bip341_taproot_ready);
        const auto& im = vec["intermediary"];
        EXPECT_EQ(txdata.spent_amounts_single_hash.ToInternalHex(), im["hashAmounts"].get<std::string>());
        EXPECT_EQ(txdata.outputs_single_hash.ToInternalHex(), im["hashOutputs"].get<std::string>());
        EXPECT_EQ(txdata.prevouts_single_hash.ToInternalHex(), im["hashPrevouts"].get<std::string>());
        EXPECT_EQ(txdata.spent_scripts_single_hash.ToInternalHex(), im["hashScriptPubkeys"].get<std::string>());
        EXPECT_EQ(txdata.sequences_single_hash.ToInternalHex(), im["hashSequences"].get<std::string>());

        // Without force, Init decides from the inputs: this transaction's inputs carry no witness
        // (it is unsigned), so it needs neither set.
        PrecomputedTxData lazy;
        lazy.Init(b.tx, b.utxos);
        EXPECT_FALSE(lazy.bip341_taproot_ready);
        EXPECT_FALSE(lazy.bip143_segwit_ready);
        EXPECT_TRUE(lazy.spent_outputs_ready);

        for (const auto& in : vec["inputSpending"]) {
            const uint32_t pos = in["given"]["txinIndex"].get<uint32_t>();
            const uint8_t hash_type = in["given"]["hashType"].get<uint8_t>();
            SCOPED_TRACE("input " + std::to_string(pos));
            ScriptExecutionData execdata;
            execdata.annex_init = true;
            execdata.annex_present = false;
            uint256 sighash;
            ASSERT_TRUE(SignatureHashSchnorr(sighash, execdata, b.tx, pos, hash_type, SigVersion::TAPROOT, txdata));
            EXPECT_EQ(sighash.ToInternalHex(), in["intermediary"]["sigHash"].get<std::string>());
            // Without the BIP341 hashes there is no message.
            uint256 unused;
            EXPECT_FALSE(SignatureHashSchnorr(unused, execdata, b.tx, pos, hash_type, SigVersion::TAPROOT, lazy));

            // The tweak: TapTweak(internal key [|| merkle root]), and the spent output's key is
            // internal + tweak·G with one of the two parities.
            const auto internal = test::ParseHex(in["intermediary"]["internalPubkey"].get<std::string>());
            std::vector<uint8_t> tweak_msg = internal;
            if (!in["given"]["merkleRoot"].is_null()) {
                const auto root = test::ParseHex(in["given"]["merkleRoot"].get<std::string>());
                tweak_msg.insert(tweak_msg.end(), root.begin(), root.end());
            }
            const uint256 tweak = BipTaggedHash("TapTweak", tweak_msg);
            EXPECT_EQ(tweak.ToInternalHex(), in["intermediary"]["tweak"].get<std::string>());
            const std::span<const uint8_t> output_key = b.utxos[pos].script_pubkey.span().subspan(2);
            ASSERT_EQ(output_key.size(), 32u);
            const bool even = script_detail::CheckTapTweak(internal, tweak, output_key, false);
            const bool odd = script_detail::CheckTapTweak(internal, tweak, output_key, true);
            EXPECT_NE(even, odd);
            uint256 wrong_tweak = tweak;
            wrong_tweak.data()[31] ^= 1;
            EXPECT_FALSE(script_detail::CheckTapTweak(internal, wrong_tweak, output_key, odd));

            // The signed witness: a 64-byte signature for DEFAULT, 65 with the type byte otherwise,
            // valid under the output key, invalid once a bit flips.
            auto sig = test::ParseHex(in["expected"]["witness"][0].get<std::string>());
            ASSERT_EQ(sig.size(), hash_type == SIGHASH_DEFAULT ? 64u : 65u);
            if (sig.size() == 65) {
                EXPECT_EQ(sig.back(), hash_type);
            }
            const std::span<const uint8_t> sig64(sig.data(), 64);
            EXPECT_TRUE(script_detail::VerifySchnorr(output_key, sig64, sighash));
            EXPECT_FALSE(script_detail::VerifySchnorr(internal, sig64, sighash));
            sig[10] ^= 0x01;
            EXPECT_FALSE(script_detail::VerifySchnorr(output_key, sig64, sighash));
            ++inputs_checked;
        }
    }
    EXPECT_EQ(inputs_checked, 7u);
}

TEST(ScriptSighash, Bip341ScriptPubKeyTweaks)
{
    const auto tests = ReadJson("core-test-vectors/bip341_wallet_vectors.json");
    std::size_t checked = 0;
    for (const auto& v : tests["scriptPubKey"]) {
        const auto internal = test::ParseHex(v["given"]["internalPubkey"].get<std::string>());
        const uint256 tweak = Uint256FromInternalHex(v["intermediary"]["tweak"].get<std::string>());
        const auto output_key = test::ParseHex(v["intermediary"]["tweakedPubkey"].get<std::string>());
        // The tweak itself: TapTweak(internal key || merkle root), the root omitted without scripts.
        std::vector<uint8_t> msg = internal;
        if (!v["intermediary"]["merkleRoot"].is_null()) {
            const auto root = test::ParseHex(v["intermediary"]["merkleRoot"].get<std::string>());
            msg.insert(msg.end(), root.begin(), root.end());
        }
        EXPECT_EQ(BipTaggedHash("TapTweak", msg), tweak);
        const bool even = script_detail::CheckTapTweak(internal, tweak, output_key, false);
        const bool odd = script_detail::CheckTapTweak(internal, tweak, output_key, true);
        EXPECT_NE(even, odd) << v.dump();
        // A control block's first byte carries the output key's parity in its low bit.
        if (v["expected"].contains("scriptPathControlBlocks")) {
            for (const auto& cb : v["expected"]["scriptPathControlBlocks"]) {
                const auto control = test::ParseHex(cb.get<std::string>());
                EXPECT_TRUE(script_detail::CheckTapTweak(internal, tweak, output_key, control[0] & 1)) << v.dump();
                EXPECT_FALSE(script_detail::CheckTapTweak(internal, tweak, output_key, !(control[0] & 1))) << v.dump();
            }
        }
        // An internal key that is not on the curve (x = 0 has no point) never checks.
        std::vector<uint8_t> bad(32, 0);
        EXPECT_FALSE(script_detail::CheckTapTweak(bad, tweak, output_key, false));
        EXPECT_FALSE(script_detail::CheckTapTweak(bad, tweak, output_key, true));
        ++checked;
    }
    EXPECT_EQ(checked, 7u);
}

// The first bitcoin transaction's signature (mainnet block 170, spending block 9's coinbase, a
// P2PK output) re-encoded in the ways the lax parser accepts and refuses.
TEST(ScriptSecp, LaxDerParser)
{
    const auto first = test::LoadFirstPayment();
    if (!first) FAIL() << "tests/data is incomplete";
    const Transaction& tx = first->tx();
    ASSERT_EQ(tx.vin()[0].prevout.hash, first->b9.vtx[0].GetHash());
    const Script& p2pk = first->spent().script_pubkey; // <65-byte key> OP_CHECKSIG
    ASSERT_EQ(p2pk.size(), 67u);
    const std::vector<uint8_t> pubkey(p2pk.begin() + 1, p2pk.begin() + 66);
    const Script& script_sig = tx.vin()[0].script_sig; // <DER signature || SIGHASH_ALL>
    ASSERT_EQ(script_sig[0], script_sig.size() - 1);
    const std::vector<uint8_t> sig(script_sig.begin() + 1, script_sig.end() - 1);
    ASSERT_EQ(script_sig[script_sig.size() - 1], SIGHASH_ALL);
    ASSERT_EQ(sig.size(), 70u); // 30 44 02 20 <r> 02 20 <s>
    const std::vector<uint8_t> r(sig.begin() + 4, sig.begin() + 36);
    const std::vector<uint8_t> s(sig.begin() + 38, sig.end());
    const uint256 hash = SignatureHash(p2pk.span(), tx, 0, SIGHASH_ALL, 0, SigVersion::BASE);

    auto der = [&](std::vector<uint8_t> rr, std::vector<uint8_t> ss) {
        std::vector<uint8_t> out = {0x30, uint8_t(4 + rr.size() + ss.size()), 0x02, uint8_t(rr.size())};
        out.insert(out.end(), rr.begin(), rr.end());
        out.push_back(0x02);
        out.push_back(uint8_t(ss.size()));
        out.insert(out.end(), ss.begin(), ss.end());
        return out;
    };
    const auto strict = der(r, s);
    ASSERT_TRUE(script_detail::VerifyEcdsa(pubkey, strict, hash));
    // Excess zero padding of R and S, and garbage after S: accepted.
    std::vector<uint8_t> padded_r = {0, 0, 0};
    padded_r.insert(padded_r.end(), r.begin(), r.end());
    EXPECT_TRUE(script_detail::VerifyEcdsa(pubkey, der(padded_r, s), hash));
    auto trailing = strict;
    trailing.push_back(0x42);
    EXPECT_TRUE(script_detail::VerifyEcdsa(pubkey, trailing, hash));
    // A wrong sequence length is skipped unread; a long-form sequence length skips its bytes.
    auto bad_seq_len = strict;
    bad_seq_len[1] = 0x05;
    EXPECT_TRUE(script_detail::VerifyEcdsa(pubkey, bad_seq_len, hash));
    std::vector<uint8_t> long_seq = {0x30, 0x82, 0x00, 0x44};
    long_seq.insert(long_seq.end(), strict.begin() + 2, strict.end());
    EXPECT_TRUE(script_detail::VerifyEcdsa(pubkey, long_seq, hash));
    // A long-form R length (0x81 0x20, and with zero length bytes 0x83 0 0 0x20).
    std::vector<uint8_t> long_r = {0x30, 0x45, 0x02, 0x81, 0x20};
    long_r.insert(long_r.end(), r.begin(), r.end());
    long_r.insert(long_r.end(), strict.begin() + 4 + 32, strict.end());
    EXPECT_TRUE(script_detail::VerifyEcdsa(pubkey, long_r, hash));
    std::vector<uint8_t> long_r0 = {0x30, 0x47, 0x02, 0x83, 0x00, 0x00, 0x20};
    long_r0.insert(long_r0.end(), r.begin(), r.end());
    long_r0.insert(long_r0.end(), strict.begin() + 4 + 32, strict.end());
    EXPECT_TRUE(script_detail::VerifyEcdsa(pubkey, long_r0, hash));
    // Four length bytes of which three are zeros: accepted; four significant ones: refused (that
    // length could not fit anyway).
    std::vector<uint8_t> long_r4 = {0x30, 0x48, 0x02, 0x84, 0x00, 0x00, 0x00, 0x20};
    long_r4.insert(long_r4.end(), r.begin(), r.end());
    long_r4.insert(long_r4.end(), strict.begin() + 4 + 32, strict.end());
    EXPECT_TRUE(script_detail::VerifyEcdsa(pubkey, long_r4, hash));
    long_r4[4] = 0x01;
    EXPECT_FALSE(script_detail::VerifyEcdsa(pubkey, long_r4, hash));
    // High S (n - s) verifies after normalization.
    EXPECT_TRUE(script_detail::VerifyEcdsa(pubkey, der(r, NegateScalar(s)), hash));
    // Wrong tags, truncation, R longer than 32 significant bytes, S missing: refused.
    auto bad_tag = strict;
    bad_tag[0] = 0x31;
    EXPECT_FALSE(script_detail::VerifyEcdsa(pubkey, bad_tag, hash));
    auto bad_int_tag = strict;
    bad_int_tag[2] = 0x03;
    EXPECT_FALSE(script_detail::VerifyEcdsa(pubkey, bad_int_tag, hash));
    for (std::size_t n = 0; n < strict.size(); ++n) {
        EXPECT_FALSE(script_detail::VerifyEcdsa(pubkey, std::span<const uint8_t>(strict.data(), n), hash)) << n;
    }
    std::vector<uint8_t> long_value = {0x01};
    long_value.insert(long_value.end(), r.begin(), r.end());
    EXPECT_FALSE(script_detail::VerifyEcdsa(pubkey, der(long_value, s), hash));
    // R = 0 parses and fails.
    EXPECT_FALSE(script_detail::VerifyEcdsa(pubkey, der({}, s), hash));
    // The key's size must match its header byte; a hybrid header is a valid encoding.
    EXPECT_FALSE(script_detail::VerifyEcdsa(std::span<const uint8_t>(pubkey.data(), 33), strict, hash));
    auto hybrid = pubkey;
    hybrid[0] = 0x06 | (pubkey[64] & 1);
    EXPECT_TRUE(script_detail::VerifyEcdsa(hybrid, strict, hash));
    hybrid[0] ^= 1; // the wrong parity for the hybrid header
    EXPECT_FALSE(script_detail::VerifyEcdsa(hybrid, strict, hash));
    EXPECT_FALSE(script_detail::PubKeySizeMatchesHeader({}));
}

// Where libsecp256k1's strict DER parser reads a signature, the lax parser must read the same R and
// S (it accepts a superset). Except where the strict parser zeroes a value it cannot take: one not
// below the group order (the lax parser refuses it) or a negative one (the lax parser reads its
// bytes as unsigned, as Core has since the first signatures).
TEST(ScriptSecp, LaxParserAgreesWithStrictDerOnMutations)
{
    const uint64_t seed = test::TestSeed();
    SCOPED_TRACE("IBDKIT_TEST_SEED=" + std::to_string(seed));
    std::mt19937_64 rng(seed);
    secp256k1_context* ctx = secp256k1_context_create(SECP256K1_CONTEXT_NONE);
    const std::vector<std::vector<uint8_t>> seeds = {
        test::ParseHex("304402204e45e16932b8af514961a1d3a1a25fdf3f4f7732e9d624c6c61548ab5fb8cd410220181522ec8eca07de486"
                       "0a4acdd12909d831cc56cbbac4622082221a8768d1d09"),
        test::ParseHex("3045022100fffffffffffffffffffffffffffffffebaaedce6af48a03bbfd25e8cd03641400220010203"),
        test::ParseHex("3006020101020101"),
        test::ParseHex("300602010002010f"),
    };
    std::size_t strict_ok = 0, lax_only = 0;
    for (int round = 0; round < 20000; ++round) {
        std::vector<uint8_t> der = seeds[rng() % seeds.size()];
        const int edits = int(rng() % 4);
        for (int e = 0; e < edits; ++e) {
            const std::size_t at = der.empty() ? 0 : rng() % der.size();
            switch (rng() % 5) {
            case 0: if (!der.empty()) der[at] ^= uint8_t(1u << (rng() % 8)); break;
            case 1: der.insert(der.begin() + long(at), uint8_t(rng() % 3 == 0 ? 0 : rng())); break;
            case 2: if (!der.empty()) der.erase(der.begin() + long(at)); break;
            case 3: if (der.size() > 5) der[std::min<std::size_t>(der.size() - 1, 1 + (rng() % 2) * 2)] = uint8_t(rng() % 0x90); break;
            default: der.resize(rng() % (der.size() + 2)); break;
            }
        }
        const auto lax = script_detail::ParseDerLaxCompact(der);
        secp256k1_ecdsa_signature sig;
        if (!secp256k1_ecdsa_signature_parse_der(ctx, &sig, der.data(), der.size())) {
            lax_only += lax.has_value();
            continue;
        }
        ++strict_ok;
        std::array<uint8_t, 64> strict;
        secp256k1_ecdsa_signature_serialize_compact(ctx, strict.data(), &sig);
        const bool zeroed = std::all_of(strict.begin(), strict.begin() + 32, [](uint8_t b) { return b == 0; }) ||
                            std::all_of(strict.begin() + 32, strict.end(), [](uint8_t b) { return b == 0; });
        if (!zeroed) {
            ASSERT_TRUE(lax.has_value()) << test::ToHex(der);
            EXPECT_EQ(*lax, strict) << test::ToHex(der);
        }
    }
    secp256k1_context_destroy(ctx);
    // Both kinds occurred: encodings both parsers read, and lax-only ones.
    EXPECT_GT(strict_ok, 1000u);
    EXPECT_GT(lax_only, 100u);
}

} // namespace
} // namespace ibdkit

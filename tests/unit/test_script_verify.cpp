// VerifyInput and GetBlockScriptFlags on real data: every input of mainnet block 866,342, the
// BIP341 vectors' signed key-path spends, the first bitcoin transaction; mutants fail with Core's
// reasons, and random mutants get Core's engine's verdict; `ibdkit block verify-scripts` on the
// same block.
#include <ibdkit/chain/params.h>
#include <ibdkit/consensus/script_flags.h>
#include <ibdkit/primitives/block.h>

#include "script/sighash.h"
#include "script/verify.h"

#include "bench.h" // FindKernelLib
#include "test_primitives_data.h"
#include "test_util.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <dlfcn.h>
#include <stdio.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fstream>
#include <random>
#include <stdexcept>
#include <string>

namespace ibdkit {
namespace {

constexpr ScriptFlags ALL_BLOCK_FLAGS = SCRIPT_VERIFY_P2SH | SCRIPT_VERIFY_WITNESS | SCRIPT_VERIFY_TAPROOT | SCRIPT_VERIFY_DERSIG |
                                        SCRIPT_VERIFY_CHECKLOCKTIMEVERIFY | SCRIPT_VERIFY_CHECKSEQUENCEVERIFY |
                                        SCRIPT_VERIFY_NULLDUMMY;

bool IsTaprootOutput(const TxOut& out) { return out.script_pubkey.size() == 34 && out.script_pubkey[0] == 0x51 && out.script_pubkey[1] == 32; }

struct Block866342 {
    Block block;
    std::vector<TxOut> spent; ///< one per non-coinbase input, in block order
};

const Block866342& LoadBlock866342()
{
    static const Block866342 data = [] {
        auto pb = test::TestData("mainnet/blocks/block_866342.raw");
        auto pj = test::TestData("mainnet/blocks/block_866342.spent_utxos.json");
        if (!pb || !pj) throw std::runtime_error("tests/data is incomplete");
        auto block = DecodeBlock(test::ReadFile(*pb));
        if (!block) throw std::runtime_error("block 866342 does not decode");
        Block866342 d{std::move(*block), {}};
        std::ifstream f(*pj);
        for (const auto& e : nlohmann::json::parse(f)) {
            TxOut out;
            out.value = e["txout"]["value"].get<Amount>();
            out.script_pubkey = Script(test::ParseHex(e["txout"]["script_pubkey"].get<std::string>()));
            d.spent.push_back(std::move(out));
        }
        return d;
    }();
    return data;
}

TEST(ScriptVerify, BlockScriptFlags)
{
    const ConsensusParams& main = GetChainParams(ChainType::MAIN).consensus;
    const BlockHash some_hash = *BlockHash::FromHex("00000000000000000001f7d4b7e1a6e7d3f8b8c0e3d7ab4a5a1b9c1d2e3f4a5b");
    EXPECT_EQ(GetBlockScriptFlags(main, 1, some_hash), SCRIPT_VERIFY_P2SH | SCRIPT_VERIFY_WITNESS | SCRIPT_VERIFY_TAPROOT);
    EXPECT_EQ(GetBlockScriptFlags(main, 363725, some_hash) & SCRIPT_VERIFY_DERSIG, SCRIPT_VERIFY_DERSIG);
    EXPECT_EQ(GetBlockScriptFlags(main, 363724, some_hash) & SCRIPT_VERIFY_DERSIG, 0u);
    EXPECT_EQ(GetBlockScriptFlags(main, 388381, some_hash) & SCRIPT_VERIFY_CHECKLOCKTIMEVERIFY, SCRIPT_VERIFY_CHECKLOCKTIMEVERIFY);
    EXPECT_EQ(GetBlockScriptFlags(main, 419327, some_hash) & SCRIPT_VERIFY_CHECKSEQUENCEVERIFY, 0u);
    EXPECT_EQ(GetBlockScriptFlags(main, 419328, some_hash) & SCRIPT_VERIFY_CHECKSEQUENCEVERIFY, SCRIPT_VERIFY_CHECKSEQUENCEVERIFY);
    EXPECT_EQ(GetBlockScriptFlags(main, 481823, some_hash) & SCRIPT_VERIFY_NULLDUMMY, 0u);
    EXPECT_EQ(GetBlockScriptFlags(main, 866342, some_hash), ALL_BLOCK_FLAGS);
    // Core's two mainnet exceptions: BIP16's block (from before BIP66) runs without P2SH, witness
    // and taproot; the taproot exception (after segwit, before taproot) without taproot only.
    const BlockHash bip16 = *BlockHash::FromHex("00000000000002dc756eebf4f49723ed8d30cc28a5f108eb94b1ba88ac4f9c22");
    EXPECT_EQ(GetBlockScriptFlags(main, 170060, bip16), SCRIPT_VERIFY_NONE);
    const BlockHash taproot = *BlockHash::FromHex("0000000000000000000f14c35b2d841e986ab5441de8c585d5ffe55ea1e395ad");
    EXPECT_EQ(GetBlockScriptFlags(main, 692261, taproot), ALL_BLOCK_FLAGS & ~ScriptFlags(SCRIPT_VERIFY_TAPROOT));
    // testnet3's BIP16 exception; on testnet4 the same hash is nothing special.
    const BlockHash test_bip16 = *BlockHash::FromHex("00000000dd30457c001f4095d208cc1296b0eed002427aa599874af7a432b105");
    EXPECT_EQ(GetBlockScriptFlags(GetChainParams(ChainType::TESTNET).consensus, 1, test_bip16), SCRIPT_VERIFY_NONE);
    EXPECT_EQ(GetBlockScriptFlags(GetChainParams(ChainType::TESTNET4).consensus, 1, test_bip16), ALL_BLOCK_FLAGS);
    EXPECT_EQ(GetBlockScriptFlags(GetChainParams(ChainType::REGTEST).consensus, 1, some_hash) & SCRIPT_VERIFY_DERSIG,
              SCRIPT_VERIFY_DERSIG);
}

TEST(ScriptVerify, RejectReason)
{
    EXPECT_EQ(InputVerdict{}.BlockRejectReason(), "");
    EXPECT_EQ(InputVerdict{ScriptError::SCHNORR_SIG}.BlockRejectReason(),
              "block-script-verify-flag-failed (Invalid Schnorr signature)");
    EXPECT_EQ(InputVerdict{ScriptError::EVAL_FALSE}.BlockRejectReason(),
              "block-script-verify-flag-failed (Script evaluated without error but finished with a false/empty top stack "
              "element)");
}

TEST(ScriptVerify, EveryInputOfBlock866342)
{
    const auto& d = LoadBlock866342();
    const ScriptFlags flags = GetBlockScriptFlags(GetChainParams(ChainType::MAIN).consensus, 866342, d.block.GetHash());
    EXPECT_EQ(flags, ALL_BLOCK_FLAGS);
    std::size_t next = 0, checked = 0, taproot = 0, script_path = 0, failed = 0;
    for (std::size_t t = 1; t < d.block.vtx.size(); ++t) {
        const Transaction& tx = d.block.vtx[t];
        const std::span<const TxOut> spent(d.spent.data() + next, tx.vin().size());
        next += tx.vin().size();
        PrecomputedTxData txdata;
        txdata.Init(tx, std::vector<TxOut>(spent.begin(), spent.end()));
        for (uint32_t i = 0; i < tx.vin().size(); ++i) {
            const InputVerdict v = VerifyInput(tx, i, spent, flags, &txdata);
            if (!v.ok()) {
                ADD_FAILURE() << "tx " << tx.GetHash().ToHex() << " input " << i << ": " << v.BlockRejectReason();
                ++failed;
            }
            // Every 97th input again without txdata: the same verdict from hashes computed per call.
            if (checked % 97 == 0) {
                EXPECT_TRUE(VerifyInput(tx, i, spent, flags).ok());
            }
            if (IsTaprootOutput(spent[i])) {
                ++taproot;
                const auto& stack = tx.vin()[i].witness.stack;
                const bool annex = stack.size() >= 2 && !stack.back().empty() && stack.back()[0] == ANNEX_TAG;
                script_path += (stack.size() - (annex ? 1 : 0)) >= 2;
            }
            ++checked;
        }
    }
    EXPECT_EQ(checked, 7972u);
    EXPECT_EQ(taproot, 2373u);
    // Tapscript spends among them (BIP342's message: tapleaf hash, key version, code separator).
    EXPECT_GT(script_path, 0u);
    std::printf("block 866342: %zu inputs, %zu taproot, %zu of them script path\n", checked, taproot, script_path);
    EXPECT_EQ(failed, 0u);
}

// Input `input` of `tx` with its witness item `item` changed by `edit`.
Transaction WithWitnessEdit(const Transaction& tx, uint32_t input, std::size_t item, std::size_t byte)
{
    MutableTransaction m = tx.ToMutable();
    m.vin[input].witness.stack[item][byte] ^= 0x01;
    return Transaction(m);
}

TEST(ScriptVerify, MutantsOfBlock866342FailWithCoresReasons)
{
    const auto& d = LoadBlock866342();
    const ScriptFlags flags = ALL_BLOCK_FLAGS;
    bool did_schnorr = false, did_ecdsa = false, did_amount = false;
    std::size_t next = 0;
    for (std::size_t t = 1; t < d.block.vtx.size() && !(did_schnorr && did_ecdsa && did_amount); ++t) {
        const Transaction& tx = d.block.vtx[t];
        const std::span<const TxOut> spent(d.spent.data() + next, tx.vin().size());
        next += tx.vin().size();
        for (uint32_t i = 0; i < tx.vin().size(); ++i) {
            const auto& stack = tx.vin()[i].witness.stack;
            const Script& spk = spent[i].script_pubkey;
            if (!did_schnorr && IsTaprootOutput(spent[i]) && stack.size() == 1 && stack[0].size() == 64) {
                // Key path: one flipped bit of the signature.
                const Transaction mutant = WithWitnessEdit(tx, i, 0, 5);
                const InputVerdict v = VerifyInput(mutant, i, spent, flags);
                EXPECT_EQ(v.error, ScriptError::SCHNORR_SIG);
                EXPECT_EQ(v.BlockRejectReason(), "block-script-verify-flag-failed (Invalid Schnorr signature)");
                // The same bit in the hash-type position of a 65-byte signature: explicit DEFAULT is refused.
                MutableTransaction m = tx.ToMutable();
                m.vin[i].witness.stack[0].push_back(0x00);
                EXPECT_EQ(VerifyInput(Transaction(m), i, spent, flags).error, ScriptError::SCHNORR_SIG_HASHTYPE);
                m.vin[i].witness.stack[0].back() = 0x84; // not a defined type
                EXPECT_EQ(VerifyInput(Transaction(m), i, spent, flags).error, ScriptError::SCHNORR_SIG_HASHTYPE);
                m.vin[i].witness.stack[0].back() = 0x01; // defined, but not what was signed
                EXPECT_EQ(VerifyInput(Transaction(m), i, spent, flags).error, ScriptError::SCHNORR_SIG);
                m.vin[i].witness.stack[0].resize(63);
                EXPECT_EQ(VerifyInput(Transaction(m), i, spent, flags).error, ScriptError::SCHNORR_SIG_SIZE);
                // A different spent amount changes BIP341's message (it signs every amount).
                std::vector<TxOut> other(spent.begin(), spent.end());
                other[i].value += 1;
                EXPECT_EQ(VerifyInput(tx, i, other, flags).error, ScriptError::SCHNORR_SIG);
                did_schnorr = true;
            }
            if (!did_ecdsa && spk.size() == 22 && spk[0] == 0 && stack.size() == 2) {
                // P2WPKH: a flipped bit inside R. CHECKSIG answers false (NULLFAIL is not a block
                // rule), and the script ends with false on the stack.
                const Transaction mutant = WithWitnessEdit(tx, i, 0, 10);
                const InputVerdict v = VerifyInput(mutant, i, spent, flags);
                EXPECT_EQ(v.error, ScriptError::EVAL_FALSE);
                // BIP143 signs the amount.
                std::vector<TxOut> other(spent.begin(), spent.end());
                other[i].value -= 1;
                EXPECT_EQ(VerifyInput(tx, i, other, flags).error, ScriptError::EVAL_FALSE);
                did_ecdsa = true;
                did_amount = true;
            }
        }
    }
    EXPECT_TRUE(did_schnorr && did_ecdsa && did_amount);
}

/// Core's verdict on one input through libbitcoinkernel's C API (py-bitcoinkernel's library, dlopen).
class CoreVerifier {
public:
    static const CoreVerifier* Load(std::string* why)
    {
        static const CoreVerifier* v = [why]() -> const CoreVerifier* {
            auto lib = bench::FindKernelLib("", why);
            if (!lib) return nullptr;
            void* h = dlopen(lib->c_str(), RTLD_NOW | RTLD_LOCAL);
            if (!h) return nullptr;
            auto* c = new CoreVerifier;
            c->tx_create = reinterpret_cast<decltype(c->tx_create)>(dlsym(h, "btck_transaction_create"));
            c->tx_destroy = reinterpret_cast<decltype(c->tx_destroy)>(dlsym(h, "btck_transaction_destroy"));
            c->spk_create = reinterpret_cast<decltype(c->spk_create)>(dlsym(h, "btck_script_pubkey_create"));
            c->spk_destroy = reinterpret_cast<decltype(c->spk_destroy)>(dlsym(h, "btck_script_pubkey_destroy"));
            c->out_create = reinterpret_cast<decltype(c->out_create)>(dlsym(h, "btck_transaction_output_create"));
            c->out_destroy = reinterpret_cast<decltype(c->out_destroy)>(dlsym(h, "btck_transaction_output_destroy"));
            c->txdata_create = reinterpret_cast<decltype(c->txdata_create)>(dlsym(h, "btck_precomputed_transaction_data_create"));
            c->txdata_destroy = reinterpret_cast<decltype(c->txdata_destroy)>(dlsym(h, "btck_precomputed_transaction_data_destroy"));
            c->verify = reinterpret_cast<decltype(c->verify)>(dlsym(h, "btck_script_pubkey_verify"));
            if (!c->tx_create || !c->tx_destroy || !c->spk_create || !c->spk_destroy || !c->out_create || !c->out_destroy ||
                !c->txdata_create || !c->txdata_destroy || !c->verify) {
                return nullptr;
            }
            return c;
        }();
        return v;
    }

    /// 1 valid, 0 invalid, -1 the API refused the call.
    int Verify(const Transaction& tx, uint32_t input, std::span<const TxOut> spent, ScriptFlags flags) const
    {
        const std::vector<uint8_t> raw = EncodeTransaction(tx);
        void* ktx = tx_create(raw.data(), raw.size());
        if (!ktx) return -1;
        std::vector<void*> scripts;
        std::vector<const void*> outs;
        for (const TxOut& o : spent) {
            scripts.push_back(spk_create(o.script_pubkey.data(), o.script_pubkey.size()));
            outs.push_back(out_create(scripts.back(), o.value));
        }
        void* txdata = txdata_create(ktx, outs.data(), outs.size());
        uint8_t status = 0;
        const int r = verify(scripts[input], spent[input].value, ktx, txdata, input, flags, &status);
        txdata_destroy(txdata);
        for (const void* o : outs) out_destroy(const_cast<void*>(o));
        for (void* sc : scripts) spk_destroy(sc);
        tx_destroy(ktx);
        return status == 0 ? r : -1;
    }

private:
    void* (*tx_create)(const void*, std::size_t){nullptr};
    void (*tx_destroy)(void*){nullptr};
    void* (*spk_create)(const void*, std::size_t){nullptr};
    void (*spk_destroy)(void*){nullptr};
    void* (*out_create)(const void*, int64_t){nullptr};
    void (*out_destroy)(void*){nullptr};
    void* (*txdata_create)(const void*, const void**, std::size_t){nullptr};
    void (*txdata_destroy)(void*){nullptr};
    int (*verify)(const void*, int64_t, const void*, const void*, uint32_t, uint32_t, uint8_t*){nullptr};
};

// Random one-byte changes to the witnesses and scriptSigs of block 866,342's inputs (and random
// changes of the spent amount): ibdkit's verdict is Core's, input by input.
TEST(ScriptVerify, MutantsOfBlock866342AgreeWithCoresEngine)
{
    std::string why;
    const CoreVerifier* core = CoreVerifier::Load(&why);
    if (!core) IBDKIT_MISSING_PREREQUISITE(why, "py-bitcoinkernel (scripts/pydeps.sh puts it in build/venv) or set IBDKIT_KERNEL_LIB");
    const auto& d = LoadBlock866342();
    const uint64_t seed = test::TestSeed();
    SCOPED_TRACE("IBDKIT_TEST_SEED=" + std::to_string(seed));
    std::mt19937_64 rng(seed);
    // Where each transaction's spent outputs start.
    std::vector<std::size_t> first_spent(d.block.vtx.size(), 0);
    for (std::size_t t = 1, next = 0; t < d.block.vtx.size(); ++t) {
        first_spent[t] = next;
        next += d.block.vtx[t].vin().size();
    }
    const int rounds = std::getenv("IBDKIT_LONG_TESTS") ? 5000 : 500;
    int compared = 0, failing = 0;
    for (int round = 0; round < rounds; ++round) {
        const std::size_t t = 1 + rng() % (d.block.vtx.size() - 1);
        const Transaction& tx = d.block.vtx[t];
        const uint32_t i = uint32_t(rng() % tx.vin().size());
        std::vector<TxOut> spent(d.spent.begin() + long(first_spent[t]), d.spent.begin() + long(first_spent[t] + tx.vin().size()));
        MutableTransaction m = tx.ToMutable();
        auto& stack = m.vin[i].witness.stack;
        const unsigned kind = unsigned(rng() % 4);
        if (kind == 0 && !stack.empty()) {
            auto& item = stack[rng() % stack.size()];
            if (!item.empty()) item[rng() % item.size()] ^= uint8_t(1u << (rng() % 8));
        } else if (kind == 1 && !m.vin[i].script_sig.empty()) {
            m.vin[i].script_sig.data()[rng() % m.vin[i].script_sig.size()] ^= uint8_t(1u << (rng() % 8));
        } else if (kind == 2) {
            spent[i].value += int64_t(rng() % 3) - 1;
        } else if (!stack.empty()) {
            stack.pop_back();
        }
        const Transaction mutant(m);
        const int theirs = core->Verify(mutant, i, spent, ALL_BLOCK_FLAGS);
        if (theirs < 0) continue;
        const InputVerdict ours = VerifyInput(mutant, i, spent, ALL_BLOCK_FLAGS);
        EXPECT_EQ(ours.ok(), theirs == 1) << "tx " << tx.GetHash().ToHex() << " input " << i << " kind " << kind << ": "
                                         << ours.BlockRejectReason();
        ++compared;
        failing += !ours.ok();
    }
    EXPECT_GT(compared, rounds * 9 / 10);
    EXPECT_GT(failing, compared / 4);
    std::printf("%d mutants compared with Core's engine, %d fail on both sides\n", compared, failing);
}

// Arguments out of range are a caller's bug, not input: the process stops, in every build, before
// anything is read out of bounds.
TEST(ScriptVerifyDeathTest, ArgumentsOutOfRangeAbort)
{
    const auto& d = LoadBlock866342();
    const Transaction& tx = d.block.vtx[1];
    const std::span<const TxOut> spent(d.spent.data(), tx.vin().size());
    EXPECT_DEATH(VerifyInput(tx, uint32_t(tx.vin().size()), spent, ALL_BLOCK_FLAGS),
                 "precondition failed at .*verify.cpp:[0-9]+: VerifyInput: the input is one of the transaction's");
    EXPECT_DEATH(VerifyInput(tx, 0, spent.first(spent.size() - 1), ALL_BLOCK_FLAGS), "one spent output per input");
    EXPECT_DEATH(VerifyInput(tx, 0, std::span<const TxOut>(d.spent.data(), tx.vin().size() + 1), ALL_BLOCK_FLAGS),
                 "one spent output per input");
    EXPECT_DEATH(VerifyBlockInputs(d.block, std::span<const TxOut>(d.spent).first(d.spent.size() - 1), ALL_BLOCK_FLAGS),
                 "VerifyBlockInputs: one spent output per input after the coinbase");
}

// What a caller checks before VerifyBlockInputs: the block's inputs after its coinbase, which the
// spent-output file of block 866342 (one entry per such input) matches.
TEST(ScriptVerify, NonCoinbaseInputCountIsWhatVerifyBlockInputsTakes)
{
    const auto& d = LoadBlock866342();
    EXPECT_EQ(NonCoinbaseInputCount(d.block), d.spent.size());
    Block coinbase_only;
    coinbase_only.vtx.push_back(d.block.vtx[0]);
    EXPECT_EQ(NonCoinbaseInputCount(coinbase_only), 0u);
    EXPECT_EQ(NonCoinbaseInputCount(Block{}), 0u);
    EXPECT_TRUE(VerifyBlockInputs(coinbase_only, {}, ALL_BLOCK_FLAGS).empty());
}

// The BIP341 vectors' signed key-path spends, each a whole input verified under taproot's flags.
TEST(ScriptVerify, Bip341KeyPathSpendsVerify)
{
    auto p = test::TestData("core-test-vectors/bip341_wallet_vectors.json");
    if (!p) FAIL() << "tests/data is incomplete";
    std::ifstream f(*p);
    const auto tests = nlohmann::json::parse(f);
    std::size_t verified = 0;
    for (const auto& vec : tests["keyPathSpending"]) {
        auto unsigned_tx = DecodeTransaction(test::ParseHex(vec["given"]["rawUnsignedTx"].get<std::string>()));
        ASSERT_TRUE(unsigned_tx);
        std::vector<TxOut> utxos;
        for (const auto& u : vec["given"]["utxosSpent"]) {
            TxOut out;
            out.value = u["amountSats"].get<Amount>();
            out.script_pubkey = Script(test::ParseHex(u["scriptPubKey"].get<std::string>()));
            utxos.push_back(std::move(out));
        }
        MutableTransaction m = unsigned_tx->ToMutable();
        for (const auto& in : vec["inputSpending"]) {
            const uint32_t pos = in["given"]["txinIndex"].get<uint32_t>();
            for (const auto& item : in["expected"]["witness"]) m.vin[pos].witness.stack.push_back(test::ParseHex(item.get<std::string>()));
        }
        const Transaction tx(m);
        PrecomputedTxData txdata;
        txdata.Init(tx, utxos);
        EXPECT_TRUE(txdata.bip341_taproot_ready);
        for (const auto& in : vec["inputSpending"]) {
            const uint32_t pos = in["given"]["txinIndex"].get<uint32_t>();
            EXPECT_TRUE(VerifyInput(tx, pos, utxos, ALL_BLOCK_FLAGS, &txdata).ok()) << "input " << pos;
            EXPECT_TRUE(VerifyInput(tx, pos, utxos, ALL_BLOCK_FLAGS).ok()) << "input " << pos;
            // Without TAPROOT a witness v1 output is anyone-can-spend (an upgradable version).
            EXPECT_TRUE(VerifyInput(tx, pos, utxos, SCRIPT_VERIFY_P2SH | SCRIPT_VERIFY_WITNESS, &txdata).ok());
            ++verified;
        }
    }
    EXPECT_EQ(verified, 7u);
}

// Block 170: the first transaction between people, a P2PK spend with a legacy signature.
TEST(ScriptVerify, FirstBitcoinTransaction)
{
    const auto first = test::LoadFirstPayment();
    if (!first) FAIL() << "tests/data is incomplete";
    const Transaction& tx = first->tx();
    const std::vector<TxOut> spent = {first->spent()};
    const ScriptFlags flags = GetBlockScriptFlags(GetChainParams(ChainType::MAIN).consensus, 170, first->b170.GetHash());
    EXPECT_TRUE(VerifyInput(tx, 0, spent, flags).ok());
    // The signature over another transaction (one output value changed) fails.
    MutableTransaction m = tx.ToMutable();
    m.vout[0].value -= 1;
    EXPECT_EQ(VerifyInput(Transaction(m), 0, spent, flags).error, ScriptError::EVAL_FALSE);
}

// ---- the CLI ------------------------------------------------------------------------------------

/// stdout of `ibdkit ARGS` (stderr to the test's log); *status the exit status.
std::string RunCli(const std::string& args, int* status)
{
    const std::string cmd = std::string(IBDKIT_CLI_PATH) + " " + args;
    FILE* pipe = ::popen(cmd.c_str(), "r");
    if (!pipe) return {};
    std::string out;
    char buf[4096];
    std::size_t n;
    while ((n = std::fread(buf, 1, sizeof buf, pipe)) > 0) out.append(buf, n);
    const int raw = ::pclose(pipe);
    *status = WIFEXITED(raw) ? WEXITSTATUS(raw) : -1;
    return out;
}

class VerifyScriptsCli : public ::testing::Test {
protected:
    void SetUp() override
    {
        if (::access(IBDKIT_CLI_PATH, X_OK) != 0) GTEST_SKIP() << "CLI not built: " << IBDKIT_CLI_PATH;
        block = test::TestData("mainnet/blocks/block_866342.raw");
        spent = test::TestData("mainnet/blocks/block_866342.spent_utxos.json");
        if (!block || !spent) FAIL() << "tests/data is incomplete";
    }
    std::optional<std::filesystem::path> block, spent;
};

TEST_F(VerifyScriptsCli, Block866342PassesEveryInput)
{
    int status = -1;
    const std::string out = RunCli("block verify-scripts " + block->string() + " --spent " + spent->string() + " --json", &status);
    EXPECT_EQ(status, 0) << out;
    const auto j = nlohmann::json::parse(out);
    EXPECT_EQ(j["inputs_checked"], 7972);
    EXPECT_EQ(j["failure_count"], 0);
    EXPECT_EQ(j["valid"], true);
    EXPECT_EQ(j["height"], 866342); // from the coinbase (BIP34)
    EXPECT_EQ(j["flags"], "P2SH,DERSIG,NULLDUMMY,CHECKLOCKTIMEVERIFY,CHECKSEQUENCEVERIFY,WITNESS,TAPROOT");
    const std::string text = RunCli("block verify-scripts " + block->string() + " --spent " + spent->string(), &status);
    EXPECT_EQ(status, 0);
    EXPECT_NE(text.find("7972 checked, 0 failed"), std::string::npos) << text;
}

TEST_F(VerifyScriptsCli, FlippedSignatureByteIsReported)
{
    // The first key-path spend's signature, one bit flipped, in a copy of the block's bytes: its
    // witness is not part of the txid, so only the script check can see it.
    const auto& d = LoadBlock866342();
    Block mutant = d.block;
    std::size_t next = 0;
    std::string txid;
    uint32_t input = 0;
    for (std::size_t t = 1; t < mutant.vtx.size() && txid.empty(); ++t) {
        const Transaction& tx = mutant.vtx[t];
        for (uint32_t i = 0; i < tx.vin().size(); ++i) {
            if (IsTaprootOutput(d.spent[next + i]) && tx.vin()[i].witness.stack.size() == 1) {
                mutant.vtx[t] = WithWitnessEdit(tx, i, 0, 0);
                txid = tx.GetHash().ToHex();
                input = i;
                break;
            }
        }
        next += tx.vin().size();
    }
    ASSERT_FALSE(txid.empty());
    test::TempDir dir("ibdkit-verify-scripts");
    const auto path = dir.path / "mutant.raw";
    {
        const auto bytes = EncodeBlock(mutant);
        std::ofstream f(path, std::ios::binary);
        f.write(reinterpret_cast<const char*>(bytes.data()), std::streamsize(bytes.size()));
    }
    int status = -1;
    const std::string out = RunCli("block verify-scripts " + path.string() + " --spent " + spent->string() + " --json", &status);
    EXPECT_EQ(status, 2) << out; // an invalid block: cli/exit_codes.h
    const auto j = nlohmann::json::parse(out);
    EXPECT_EQ(j["valid"], false);
    EXPECT_EQ(j["failure_count"], 1);
    EXPECT_EQ(j["reject_reason"], "block-script-verify-flag-failed (Invalid Schnorr signature)");
    EXPECT_EQ(j["failures"][0]["txid"], txid);
    EXPECT_EQ(j["failures"][0]["input"], input);
    EXPECT_EQ(j["failures"][0]["error"], "SCHNORR_SIG");
    const std::string text = RunCli("block verify-scripts " + path.string() + " --spent " + spent->string(), &status);
    EXPECT_EQ(status, 2);
    EXPECT_NE(text.find("tx " + txid), std::string::npos) << text;
    EXPECT_NE(text.find("invalid: block-script-verify-flag-failed (Invalid Schnorr signature)"), std::string::npos) << text;
    // Unusable input: a failure, exit 1.
    RunCli("block verify-scripts " + path.string() + " --spent /nonexistent.json 2>/dev/null", &status);
    EXPECT_EQ(status, 1);
}

} // namespace
} // namespace ibdkit

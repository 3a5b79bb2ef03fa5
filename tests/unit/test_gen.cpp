// The chain generator: deterministic bytes, blocks that pass the context-free checks, UTXO rules
// that hold (checked here with a plain map, independently of the replay code), the xor variant and
// file splitting. Core's full validation of generated chains: python/tests/test_gen_chain_core.py.
#include <ibdkit/blockfile/blockfile.h>
#include <ibdkit/blockfile/locate.h>
#include <ibdkit/chain/params.h>
#include <ibdkit/consensus/check.h>
#include <ibdkit/crypto/sha256.h>
#include <ibdkit/primitives/consensus_constants.h>
#include <ibdkit/primitives/script_ops.h>

#include "gen/chain_gen.h"

#include "test_util.h"

#include <gtest/gtest.h>

#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <unordered_map>

namespace ibdkit {
namespace {

namespace fs = std::filesystem;

using TempDir = ibdkit::test::TempDir;

// Small enough for a unit test, big enough to spend coinbases and every spendable type.
ChainGenOptions SmallOptions()
{
    ChainGenOptions o;
    o.blocks = 140;
    o.target_bytes = 2'500'000;
    o.seed = 7;
    o.start_time = 1'700'000'000;
    return o;
}

std::span<const uint8_t, 4> RegtestMagic()
{
    return std::span<const uint8_t, 4>(GetChainParams(ChainType::REGTEST).message_start);
}

/// Every record of the blk files in a directory, deobfuscated with its xor.dat.
std::vector<std::vector<uint8_t>> ReadRecords(const fs::path& blocks_dir)
{
    auto key = ReadXorKey(blocks_dir);
    EXPECT_TRUE(key.ok());
    std::vector<BlockRecordPos> where;
    const auto files = ListBlockFiles(blocks_dir).value();
    auto st = ScanBlockFiles(files, RegtestMagic(), *key,
                             [&](const BlockRecordPos& pos, std::span<const uint8_t, 80>) { where.push_back(pos); });
    EXPECT_TRUE(st.ok());
    BlockFileReader reader(files, *key);
    std::vector<std::vector<uint8_t>> out;
    for (const auto& pos : where) {
        auto b = reader.Read(pos);
        EXPECT_TRUE(b.ok());
        if (b.ok()) out.push_back(std::move(*b));
    }
    if (st.ok()) {
        EXPECT_EQ(st->skipped_bytes, 0u);
        EXPECT_EQ(st->truncated, 0u);
    }
    return out;
}

std::map<std::string, std::vector<uint8_t>> ReadDir(const fs::path& dir)
{
    std::map<std::string, std::vector<uint8_t>> files;
    for (const auto& e : fs::directory_iterator(dir)) files[e.path().filename().string()] = test::ReadFile(e.path());
    return files;
}

TEST(Gen, SameOptionsGiveIdenticalFiles)
{
    TempDir a, b, c;
    const auto o = SmallOptions();
    ASSERT_TRUE(WriteGeneratedChain(a.path, o, {}).ok());
    ASSERT_TRUE(WriteGeneratedChain(b.path, o, {}).ok());
    const auto fa = ReadDir(a.path / "blocks"), fb = ReadDir(b.path / "blocks");
    ASSERT_FALSE(fa.empty());
    EXPECT_EQ(fa, fb);

    auto other = o;
    other.seed = 8;
    ASSERT_TRUE(WriteGeneratedChain(c.path, other, {}).ok());
    EXPECT_NE(ReadDir(c.path / "blocks"), fa);
}

TEST(Gen, RegeneratingReplacesThePreviousChain)
{
    TempDir d;
    auto big = SmallOptions();
    ChainWriteOptions w;
    w.max_file_size = 200'000; // several files
    ASSERT_TRUE(WriteGeneratedChain(d.path, big, w).ok());
    const std::size_t many = ListBlockFiles(d.path / "blocks").value().size();
    ASSERT_GT(many, 2u);
    auto r = WriteGeneratedChain(d.path, TinyChainGenOptions() /* start_time 0: invalid */, {});
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.error().code, Errc::InvalidValue);
    auto small = SmallOptions();
    small.blocks = 20;
    ASSERT_TRUE(WriteGeneratedChain(d.path, small, {}).ok());
    EXPECT_EQ(ListBlockFiles(d.path / "blocks").value().size(), 1u);
    EXPECT_EQ(ReadRecords(d.path / "blocks").size(), 21u);
}

TEST(Gen, AChainIsWrittenOnlyIntoAFolderOfItsOwn)
{
    // Regression: gen-chain --out and run --dir wrote blocks/ into any existing folder of the user's.
    TempDir d;
    const auto notes = d.path / "notes";
    std::filesystem::create_directories(notes / "blocks");
    std::ofstream(notes / "todo.txt") << "my notes\n";
    auto r = WriteGeneratedChain(notes, SmallOptions(), {});
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.error().code, Errc::Refused);
    EXPECT_NE(r.error().message.find("todo.txt, which ibdkit did not write there"), std::string::npos) << r.error().message;
    EXPECT_TRUE(std::filesystem::is_empty(notes / "blocks")) << "nothing written before the refusal";
    // A user's file among the blocks too.
    std::filesystem::remove(notes / "todo.txt");
    std::ofstream(notes / "blocks" / "rev00000.dat") << "x";
    EXPECT_FALSE(WriteGeneratedChain(notes, SmallOptions(), {}).ok());

    // A new folder, then the same folder again (a chain, the caller's own files, a killed commit's leftover).
    const auto chain = d.path / "chain";
    ChainWriteOptions w;
    w.own_files = {"chain.json"};
    ASSERT_TRUE(WriteGeneratedChain(chain, SmallOptions(), w).ok());
    std::ofstream(chain / "chain.json") << "{}";
    std::ofstream(chain / "chain.json.partial-123") << "{";
    EXPECT_TRUE(WriteGeneratedChain(chain, SmallOptions(), w).ok());
    EXPECT_FALSE(WriteGeneratedChain(chain, SmallOptions(), {}).ok()) << "chain.json is not the generator's own unless named";
}

TEST(Gen, AnInterruptedChainIsMarkedIncompleteAndRefused)
{
    TempDir d;
    const auto o = SmallOptions();
    struct Stop {};
    EXPECT_THROW((void)WriteGeneratedChain(d.path, o, {}, [](const ChainGenStats& s) { if (s.height == 5) throw Stop{}; }), Stop);
    const auto blocks = d.path / "blocks";
    EXPECT_TRUE(std::filesystem::exists(blocks / INCOMPLETE_BLOCKS_MARKER));
    EXPECT_FALSE(ReadRecords(blocks).empty()) << "the records written so far look like a shorter chain";
    for (const auto& p : {blocks, blocks / "blk00000.dat"}) {
        auto located = LocateFromBlocksDir(p, std::nullopt);
        ASSERT_FALSE(located.ok()) << p;
        EXPECT_EQ(located.error().code, Errc::InvalidValue);
        EXPECT_NE(located.error().message.find("rerun `ibdkit gen-chain --out " + d.path.string()), std::string::npos)
            << located.error().message;
    }
    ASSERT_TRUE(WriteGeneratedChain(d.path, o, {}).ok());
    EXPECT_FALSE(std::filesystem::exists(blocks / INCOMPLETE_BLOCKS_MARKER));
    EXPECT_FALSE(CheckBlocksComplete(blocks));
    auto located = LocateFromBlocksDir(blocks, std::nullopt);
    ASSERT_TRUE(located.ok()) << located.error().message;
    EXPECT_EQ(located->TipHeight(), o.blocks);
}

TEST(Gen, RejectsBadOptions)
{
    auto o = SmallOptions();
    o.start_time = REGTEST_GENESIS_TIME;
    EXPECT_THROW(ChainGenerator{o}, std::invalid_argument);
    o = SmallOptions();
    o.blocks = 0;
    EXPECT_THROW(ChainGenerator{o}, std::invalid_argument);
    EXPECT_GT(DefaultStartTime(2500, 1'750'000'000), REGTEST_GENESIS_TIME);
    EXPECT_EQ(DefaultStartTime(2500, 1'750'000'000) + 2499 * GEN_BLOCK_SPACING, 1'750'000'000);
}

// Decodes every record, re-encodes it byte for byte, and applies the context-free and contextual
// checks that need no UTXO set: CheckBlock, witness commitment, weight, BIP34, prev links, times.
TEST(Gen, EveryBlockDecodesAndPassesChecks)
{
    TempDir d;
    const auto o = SmallOptions();
    auto res = WriteGeneratedChain(d.path, o, {});
    ASSERT_TRUE(res.ok());
    const auto records = ReadRecords(d.path / "blocks");
    ASSERT_EQ(records.size(), std::size_t(o.blocks) + 1);

    const ChainParams& params = GetChainParams(ChainType::REGTEST);
    std::vector<int64_t> times;
    BlockHash prev;
    std::size_t witness_blocks = 0, max_weight = 0;
    for (std::size_t h = 0; h < records.size(); ++h) {
        auto block = DecodeBlock(records[h]);
        ASSERT_TRUE(block.ok()) << "height " << h;
        EXPECT_EQ(EncodeBlock(*block), records[h]);
        if (h == 0) {
            EXPECT_EQ(block->GetHash(), params.consensus.hash_genesis_block);
        } else {
            EXPECT_EQ(block->hash_prev_block, prev) << "height " << h;
            BlockValidationState st;
            EXPECT_TRUE(CheckBlockRules(*block, st, params.consensus)) << h << ": " << st.ToString();
            EXPECT_TRUE(CheckWitnessMalleation(*block, true, st)) << h << ": " << st.ToString();
            EXPECT_TRUE(CheckBlockWeight(*block, st)) << h << ": " << st.ToString();
            EXPECT_TRUE(CheckCoinbaseHeight(*block, int(h), st)) << h << ": " << st.ToString();
            const auto& ss = block->vtx[0].vin()[0].script_sig;
            EXPECT_GE(ss.size(), 2u);
            EXPECT_LE(ss.size(), 100u);
            if (h <= 16) {
                EXPECT_EQ(ss[0], uint8_t(OP_1 + h - 1)); // Core's CScript() << height: OP_1..OP_16
            }
            // Strictly above the median of the previous 11 block times.
            std::vector<int64_t> last(times.end() - std::ptrdiff_t(std::min<std::size_t>(times.size(), 11)), times.end());
            std::sort(last.begin(), last.end());
            EXPECT_GT(block->GetBlockTime(), last[last.size() / 2]) << "height " << h;
            if (GetWitnessCommitmentIndex(*block) != NO_WITNESS_COMMITMENT) ++witness_blocks;
            max_weight = std::max(max_weight, GetBlockWeight(*block));
        }
        if (h == 1) {
            EXPECT_EQ(block->GetBlockTime(), o.start_time);
        }
        times.push_back(block->GetBlockTime());
        prev = block->GetHash();
    }
    EXPECT_EQ(prev, res->stats.tip);
    EXPECT_EQ(witness_blocks, res->stats.witness_blocks);
    EXPECT_GT(witness_blocks, 10u);
    EXPECT_EQ(max_weight, res->stats.max_block_weight);
    EXPECT_GT(max_weight, 3'800'000u); // the last blocks approach the weight limit
}

struct ModelCoin {
    TxOut out;
    int height;
    bool coinbase;
};

/// What the model saw while connecting a chain.
struct ModelSummary {
    std::map<TxoutType, uint64_t> created;                  // every output, coinbases included
    std::map<TxoutType, uint64_t> created_late;             // outputs of non-coinbase txs in the last 30% of the bytes
    std::map<TxoutType, uint64_t> created_early;            // outputs of non-coinbase txs in the first 10% of the bytes
    std::map<std::pair<int, int>, uint64_t> shapes_late;    // (inputs, outputs capped at 3) of the late txs
    std::vector<int> spent_ages;                            // per input: spend height - creation height
    std::vector<Amount> keyed_values;                       // values of outputs of key-locked types (never spent)
    uint64_t txs_late{0}, inputs_late{0}, outputs_late{0};
    std::vector<uint64_t> utxos_by_height;                  // UTXO count after each block
    uint64_t tip_keyed_unspent{0};                          // key-locked outputs in the set at the tip
    ChainGenStats stats;                                    // the generator's own counters
};

/// Whether the generator could never spend an output of this type (it holds no key).
bool KeyLocked(TxoutType t)
{
    return t == TxoutType::PUBKEY || t == TxoutType::PUBKEYHASH || t == TxoutType::MULTISIG || t == TxoutType::WITNESS_V0_KEYHASH;
}

// Connects the chain to a plain map: every input exists and is unspent, coinbases are mature,
// no value is created, the coinbase claims exactly subsidy + fees, and every spend matches the
// anyone-can-spend script it claims (P2SH of OP_TRUE, P2WSH script hash, P2TR control block).
void ConnectInPlainModel(const ChainGenOptions& o, ModelSummary* sum)
{
    TempDir d;
    auto res = WriteGeneratedChain(d.path, o, {});
    ASSERT_TRUE(res.ok());
    const auto records = ReadRecords(d.path / "blocks");
    const ChainParams& params = GetChainParams(ChainType::REGTEST);
    sum->stats = res->stats;
    // Eras by bytes, as the generator plans them (mainnet profile: first 20% legacy, last 40% taproot).
    uint64_t total_bytes = 0;
    for (const auto& r : records) total_bytes += r.size();
    std::size_t late_from = records.size(), early_to = 0;
    uint64_t seen = 0;
    for (std::size_t h = 0; h < records.size(); ++h) {
        if (seen <= total_bytes / 10) early_to = h;
        seen += records[h].size();
        if (late_from == records.size() && seen >= total_bytes * 7 / 10) late_from = h + 1;
    }

    std::unordered_map<OutPoint, ModelCoin, OutPointHasher> utxo;
    uint64_t spent_p2sh = 0, spent_p2wsh = 0, spent_p2tr = 0, spent_cb = 0, intra_block = 0;
    std::map<TxoutType, uint64_t> created;
    for (std::size_t h = 1; h < records.size(); ++h) {
        auto block = DecodeBlock(records[h]);
        ASSERT_TRUE(block.ok());
        Amount fees = 0;
        std::unordered_map<Txid, int, Uint256Hasher> in_block;
        for (std::size_t t = 0; t < block->vtx.size(); ++t) {
            const Transaction& tx = block->vtx[t];
            if (t > 0) {
                Amount in_value = 0;
                for (const TxIn& in : tx.vin()) {
                    auto it = utxo.find(in.prevout);
                    ASSERT_NE(it, utxo.end()) << "missing input at height " << h;
                    const ModelCoin& c = it->second;
                    if (c.coinbase) {
                        EXPECT_GE(int(h) - c.height, COINBASE_MATURITY);
                        ++spent_cb;
                    }
                    if (in_block.count(in.prevout.hash)) ++intra_block;
                    sum->spent_ages.push_back(int(h) - c.height);
                    in_value += c.out.value;
                    const auto spk = c.out.script_pubkey.span();
                    switch (Solver(spk)) {
                    case TxoutType::SCRIPTHASH: {
                        ++spent_p2sh;
                        EXPECT_EQ(test::ToHex(in.script_sig.span()), "0151");
                        EXPECT_EQ(test::ToHex(spk.subspan(2, 20)), "da1745e9b549bd0bfa1a569971c77eba30cd5a4b");
                        EXPECT_TRUE(in.witness.IsNull());
                        break;
                    }
                    case TxoutType::WITNESS_V0_SCRIPTHASH: {
                        ++spent_p2wsh;
                        ASSERT_EQ(in.witness.stack.size(), 1u);
                        const auto& ws = in.witness.stack[0];
                        EXPECT_EQ(ws.back(), OP_1);
                        uint8_t h256[32];
                        Sha256().Write(ws.data(), ws.size()).Finalize(h256);
                        EXPECT_EQ(std::memcmp(h256, spk.data() + 2, 32), 0);
                        EXPECT_TRUE(in.script_sig.empty());
                        break;
                    }
                    case TxoutType::WITNESS_V1_TAPROOT: {
                        ++spent_p2tr;
                        ASSERT_EQ(in.witness.stack.size(), 2u);
                        EXPECT_EQ(in.witness.stack[0].back(), OP_1);
                        EXPECT_EQ(in.witness.stack[1].size(), 33u);
                        EXPECT_EQ(in.witness.stack[1][0] & 0xfe, 0xc0);
                        break;
                    }
                    default:
                        ADD_FAILURE() << "spent an output that needs a key: " << ScriptToAsmStr(spk);
                    }
                    utxo.erase(it);
                }
                EXPECT_GE(in_value, tx.GetValueOut()) << "value created at height " << h;
                fees += in_value - tx.GetValueOut();
            }
            if (t > 0 && h >= late_from) {
                ++sum->txs_late;
                sum->inputs_late += tx.vin().size();
                sum->outputs_late += tx.vout().size();
                sum->shapes_late[{int(tx.vin().size()), int(std::min<std::size_t>(tx.vout().size(), 3))}]++;
            }
            for (uint32_t i = 0; i < tx.vout().size(); ++i) {
                const Script& s = tx.vout()[i].script_pubkey;
                const TxoutType type = Solver(s.span());
                created[type]++;
                if (t > 0 && h >= late_from) sum->created_late[type]++;
                if (t > 0 && h > std::size_t(COINBASE_MATURITY) && h < early_to) sum->created_early[type]++;
                if (t > 0 && KeyLocked(type)) sum->keyed_values.push_back(tx.vout()[i].value);
                if (!s.empty() && s[0] == OP_RETURN) continue;
                utxo.emplace(OutPoint{tx.GetHash(), i}, ModelCoin{tx.vout()[i], int(h), t == 0});
            }
            in_block[tx.GetHash()] = int(t);
        }
        EXPECT_EQ(block->vtx[0].GetValueOut(), GetBlockSubsidy(int(h), params.consensus) + fees) << "height " << h;
        sum->utxos_by_height.push_back(utxo.size());
    }
    for (const auto& [op, c] : utxo) sum->tip_keyed_unspent += KeyLocked(Solver(c.out.script_pubkey.span())) ? 1 : 0;
    sum->created = created;
    EXPECT_EQ(utxo.size(), res->stats.utxos);
    std::array<uint64_t, 6> by_age{};
    for (int age : sum->spent_ages) {
        std::size_t b = 0;
        while (b < std::size(SPENT_AGE_BOUNDS) && age > SPENT_AGE_BOUNDS[b]) ++b;
        ++by_age[b];
    }
    EXPECT_EQ(by_age, res->stats.spent_by_age);
    EXPECT_EQ(spent_p2sh, res->stats.spent_p2sh);
    EXPECT_EQ(spent_p2wsh, res->stats.spent_p2wsh);
    EXPECT_EQ(spent_p2tr, res->stats.spent_p2tr);
    EXPECT_EQ(spent_cb, res->stats.spent_coinbase);
    EXPECT_GT(spent_p2sh, 0u);
    EXPECT_GT(spent_p2wsh, 0u);
    EXPECT_GT(spent_p2tr, 0u);
    EXPECT_GT(spent_cb, 0u);
    EXPECT_GT(intra_block, 0u); // chains of spends inside a block
    for (TxoutType t : {TxoutType::PUBKEY, TxoutType::PUBKEYHASH, TxoutType::SCRIPTHASH, TxoutType::MULTISIG,
                        TxoutType::NULL_DATA, TxoutType::WITNESS_V0_SCRIPTHASH, TxoutType::WITNESS_V0_KEYHASH,
                        TxoutType::WITNESS_V1_TAPROOT}) {
        EXPECT_GT(created[t], 0u) << GetTxnOutputType(t);
    }
    EXPECT_EQ(created[TxoutType::NONSTANDARD], 0u);
}

TEST(Gen, UtxoRulesHoldInAPlainModel)
{
    ModelSummary sum;
    ConnectInPlainModel(SmallOptions(), &sum);
}

// A mainnet-profile chain long enough for every era and for coins a thousand blocks old.
ChainGenOptions MainnetOptions()
{
    auto o = MainnetChainGenOptions(1200);
    o.target_bytes = 30'000'000;
    o.seed = 9;
    o.start_time = 1'700'000'000;
    return o;
}

double Share(const std::map<TxoutType, uint64_t>& m, TxoutType t)
{
    uint64_t total = 0;
    for (const auto& [k, n] : m) total += k == TxoutType::NULL_DATA ? 0 : n;
    auto it = m.find(t);
    return total && it != m.end() ? double(it->second) / double(total) : 0.0;
}

// The mainnet profile's shapes, measured on the decoded chain (independently of the generator's own
// counters): output types by era, transaction shapes, coin lifetimes, never-spent share, dust.
TEST(Gen, MainnetProfileHasMainnetShapes)
{
    ModelSummary sum;
    ConnectInPlainModel(MainnetOptions(), &sum);
    if (HasFatalFailure()) return;

    // First era: legacy types only (no witness program is paid to before segwit).
    EXPECT_GT(Share(sum.created_early, TxoutType::SCRIPTHASH), 0.5);
    EXPECT_GT(Share(sum.created_early, TxoutType::PUBKEYHASH), 0.05);
    for (TxoutType t : {TxoutType::WITNESS_V0_KEYHASH, TxoutType::WITNESS_V0_SCRIPTHASH, TxoutType::WITNESS_V1_TAPROOT}) {
        EXPECT_EQ(sum.created_early[t], 0u) << GetTxnOutputType(t);
    }
    // Last era (taproot): expected shares from the profile's tables — spent outputs (75%): P2SH 14%,
    // P2WSH 56%, P2TR 30%; never-spent outputs (25%): P2WPKH 49%, P2TR 43%, P2SH 3.5%, P2PKH 3.5%, P2WSH 1%.
    const auto& late = sum.created_late;
    EXPECT_NEAR(Share(late, TxoutType::WITNESS_V0_SCRIPTHASH), 0.75 * 0.56 + 0.25 * 0.01, 0.04);
    EXPECT_NEAR(Share(late, TxoutType::WITNESS_V1_TAPROOT), 0.75 * 0.30 + 0.25 * 0.43, 0.04);
    EXPECT_NEAR(Share(late, TxoutType::WITNESS_V0_KEYHASH), 0.25 * 0.49, 0.03);
    EXPECT_NEAR(Share(late, TxoutType::SCRIPTHASH), 0.75 * 0.14 + 0.25 * 0.035, 0.03);
    EXPECT_NEAR(Share(late, TxoutType::PUBKEYHASH), 0.25 * 0.035, 0.01);
    EXPECT_GT(late.at(TxoutType::NULL_DATA), sum.txs_late / 10); // runes-era OP_RETURNs (25% of txs)

    // Transaction shapes of the last era: mostly 1 input → 2 outputs, some consolidations and batches.
    ASSERT_GT(sum.txs_late, 1000u);
    const double one_two = double(sum.shapes_late[{1, 2}]) / double(sum.txs_late);
    EXPECT_GT(one_two, 0.6);
    EXPECT_LT(one_two, 0.95);
    const double mean_in = double(sum.inputs_late) / double(sum.txs_late);
    EXPECT_GT(mean_in, 1.1);
    EXPECT_LT(mean_in, 4.0);

    // Coin lifetimes: a large share spent in the same block or within six, a tail a thousand blocks
    // old and more.
    const double n = double(sum.spent_ages.size());
    ASSERT_GT(n, 10000);
    auto share_le = [&](int lo, int hi) {
        return double(std::count_if(sum.spent_ages.begin(), sum.spent_ages.end(), [&](int a) { return a >= lo && a <= hi; })) / n;
    };
    EXPECT_GT(share_le(0, 0), 0.10);
    EXPECT_GT(share_le(0, 6), 0.25);
    EXPECT_GT(share_le(7, 144), 0.20);
    EXPECT_GT(share_le(145, 1008), 0.002);
    EXPECT_GT(share_le(1009, 1'000'000), 0.0);

    // A share of outputs is never spent: 25% of transaction outputs (a few are turned into change).
    uint64_t outputs = 0;
    for (const auto& [t, k] : sum.created) outputs += t == TxoutType::NULL_DATA ? 0 : k;
    EXPECT_NEAR(double(sum.stats.never_spent_outputs) / double(outputs), 0.24, 0.02);
    EXPECT_GE(sum.tip_keyed_unspent, sum.keyed_values.size()); // all of them are still unspent at the tip

    // Dust-heavy values: the median key-locked output is under 20,000 sat, over 10% under 1,000.
    std::vector<Amount> v = sum.keyed_values;
    std::sort(v.begin(), v.end());
    EXPECT_LT(v[v.size() / 2], 20'000);
    EXPECT_GT(double(std::lower_bound(v.begin(), v.end(), Amount(1000)) - v.begin()) / double(v.size()), 0.10);

    // The UTXO set grows with the chain: more coins at the tip than at three quarters, than at half.
    const auto& u = sum.utxos_by_height;
    EXPECT_GT(u.back(), u[u.size() * 3 / 4]);
    EXPECT_GT(u[u.size() * 3 / 4], u[u.size() / 2]);
}

TEST(Gen, MainnetProfileIsDeterministic)
{
    TempDir a, b, c;
    auto o = MainnetOptions();
    o.blocks = 300;
    o.target_bytes = 6'000'000;
    ASSERT_TRUE(WriteGeneratedChain(a.path, o, {}).ok());
    ASSERT_TRUE(WriteGeneratedChain(b.path, o, {}).ok());
    const auto fa = ReadDir(a.path / "blocks");
    ASSERT_FALSE(fa.empty());
    EXPECT_EQ(fa, ReadDir(b.path / "blocks"));
    auto other = o;
    other.seed = 10;
    ASSERT_TRUE(WriteGeneratedChain(c.path, other, {}).ok());
    EXPECT_NE(ReadDir(c.path / "blocks"), fa);
    // And not the default profile's chain.
    auto plain = o;
    plain.profile = ChainProfile::Default;
    TempDir p;
    ASSERT_TRUE(WriteGeneratedChain(p.path, plain, {}).ok());
    EXPECT_NE(ReadDir(p.path / "blocks"), fa);
}

// utxo_heavy (`--profile mainnet-utxo`): most bytes in the dust era, whose dust drops pay tens to
// hundreds of never-spent dust outputs from one coin. Measured on the decoded chain: the UTXO rules
// hold, the outputs never spent per byte are twice the plain profile's on the same options (a chain
// this short still holds many coins waiting to be spent, in both), the set is P2TR and P2WPKH dust,
// and the same options give the same bytes.
TEST(Gen, MainnetUtxoShapeDoublesTheNeverSpentPerByte)
{
    auto o = MainnetOptions();
    o.blocks = 600;
    o.target_bytes = 15'000'000;
    o.utxo_heavy = true;
    ModelSummary sum;
    ConnectInPlainModel(o, &sum);
    if (HasFatalFailure()) return;

    auto plain = o;
    plain.utxo_heavy = false;
    TempDir p;
    auto plain_res = WriteGeneratedChain(p.path, plain, {});
    ASSERT_TRUE(plain_res.ok());
    const auto per_byte = [](const ChainGenStats& s, uint64_t n) { return double(n) / double(s.block_bytes); };
    EXPECT_GT(per_byte(sum.stats, sum.stats.never_spent_outputs),
              1.8 * per_byte(plain_res->stats, plain_res->stats.never_spent_outputs));
    EXPECT_GT(per_byte(sum.stats, sum.stats.utxos), per_byte(plain_res->stats, plain_res->stats.utxos));

    // The dust era from a fifth of the bytes on: the last 30% is P2TR and P2WPKH heavy.
    const auto& late = sum.created_late;
    EXPECT_GT(Share(late, TxoutType::WITNESS_V1_TAPROOT) + Share(late, TxoutType::WITNESS_V0_KEYHASH), 0.6);
    EXPECT_GT(Share(late, TxoutType::WITNESS_V0_KEYHASH), 0.08);
    // Drops: transactions with ten outputs or more, one input each.
    uint64_t wide = 0;
    for (const auto& [shape, k] : sum.shapes_late) wide += shape.first == 1 && shape.second >= 3 ? k : 0;
    EXPECT_GT(wide, sum.txs_late / 50);
    // Dust: most key-locked outputs under 1,000 sat, some at 546 and 330 exactly (the drops whose
    // coin could pay them); none above the plain profile's median (regtest's supply spread over
    // mainnet's count of coins).
    std::vector<Amount> v = sum.keyed_values;
    ASSERT_GT(v.size(), 10000u);
    std::sort(v.begin(), v.end());
    const auto under = [&](Amount a) { return double(std::lower_bound(v.begin(), v.end(), a) - v.begin()) / double(v.size()); };
    EXPECT_GT(under(1000), 0.4);
    EXPECT_GT(under(547) - under(546), 0.005);
    EXPECT_GT(under(331) - under(330), 0.002);
    EXPECT_LE(v.back(), 15'441);

    TempDir a, b;
    o.blocks = 300;
    o.target_bytes = 6'000'000;
    ASSERT_TRUE(WriteGeneratedChain(a.path, o, {}).ok());
    ASSERT_TRUE(WriteGeneratedChain(b.path, o, {}).ok());
    const auto fa = ReadDir(a.path / "blocks");
    EXPECT_EQ(fa, ReadDir(b.path / "blocks"));
}

TEST(Gen, XorVariantHoldsTheSameBlocks)
{
    TempDir plain, obf;
    const auto o = SmallOptions();
    ChainWriteOptions w;
    ASSERT_TRUE(WriteGeneratedChain(plain.path, o, w).ok());
    w.xor_files = true;
    ASSERT_TRUE(WriteGeneratedChain(obf.path, o, w).ok());

    const auto key_bytes = test::ReadFile(obf.path / "blocks" / "xor.dat");
    ASSERT_EQ(key_bytes.size(), 8u);
    const auto expect_key = GeneratedXorKey(o.seed);
    EXPECT_EQ(std::memcmp(key_bytes.data(), expect_key.data(), 8), 0);
    EXPECT_FALSE(fs::exists(plain.path / "blocks" / "xor.dat"));

    // Byte i of the file is the plain byte XOR key[i mod 8].
    const auto a = test::ReadFile(plain.path / "blocks" / "blk00000.dat");
    const auto b = test::ReadFile(obf.path / "blocks" / "blk00000.dat");
    ASSERT_EQ(a.size(), b.size());
    EXPECT_NE(a, b);
    for (std::size_t i = 0; i < a.size(); i += 997) ASSERT_EQ(uint8_t(a[i] ^ key_bytes[i % 8]), b[i]) << i;

    EXPECT_EQ(ReadRecords(plain.path / "blocks"), ReadRecords(obf.path / "blocks"));
}

TEST(Gen, SplitsFilesBelowTheLimitAtAbsoluteXorOffsets)
{
    TempDir one, many;
    const auto o = SmallOptions();
    ChainWriteOptions w;
    w.xor_files = true;
    ASSERT_TRUE(WriteGeneratedChain(one.path, o, w).ok());
    w.max_file_size = 300'000;
    auto r = WriteGeneratedChain(many.path, o, w);
    ASSERT_TRUE(r.ok());
    const auto files = ListBlockFiles(many.path / "blocks").value();
    EXPECT_EQ(int(files.size()), r->files);
    ASSERT_GT(files.size(), 3u);
    uint64_t total = 0;
    const auto key = ReadXorKey(many.path / "blocks");
    ASSERT_TRUE(key.ok());
    for (const auto& f : files) {
        const auto size = fs::file_size(f);
        // Files stay within the limit, except that a record larger than it gets a file of its own.
        if (size > w.max_file_size) {
            auto st = ScanBlockFiles({f}, RegtestMagic(), *key, [](const BlockRecordPos&, std::span<const uint8_t, 80>) {});
            ASSERT_TRUE(st.ok());
            EXPECT_EQ(st->records, 1u) << f;
        }
        total += size;
    }
    EXPECT_EQ(total, r->file_bytes);
    EXPECT_EQ(ReadRecords(one.path / "blocks"), ReadRecords(many.path / "blocks"));
}

TEST(Gen, GenesisCanBeLeftOut)
{
    TempDir d;
    auto o = SmallOptions();
    o.blocks = 30;
    ChainWriteOptions w;
    w.include_genesis = false;
    ASSERT_TRUE(WriteGeneratedChain(d.path, o, w).ok());
    const auto records = ReadRecords(d.path / "blocks");
    ASSERT_EQ(records.size(), 30u);
    auto first = DecodeBlock(records[0]);
    ASSERT_TRUE(first.ok());
    EXPECT_EQ(first->hash_prev_block, GetChainParams(ChainType::REGTEST).consensus.hash_genesis_block);
}

TEST(Gen, GeneratorMatchesTheWrittenFiles)
{
    TempDir d;
    auto o = SmallOptions();
    o.blocks = 110;
    ASSERT_TRUE(WriteGeneratedChain(d.path, o, {}).ok());
    const auto records = ReadRecords(d.path / "blocks");
    ChainGenerator gen(o);
    EXPECT_EQ(EncodeBlock(gen.Genesis()), records[0]);
    for (std::size_t h = 1; !gen.Done(); ++h) EXPECT_EQ(EncodeBlock(gen.Next()), records[h]) << h;
    EXPECT_THROW(gen.Next(), std::logic_error);
}

} // namespace
} // namespace ibdkit

// The chain generator: deterministic bytes, blocks that pass the context-free checks, UTXO rules
// that hold (checked here with a plain map, independently of the replay code), the xor variant and
// file splitting. Core's full validation of generated chains: python/tests/test_gen_chain_core.py.
#include <ibdkit/blockfile/blockfile.h>
#include <ibdkit/chain/params.h>
#include <ibdkit/consensus/check.h>
#include <ibdkit/consensus/consensus.h>
#include <ibdkit/crypto/sha256.h>
#include <ibdkit/gen/chain_gen.h>
#include <ibdkit/primitives/script_ops.h>

#include "test_util.h"

#include <gtest/gtest.h>

#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <map>
#include <unordered_map>

namespace ibdkit {
namespace {

namespace fs = std::filesystem;

struct TempDir {
    fs::path path;
    TempDir()
    {
        static int counter = 0;
        path = fs::temp_directory_path() / ("ibdkit-gen-" + std::to_string(::getpid()) + "-" + std::to_string(counter++));
        fs::create_directories(path);
    }
    ~TempDir() { fs::remove_all(path); }
};

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
    const auto files = ListBlockFiles(blocks_dir);
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
    const std::size_t many = ListBlockFiles(d.path / "blocks").size();
    ASSERT_GT(many, 2u);
    auto r = WriteGeneratedChain(d.path, TinyChainGenOptions() /* start_time 0: invalid */, {});
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.error().code, Errc::InvalidValue);
    auto small = SmallOptions();
    small.blocks = 20;
    ASSERT_TRUE(WriteGeneratedChain(d.path, small, {}).ok());
    EXPECT_EQ(ListBlockFiles(d.path / "blocks").size(), 1u);
    EXPECT_EQ(ReadRecords(d.path / "blocks").size(), 21u);
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

// Connects the chain to a plain map: every input exists and is unspent, coinbases are mature,
// no value is created, the coinbase claims exactly subsidy + fees, and every spend matches the
// anyone-can-spend script it claims (P2SH of OP_TRUE, P2WSH script hash, P2TR control block).
TEST(Gen, UtxoRulesHoldInAPlainModel)
{
    TempDir d;
    const auto o = SmallOptions();
    auto res = WriteGeneratedChain(d.path, o, {});
    ASSERT_TRUE(res.ok());
    const auto records = ReadRecords(d.path / "blocks");
    const ChainParams& params = GetChainParams(ChainType::REGTEST);

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
            for (uint32_t i = 0; i < tx.vout().size(); ++i) {
                const Script& s = tx.vout()[i].script_pubkey;
                created[Solver(s.span())]++;
                if (!s.empty() && s[0] == OP_RETURN) continue;
                utxo.emplace(OutPoint{tx.GetHash(), i}, ModelCoin{tx.vout()[i], int(h), t == 0});
            }
            in_block[tx.GetHash()] = int(t);
        }
        EXPECT_EQ(block->vtx[0].GetValueOut(), GetBlockSubsidy(int(h), params.consensus) + fees) << "height " << h;
    }
    EXPECT_EQ(utxo.size(), res->stats.utxos);
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
    const auto files = ListBlockFiles(many.path / "blocks");
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

// Transactions, blocks, views and scripts: unit vectors and malformed inputs.
#include "test_util.h"

#include <ibdkit/chain/params.h>
#include <ibdkit/consensus/pow.h>
#include <ibdkit/primitives/block.h>
#include <ibdkit/primitives/block_view.h>
#include <ibdkit/primitives/script.h>
#include <ibdkit/primitives/script_ops.h>
#include <ibdkit/primitives/transaction.h>

#include "consensus/merkle.h"
#include "stream/streams.h"

#include <gtest/gtest.h>

#include <random>

namespace ibdkit {
namespace {

using test::ParseHex;
using test::ToHex;

MutableTransaction SampleSegwitTx()
{
    MutableTransaction m;
    m.version = 2;
    m.vin.resize(2);
    for (int i = 0; i < 2; ++i) {
        m.vin[i].prevout.hash.AsUint256().data()[0] = uint8_t(i + 1);
        m.vin[i].prevout.n = uint32_t(i);
        m.vin[i].script_sig = Script(ParseHex("0014aabb"));
        m.vin[i].sequence = 0xfffffffd;
    }
    m.vin[0].witness.stack = {ParseHex("3044"), ParseHex("02aa")};
    m.vout.resize(2);
    m.vout[0].value = 12345;
    m.vout[0].script_pubkey = Script(ParseHex("0014000102030405060708090a0b0c0d0e0f10111213"));
    m.vout[1].value = 0;
    m.vout[1].script_pubkey = Script(ParseHex("6a"));
    m.lock_time = 500000;
    return m;
}

Errc OwnedErr(std::span<const uint8_t> b, TxParams p = TX_WITH_WITNESS)
{
    auto r = DecodeTransaction(b, p);
    return r ? Errc::Ok : r.error().code;
}
Errc ViewErr(std::span<const uint8_t> b, TxParams p = TX_WITH_WITNESS)
{
    auto r = TxView::Parse(b, p);
    return r ? Errc::Ok : r.error().code;
}

TEST(Transaction, SegwitRoundTripAndIds)
{
    const MutableTransaction m = SampleSegwitTx();
    const Transaction built(m);
    const auto full = EncodeTransaction(built, TX_WITH_WITNESS);
    const auto stripped = EncodeTransaction(built, TX_NO_WITNESS);
    EXPECT_EQ(full[4], 0x00);
    EXPECT_EQ(full[5], 0x01);
    EXPECT_EQ(stripped.size() + 2 + 1 + 3 + 3 + 1, full.size()); // marker+flag, stacks (2 items, 0 items)

    auto dec = DecodeTransaction(full);
    ASSERT_TRUE(dec) << dec.error().message;
    EXPECT_TRUE(dec->HasWitness());
    EXPECT_EQ(dec->GetHash(), built.GetHash());
    EXPECT_EQ(dec->GetWitnessHash(), built.GetWitnessHash());
    EXPECT_EQ(dec->GetHash(), m.GetHash());
    EXPECT_NE(dec->GetHash().ToUint256(), dec->GetWitnessHash().ToUint256());
    EXPECT_EQ(dec->GetHash().ToUint256(), HashSha256d(std::span<const uint8_t>(stripped)));
    EXPECT_EQ(dec->GetWitnessHash().ToUint256(), HashSha256d(std::span<const uint8_t>(full)));
    EXPECT_EQ(EncodeTransaction(*dec), full);
    EXPECT_EQ(dec->GetTotalSize(), full.size());
    EXPECT_EQ(dec->GetStrippedSize(), stripped.size());
    EXPECT_EQ(GetTransactionWeight(*dec), stripped.size() * 3 + full.size());
    EXPECT_EQ(GetSerializeSize(*dec, TX_NO_WITNESS), stripped.size());
    EXPECT_EQ(dec->vin()[0].witness.stack.size(), 2u);
    EXPECT_TRUE(dec->vin()[1].witness.IsNull());
    EXPECT_EQ(dec->vout()[0].value, 12345);
    EXPECT_EQ(dec->lock_time(), 500000u);
    EXPECT_EQ(dec->ToMutable().vin, m.vin);

    // Decoding the stripped form without witness gives the same txid and no witness.
    auto s = DecodeTransaction(stripped, TX_NO_WITNESS);
    ASSERT_TRUE(s);
    EXPECT_FALSE(s->HasWitness());
    EXPECT_EQ(s->GetHash(), built.GetHash());
    EXPECT_EQ(s->GetWitnessHash().ToUint256(), built.GetHash().ToUint256());

    // The view agrees.
    auto v = TxView::Parse(full);
    ASSERT_TRUE(v);
    EXPECT_EQ(v->ComputeTxid(), built.GetHash());
    EXPECT_EQ(v->ComputeWtxid(), built.GetWitnessHash());
    EXPECT_EQ(v->GetStrippedSize(), stripped.size());
    EXPECT_EQ(v->ToOwned().ToMutable().vin, m.vin);
    std::size_t n = 0;
    for (InputView in : v->inputs()) {
        EXPECT_EQ(in.prevout(), m.vin[n].prevout);
        EXPECT_EQ(in.witness.size(), m.vin[n].witness.stack.size());
        std::size_t k = 0;
        for (ByteSpan item : in.witness) {
            EXPECT_EQ(std::vector<uint8_t>(item.begin(), item.end()), m.vin[n].witness.stack[k]);
            ++k;
        }
        ++n;
    }
    EXPECT_EQ(n, 2u);
}

TEST(Transaction, StreamsUseTheSameParser)
{
    const auto full = EncodeTransaction(Transaction(SampleSegwitTx()));
    SpanReader r{std::span<const uint8_t>(full)};
    Transaction t;
    Unserialize(r, t, TX_WITH_WITNESS);
    EXPECT_TRUE(r.empty());
    EXPECT_TRUE(t.HasWitness());

    DataStream<> ds{std::span<const uint8_t>(full)};
    MutableTransaction m;
    ds >> WithParams(TX_WITH_WITNESS, m);
    EXPECT_TRUE(ds.empty());
    EXPECT_EQ(m.GetHash(), t.GetHash());

    DataStream<> out;
    out << WithParams(TX_WITH_WITNESS, t);
    EXPECT_EQ(ToHex(out.span()), ToHex(full));
}

TEST(Transaction, ZeroInputAmbiguityIsCoreLenient)
{
    // version | 00 (empty vin / marker) | 00 (flag 0 / empty vout) | locktime
    const auto b = ParseHex("01000000" "00" "00" "00000000");
    auto w = DecodeTransaction(b, TX_WITH_WITNESS);
    ASSERT_TRUE(w) << w.error().message;
    EXPECT_TRUE(w->vin().empty());
    EXPECT_TRUE(w->vout().empty());
    EXPECT_EQ(EncodeTransaction(*w), b);
    EXPECT_EQ(w->GetHash().ToUint256(), HashSha256d(std::span<const uint8_t>(b)));
    auto nw = DecodeTransaction(b, TX_NO_WITNESS);
    ASSERT_TRUE(nw);
    EXPECT_EQ(nw->GetHash(), w->GetHash());
    EXPECT_EQ(ViewErr(b), Errc::Ok);

    // Zero inputs but outputs, without witness: the 00 is the input count, then outputs.
    const auto z = ParseHex("01000000" "00" "01" "0000000000000000" "00" "00000000");
    auto zn = DecodeTransaction(z, TX_NO_WITNESS);
    ASSERT_TRUE(zn);
    EXPECT_EQ(zn->vout().size(), 1u);
    // With witness allowed, 01 is a flag: inputs "00...", Core then fails somewhere else.
    EXPECT_EQ(OwnedErr(z), ViewErr(z));
    EXPECT_NE(OwnedErr(z), Errc::Ok);
}

TEST(Transaction, WitnessFlagErrors)
{
    // Flag 1 but no inputs at all: every (zero) stack empty.
    const auto a = ParseHex("01000000" "0001" "00" "00" "00000000");
    EXPECT_EQ(OwnedErr(a), Errc::SuperfluousWitness);
    EXPECT_EQ(ViewErr(a), Errc::SuperfluousWitness);
    EXPECT_EQ(DecodeTransaction(a).error().message, "Superfluous witness record");

    const std::string input = std::string(64, '1') + "00000000" + "00" + "ffffffff";
    const std::string output = "0000000000000000" "00";
    // Flag 1, one input, empty witness stack.
    const auto b = ParseHex("01000000" "0001" "01" + input + "01" + output + "00" + "00000000");
    EXPECT_EQ(OwnedErr(b), Errc::SuperfluousWitness);
    EXPECT_EQ(ViewErr(b), Errc::SuperfluousWitness);
    // Flag 2: unknown.
    const auto c = ParseHex("01000000" "0002" "01" + input + "01" + output + "00000000");
    EXPECT_EQ(OwnedErr(c), Errc::UnknownOptionalData);
    EXPECT_EQ(ViewErr(c), Errc::UnknownOptionalData);
    EXPECT_EQ(DecodeTransaction(c).error().message, "Unknown transaction optional data");
    // Flag 3 with a real witness: the witness is read, then the unknown bit fails.
    const auto d = ParseHex("01000000" "0003" "01" + input + "01" + output + "0101aa" + "00000000");
    EXPECT_EQ(OwnedErr(d), Errc::UnknownOptionalData);
    EXPECT_EQ(ViewErr(d), Errc::UnknownOptionalData);
    // Flag 1 valid.
    const auto e = ParseHex("01000000" "0001" "01" + input + "01" + output + "0101aa" + "00000000");
    EXPECT_EQ(OwnedErr(e), Errc::Ok);
    // Without witness allowed the marker is never interpreted: 00 inputs, then 01 output whose
    // value runs into the input bytes; then fails at the end.
    EXPECT_EQ(OwnedErr(e, TX_NO_WITNESS), ViewErr(e, TX_NO_WITNESS));
}

TEST(Transaction, CompactSizeErrors)
{
    // Script length 0xfd 0x0010 (non-canonical: 16 fits one byte).
    const auto a = ParseHex("01000000" "01" + std::string(72, '0') + "fd1000");
    EXPECT_EQ(OwnedErr(a), Errc::NonCanonicalCompactSize);
    EXPECT_EQ(ViewErr(a), Errc::NonCanonicalCompactSize);
    // Script length above MAX_SIZE.
    const auto b = ParseHex("01000000" "01" + std::string(72, '0') + "fe01000002");
    EXPECT_EQ(OwnedErr(b), Errc::SizeTooLarge);
    EXPECT_EQ(ViewErr(b), Errc::SizeTooLarge);
    // A huge input count with few bytes: no allocation from the count, just EndOfData.
    const auto c = ParseHex("01000000" "fe00000002" "00");
    EXPECT_EQ(OwnedErr(c), Errc::EndOfData);
    EXPECT_EQ(ViewErr(c), Errc::EndOfData);
    // Trailing data.
    auto d = EncodeTransaction(Transaction(SampleSegwitTx()));
    d.push_back(0);
    EXPECT_EQ(OwnedErr(d), Errc::TrailingData);
    EXPECT_EQ(ViewErr(d), Errc::TrailingData);
}

TEST(Transaction, TruncationAtEveryOffsetAgrees)
{
    for (TxParams p : {TX_WITH_WITNESS, TX_NO_WITNESS}) {
        const auto full = EncodeTransaction(Transaction(SampleSegwitTx()), p);
        for (std::size_t n = 0; n < full.size(); ++n) {
            const std::span<const uint8_t> cut(full.data(), n);
            const Errc o = OwnedErr(cut, p);
            EXPECT_EQ(o, ViewErr(cut, p)) << "offset " << n;
            EXPECT_NE(o, Errc::Ok) << "offset " << n;
        }
    }
}

TEST(Transaction, RandomMutationsAgree)
{
    const uint64_t seed = test::TestSeed();
    SCOPED_TRACE("IBDKIT_TEST_SEED=" + std::to_string(seed));
    std::mt19937_64 rng(seed);
    const auto base = EncodeTransaction(Transaction(SampleSegwitTx()));
    for (int i = 0; i < 20000; ++i) {
        auto b = base;
        const int flips = 1 + int(rng() % 3);
        for (int f = 0; f < flips; ++f) b[rng() % b.size()] = uint8_t(rng());
        if (rng() % 4 == 0) b.resize(rng() % b.size());
        for (TxParams p : {TX_WITH_WITNESS, TX_NO_WITNESS}) {
            const Errc o = OwnedErr(b, p);
            ASSERT_EQ(o, ViewErr(b, p)) << ToHex(b);
            if (o == Errc::Ok) {
                auto t = DecodeTransaction(b, p);
                ASSERT_EQ(EncodeTransaction(*t, p), b);
                ASSERT_EQ(TxView::Parse(b, p)->ComputeTxid(), t->GetHash());
            }
        }
    }
}

TEST(Block, GenesisBlocksOfEveryNetwork)
{
    struct Known {
        ChainType t;
        const char* hash;
        const char* merkle;
    };
    const Known known[] = {
        {ChainType::MAIN, "000000000019d6689c085ae165831e934ff763ae46a2a6c172b3f1b60a8ce26f",
         "4a5e1e4baab89f3a32518a88c31bc87f618f76673e2cc77ab2127b7afdeda33b"},
        {ChainType::TESTNET, "000000000933ea01ad0ee984209779baaec3ced90fa3f408719526f8d77f4943",
         "4a5e1e4baab89f3a32518a88c31bc87f618f76673e2cc77ab2127b7afdeda33b"},
        {ChainType::TESTNET4, "00000000da84f2bafbbc53dee25a72ae507ff4914b867c565be350b0da8bf043",
         "7aa0a7ae1e223414cb807e40cd57e667b718e42aaf9306db9102fe28912b7b4e"},
        {ChainType::SIGNET, "00000008819873e925422c1ff0f99f7cc9bbb232af63a077a480a3633bee1ef6",
         "4a5e1e4baab89f3a32518a88c31bc87f618f76673e2cc77ab2127b7afdeda33b"},
        {ChainType::REGTEST, "0f9188f13cb7b2c71f2a335e3a4fc328bf5beb436012afca590b1a11466e2206",
         "4a5e1e4baab89f3a32518a88c31bc87f618f76673e2cc77ab2127b7afdeda33b"},
    };
    for (const auto& k : known) {
        const ChainParams& p = GetChainParams(k.t);
        EXPECT_EQ(p.genesis.GetHash().ToHex(), k.hash) << p.name;
        EXPECT_EQ(p.consensus.hash_genesis_block.ToHex(), k.hash);
        EXPECT_EQ(p.genesis.hash_merkle_root.ToHex(), k.merkle) << p.name;
        EXPECT_TRUE(CheckProofOfWork(p.genesis.GetHash().ToUint256(), p.genesis.bits, p.consensus)) << p.name;
        // Encode/decode round trip, and the view.
        const auto bytes = EncodeBlock(p.genesis);
        auto d = DecodeBlock(bytes);
        ASSERT_TRUE(d);
        EXPECT_EQ(EncodeBlock(*d), bytes);
        EXPECT_EQ(d->vtx[0].GetHash().ToHex(), k.merkle);
        EXPECT_EQ(ParseChainType(p.name), k.t);
        EXPECT_EQ(ChainTypeFromMagic(p.message_start), k.t);
    }
    EXPECT_EQ(GetChainParams(ChainType::MAIN).default_port, 8333);
    EXPECT_EQ(ParseChainType("mainnet"), ChainType::MAIN);
    EXPECT_EQ(ParseChainType("Testnet3"), ChainType::TESTNET);
    EXPECT_FALSE(ParseChainType("moon"));
    EXPECT_EQ(GetBlockSubsidy(0, GetChainParams(ChainType::MAIN).consensus), 50 * COIN);
    EXPECT_EQ(GetBlockSubsidy(866342, GetChainParams(ChainType::MAIN).consensus), 312'500'000);
    EXPECT_EQ(GetBlockSubsidy(150, GetChainParams(ChainType::REGTEST).consensus), 25 * COIN);
}

TEST(Block, DecodeErrorsAgreeWithView)
{
    const auto bytes = EncodeBlock(GetChainParams(ChainType::MAIN).genesis);
    for (std::size_t n = 0; n < bytes.size(); ++n) {
        const std::span<const uint8_t> cut(bytes.data(), n);
        auto o = DecodeBlock(cut);
        auto v = BlockView::Parse(cut);
        ASSERT_FALSE(o);
        ASSERT_FALSE(v);
        EXPECT_EQ(o.error().code, v.error().code) << n;
    }
    auto longer = bytes;
    longer.push_back(7);
    EXPECT_EQ(DecodeBlock(longer).error().code, Errc::TrailingData);
    EXPECT_EQ(BlockView::Parse(longer).error().code, Errc::TrailingData);
    // Prefix decoding through a stream leaves the rest.
    SpanReader r{std::span<const uint8_t>(longer)};
    Block b;
    r >> b;
    EXPECT_EQ(r.size(), 1u);
    EXPECT_EQ(b.GetHash(), GetChainParams(ChainType::MAIN).genesis.GetHash());
}

TEST(Merkle, MutationFlag)
{
    std::vector<uint256> h(3);
    for (int i = 0; i < 3; ++i) h[i].data()[0] = uint8_t(i + 1);
    bool mutated = true;
    const uint256 root3 = ComputeMerkleRoot(h, &mutated);
    EXPECT_FALSE(mutated);
    auto h4 = h;
    h4.push_back(h[2]);
    const uint256 root4 = ComputeMerkleRoot(h4, &mutated);
    EXPECT_TRUE(mutated);
    EXPECT_EQ(root3, root4); // CVE-2012-2459
    EXPECT_EQ(ComputeMerkleRoot({}), uint256());
    EXPECT_EQ(ComputeMerkleRoot({h[0]}), h[0]);
    // Two leaves: SHA256d(a ‖ b).
    uint8_t cat[64];
    std::memcpy(cat, h[0].data(), 32);
    std::memcpy(cat + 32, h[1].data(), 32);
    EXPECT_EQ(ComputeMerkleRoot({h[0], h[1]}), HashSha256d(std::span<const uint8_t>(cat, 64)));
}

TEST(Pow, SetCompactAsCore)
{
    struct V {
        uint32_t compact;
        const char* hex;
        bool neg, ovf;
        uint32_t back;
    };
    const V vs[] = {
        {0x00000000, "0", false, false, 0},
        {0x00123456, "0", false, false, 0},
        {0x01003456, "0", false, false, 0},
        {0x02000056, "0", false, false, 0},
        {0x03000000, "0", false, false, 0},
        {0x04000000, "0", false, false, 0},
        {0x00923456, "0", false, false, 0},
        {0x01803456, "0", false, false, 0},
        {0x02800056, "0", false, false, 0},
        {0x03800000, "0", false, false, 0},
        {0x04800000, "0", false, false, 0},
        {0x01123456, "12", false, false, 0x01120000},
        {0x01fedcba, "7e", true, false, 0x01fe0000},
        {0x02123456, "1234", false, false, 0x02123400},
        {0x03123456, "123456", false, false, 0x03123456},
        {0x04123456, "12345600", false, false, 0x04123456},
        {0x04923456, "12345600", true, false, 0x04923456},
        {0x05009234, "92340000", false, false, 0x05009234},
        {0x20123456, "1234560000000000000000000000000000000000000000000000000000000000", false, false, 0x20123456},
    };
    for (const V& v : vs) {
        bool neg = false, ovf = false;
        arith_uint256 a;
        a.SetCompact(v.compact, &neg, &ovf);
        std::string want = std::string(64 - std::strlen(v.hex), '0') + v.hex;
        EXPECT_EQ(a.GetHex(), want) << std::hex << v.compact;
        EXPECT_EQ(neg, v.neg) << std::hex << v.compact;
        EXPECT_EQ(ovf, v.ovf) << std::hex << v.compact;
        EXPECT_EQ(a.GetCompact(neg), v.back) << std::hex << v.compact;
    }
    bool neg = false, ovf = false;
    arith_uint256().SetCompact(0xff123456, &neg, &ovf);
    EXPECT_TRUE(ovf);
    EXPECT_EQ(GetBlockProof(0x1d00ffff).GetLow64(), 0x100010001ULL);
    EXPECT_DOUBLE_EQ(GetDifficulty(0x1d00ffff), 1.0);

    const auto& main = GetChainParams(ChainType::MAIN).consensus;
    const uint256 zero;
    EXPECT_TRUE(CheckProofOfWork(zero, 0x1d00ffff, main));
    EXPECT_FALSE(CheckProofOfWork(zero, 0x1d80ffff, main)); // negative
    EXPECT_FALSE(CheckProofOfWork(zero, 0x1e00ffff, main)); // above the pow limit
    EXPECT_FALSE(CheckProofOfWork(zero, 0x00000000, main)); // zero target
    EXPECT_FALSE(CheckProofOfWork(zero, 0xff123456, main)); // overflow
    EXPECT_FALSE(CheckProofOfWork(*uint256::FromHex("00000000ffff0000000000000000000000000000000000000000000000000001"), 0x1d00ffff, main));
    EXPECT_TRUE(CheckProofOfWork(*uint256::FromHex("00000000ffff0000000000000000000000000000000000000000000000000000"), 0x1d00ffff, main));
}

TEST(Script, SigOpCount)
{
    EXPECT_EQ(GetSigOpCount(ParseHex("76a914000000000000000000000000000000000000000088ac"), false), 1u);
    EXPECT_EQ(GetSigOpCount(ParseHex("52ae"), false), 20u);
    EXPECT_EQ(GetSigOpCount(ParseHex("52ae"), true), 2u);
    EXPECT_EQ(GetSigOpCount(ParseHex("acadaeaf"), false), 42u);
    // A push that hides an OP_CHECKSIG does not count; a truncated push stops the count.
    EXPECT_EQ(GetSigOpCount(ParseHex("01acac"), false), 1u);
    EXPECT_EQ(GetSigOpCount(ParseHex("ac4c05acac"), false), 1u);
    EXPECT_EQ(GetSigOpCount(ParseHex("ac4d0100ac"), false), 1u);
    EXPECT_EQ(GetSigOpCount(ParseHex("ac4d0000ac"), false), 2u);
    EXPECT_EQ(GetSigOpCount(ParseHex("ac4e"), false), 1u);
    // The output templates (counted without a walk) and near misses that take the walk: hashes
    // full of sigop bytes are pushes and never count.
    const std::string h20(40, 'a'), h32(64, 'a'); // 0xaa bytes; OP_CHECKSIG is 0xac
    const std::string sig20(40, 'c');             // 0xcc; and 'ac' repeated below
    std::string ac20;
    for (int i = 0; i < 20; ++i) ac20 += "ac";
    EXPECT_EQ(GetSigOpCount(ParseHex("76a914" + ac20 + "88ac"), false), 1u);        // P2PKH
    EXPECT_EQ(GetSigOpCount(ParseHex("a914" + ac20 + "87"), false), 0u);            // P2SH
    EXPECT_EQ(GetSigOpCount(ParseHex("0014" + ac20), false), 0u);                   // P2WPKH
    EXPECT_EQ(GetSigOpCount(ParseHex("0020" + ac20 + ac20.substr(0, 24)), false), 0u); // P2WSH
    EXPECT_EQ(GetSigOpCount(ParseHex("5120" + h32), false), 0u);                    // P2TR
    EXPECT_EQ(GetSigOpCount(ParseHex("76a914" + ac20 + "88ae"), false), 20u);       // CHECKMULTISIG ending
    EXPECT_EQ(GetSigOpCount(ParseHex("76a913" + ac20.substr(0, 38) + "ac88ac"), false), 2u); // 19-byte push
    EXPECT_EQ(GetSigOpCount(ParseHex("ac14" + ac20 + "87"), false), 1u);            // 23 bytes, not P2SH
    EXPECT_EQ(GetSigOpCount(ParseHex("5220" + h32), false), 0u);                    // 34 bytes, v2 program
    EXPECT_EQ(GetSigOpCount(ParseHex("ac20" + h20 + sig20.substr(0, 24)), false), 1u);
}

TEST(Script, TypesAndHeights)
{
    EXPECT_EQ(GetTxnOutputType(Solver(ParseHex("76a914000000000000000000000000000000000000000088ac"))), "pubkeyhash");
    EXPECT_EQ(GetTxnOutputType(Solver(ParseHex("a914000000000000000000000000000000000000000087"))), "scripthash");
    EXPECT_EQ(GetTxnOutputType(Solver(ParseHex("0014" + std::string(40, '0')))), "witness_v0_keyhash");
    EXPECT_EQ(GetTxnOutputType(Solver(ParseHex("0020" + std::string(64, '0')))), "witness_v0_scripthash");
    EXPECT_EQ(GetTxnOutputType(Solver(ParseHex("5120" + std::string(64, '0')))), "witness_v1_taproot");
    EXPECT_EQ(GetTxnOutputType(Solver(ParseHex("51024e73"))), "anchor");
    EXPECT_EQ(GetTxnOutputType(Solver(ParseHex("6a04deadbeef"))), "nulldata");
    EXPECT_EQ(GetTxnOutputType(Solver(ParseHex("21" "02" + std::string(64, '1') + "ac"))), "pubkey");
    EXPECT_EQ(GetTxnOutputType(Solver(ParseHex("51" "21" "02" + std::string(64, '1') + "51ae"))), "multisig");
    EXPECT_EQ(GetTxnOutputType(Solver(ParseHex("ac"))), "nonstandard");

    EXPECT_EQ(ToHex(ScriptForHeight(0)), "00");
    EXPECT_EQ(ToHex(ScriptForHeight(16)), "60");
    EXPECT_EQ(ToHex(ScriptForHeight(17)), "0111");
    EXPECT_EQ(ToHex(ScriptForHeight(128)), "028000");
    EXPECT_EQ(ToHex(ScriptForHeight(413567)), "037f4f06");
    for (int64_t h : {0, 1, 16, 17, 127, 128, 255, 256, 32767, 32768, 227931, 866342, 8388608}) {
        const Script s = ScriptForHeight(h);
        EXPECT_EQ(DecodeCoinbaseHeight(s.span()), h);
    }
    EXPECT_FALSE(DecodeCoinbaseHeight(ParseHex("0201")));
    EXPECT_EQ(ScriptToAsmStr(ParseHex("76a914000000000000000000000000000000000000000088ac")),
              "OP_DUP OP_HASH160 0000000000000000000000000000000000000000 OP_EQUALVERIFY OP_CHECKSIG");
    EXPECT_EQ(ScriptToAsmStr(ParseHex("0051028000")), "0 1 128");
    EXPECT_EQ(ScriptToAsmStr(ParseHex("4c")), "[error]");
}

} // namespace
} // namespace ibdkit

// Script's ordering (utxo balances sort by it) is std::vector's: bytewise unsigned, a proper
// prefix first, the empty script least.
TEST(Script, OrdersLikeAVectorOfBytes)
{
    const std::vector<std::vector<uint8_t>> sorted{{}, {0x00}, {0x01}, {0x01, 0x00}, {0x01, 0xff}, {0x7f}, {0x80}, {0xff}};
    for (std::size_t i = 0; i < sorted.size(); ++i) {
        for (std::size_t j = 0; j < sorted.size(); ++j) {
            const ibdkit::Script a(sorted[i].data(), sorted[i].size());
            const ibdkit::Script b(sorted[j].data(), sorted[j].size());
            EXPECT_EQ(a <=> b, i <=> j) << i << " " << j;
        }
    }
}

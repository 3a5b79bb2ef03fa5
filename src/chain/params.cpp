#include <ibdkit/chain/params.h>

#include <ibdkit/encoding/hex.h>
#include <ibdkit/primitives/amount.h>
#include <ibdkit/script/flags.h>

#include <algorithm>
#include <cctype>
#include <cstring>
#include <memory>

namespace ibdkit {
namespace {

// The parameters' own constants: always valid hex.
std::vector<uint8_t> FromHexBytes(std::string_view hex) { return ParseHex(hex).value(); }

void PushData(Script& s, std::span<const uint8_t> d)
{
    if (d.size() < 0x4c) {
        s.push_back(uint8_t(d.size()));
    } else {
        s.push_back(0x4c);
        s.push_back(uint8_t(d.size()));
    }
    s.append(d);
}

Block CreateGenesisBlock(std::string_view timestamp, std::span<const uint8_t> pubkey, uint32_t time, uint32_t nonce,
                         uint32_t bits, int32_t version, Amount reward)
{
    MutableTransaction tx;
    tx.version = 1;
    tx.vin.resize(1);
    tx.vout.resize(1);
    // CScript() << 486604799 << CScriptNum(4) << timestamp
    const uint8_t bits_push[] = {0xff, 0xff, 0x00, 0x1d};
    const uint8_t four[] = {0x04};
    PushData(tx.vin[0].script_sig, bits_push);
    PushData(tx.vin[0].script_sig, four);
    PushData(tx.vin[0].script_sig, std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(timestamp.data()), timestamp.size()));
    tx.vout[0].value = reward;
    PushData(tx.vout[0].script_pubkey, pubkey);
    tx.vout[0].script_pubkey.push_back(0xac); // OP_CHECKSIG

    Block genesis;
    genesis.time = time;
    genesis.bits = bits;
    genesis.nonce = nonce;
    genesis.version = version;
    genesis.vtx.emplace_back(std::move(tx));
    // The merkle root of a block of one transaction is that transaction's txid.
    genesis.hash_merkle_root = genesis.vtx[0].GetHash().ToUint256();
    return genesis;
}

constexpr std::string_view MAIN_TIMESTAMP = "The Times 03/Jan/2009 Chancellor on brink of second bailout for banks";
constexpr std::string_view MAIN_PUBKEY =
    "04678afdb0fe5548271967f1a67130b7105cd6a828e03909a67962e0ea1f61deb649f6bc3f4cef38c4f35504e51ec112de5c384df7ba0b8d578a4c702b6bf11d5f";

BlockHash HashFromHex(std::string_view hex) { return *BlockHash::FromHex(hex); }
uint256 Uint256FromHex(std::string_view hex) { return *uint256::FromHex(hex); }

ChainParams MakeMain()
{
    ChainParams p;
    p.type = ChainType::MAIN;
    p.name = "main";
    p.message_start = {0xf9, 0xbe, 0xb4, 0xd9};
    p.default_port = 8333;
    auto& c = p.consensus;
    c.subsidy_halving_interval = 210000;
    c.bip16_exceptions = {HashFromHex("00000000000002dc756eebf4f49723ed8d30cc28a5f108eb94b1ba88ac4f9c22")};
    c.script_flag_exceptions = {
        {HashFromHex("00000000000002dc756eebf4f49723ed8d30cc28a5f108eb94b1ba88ac4f9c22"), SCRIPT_VERIFY_NONE},
        {HashFromHex("0000000000000000000f14c35b2d841e986ab5441de8c585d5ffe55ea1e395ad"), SCRIPT_VERIFY_P2SH | SCRIPT_VERIFY_WITNESS},
    };
    c.bip34_height = 227931;
    c.bip34_hash = HashFromHex("000000000000024b89b42a942fe0d9fea3bb44ab7bd1b19115dd6a759c0808b8");
    c.bip65_height = 388381;
    c.bip66_height = 363725;
    c.csv_height = 419328;
    c.segwit_height = 481824;
    c.pow_limit = Uint256FromHex("00000000ffffffffffffffffffffffffffffffffffffffffffffffffffffffff");
    p.genesis = CreateGenesisBlock(MAIN_TIMESTAMP, FromHexBytes(MAIN_PUBKEY), 1231006505, 2083236893, 0x1d00ffff, 1, 50 * COIN);
    c.hash_genesis_block = p.genesis.GetHash();
    c.minimum_chain_work = Uint256FromHex("0000000000000000000000000000000000000000dee8e2a309ad8a9820433c68");
    c.default_assume_valid = HashFromHex("00000000000000000000611fd22f2df7c8fbd0688745c3a6c3bb5109cc2a12cb"); // 912683
    p.headers_sync = {641, 15218}; // Core's, from its headerssync-params.py
    return p;
}

ChainParams MakeTestnet()
{
    ChainParams p;
    p.type = ChainType::TESTNET;
    p.name = "test";
    p.message_start = {0x0b, 0x11, 0x09, 0x07};
    p.default_port = 18333;
    auto& c = p.consensus;
    c.bip16_exceptions = {HashFromHex("00000000dd30457c001f4095d208cc1296b0eed002427aa599874af7a432b105")};
    c.script_flag_exceptions = {{HashFromHex("00000000dd30457c001f4095d208cc1296b0eed002427aa599874af7a432b105"), SCRIPT_VERIFY_NONE}};
    c.bip34_height = 21111;
    c.bip34_hash = HashFromHex("0000000023b3a96d3484e5abb3755c413e7d41500f8e2a5c3f0dd01299cd8ef8");
    c.bip65_height = 581885;
    c.bip66_height = 330776;
    c.csv_height = 770112;
    c.segwit_height = 834624;
    c.pow_limit = Uint256FromHex("00000000ffffffffffffffffffffffffffffffffffffffffffffffffffffffff");
    c.pow_allow_min_difficulty_blocks = true;
    p.genesis = CreateGenesisBlock(MAIN_TIMESTAMP, FromHexBytes(MAIN_PUBKEY), 1296688602, 414098458, 0x1d00ffff, 1, 50 * COIN);
    c.hash_genesis_block = p.genesis.GetHash();
    c.minimum_chain_work = Uint256FromHex("0000000000000000000000000000000000000000000016dd270dd94fac1d7632");
    c.default_assume_valid = HashFromHex("0000000000000065c6c38258e201971a3fdfcc2ceee0dd6e85a6c022d45dee34"); // 4550000
    p.headers_sync = {673, 14460}; // Core's, from its headerssync-params.py
    return p;
}

ChainParams MakeTestnet4()
{
    ChainParams p;
    p.type = ChainType::TESTNET4;
    p.name = "testnet4";
    p.message_start = {0x1c, 0x16, 0x3f, 0x28};
    p.default_port = 48333;
    auto& c = p.consensus;
    c.bip34_height = 1;
    c.bip65_height = 1;
    c.bip66_height = 1;
    c.csv_height = 1;
    c.segwit_height = 1;
    c.pow_limit = Uint256FromHex("00000000ffffffffffffffffffffffffffffffffffffffffffffffffffffffff");
    c.pow_allow_min_difficulty_blocks = true;
    c.enforce_bip94 = true;
    p.genesis = CreateGenesisBlock("03/May/2024 000000000000000000001ebd58c244970b3aa9d783bb001011fbe8ea8e98e00e",
                                   FromHexBytes("000000000000000000000000000000000000000000000000000000000000000000"),
                                   1714777860, 393743547, 0x1d00ffff, 1, 50 * COIN);
    c.hash_genesis_block = p.genesis.GetHash();
    c.minimum_chain_work = Uint256FromHex("00000000000000000000000000000000000000000000034a4690fe592dc49c7c");
    c.default_assume_valid = HashFromHex("000000000000000180a58e7fa3b0db84b5ea76377524894f53660d93ac839d9b"); // 91000
    p.headers_sync = {606, 16092}; // Core's, from its headerssync-params.py
    return p;
}

ChainParams MakeSignet()
{
    ChainParams p;
    p.type = ChainType::SIGNET;
    p.name = "signet";
    // The default signet's magic: the first 4 bytes of SHA256d(CompactSize ‖ challenge).
    p.message_start = {0x0a, 0x03, 0xcf, 0x40};
    p.default_port = 38333;
    auto& c = p.consensus;
    c.bip34_height = 1;
    c.bip65_height = 1;
    c.bip66_height = 1;
    c.csv_height = 1;
    c.segwit_height = 1;
    c.pow_limit = Uint256FromHex("00000377ae000000000000000000000000000000000000000000000000000000");
    c.signet_blocks = true;
    c.signet_challenge = FromHexBytes(
        "512103ad5e0edad18cb1f0fc0d28a3d4f1f3e445640337489abb10404f2d1e086be430210359ef5021964fe22d6f8e05b2463c9540ce"
        "96883fe3b278760f048f5189f2e6c452ae");
    p.genesis = CreateGenesisBlock(MAIN_TIMESTAMP, FromHexBytes(MAIN_PUBKEY), 1598918400, 52613770, 0x1e0377ae, 1, 50 * COIN);
    c.hash_genesis_block = p.genesis.GetHash();
    c.minimum_chain_work = Uint256FromHex("0000000000000000000000000000000000000000000000000000067d328e681a");
    c.default_assume_valid = HashFromHex("000000128586e26813922680309f04e1de713c7542fee86ed908f56368aefe2e"); // 267665
    p.headers_sync = {620, 15724}; // Core's, from its headerssync-params.py
    return p;
}

ChainParams MakeRegtest()
{
    ChainParams p;
    p.type = ChainType::REGTEST;
    p.name = "regtest";
    p.message_start = {0xfa, 0xbf, 0xb5, 0xda};
    p.default_port = 18444;
    auto& c = p.consensus;
    c.subsidy_halving_interval = 150;
    c.bip34_height = 1;
    c.bip65_height = 1;
    c.bip66_height = 1;
    c.csv_height = 1;
    c.segwit_height = 0;
    c.pow_limit = Uint256FromHex("7fffff0000000000000000000000000000000000000000000000000000000000");
    c.pow_allow_min_difficulty_blocks = true;
    c.pow_no_retargeting = true;
    p.genesis = CreateGenesisBlock(MAIN_TIMESTAMP, FromHexBytes(MAIN_PUBKEY), 1296688602, 2, 0x207fffff, 1, 50 * COIN);
    c.hash_genesis_block = p.genesis.GetHash();
    p.headers_sync = {275, 7017}; // Core's, from its headerssync-params.py
    return p;
}

} // namespace

const ChainParams& GetChainParams(ChainType type)
{
    static const ChainParams main = MakeMain();
    static const ChainParams test = MakeTestnet();
    static const ChainParams test4 = MakeTestnet4();
    static const ChainParams signet = MakeSignet();
    static const ChainParams regtest = MakeRegtest();
    switch (type) {
    case ChainType::MAIN: return main;
    case ChainType::TESTNET: return test;
    case ChainType::TESTNET4: return test4;
    case ChainType::SIGNET: return signet;
    case ChainType::REGTEST: break;
    }
    return regtest;
}

std::optional<ChainType> ParseChainType(std::string_view name) noexcept
{
    std::string n(name.size(), '\0');
    std::transform(name.begin(), name.end(), n.begin(), [](char ch) { return char(std::tolower(uint8_t(ch))); });
    if (n == "main" || n == "mainnet") return ChainType::MAIN;
    if (n == "test" || n == "testnet" || n == "testnet3") return ChainType::TESTNET;
    if (n == "testnet4") return ChainType::TESTNET4;
    if (n == "signet") return ChainType::SIGNET;
    if (n == "regtest") return ChainType::REGTEST;
    return std::nullopt;
}

std::string_view ChainTypeName(ChainType type) noexcept
{
    switch (type) {
    case ChainType::MAIN: return "main";
    case ChainType::TESTNET: return "test";
    case ChainType::TESTNET4: return "testnet4";
    case ChainType::SIGNET: return "signet";
    case ChainType::REGTEST: break;
    }
    return "regtest";
}

std::optional<ChainType> ChainTypeFromMagic(const MessageStart& magic) noexcept
{
    for (ChainType t : {ChainType::MAIN, ChainType::TESTNET, ChainType::TESTNET4, ChainType::SIGNET, ChainType::REGTEST}) {
        if (GetChainParams(t).message_start == magic) return t;
    }
    return std::nullopt;
}

int64_t GetBlockSubsidy(int height, const ConsensusParams& params) noexcept
{
    const int halvings = height / params.subsidy_halving_interval;
    if (halvings >= 64) return 0;
    Amount subsidy = 50 * COIN;
    subsidy >>= halvings;
    return subsidy;
}

} // namespace ibdkit

// ibdkit/chain/params.h — network parameters: mainnet, testnet3, testnet4, signet, regtest.
//
// What the context-free checks and the wire/block-file layers need: message start (magic), genesis
// block and hash, proof-of-work limit, activation heights, default P2P port. Values are Bitcoin
// Core's (kernel/chainparams.cpp). Every function here is thread-safe; none throws but allocation.
#pragma once

#include <ibdkit/chain/chain_type.h>
#include <ibdkit/primitives/block.h>
#include <ibdkit/primitives/hash.h>

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace ibdkit {

/// Consensus rules that differ between networks (Core's Consensus::Params, the parts ibdkit uses).
struct ConsensusParams {
    BlockHash hash_genesis_block;
    int subsidy_halving_interval{210000};
    /// Height and hash of the block where BIP34 became active (coinbase carries the height).
    int bip34_height{0};
    BlockHash bip34_hash;
    int bip65_height{0};
    int bip66_height{0};
    int csv_height{0};
    /// Height at which segwit (BIP141/143/147) is enforced.
    int segwit_height{0};
    uint256 pow_limit;
    bool pow_allow_min_difficulty_blocks{false};
    bool pow_no_retargeting{false};
    int64_t pow_target_spacing{600};
    int64_t pow_target_timespan{14 * 24 * 60 * 60};
    /// Core's script_flag_exceptions that turn P2SH and witness off (its BIP16 exceptions: one
    /// historical block each on mainnet and testnet3). Every other block is connected with both on
    /// (mainnet's taproot exception keeps them), which is what sigop counting reads.
    std::vector<BlockHash> bip16_exceptions;
    /// Core's script_flag_exceptions in full, for script verification (GetBlockScriptFlags,
    /// consensus/script_flags.h): a listed block is connected under `flags` (a ScriptFlags value of
    /// script/flags.h) instead of P2SH|WITNESS|TAPROOT, before the height-activated flags
    /// are added. Mainnet: the BIP16 exception (no flags) and the taproot exception
    /// (P2SH|WITNESS: a block from before taproot's activation whose witness v1 spend breaks its
    /// rules); testnet3: its BIP16 exception. bip16_exceptions lists the blocks where P2SH is off.
    struct ScriptFlagException {
        BlockHash hash;
        uint32_t flags;
    };
    std::vector<ScriptFlagException> script_flag_exceptions;
    bool enforce_bip94{false};
    /// Signet: blocks carry a solution to `signet_challenge`.
    bool signet_blocks{false};
    std::vector<uint8_t> signet_challenge;
    /// Core's nMinimumChainWork: a header chain with less total work (GetBlockProof summed from the
    /// genesis) is not downloaded. Zero on regtest.
    uint256 minimum_chain_work;
    /// Core's defaultAssumeValid: a block whose history was verified elsewhere, below which a
    /// block's scripts may be skipped (consensus/assumevalid.h has Core's conditions). Null on
    /// regtest: every script is verified.
    BlockHash default_assume_valid;

    /// Blocks between retargets (2,016 on mainnet; Core's DifficultyAdjustmentInterval).
    int64_t DifficultyAdjustmentInterval() const noexcept { return pow_target_timespan / pow_target_spacing; }
};

using MessageStart = std::array<uint8_t, 4>;

/// What a peer's header download below the minimum chain work may cost (Core's HeadersSyncParams,
/// kernel/chainparams.cpp; consensus/headers_presync.h uses them): the memory per peer while its
/// chain is presynced, and how many headers a redownload verifies before it stores them.
struct HeadersSyncParams {
    /// Headers between two 1-bit commitments to the chain presynced.
    std::size_t commitment_period{0};
    /// Headers redownloaded and held before the first of them is released for storing: about
    /// redownload_buffer_size / commitment_period commitments checked on top of each one released.
    std::size_t redownload_buffer_size{0};
};

struct ChainParams {
    ChainType type;
    std::string name;             ///< Core's chain name: "main", "test", "testnet4", "signet", "regtest"
    MessageStart message_start;   ///< network magic (P2P and block files)
    uint16_t default_port;
    ConsensusParams consensus;
    Block genesis;
    HeadersSyncParams headers_sync;
};

/// Parameters of a network (built once, kept for the process lifetime): the first call builds all
/// five networks' (thread-safe static initialisation); the reference stays valid until exit.
const ChainParams& GetChainParams(ChainType type);

/// The network whose magic this is, if any.
std::optional<ChainType> ChainTypeFromMagic(const MessageStart& magic) noexcept;

/// Block subsidy at a height: 50 BTC halved every subsidy_halving_interval blocks, zero after
/// 64 halvings (Core's GetBlockSubsidy). `height` ≥ 0.
int64_t GetBlockSubsidy(int height, const ConsensusParams& params) noexcept;

} // namespace ibdkit

// src/gen/chain_gen.h — a deterministic regtest chain that Bitcoin Core accepts with full
// validation, for replay tests and benchmarks (docs/generator.md).
//
// The chain starts at the regtest genesis block. Blocks 1..100 hold only a coinbase (coinbase
// outputs mature after COINBASE_MATURITY blocks); later blocks grow towards the weight limit and
// carry fan-out, consolidation and ordinary transactions paying P2PKH, P2SH, P2WPKH, P2WSH, P2TR,
// bare multisig, P2PK and OP_RETURN outputs. By default the outputs the generator spends are
// spendable without keys — P2SH of OP_TRUE, P2WSH of `<8 bytes> OP_DROP OP_TRUE`, and taproot
// outputs spent by the script path through a leaf of the same shape — so script validation succeeds
// without signatures; with `signed_spends` they are the types mainnet spends, with real signatures.
// Every other output is left unspent and grows the UTXO set. Same options → the same bytes, on any
// machine.
//
// Two profiles: `Default` (the benchmark chain above: random spends from a pool of spendable coins)
// and `Mainnet`, whose shapes follow published mainnet statistics (docs/generator.md): inputs and
// outputs per transaction, output types by era, dust-heavy values, full blocks, and coin lifetimes —
// each output is given, when it is made, the height at which it will be spent (often the same or the
// next few blocks, sometimes thousands of blocks later) or none, so the UTXO set grows with the chain
// and a cache smaller than the set misses as Core's does on mainnet. Only coins still waiting to be
// spent are held in memory (48 bytes each).
#pragma once

#include <ibdkit/blockfile/blockfile.h> // MAX_BLOCKFILE_SIZE
#include <ibdkit/error.h>
#include <ibdkit/primitives/block.h>

#include <array>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace ibdkit {

/// Regtest genesis time (Core's chainparams): every generated block is later than this.
inline constexpr int64_t REGTEST_GENESIS_TIME = 1296688602;
/// Target spacing between generated blocks, in seconds.
inline constexpr int64_t GEN_BLOCK_SPACING = 600;

/// What the chain looks like (docs/generator.md).
enum class ChainProfile : uint8_t {
    Default, ///< random spends from a pool of spendable coins; most bytes in the last blocks
    Mainnet, ///< mainnet-shaped: tx shapes, types by era, dust, full blocks, coin lifetimes
};

struct ChainGenOptions {
    /// Height of the last block (the chain has blocks 0..blocks).
    int blocks{2500};
    /// Seed of every random choice (amounts, output types, keys, xor key).
    uint64_t seed{1};
    /// Timestamp of block 1; later blocks follow at about GEN_BLOCK_SPACING. Must be later than
    /// REGTEST_GENESIS_TIME. See DefaultStartTime for "the tip is about now".
    int64_t start_time{0};
    /// Approximate total size of the serialized blocks. The block-size ramp is scaled to it;
    /// capped by what `blocks` blocks of at most MAX_BLOCK_WEIGHT can hold.
    uint64_t target_bytes{180'000'000};
    ChainProfile profile{ChainProfile::Default};
    /// Spend outputs that need real signatures (P2PKH, P2WPKH, P2TR key path, 2-of-3 multisig in
    /// P2SH and P2WSH, a tapscript `<key> OP_CHECKSIG` leaf) in mainnet's shares instead of the
    /// keyless ones, so that a full validator checks a signature for every input as on mainnet.
    bool signed_spends{false};
    /// Mainnet profile: the UTXO set at mainnet's size (docs/generator.md, "Mainnet's UTXO set in
    /// 20 GB"): most of the bytes in 2023–24's dust era, whose airdrops pay many dust outputs that
    /// are never spent, so that the coins at the tip per byte of blocks double. `gen-chain
    /// --profile mainnet-utxo`. Without it the mainnet profile's bytes are unchanged.
    bool utxo_heavy{false};
};

/// The default chain: what `ibdkit run` (`make run`) generates, caches and replays. Mainnet-shaped
/// and deterministic (seed 1, a fixed start time): its UTXO set is several times what `run`'s
/// --dbcache 8 holds, so a run flushes and reads coins back (its size: docs/generator.md).
ChainGenOptions DefaultChainOptions(int blocks = 120);
/// `gen-chain --preset default`: the default profile, 2,500 blocks (the chain docs/benchmarks.md
/// calls "the default chain" in its older figures).
ChainGenOptions GenChainPresetOptions();
/// `gen-chain --preset tiny`, and the tests' chain: 150 blocks.
ChainGenOptions TinyChainGenOptions();
/// The mainnet profile at 0.8 MB per block on average: `blocks` blocks (2,000 when 0).
ChainGenOptions MainnetChainGenOptions(int blocks = 0);

/// Upper bounds (inclusive, in blocks) of the age buckets of ChainGenStats::spent_by_age; the last
/// bucket holds every older coin. 0: spent in the block that made it; 144 ≈ a day; 4,320 ≈ a month.
inline constexpr int SPENT_AGE_BOUNDS[5] = {0, 6, 144, 1008, 4320};

/// A start time such that the last of `blocks` blocks is stamped about `now`.
int64_t DefaultStartTime(int blocks, int64_t now) noexcept;

/// What a generator has made so far.
struct ChainGenStats {
    int height{0};              ///< height of the last block made (0: only the genesis)
    BlockHash tip;              ///< its hash
    int64_t tip_time{0};        ///< its timestamp
    uint64_t txs{0};            ///< transactions, coinbases included (genesis excluded)
    uint64_t inputs{0};         ///< non-coinbase inputs
    uint64_t outputs{0};        ///< outputs created (OP_RETURN and commitments included)
    uint64_t block_bytes{0};    ///< serialized size of the generated blocks (genesis excluded)
    uint64_t block_weight{0};   ///< total weight of the generated blocks
    uint64_t max_block_weight{0};
    uint64_t witness_txs{0};
    uint64_t witness_blocks{0}; ///< blocks with a witness commitment
    uint64_t utxos{0};          ///< unspent outputs at the tip (Core's count: OP_RETURN excluded)
    uint64_t fanouts{0}, consolidations{0}, ordinary{0};
    /// Inputs spent by kind: P2SH(OP_TRUE), P2WSH, P2TR script path, and of those, coinbase outputs.
    uint64_t spent_p2sh{0}, spent_p2wsh{0}, spent_p2tr{0}, spent_coinbase{0};
    /// Inputs carrying real signatures (signed_spends), and of those the P2PKH, P2WPKH, P2TR key
    /// path, multisig (P2SH and P2WSH) and tapscript spends.
    uint64_t signed_inputs{0}, spent_signed_p2pkh{0}, spent_signed_p2wpkh{0}, spent_signed_p2tr_key{0},
        spent_signed_multisig{0}, spent_signed_tapscript{0};
    /// Outputs created by script type.
    uint64_t out_p2pkh{0}, out_p2sh{0}, out_p2wpkh{0}, out_p2wsh{0}, out_p2tr{0}, out_p2pk{0}, out_multisig{0},
        out_op_return{0};
    /// Inputs by the age of the coin they spend, in blocks (bounds: SPENT_AGE_BOUNDS).
    std::array<uint64_t, 6> spent_by_age{};
    /// Outputs made never to be spent (OP_RETURN excluded). Mainnet profile; in the default profile,
    /// every output of a type the generator cannot spend.
    uint64_t never_spent_outputs{0};
    /// Mainnet profile: coins waiting to be spent, now and at most (the generator's memory).
    uint64_t pending_coins{0}, pending_coins_peak{0};
};

/// Makes the chain block by block. Each block passes CheckBlock, the witness-commitment and
/// weight rules and BIP34 before it is returned (a failure is a generator bug: std::logic_error).
class ChainGenerator {
public:
    /// Throws std::invalid_argument for blocks < 1 or a start time not after the genesis.
    explicit ChainGenerator(const ChainGenOptions& opts);
    ~ChainGenerator();
    ChainGenerator(const ChainGenerator&) = delete;
    ChainGenerator& operator=(const ChainGenerator&) = delete;

    /// The regtest genesis block (block 0).
    const Block& Genesis() const;
    /// True once block `opts.blocks` has been made.
    bool Done() const noexcept;
    /// Makes the next block (height Stats().height + 1). Precondition: !Done().
    Block Next();
    const ChainGenStats& Stats() const noexcept;

private:
    struct Impl;
    std::unique_ptr<Impl> m_impl;
};

struct ChainWriteOptions {
    /// Obfuscate the files as Core ≥ 28 does: write blocks/xor.dat (8 bytes from the seed) and
    /// XOR every byte of every blk file with it at the byte's absolute offset.
    bool xor_files{false};
    /// A file is closed before a record would take it past this size.
    uint64_t max_file_size{MAX_BLOCKFILE_SIZE};
    /// Write the genesis block as the first record, as Core's own blk00000.dat starts.
    bool include_genesis{true};
    /// The files the caller writes beside blocks/ (gen-chain's chain.json, run's STAMP): a folder
    /// holding them is one ibdkit made (CheckChainOutWritable).
    std::vector<std::string> own_files;
};

/// Result of writing a chain.
struct ChainWriteResult {
    ChainGenStats stats;
    uint64_t file_bytes{0}; ///< bytes written to blk files (framing and genesis included)
    int files{0};           ///< number of blk files
};

/// Whether a chain may be generated into `out_dir` (common/write_guard.h): nullopt when it lies in
/// no Core data directory and is new, empty, or holds only what a generated chain holds (blocks/
/// with blkNNNNN.dat, xor.dat and INCOMPLETE_BLOCKS_MARKER, and wopts.own_files); otherwise
/// Errc::Refused, `what` naming the folder ("--out"). WriteGeneratedChain checks it first.
std::optional<Error> CheckChainOutWritable(const std::filesystem::path& out_dir, const ChainWriteOptions& wopts,
                                           std::string_view what = "the chain's folder");

/// Generates the chain into `out_dir`/blocks/blkNNNNN.dat (records: regtest magic fabfb5da, LE32
/// size, block). Existing blk*.dat and xor.dat files in that directory are replaced. From before
/// the first file is touched until every file is durable, the directory holds
/// INCOMPLETE_BLOCKS_MARKER (blockfile.h), which readers refuse: an interrupted run leaves a chain
/// marked incomplete, never a shorter one that looks whole. `progress` (optional) is called after
/// every block. Errors: Errc::InvalidValue for bad options, Errc::Refused for a folder that is not
/// the generator's (CheckChainOutWritable), Errc::Corrupt
/// (with the path) when a file cannot be written.
Result<ChainWriteResult> WriteGeneratedChain(const std::filesystem::path& out_dir, const ChainGenOptions& opts,
                                             const ChainWriteOptions& wopts,
                                             const std::function<void(const ChainGenStats&)>& progress = {});

/// The xor key WriteGeneratedChain uses for a seed (never all zero).
std::array<std::byte, 8> GeneratedXorKey(uint64_t seed) noexcept;

} // namespace ibdkit

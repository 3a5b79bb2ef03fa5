// src/gen/generator.h (internal) — the chain generator's state and its parts: the output kinds it
// makes and spends, the weight bounds it plans with, and `ChainGenerator::Impl`, whose members are
// defined in three files: the generator itself, block by block (chain_gen.cpp), the transaction
// factory (tx_factory.cpp: scripts, inputs, the default profile's transactions) and the mainnet
// profile (mainnet_profile.cpp: eras, shapes, values and coin lifetimes). The random source is
// gen/random.h.
#pragma once

#include "gen/keys.h"
#include "gen/random.h"
#include "gen/signer.h"

#include <ibdkit/chain/params.h>
#include <ibdkit/consensus/header_check.h>
#include <ibdkit/primitives/consensus_constants.h>
#include <ibdkit/primitives/script_ops.h>

#include "gen/chain_gen.h"

#include <array>
#include <cstdint>
#include <cstring>
#include <deque>
#include <memory>
#include <optional>
#include <utility>
#include <vector>

namespace ibdkit {

namespace gen_detail {

// ---- output kinds ---------------------------------------------------------------------------------

enum class OutKind : uint8_t {
    // Spendable without keys: the generator spends these.
    P2SH_TRUE,  // HASH160 <hash160(OP_TRUE)> EQUAL; scriptSig = push(OP_TRUE)
    P2WSH_TRUE, // 0 <sha256(ws)>, ws = <8 bytes> OP_DROP OP_TRUE; witness = [ws]
    P2TR_TRUE,  // 1 <Q>, Q tweaked with one leaf `<8 bytes> OP_DROP OP_TRUE`; witness = [leaf, control]
    // Spent with real signatures (signed chains: gen/signer.h).
    P2PKH_SIG,
    P2WPKH_SIG,
    P2TR_KEY_SIG,
    P2SH_MULTISIG_SIG,
    P2WSH_MULTISIG_SIG,
    TAPSCRIPT_SIG,
    // Created, never spent.
    P2PKH,
    P2WPKH,
    P2TR_KEY,
    P2SH_OTHER,
    P2WSH_OTHER,
    P2PK_COMPRESSED,
    P2PK_UNCOMPRESSED,
    MULTISIG,
    OP_RETURN_DATA,
};

constexpr bool IsSpendable(OutKind k) noexcept { return k <= OutKind::TAPSCRIPT_SIG; }
constexpr bool IsSigned(OutKind k) noexcept { return k >= OutKind::P2PKH_SIG && k <= OutKind::TAPSCRIPT_SIG; }
inline SignedKind SignedKindOf(OutKind k) noexcept
{
    return SignedKind(uint8_t(k) - uint8_t(OutKind::P2PKH_SIG));
}

// hash160(0x51): the P2SH program of a redeem script that is just OP_TRUE.
inline constexpr uint8_t P2SH_TRUE_HASH[20] = {0xda, 0x17, 0x45, 0xe9, 0xb5, 0x49, 0xbd, 0x0b, 0xfa, 0x1a,
                                        0x56, 0x99, 0x71, 0xc7, 0x7e, 0xba, 0x30, 0xcd, 0x5a, 0x4b};

inline constexpr std::size_t TAPROOT_VARIANTS = 32;
inline constexpr std::size_t KEY_POOL_SIZE = 64;

/// `<8 bytes> OP_DROP OP_TRUE`: true whatever the 8 bytes, so each output can have its own script.
inline std::array<uint8_t, 11> TrueScript(uint64_t tag) noexcept
{
    std::array<uint8_t, 11> s{};
    s[0] = 0x08;
    std::memcpy(s.data() + 1, &tag, 8);
    s[9] = 0x75; // OP_DROP
    s[10] = OP_1;
    return s;
}

/// A coin the generator may spend.
struct PoolCoin {
    OutPoint outpoint;
    Amount value{0};
    uint64_t tag{0};
    OutKind kind{OutKind::P2SH_TRUE};
    uint8_t variant{0};
    bool coinbase{false};
    int32_t height{0}; // where it was made
};

/// Mainnet profile: a coin waiting for the height at which it will be spent. Its P2WSH tag and
/// taproot variant are derived from (height, vout, value), so they are not stored.
struct DueCoin {
    Txid txid;
    Amount value{0};
    int32_t height{0};
    uint16_t vout{0};
    OutKind kind{OutKind::P2SH_TRUE};
    uint8_t coinbase{0};
};
static_assert(sizeof(DueCoin) <= 48);

/// How an output was made, so it can be spent later.
struct PlannedOut {
    OutKind kind;
    uint8_t variant{0};
    uint64_t tag{0};
};

// Weight bounds used to plan a transaction before it exists (exact weights are taken afterwards).
inline constexpr uint64_t W_TX_OVERHEAD = 4 * (4 + 4 + 3 + 3) + 2;            // version, locktime, counts; marker+flag
inline constexpr uint64_t W_IN_MAX = 4 * (32 + 4 + 1 + 2 + 4) + (1 + 1 + 11 + 1 + 33); // P2SH scriptSig or P2TR witness
// Signed chains: a 2-of-3 P2SH multisig input (two 73-byte signatures and the 105-byte redeem script
// in its scriptSig) is the largest.
inline constexpr uint64_t W_IN_MAX_SIGNED = 4 * (32 + 4 + 4 + 3 + 1 + 2 * 74 + 2 + 105);
inline constexpr uint64_t W_COINBASE_RESERVE = 4 * 260 + 40;                  // coinbase with 3 outputs + commitment + witness
inline constexpr uint64_t W_HEADER = 4 * (80 + 5);
inline constexpr uint64_t WEIGHT_CAP = MAX_BLOCK_WEIGHT - 4000;               // the fullest blocks we make
inline constexpr int64_t SIGOPS_CAP = MAX_BLOCK_SIGOPS_COST - 800;
inline constexpr int64_t COINBASE_ONLY_BYTES = 200;                            // rough size of a coinbase-only block
inline constexpr Amount DUST = 546;
inline constexpr double BYTES_PER_WU = 0.275;                                 // typical of the generated blocks

/// The era of a height in the mainnet profile (docs/generator.md): which output types it makes.
enum class Era : uint8_t { LEGACY, SEGWIT, TAPROOT };

} // namespace gen_detail

struct ChainGenerator::Impl {
    using OutKind = gen_detail::OutKind;
    using PoolCoin = gen_detail::PoolCoin;
    using DueCoin = gen_detail::DueCoin;
    using PlannedOut = gen_detail::PlannedOut;
    using Era = gen_detail::Era;

    ChainGenOptions opts;
    const ChainParams& params;
    gen::Rng rng;
    gen_detail::KeyPool keys;
    std::vector<gen_detail::TaprootScriptOutput> taproot;
    std::unique_ptr<gen_detail::Signer> signer; // signed chains only
    uint64_t w_in_max{gen_detail::W_IN_MAX};    // weight bound of one input
    // The transaction being built: what each input spends, and how it is signed (signed chains).
    std::vector<TxOut> tx_spent;
    std::vector<std::optional<gen_detail::SignedSpend>> tx_signing;

    std::vector<PoolCoin> pool;                     // mature coins the generator may spend
    std::deque<std::pair<int, PoolCoin>> immature;  // coinbase outputs by creation height
    std::vector<HeaderInfo> times;                  // block times (and bits) by height, for median time past
    BlockHash prev;
    ChainGenStats stats;

    // Size plan: bytes wanted per height (before correction) and suffix sums.
    std::vector<double> plan;
    std::vector<double> plan_suffix;
    double spend_bytes{0}, spend_weight{0}; // realised bytes/weight of blocks with transactions

    // Per-block state.
    int64_t block_sigops{0};
    uint64_t block_fee_rate{1};

    // Mainnet profile (docs/generator.md, "The mainnet profile": every number it uses is cited there).
    std::vector<std::vector<DueCoin>> due; // coins by the height that spends them (heights <= opts.blocks)
    std::vector<DueCoin> backlog;          // coins due now, not yet spent
    std::vector<int> spend_at;             // per output of the transaction being built: spend height, or -1
    std::vector<OutKind> out_kinds;        // its output types
    std::vector<Amount> out_values;        // its output values
    int pull_from{0};                      // first height whose bucket may still hold coins to pull early

    /// Share (per mille) of outputs made never to be spent.
    static constexpr unsigned NEVER_SPENT_PM = 250;
    /// utxo_heavy: share (per mille) of the dust era's transactions that are dust drops, and the
    /// range of their dust outputs.
    static constexpr unsigned DROP_PM = 40;
    static constexpr uint64_t DROP_MIN_OUTPUTS = 25, DROP_MAX_OUTPUTS = 500;

    // ---- the generator, block by block (chain_gen.cpp) ----
    explicit Impl(const ChainGenOptions& o);
    void MakePlan();
    uint64_t TargetWeight(int h) const;
    Block MakeBlock();
    void AddCoinbase(Block& block, int h, Amount fees, bool has_witness);
    void FinishBlock(Block& block, int h, bool has_witness);
    void CountOutput(OutKind k);
    int64_t MedianTimePast() const;
    void Verify(const Block& block, int h) const;
    // ---- the transaction factory (tx_factory.cpp) ----
    enum class Shape { ORDINARY, FANOUT, CONSOLIDATION };
    struct TxDraft;
    void AddOut(TxDraft& d, OutKind kind, Amount value);
    bool BuildFanout(TxDraft& d, uint64_t budget, Amount& fee);
    bool BuildConsolidation(TxDraft& d, uint64_t budget, Amount& fee);
    void BuildOrdinary(TxDraft& d, Amount& fee);
    Script MakeScript(OutKind kind, PlannedOut& po, const uint64_t* tag = nullptr);
    static int64_t SigopCost(OutKind k) noexcept;
    OutKind PickSpendableKind();
    OutKind PickUnspendableKind();
    TxIn SpendInput(const PoolCoin& c, int height);
    PoolCoin TakeCoin(std::size_t i);
    std::size_t PickRichCoin(int tries);
    Amount Fee(uint64_t weight_bound, Amount available) noexcept;
    bool BuildTx(int height, uint64_t budget, MutableTransaction& mtx, std::vector<PlannedOut>& planned, Amount& fee);
    // ---- the mainnet profile (mainnet_profile.cpp) ----
    void MakeMainnetPlan(int span, int first, double cap, double want);
    Era EraAt(int h) const;
    uint64_t CoinTag(int height, uint32_t vout, Amount value) const noexcept;
    int DrawSpendDelay();
    OutKind KeylessKind(Era e);
    OutKind PickSignedKind(Era e);
    OutKind KeyedKind(Era e);
    Amount DrawDustValue();
    std::pair<int, int> DrawShape(Era e);
    void Schedule(const DueCoin& c, int spend_height);
    void BeginMainnetBlock(int h);
    void PullEarly(int height, std::size_t want);
    bool BuildMainnetTx(int height, uint64_t budget, MutableTransaction& mtx, std::vector<PlannedOut>& planned, Amount& fee);
    TxIn SpendDue(std::size_t idx, int height, Amount& value);
    OutKind DropKind();
    Amount DropValue(OutKind k);
    bool BuildDustDrop(int height, uint64_t budget, MutableTransaction& mtx, std::vector<PlannedOut>& planned, Amount& fee);
};

} // namespace ibdkit

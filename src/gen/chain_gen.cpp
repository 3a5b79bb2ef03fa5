#include <ibdkit/gen/chain_gen.h>

#include "blockfile/block_file_writer.h"
#include "gen/keys.h"
#include "gen/random.h"
#include "gen/signer.h"

#include <ibdkit/blockfile/blockfile.h>
#include <ibdkit/chain/params.h>
#include <ibdkit/consensus/check.h>
#include <ibdkit/consensus/consensus.h>
#include <ibdkit/consensus/header_check.h>
#include <ibdkit/consensus/merkle.h>
#include <ibdkit/consensus/pow.h>
#include <ibdkit/crypto/sha256.h>
#include <ibdkit/primitives/script_ops.h>
#include <ibdkit/stream/obfuscation.h>
#include <ibdkit/stream/streams.h>

#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <deque>
#include <stdexcept>
#include <string>
#include <vector>

namespace ibdkit {

namespace {

using gen::Rng;
using gen::SplitMix64;

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
gen_detail::SignedKind SignedKindOf(OutKind k) noexcept
{
    return gen_detail::SignedKind(uint8_t(k) - uint8_t(OutKind::P2PKH_SIG));
}

// hash160(0x51): the P2SH program of a redeem script that is just OP_TRUE.
constexpr uint8_t P2SH_TRUE_HASH[20] = {0xda, 0x17, 0x45, 0xe9, 0xb5, 0x49, 0xbd, 0x0b, 0xfa, 0x1a,
                                        0x56, 0x99, 0x71, 0xc7, 0x7e, 0xba, 0x30, 0xcd, 0x5a, 0x4b};

constexpr std::size_t TAPROOT_VARIANTS = 32;
constexpr std::size_t KEY_POOL_SIZE = 64;

/// `<8 bytes> OP_DROP OP_TRUE`: true whatever the 8 bytes, so each output can have its own script.
std::array<uint8_t, 11> TrueScript(uint64_t tag) noexcept
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
constexpr uint64_t W_TX_OVERHEAD = 4 * (4 + 4 + 3 + 3) + 2;            // version, locktime, counts; marker+flag
constexpr uint64_t W_IN_MAX = 4 * (32 + 4 + 1 + 2 + 4) + (1 + 1 + 11 + 1 + 33); // P2SH scriptSig or P2TR witness
// Signed chains: a 2-of-3 P2SH multisig input (two 73-byte signatures and the 105-byte redeem script
// in its scriptSig) is the largest.
constexpr uint64_t W_IN_MAX_SIGNED = 4 * (32 + 4 + 4 + 3 + 1 + 2 * 74 + 2 + 105);
constexpr uint64_t W_COINBASE_RESERVE = 4 * 260 + 40;                  // coinbase with 3 outputs + commitment + witness
constexpr uint64_t W_HEADER = 4 * (80 + 5);
constexpr uint64_t WEIGHT_CAP = MAX_BLOCK_WEIGHT - 4000;               // the fullest blocks we make
constexpr int64_t SIGOPS_CAP = MAX_BLOCK_SIGOPS_COST - 800;
constexpr int64_t COINBASE_ONLY_BYTES = 200;                            // rough size of a coinbase-only block
constexpr Amount DUST = 546;
constexpr double BYTES_PER_WU = 0.275;                                 // typical of the generated blocks

std::size_t CompactSizeLen(std::size_t n) noexcept { return n < 253 ? 1 : n <= 0xffff ? 3 : 5; }

} // namespace

// ---- options ------------------------------------------------------------------------------------

ChainGenOptions DefaultChainOptions(int blocks)
{
    ChainGenOptions o = MainnetChainGenOptions(blocks);
    o.seed = 1;
    o.start_time = REGTEST_GENESIS_TIME + GEN_BLOCK_SPACING;
    o.target_bytes = uint64_t(blocks) * 333'000;
    return o;
}

ChainGenOptions GenChainPresetOptions()
{
    return ChainGenOptions{};
}

ChainGenOptions TinyChainGenOptions()
{
    ChainGenOptions o;
    o.blocks = 150;
    o.target_bytes = 2'000'000;
    return o;
}

ChainGenOptions MainnetChainGenOptions(int blocks)
{
    ChainGenOptions o;
    o.profile = ChainProfile::Mainnet;
    o.blocks = blocks > 0 ? blocks : 2000;
    o.target_bytes = uint64_t(o.blocks) * 800'000;
    return o;
}

int64_t DefaultStartTime(int blocks, int64_t now) noexcept
{
    return std::max<int64_t>(now - int64_t(std::max(blocks, 1) - 1) * GEN_BLOCK_SPACING, REGTEST_GENESIS_TIME + 1);
}

std::array<std::byte, 8> GeneratedXorKey(uint64_t seed) noexcept
{
    Rng rng(seed ^ 0x786f722e646174ULL /* "xor.dat" */);
    std::array<std::byte, 8> key{};
    do {
        const uint64_t v = rng.Next();
        std::memcpy(key.data(), &v, 8);
    } while (std::all_of(key.begin(), key.end(), [](std::byte b) { return b == std::byte{0}; }));
    return key;
}

// ---- the generator ------------------------------------------------------------------------------

struct ChainGenerator::Impl {
    ChainGenOptions opts;
    const ChainParams& params;
    Rng rng;
    gen_detail::KeyPool keys;
    std::vector<gen_detail::TaprootScriptOutput> taproot;
    std::unique_ptr<gen_detail::Signer> signer; // signed chains only
    uint64_t w_in_max{W_IN_MAX};                // weight bound of one input
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

    explicit Impl(const ChainGenOptions& o)
        : opts(o), params(GetChainParams(ChainType::REGTEST)), rng(o.seed), keys(gen_detail::MakeKeyPool(o.seed, KEY_POOL_SIZE))
    {
        if (o.blocks < 1) throw std::invalid_argument("gen-chain: the chain needs at least one block");
        if (o.start_time <= REGTEST_GENESIS_TIME) {
            throw std::invalid_argument("gen-chain: the start time must be later than the regtest genesis (" +
                                        std::to_string(REGTEST_GENESIS_TIME) + ")");
        }
        if (o.start_time > int64_t(0xffffffff) - int64_t(o.blocks + 1) * GEN_BLOCK_SPACING) {
            throw std::invalid_argument("gen-chain: the start time leaves no room for 32-bit block times");
        }
        for (std::size_t i = 0; i < TAPROOT_VARIANTS; ++i) {
            const auto leaf = TrueScript(o.seed * 0x100000001B3ULL + i);
            taproot.push_back(gen_detail::MakeTaprootScriptOutput(o.seed, i, leaf));
        }
        if (o.signed_spends) {
            signer = std::make_unique<gen_detail::Signer>(o.seed, TAPROOT_VARIANTS);
            w_in_max = W_IN_MAX_SIGNED;
        }
        if (o.profile == ChainProfile::Mainnet) due.resize(std::size_t(o.blocks) + 2);
        prev = params.genesis.GetHash();
        stats.tip = prev;
        times.push_back(HeaderInfo{params.genesis.time, params.genesis.bits});
        MakePlan();
    }

    // Block weights ramp as WEIGHT_CAP·((h - first + 1) / span)^k from the first block that can
    // spend a coinbase to the last; k is chosen so that the planned total matches the target.
    void MakePlan()
    {
        const int n = opts.blocks;
        plan.assign(std::size_t(n) + 2, 0.0);
        plan_suffix.assign(std::size_t(n) + 2, 0.0);
        const int first = COINBASE_MATURITY + 1;
        if (n < first) return;
        const int span = n - first + 1;
        const double cap = double(WEIGHT_CAP);
        const double want = std::max(0.0, double(opts.target_bytes) - double(n) * COINBASE_ONLY_BYTES) / BYTES_PER_WU;
        auto total = [&](double k) {
            double s = 0;
            for (int i = 1; i <= span; ++i) s += cap * std::pow(double(i) / span, k);
            return s;
        };
        if (opts.profile == ChainProfile::Mainnet) {
            MakeMainnetPlan(span, first, cap, want);
            return;
        }
        double k = 0;
        if (total(0) > want) {
            double lo = 0, hi = 1;
            while (total(hi) > want && hi < 1e6) hi *= 2;
            for (int it = 0; it < 60; ++it) {
                const double mid = (lo + hi) / 2;
                (total(mid) > want ? lo : hi) = mid;
            }
            k = hi;
        }
        for (int i = 1; i <= span; ++i) plan[std::size_t(first + i - 1)] = cap * std::pow(double(i) / span, k);
        for (int h = n; h >= 1; --h) plan_suffix[std::size_t(h)] = plan_suffix[std::size_t(h) + 1] + plan[std::size_t(h)];
    }

    // Mainnet profile: blocks fill up as mainnet's did, then stay nearly full: weight(x) =
    // cap·min(1, x/a) for x = (h − first + 1)/span, a fitted to the target (when the target needs less
    // than half-full blocks on average, cap·x^k instead); each block then gets 90–100% of that (a
    // full mainnet block is 3.99 M WU give or take a few percent).
    void MakeMainnetPlan(int span, int first, double cap, double want)
    {
        auto shape = [&](double a, double k, int i) { return cap * std::pow(std::min(1.0, double(i) / span / a), k); };
        auto total = [&](double a, double k) {
            double s = 0;
            for (int i = 1; i <= span; ++i) s += shape(a, k, i);
            return s;
        };
        double a = 1, k = 1;
        if (total(1, 1) <= want) {
            double lo = 0, hi = 1; // total falls as a grows
            for (int it = 0; it < 50; ++it) {
                const double mid = (lo + hi) / 2;
                (total(mid, 1) > want ? lo : hi) = mid;
            }
            a = std::max(hi, 1e-9);
        } else {
            double lo = 1, hi = 2;
            while (total(1, hi) > want && hi < 1e6) hi *= 2;
            for (int it = 0; it < 50; ++it) {
                const double mid = (lo + hi) / 2;
                (total(1, mid) > want ? lo : hi) = mid;
            }
            k = hi;
        }
        Rng jitter(opts.seed ^ 0x706c616e /* "plan" */);
        for (int i = 1; i <= span; ++i) {
            plan[std::size_t(first + i - 1)] = shape(a, k, i) * (0.90 + 0.10 * double(jitter.Below(1001)) / 1000.0);
        }
        for (int h = opts.blocks; h >= 1; --h) plan_suffix[std::size_t(h)] = plan_suffix[std::size_t(h) + 1] + plan[std::size_t(h)];
    }

    uint64_t TargetWeight(int h) const
    {
        if (plan[std::size_t(h)] <= 0) return 0;
        // Correct for what earlier blocks really came to, so the total lands near the target.
        const double left = double(opts.target_bytes) - double(stats.block_bytes) - double(opts.blocks - h + 1) * COINBASE_ONLY_BYTES;
        const double ratio = spend_weight > 0 ? spend_bytes / spend_weight : BYTES_PER_WU;
        double corr = plan_suffix[std::size_t(h)] > 0 ? left / ratio / plan_suffix[std::size_t(h)] : 1.0;
        corr = std::clamp(corr, 0.25, 4.0);
        return uint64_t(std::clamp(plan[std::size_t(h)] * corr, 4000.0, double(WEIGHT_CAP)));
    }

    // ---- scripts ----

    /// `tag` (mainnet profile): the P2WSH tag and taproot variant come from it instead of the rng.
    Script MakeScript(OutKind kind, PlannedOut& po, const uint64_t* tag = nullptr)
    {
        po.kind = kind;
        uint8_t buf[128];
        std::size_t n = 0;
        switch (kind) {
        case OutKind::P2SH_TRUE:
            buf[n++] = OP_HASH160;
            buf[n++] = 20;
            std::memcpy(buf + n, P2SH_TRUE_HASH, 20);
            n += 20;
            buf[n++] = OP_EQUAL;
            break;
        case OutKind::P2WSH_TRUE: {
            po.tag = tag ? *tag : rng.Next();
            const auto ws = TrueScript(po.tag);
            buf[n++] = OP_0;
            buf[n++] = 32;
            Sha256().Write(ws.data(), ws.size()).Finalize(buf + n);
            n += 32;
            break;
        }
        case OutKind::P2TR_TRUE:
            po.variant = tag ? uint8_t(*tag % TAPROOT_VARIANTS) : uint8_t(rng.Below(TAPROOT_VARIANTS));
            buf[n++] = OP_1;
            buf[n++] = 32;
            std::memcpy(buf + n, taproot[po.variant].output_key.data(), 32);
            n += 32;
            break;
        case OutKind::P2PKH_SIG:
        case OutKind::P2WPKH_SIG:
        case OutKind::P2TR_KEY_SIG:
        case OutKind::P2SH_MULTISIG_SIG:
        case OutKind::P2WSH_MULTISIG_SIG:
        case OutKind::TAPSCRIPT_SIG:
            po.variant = tag ? uint8_t(*tag % TAPROOT_VARIANTS) : uint8_t(rng.Below(TAPROOT_VARIANTS));
            return signer->ScriptPubKey(SignedKindOf(kind), po.variant);
        case OutKind::P2PKH:
            buf[n++] = OP_DUP;
            buf[n++] = OP_HASH160;
            buf[n++] = 20;
            rng.Fill(buf + n, 20);
            n += 20;
            buf[n++] = OP_EQUALVERIFY;
            buf[n++] = OP_CHECKSIG;
            break;
        case OutKind::P2WPKH:
            buf[n++] = OP_0;
            buf[n++] = 20;
            rng.Fill(buf + n, 20);
            n += 20;
            break;
        case OutKind::P2TR_KEY:
            buf[n++] = OP_1;
            buf[n++] = 32;
            if (rng.Chance(500)) {
                std::memcpy(buf + n, keys.xonly[rng.Below(KEY_POOL_SIZE)].data(), 32);
            } else {
                rng.Fill(buf + n, 32);
            }
            n += 32;
            break;
        case OutKind::P2SH_OTHER:
            buf[n++] = OP_HASH160;
            buf[n++] = 20;
            rng.Fill(buf + n, 20);
            n += 20;
            buf[n++] = OP_EQUAL;
            break;
        case OutKind::P2WSH_OTHER:
            buf[n++] = OP_0;
            buf[n++] = 32;
            rng.Fill(buf + n, 32);
            n += 32;
            break;
        case OutKind::P2PK_COMPRESSED:
            buf[n++] = 33;
            std::memcpy(buf + n, keys.compressed[rng.Below(KEY_POOL_SIZE)].data(), 33);
            n += 33;
            buf[n++] = OP_CHECKSIG;
            break;
        case OutKind::P2PK_UNCOMPRESSED:
            buf[n++] = 65;
            std::memcpy(buf + n, keys.uncompressed[rng.Below(KEY_POOL_SIZE)].data(), 65);
            n += 65;
            buf[n++] = OP_CHECKSIG;
            break;
        case OutKind::MULTISIG: {
            // 1-of-2, 1-of-3 or 2-of-3 with compressed keys.
            const int keys_n = rng.Chance(300) ? 2 : 3;
            const int m = keys_n == 3 && rng.Chance(500) ? 2 : 1;
            buf[n++] = uint8_t(OP_1 - 1 + m);
            for (int i = 0; i < keys_n; ++i) {
                buf[n++] = 33;
                std::memcpy(buf + n, keys.compressed[rng.Below(KEY_POOL_SIZE)].data(), 33);
                n += 33;
            }
            buf[n++] = uint8_t(OP_1 - 1 + keys_n);
            buf[n++] = OP_CHECKMULTISIG;
            break;
        }
        case OutKind::OP_RETURN_DATA: {
            const std::size_t len = std::size_t(rng.Range(1, 80));
            buf[n++] = OP_RETURN;
            if (len > 75) buf[n++] = OP_PUSHDATA1;
            buf[n++] = uint8_t(len);
            rng.Fill(buf + n, len);
            n += len;
            break;
        }
        }
        return Script(buf, n);
    }

    static int64_t SigopCost(OutKind k) noexcept
    {
        switch (k) {
        case OutKind::P2PKH:
        case OutKind::P2PKH_SIG:
        case OutKind::P2PK_COMPRESSED:
        case OutKind::P2PK_UNCOMPRESSED:
            return 1 * WITNESS_SCALE_FACTOR;
        case OutKind::MULTISIG:
            return int64_t(MAX_PUBKEYS_PER_MULTISIG) * WITNESS_SCALE_FACTOR; // legacy count: 20 per CHECKMULTISIG
        default:
            return 0;
        }
    }

    OutKind PickSpendableKind()
    {
        if (signer) return PickSignedKind(Era::TAPROOT);
        const uint64_t r = rng.Below(100);
        if (r < 40) return OutKind::P2WSH_TRUE;
        if (r < 75) return OutKind::P2SH_TRUE;
        return OutKind::P2TR_TRUE;
    }

    OutKind PickUnspendableKind()
    {
        const uint64_t r = rng.Below(1000);
        OutKind k;
        if (r < 250) k = OutKind::P2PKH;
        else if (r < 560) k = OutKind::P2WPKH;
        else if (r < 730) k = OutKind::P2TR_KEY;
        else if (r < 830) k = OutKind::P2SH_OTHER;
        else if (r < 900) k = OutKind::P2WSH_OTHER;
        else if (r < 960) k = OutKind::P2PK_COMPRESSED;
        else if (r < 980) k = OutKind::P2PK_UNCOMPRESSED;
        else k = OutKind::MULTISIG;
        // Stay under the block's sigop budget: a witness key hash costs none.
        if (block_sigops + SigopCost(k) > SIGOPS_CAP) k = OutKind::P2WPKH;
        block_sigops += SigopCost(k);
        return k;
    }

    TxIn SpendInput(const PoolCoin& c, int height)
    {
        const int age = height - c.height;
        std::size_t bucket = 0;
        while (bucket < std::size(SPENT_AGE_BOUNDS) && age > SPENT_AGE_BOUNDS[bucket]) ++bucket;
        ++stats.spent_by_age[bucket];
        TxIn in;
        in.prevout = c.outpoint;
        if (signer) {
            // The spent output's script again (BIP341 signs every input's). Where MakeScript derives
            // a variant from the tag (taproot, signed kinds), the coin's variant stands in for it.
            PlannedOut po{c.kind, c.variant, c.tag};
            const uint64_t tag = c.kind == OutKind::P2TR_TRUE || IsSigned(c.kind) ? c.variant : c.tag;
            tx_spent.push_back(TxOut{c.value, MakeScript(c.kind, po, &tag)});
            tx_signing.emplace_back();
        }
        if (IsSigned(c.kind)) {
            const gen_detail::SignedSpend spend{SignedKindOf(c.kind), c.variant};
            signer->Place(in, spend);
            tx_signing.back() = spend;
            ++stats.signed_inputs;
            switch (c.kind) {
            case OutKind::P2PKH_SIG: ++stats.spent_signed_p2pkh; break;
            case OutKind::P2WPKH_SIG: ++stats.spent_signed_p2wpkh; break;
            case OutKind::P2TR_KEY_SIG: ++stats.spent_signed_p2tr_key; break;
            case OutKind::TAPSCRIPT_SIG: ++stats.spent_signed_tapscript; break;
            default: ++stats.spent_signed_multisig; break;
            }
            // The redeem or witness script's three keys (P2SH: legacy count × 4; P2WSH: 1 each).
            if (c.kind == OutKind::P2SH_MULTISIG_SIG) block_sigops += 3 * WITNESS_SCALE_FACTOR;
            if (c.kind == OutKind::P2WSH_MULTISIG_SIG) block_sigops += 3;
            if (c.coinbase) ++stats.spent_coinbase;
            return in;
        }
        switch (c.kind) {
        case OutKind::P2SH_TRUE: {
            const uint8_t ss[2] = {0x01, OP_1}; // push the redeem script OP_TRUE
            in.script_sig = Script(ss, 2);
            ++stats.spent_p2sh;
            break;
        }
        case OutKind::P2WSH_TRUE: {
            const auto ws = TrueScript(c.tag);
            in.witness.stack.emplace_back(ws.begin(), ws.end());
            ++stats.spent_p2wsh;
            break;
        }
        case OutKind::P2TR_TRUE: {
            const auto& t = taproot[c.variant];
            in.witness.stack.push_back(t.leaf_script);
            in.witness.stack.push_back(t.control_block);
            ++stats.spent_p2tr;
            break;
        }
        default:
            throw std::logic_error("gen-chain: tried to spend an output it cannot spend");
        }
        if (c.coinbase) ++stats.spent_coinbase;
        return in;
    }

    PoolCoin TakeCoin(std::size_t i)
    {
        PoolCoin c = pool[i];
        pool[i] = pool.back();
        pool.pop_back();
        return c;
    }

    /// The richest of a few random coins (fan-outs need value to split).
    std::size_t PickRichCoin(int tries)
    {
        std::size_t best = rng.Below(pool.size());
        for (int t = 1; t < tries; ++t) {
            const std::size_t i = rng.Below(pool.size());
            if (pool[i].value > pool[best].value) best = i;
        }
        return best;
    }

    Amount Fee(uint64_t weight_bound, Amount available) noexcept
    {
        const uint64_t vsize = (weight_bound + 3) / 4;
        const Amount fee = Amount(vsize * (block_fee_rate + rng.Below(block_fee_rate + 1)));
        return std::min(fee, available / 4);
    }

    enum class Shape { ORDINARY, FANOUT, CONSOLIDATION };

    /// Builds one transaction that fits `budget` weight units; false if nothing can be spent.
    bool BuildTx(int height, uint64_t budget, MutableTransaction& mtx, std::vector<PlannedOut>& planned, Amount& fee)
    {
        if (pool.empty()) return false;
        mtx = MutableTransaction{};
        planned.clear();
        mtx.version = rng.Chance(850) ? 2 : 1;
        const bool anti_snipe = rng.Chance(300);
        mtx.lock_time = anti_snipe ? uint32_t(height - 1) : 0;
        const uint32_t sequence = anti_snipe ? 0xfffffffd : (rng.Chance(900) ? 0xffffffff : 0xfffffffe);

        Shape shape = Shape::ORDINARY;
        const uint64_t r = rng.Below(1000);
        if (pool.size() < 16 || r < 200) shape = Shape::FANOUT;
        else if (r < 360) shape = Shape::CONSOLIDATION;
        if (budget < W_TX_OVERHEAD + 4 * w_in_max + 600) shape = Shape::ORDINARY;

        std::vector<PoolCoin> spent;
        uint64_t bound = W_TX_OVERHEAD;
        auto out_weight = [](const Script& s) { return uint64_t(4 * (8 + CompactSizeLen(s.size()) + s.size())); };
        auto add_out = [&](OutKind kind, Amount value) {
            PlannedOut po{kind};
            Script s = MakeScript(kind, po);
            bound += out_weight(s);
            mtx.vout.push_back(TxOut{value, std::move(s)});
            planned.push_back(po);
        };

        if (shape == Shape::FANOUT) {
            const std::size_t idx = PickRichCoin(8);
            if (pool[idx].value < 200'000 && pool.size() >= 16) {
                shape = Shape::CONSOLIDATION;
            } else {
                spent.push_back(TakeCoin(idx));
                bound += w_in_max;
                const Amount v = spent[0].value;
                const int want = int(rng.Range(10, rng.Chance(120) ? 500 : 150));
                // Leave room for the outputs' weight (largest script: 1-of-3 multisig, 114 bytes).
                const uint64_t room = budget > bound + 600 ? (budget - bound - 600) / (4 * 114) : 0;
                const int m = int(std::min<uint64_t>(uint64_t(want), std::max<uint64_t>(room, 2)));
                const Amount fee_est = Fee(bound + uint64_t(m) * 4 * 40, v);
                const Amount avail = v - fee_est;
                if (avail < Amount(m) * 2) {
                    // Too poor to split: send it back as a plain change output.
                    add_out(PickSpendableKind(), avail);
                    ++stats.ordinary;
                } else {
                    const unsigned spendable_pm = 480;
                    std::vector<bool> spend_flags(static_cast<std::size_t>(m));
                    int ns = 0;
                    for (int i = 0; i < m; ++i) ns += (spend_flags[std::size_t(i)] = rng.Chance(spendable_pm)) ? 1 : 0;
                    if (ns == 0) {
                        spend_flags[0] = true;
                        ns = 1;
                    }
                    const Amount cap_each = std::max<Amount>(1, avail / (2 * Amount(m)));
                    Amount used = 0;
                    std::vector<Amount> values(std::size_t(m), 0);
                    for (int i = 0; i < m; ++i) {
                        if (!spend_flags[std::size_t(i)]) {
                            values[std::size_t(i)] = std::min<Amount>(cap_each, rng.Range(DUST, 60'000));
                            used += values[std::size_t(i)];
                        }
                    }
                    const Amount rest = avail - used;
                    const Amount each = rest / ns;
                    Amount first_extra = rest - each * ns;
                    for (int i = 0; i < m; ++i) {
                        if (spend_flags[std::size_t(i)]) {
                            values[std::size_t(i)] = each + first_extra;
                            first_extra = 0;
                        }
                    }
                    for (int i = 0; i < m; ++i) {
                        add_out(spend_flags[std::size_t(i)] ? PickSpendableKind() : PickUnspendableKind(), values[std::size_t(i)]);
                    }
                    ++stats.fanouts;
                }
                fee = v - [&] {
                    Amount s = 0;
                    for (const auto& o : mtx.vout) s += o.value;
                    return s;
                }();
            }
        }
        if (shape == Shape::CONSOLIDATION) {
            const uint64_t room = budget > bound + 4 * 60 ? (budget - bound - 4 * 60) / w_in_max : 0;
            const int want = int(rng.Range(10, rng.Chance(100) ? 400 : 150));
            const std::size_t k = std::min<std::size_t>({std::size_t(want), std::size_t(room), pool.size()});
            if (k < 2) {
                shape = Shape::ORDINARY;
            } else {
                Amount v = 0;
                for (std::size_t i = 0; i < k; ++i) {
                    spent.push_back(TakeCoin(rng.Below(pool.size())));
                    v += spent.back().value;
                }
                bound += k * w_in_max;
                fee = Fee(bound + 4 * 43, v);
                add_out(PickSpendableKind(), v - fee);
                ++stats.consolidations;
            }
        }
        if (shape == Shape::ORDINARY) {
            const std::size_t k = std::min<std::size_t>(pool.size(), rng.Chance(700) ? 1 : 2);
            Amount v = 0;
            for (std::size_t i = 0; i < k; ++i) {
                spent.push_back(TakeCoin(rng.Below(pool.size())));
                v += spent.back().value;
            }
            bound += k * w_in_max;
            fee = Fee(bound + 4 * 2 * 40, v);
            const Amount avail = v - fee;
            if (avail >= 2) {
                // Payments to outside keys are modest (log-uniform 1 k .. 10 M sat): value paid away
                // never comes back, and the generator must not run out of it.
                const bool outside = rng.Chance(650);
                Amount pay = avail * rng.Range(5, 60) / 100;
                if (outside) pay = std::min<Amount>(pay, Amount(std::pow(10.0, 3.0 + double(rng.Below(4001)) / 1000.0)));
                pay = std::clamp<Amount>(pay, 1, avail - 1);
                add_out(outside ? PickUnspendableKind() : PickSpendableKind(), pay);
                add_out(PickSpendableKind(), avail - pay);
                if (rng.Chance(500)) std::swap(mtx.vout[0], mtx.vout[1]), std::swap(planned[0], planned[1]);
            } else {
                add_out(PickSpendableKind(), avail);
            }
            if (rng.Chance(40)) add_out(OutKind::OP_RETURN_DATA, 0);
            ++stats.ordinary;
        }
        for (const PoolCoin& c : spent) {
            TxIn in = SpendInput(c, height);
            in.sequence = sequence;
            mtx.vin.push_back(std::move(in));
        }
        return true;
    }

    // ---- mainnet profile (docs/generator.md, "The mainnet profile": every number below is cited there) ----

    enum class Era : uint8_t { LEGACY, SEGWIT, TAPROOT };

    std::vector<std::vector<DueCoin>> due; // coins by the height that spends them (heights <= opts.blocks)
    std::vector<DueCoin> backlog;          // coins due now, not yet spent
    std::vector<int> spend_at;             // per output of the transaction being built: spend height, or -1
    std::vector<OutKind> out_kinds;        // its output types
    std::vector<Amount> out_values;        // its output values
    int pull_from{0};                      // first height whose bucket may still hold coins to pull early

    /// The era of a height: by the share of the planned bytes before it (mainnet: ~20% of its bytes
    /// before segwit, ~40% between segwit and taproot, ~40% since).
    Era EraAt(int h) const
    {
        const int first = COINBASE_MATURITY + 1;
        if (h < first || plan_suffix[std::size_t(first)] <= 0) return Era::LEGACY;
        const double done = 1.0 - plan_suffix[std::size_t(h)] / plan_suffix[std::size_t(first)];
        return done < 0.2 ? Era::LEGACY : done < 0.6 ? Era::SEGWIT : Era::TAPROOT;
    }

    /// The P2WSH tag / taproot variant of an output, from what a DueCoin keeps.
    uint64_t CoinTag(int height, uint32_t vout, Amount value) const noexcept
    {
        uint64_t x = opts.seed ^ (uint64_t(uint32_t(height)) << 32) ^ (uint64_t(vout) << 8) ^ (uint64_t(value) * 0x9E3779B97F4A7C15ULL);
        return SplitMix64(x);
    }

    /// Blocks between an output's creation and its spend, for an output that will be spent: spent
    /// outputs' lifespans (80% under a day, 15% a day to a month, 5% longer; within a day, a large
    /// share in the same or the next few blocks).
    int DrawSpendDelay()
    {
        const uint64_t r = rng.Below(1000);
        if (r < 220) return 0;                                 // same block (chains of payments)
        if (r < 350) return int(rng.Range(1, 6));              // within an hour
        if (r < 780) return int(rng.LogUniform(7, 144));       // within a day
        if (r < 940) return int(rng.LogUniform(145, 4320));    // a day to a month
        return int(rng.LogUniform(4321, 210'000));             // a month to ~4 years
    }

    /// Share (per mille) of outputs made never to be spent.
    static constexpr unsigned NEVER_SPENT_PM = 250;

    /// Type of an output that will be spent: mainnet's spent types mapped onto the three keyless
    /// ones (key hashes → P2WSH in the witness eras, P2SH before; taproot → P2TR script path).
    OutKind KeylessKind(Era e)
    {
        if (signer) return PickSignedKind(e);
        const uint64_t r = rng.Below(100);
        switch (e) {
        case Era::LEGACY: return OutKind::P2SH_TRUE;
        case Era::SEGWIT: return r < 55 ? OutKind::P2SH_TRUE : OutKind::P2WSH_TRUE;
        case Era::TAPROOT: return r < 14 ? OutKind::P2SH_TRUE : r < 70 ? OutKind::P2WSH_TRUE : OutKind::P2TR_TRUE;
        }
        return OutKind::P2SH_TRUE;
    }

    /// Type of an output that will be spent with a signature: the shares in which mainnet's inputs
    /// spend each type in the era (block 866,342 for the taproot era; docs/generator.md).
    OutKind PickSignedKind(Era e)
    {
        const uint64_t r = rng.Below(1000);
        OutKind k = OutKind::P2WPKH_SIG;
        switch (e) {
        case Era::LEGACY: k = r < 790 ? OutKind::P2PKH_SIG : OutKind::P2SH_MULTISIG_SIG; break;
        case Era::SEGWIT:
            k = r < 400 ? OutKind::P2PKH_SIG : r < 750 ? OutKind::P2WPKH_SIG : r < 950 ? OutKind::P2SH_MULTISIG_SIG
                                                                                   : OutKind::P2WSH_MULTISIG_SIG;
            break;
        case Era::TAPROOT:
            k = r < 114 ? OutKind::P2PKH_SIG : r < 663 ? OutKind::P2WPKH_SIG : r < 931 ? OutKind::P2TR_KEY_SIG
                : r < 961 ? OutKind::TAPSCRIPT_SIG : r < 991 ? OutKind::P2SH_MULTISIG_SIG : OutKind::P2WSH_MULTISIG_SIG;
            break;
        }
        if (block_sigops + SigopCost(k) > SIGOPS_CAP) k = OutKind::P2WPKH_SIG;
        block_sigops += SigopCost(k);
        return k;
    }

    /// Type of an output never spent: mainnet's output types by era (per mille).
    OutKind KeyedKind(Era e)
    {
        const uint64_t r = rng.Below(1000);
        OutKind k = OutKind::P2WPKH;
        switch (e) {
        case Era::LEGACY:
            k = r < 780 ? OutKind::P2PKH : r < 950 ? OutKind::P2SH_OTHER : r < 965 ? OutKind::P2PK_COMPRESSED
                : r < 980 ? OutKind::P2PK_UNCOMPRESSED : OutKind::MULTISIG;
            break;
        case Era::SEGWIT:
            k = r < 450 ? OutKind::P2PKH : r < 700 ? OutKind::P2SH_OTHER : r < 950 ? OutKind::P2WPKH
                : r < 980 ? OutKind::P2WSH_OTHER : r < 990 ? OutKind::MULTISIG : OutKind::P2PK_COMPRESSED;
            break;
        case Era::TAPROOT:
            k = r < 490 ? OutKind::P2WPKH : r < 920 ? OutKind::P2TR_KEY : r < 955 ? OutKind::P2SH_OTHER
                : r < 990 ? OutKind::P2PKH : OutKind::P2WSH_OTHER;
            break;
        }
        if (block_sigops + SigopCost(k) > SIGOPS_CAP) k = OutKind::P2WPKH;
        block_sigops += SigopCost(k);
        return k;
    }

    /// Value of an output never spent: mainnet's output values (a 2024 block: p10 846, p25 4,070,
    /// p50 15,441, p75 174,621 sat) up to its 75th percentile — regtest's 15,000 BTC could not pay
    /// mainnet's upper quartile to tens of millions of outputs.
    Amount DrawDustValue()
    {
        const uint64_t r = rng.Below(100);
        if (r < 13) return Amount(rng.LogUniform(330, 846));
        if (r < 33) return Amount(rng.LogUniform(846, 4070));
        if (r < 66) return Amount(rng.LogUniform(4070, 15441));
        return Amount(rng.LogUniform(15441, 174621));
    }

    /// A transaction shape (inputs, outputs) by era: one row of the measured table.
    std::pair<int, int> DrawShape(Era e)
    {
        struct Row { uint16_t pm; uint8_t in_lo, in_hi, out_lo, out_hi; };
        // {per mille, inputs lo..hi, outputs lo..hi}; 10..200 ranges are drawn log-uniform.
        static constexpr Row LEGACY_ROWS[] = {{591, 1, 1, 2, 2}, {129, 2, 2, 2, 2}, {75, 3, 9, 2, 2}, {55, 3, 9, 1, 1},
                                              {49, 1, 1, 1, 1},  {29, 1, 1, 3, 9}, {20, 2, 2, 3, 9}, {13, 2, 2, 1, 1},
                                              {13, 3, 9, 3, 9},  {11, 10, 200, 2, 2}, {6, 1, 1, 10, 200}, {9, 10, 200, 1, 1}};
        static constexpr Row SEGWIT_ROWS[] = {{687, 1, 1, 2, 2}, {76, 2, 2, 2, 2}, {73, 1, 1, 1, 1}, {67, 3, 9, 2, 2},
                                              {34, 1, 1, 3, 9},  {11, 2, 2, 3, 9}, {9, 1, 1, 10, 200}, {9, 3, 9, 1, 1},
                                              {9, 2, 2, 1, 1},   {7, 10, 200, 2, 2}, {6, 3, 9, 3, 9}, {12, 10, 200, 1, 1}};
        static constexpr Row TAPROOT_ROWS[] = {{861, 1, 1, 2, 2}, {52, 1, 1, 1, 1}, {39, 1, 1, 3, 9}, {11, 2, 2, 2, 2},
                                               {6, 3, 9, 1, 1},   {5, 3, 9, 2, 2}, {5, 2, 2, 3, 9}, {5, 10, 200, 1, 1},
                                               {5, 3, 9, 3, 9},   {4, 2, 2, 1, 1}, {4, 1, 1, 10, 200}, {3, 10, 200, 3, 9}};
        std::span<const Row> rows = e == Era::LEGACY ? std::span<const Row>(LEGACY_ROWS)
                                    : e == Era::SEGWIT ? std::span<const Row>(SEGWIT_ROWS) : std::span<const Row>(TAPROOT_ROWS);
        unsigned total = 0;
        for (const Row& row : rows) total += row.pm;
        uint64_t r = rng.Below(total);
        const Row* pick = &rows.back();
        for (const Row& row : rows) {
            if (r < row.pm) {
                pick = &row;
                break;
            }
            r -= row.pm;
        }
        auto draw = [&](int lo, int hi) { return lo >= 10 ? int(rng.LogUniform(uint64_t(lo), uint64_t(hi))) : int(rng.Range(lo, hi)); };
        return {draw(pick->in_lo, pick->in_hi), draw(pick->out_lo, pick->out_hi)};
    }

    void Schedule(const DueCoin& c, int spend_height)
    {
        if (spend_height > opts.blocks) return; // unspent at the tip: nothing to remember
        if (spend_height <= stats.height + 1 && c.height == stats.height + 1) {
            backlog.push_back(c); // spent later in the block that made it
        } else {
            due[std::size_t(spend_height)].push_back(c);
        }
        ++stats.pending_coins;
        stats.pending_coins_peak = std::max(stats.pending_coins_peak, stats.pending_coins);
    }

    void BeginMainnetBlock(int h)
    {
        auto& bucket = due[std::size_t(h)];
        backlog.insert(backlog.end(), bucket.begin(), bucket.end());
        std::vector<DueCoin>().swap(bucket);
        pull_from = std::max(pull_from, h + 1);
    }

    /// Moves coins due later into the backlog (spent a little early) until it holds `want`; coinbase
    /// outputs not yet mature at `height` stay where they are.
    void PullEarly(int height, std::size_t want)
    {
        while (backlog.size() < want && pull_from <= opts.blocks) {
            auto& bucket = due[std::size_t(pull_from)];
            std::size_t kept = 0;
            for (std::size_t i = 0; i < bucket.size(); ++i) {
                const DueCoin c = bucket[i];
                if (backlog.size() < want && !(c.coinbase && height - c.height < COINBASE_MATURITY)) {
                    backlog.push_back(c);
                } else {
                    bucket[kept++] = c;
                }
            }
            bucket.resize(kept);
            if (kept == 0) std::vector<DueCoin>().swap(bucket);
            if (backlog.size() < want) ++pull_from;
        }
    }

    /// One mainnet-shaped transaction within `budget` weight units; false if no coin is left to spend.
    bool BuildMainnetTx(int height, uint64_t budget, MutableTransaction& mtx, std::vector<PlannedOut>& planned, Amount& fee)
    {
        constexpr uint64_t W_OUT_MAX = 4 * (9 + 105); // 1-of-3 bare multisig
        if (budget < W_TX_OVERHEAD + w_in_max + W_OUT_MAX + 4 * 60) return false;
        if (backlog.empty()) PullEarly(height, 1);
        if (backlog.empty()) return false;
        const Era era = EraAt(height);
        auto [n_in, n_out] = DrawShape(era);
        // More coins due than the rest of the block can take: consolidate more (as wallets do when
        // fees are low), so the coins waiting stay about a block's worth.
        // Fewer coins due than the rest of the block needs (the chain's economy is still small, or
        // blocks grow faster than the coins made earlier come due): batch payouts, one coin to many.
        const std::size_t room_inputs = budget / 450;
        if (backlog.size() > 2 * room_inputs + 100 && rng.Chance(150)) {
            n_in = int(rng.LogUniform(10, 200));
            n_out = 1;
        } else if (backlog.size() < room_inputs && rng.Below(room_inputs) >= backlog.size() && rng.Chance(300)) {
            n_in = 1;
            n_out = int(rng.LogUniform(20, 250));
        }
        const uint64_t fixed = W_TX_OVERHEAD + 4 * 60;
        n_out = int(std::min<uint64_t>(uint64_t(n_out), std::max<uint64_t>(1, (budget - fixed - w_in_max) / W_OUT_MAX)));
        n_in = int(std::min<uint64_t>(uint64_t(n_in), (budget - fixed - uint64_t(n_out) * W_OUT_MAX) / w_in_max));
        if (backlog.size() < std::size_t(n_in)) PullEarly(height, std::size_t(n_in));
        n_in = std::min(n_in, int(backlog.size()));

        mtx = MutableTransaction{};
        planned.clear();
        spend_at.clear();
        mtx.version = rng.Chance(850) ? 2 : 1;
        const bool anti_snipe = rng.Chance(300);
        mtx.lock_time = anti_snipe ? uint32_t(height - 1) : 0;
        const uint32_t sequence = anti_snipe ? 0xfffffffd : (rng.Chance(900) ? 0xffffffff : 0xfffffffe);

        Amount v = 0;
        for (int i = 0; i < n_in; ++i) {
            const std::size_t idx = rng.Below(backlog.size());
            const DueCoin c = backlog[idx];
            backlog[idx] = backlog.back();
            backlog.pop_back();
            --stats.pending_coins;
            v += c.value;
            const uint64_t tag = CoinTag(c.height, c.vout, c.value);
            TxIn in = SpendInput(PoolCoin{OutPoint{c.txid, c.vout}, c.value, tag, c.kind, uint8_t(tag % TAPROOT_VARIANTS), c.coinbase != 0, c.height},
                                 height);
            in.sequence = sequence;
            mtx.vin.push_back(std::move(in));
        }

        // Decide each output's fate first: never spent (a keyed type, a dust-heavy value) or spent
        // after DrawSpendDelay blocks (a keyless type, a share of what is left).
        std::vector<OutKind>& kinds = out_kinds;
        kinds.assign(std::size_t(n_out), OutKind::P2SH_TRUE);
        spend_at.assign(std::size_t(n_out), -1);
        int n_spend = 0;
        for (int i = 0; i < n_out; ++i) {
            if (rng.Chance(NEVER_SPENT_PM)) {
                kinds[std::size_t(i)] = KeyedKind(era);
            } else {
                kinds[std::size_t(i)] = KeylessKind(era);
                spend_at[std::size_t(i)] = height + DrawSpendDelay();
                ++n_spend;
            }
        }
        const uint64_t bound = W_TX_OVERHEAD + uint64_t(n_in) * w_in_max + uint64_t(n_out) * 4 * 43;
        fee = Fee(bound, v);
        const Amount avail = v - fee;
        std::vector<Amount>& values = out_values;
        values.assign(std::size_t(n_out), 0);
        Amount used = 0;
        const Amount cap_each = avail / (2 * Amount(n_out));
        for (int i = 0; i < n_out; ++i) {
            if (spend_at[std::size_t(i)] < 0) used += values[std::size_t(i)] = std::min(DrawDustValue(), cap_each);
        }
        Amount rest = avail - used;
        if (n_spend == 0 && rest > 100'000) {
            // Value is not thrown away: the last output becomes change that will be spent.
            kinds.back() = KeylessKind(era);
            spend_at.back() = height + DrawSpendDelay();
            rest += values.back();
            values.back() = 0;
            n_spend = 1;
        }
        if (n_spend == 0) {
            fee += rest; // crumbs go to the miner
        } else {
            // Payment and change: uneven shares of what is left.
            int left = n_spend;
            for (int i = 0; i < n_out; ++i) {
                if (spend_at[std::size_t(i)] < 0) continue;
                Amount part = rest;
                if (--left > 0) part = rest * Amount(rng.Range(10, 90)) / 100 / Amount(left + 1) * 2;
                part = std::clamp<Amount>(part, 0, rest);
                values[std::size_t(i)] = part;
                rest -= part;
            }
        }
        for (int i = 0; i < n_out; ++i) {
            PlannedOut po{kinds[std::size_t(i)]};
            const uint64_t tag = CoinTag(height, uint32_t(i), values[std::size_t(i)]);
            Script s = MakeScript(po.kind, po, &tag);
            mtx.vout.push_back(TxOut{values[std::size_t(i)], std::move(s)});
            planned.push_back(po);
        }
        const unsigned op_return_pm = era == Era::LEGACY ? 2 : era == Era::SEGWIT ? 10 : 250;
        if (rng.Chance(op_return_pm)) {
            PlannedOut po{OutKind::OP_RETURN_DATA};
            Script s = MakeScript(po.kind, po);
            mtx.vout.push_back(TxOut{0, std::move(s)});
            planned.push_back(po);
            spend_at.push_back(-1);
        }
        if (n_in >= 10 && n_out == 1) ++stats.consolidations;
        else if (n_out >= 10) ++stats.fanouts;
        else ++stats.ordinary;
        return true;
    }

    Block MakeBlock()
    {
        const int h = stats.height + 1;
        while (!immature.empty() && immature.front().first + COINBASE_MATURITY <= h) {
            pool.push_back(immature.front().second);
            immature.pop_front();
        }

        Block block;
        block.vtx.emplace_back(); // the coinbase, filled in last
        block_sigops = 2 * WITNESS_SCALE_FACTOR;
        block_fee_rate = uint64_t(rng.Range(1, 12));
        const uint64_t target = TargetWeight(h);
        uint64_t weight = W_HEADER + W_COINBASE_RESERVE;
        Amount fees = 0;
        bool has_witness = false;
        MutableTransaction mtx;
        std::vector<PlannedOut> planned;
        const bool mainnet = opts.profile == ChainProfile::Mainnet;
        if (mainnet) BeginMainnetBlock(h);
        while (target > 0 && weight + 1200 < target && (mainnet || !pool.empty())) {
            Amount fee = 0;
            tx_spent.clear();
            tx_signing.clear();
            if (!(mainnet ? BuildMainnetTx(h, target - weight, mtx, planned, fee) : BuildTx(h, target - weight, mtx, planned, fee))) {
                break;
            }
            if (signer) signer->SignInputs(mtx, tx_spent, tx_signing);
            Transaction tx(std::move(mtx));
            weight += GetTransactionWeight(tx);
            fees += fee;
            has_witness |= tx.HasWitness();
            stats.witness_txs += tx.HasWitness() ? 1 : 0;
            stats.inputs += tx.vin().size();
            for (uint32_t i = 0; i < tx.vout().size(); ++i) {
                const PlannedOut& po = planned[i];
                CountOutput(po.kind);
                if (mainnet) {
                    if (spend_at[i] >= 0) Schedule(DueCoin{tx.GetHash(), tx.vout()[i].value, h, uint16_t(i), po.kind, 0}, spend_at[i]);
                } else if (IsSpendable(po.kind)) {
                    pool.push_back(PoolCoin{OutPoint{tx.GetHash(), i}, tx.vout()[i].value, po.tag, po.kind, po.variant, false, h});
                }
            }
            stats.utxos -= tx.vin().size();
            block.vtx.push_back(std::move(tx));
            mtx = MutableTransaction{};
        }

        // Coinbase: BIP34 height, an extra nonce and a tag; the reward to spendable outputs.
        MutableTransaction cb;
        cb.version = 2;
        TxIn cin;
        cin.script_sig = ScriptForHeight(h);
        uint8_t extra[4 + 1 + 12];
        extra[0] = 4;
        rng.Fill(extra + 1, 4);
        extra[5] = 11;
        std::memcpy(extra + 6, "/ibdkit-gen", 11);
        cin.script_sig.append(std::span<const uint8_t>(extra, sizeof(extra)));
        if (has_witness) cin.witness.stack.emplace_back(32, uint8_t{0}); // the witness reserved value
        cb.vin.push_back(std::move(cin));
        const Amount reward = GetBlockSubsidy(h, params.consensus) + fees;
        std::vector<PlannedOut> cb_planned;
        auto cb_out = [&](OutKind kind, Amount value) {
            PlannedOut po{kind};
            const uint64_t tag = CoinTag(h, uint32_t(cb.vout.size()), value);
            Script s = MakeScript(kind, po, mainnet ? &tag : nullptr);
            cb.vout.push_back(TxOut{value, std::move(s)});
            cb_planned.push_back(po);
        };
        if (mainnet) {
            // Pool payouts: one output, sometimes a second to another party (never spent).
            const Era era = EraAt(h);
            if (reward > 100'000 && rng.Chance(300)) {
                const Amount side = reward / Amount(rng.Range(20, 200));
                cb_out(KeylessKind(era), reward - side);
                cb_out(era == Era::LEGACY ? OutKind::P2PKH : OutKind::P2WPKH, side);
            } else {
                cb_out(KeylessKind(era), reward);
            }
        } else if (reward > 100'000 && rng.Chance(300)) {
            const Amount side = reward / Amount(rng.Range(20, 200));
            cb_out(PickSpendableKind(), reward - side);
            cb_out(rng.Chance(500) ? OutKind::P2PKH : OutKind::P2WPKH, side);
        } else {
            cb_out(PickSpendableKind(), reward);
        }
        if (has_witness) {
            const uint256 wroot = BlockWitnessMerkleRoot(block);
            uint8_t buf[64];
            std::memcpy(buf, wroot.data(), 32);
            std::memset(buf + 32, 0, 32);
            const uint256 commitment = HashSha256d(std::span<const uint8_t>(buf, 64));
            uint8_t spk[38] = {OP_RETURN, 0x24, 0xaa, 0x21, 0xa9, 0xed};
            std::memcpy(spk + 6, commitment.data(), 32);
            cb.vout.push_back(TxOut{0, Script(spk, sizeof(spk))});
            cb_planned.push_back(PlannedOut{OutKind::OP_RETURN_DATA});
        }
        block.vtx[0] = Transaction(std::move(cb));
        const Transaction& coinbase = block.vtx[0];
        for (uint32_t i = 0; i < coinbase.vout().size(); ++i) {
            CountOutput(cb_planned[i].kind);
            if (mainnet) {
                if (IsSpendable(cb_planned[i].kind)) {
                    Schedule(DueCoin{coinbase.GetHash(), coinbase.vout()[i].value, h, uint16_t(i), cb_planned[i].kind, 1},
                             h + COINBASE_MATURITY + DrawSpendDelay());
                }
            } else if (IsSpendable(cb_planned[i].kind)) {
                immature.emplace_back(h, PoolCoin{OutPoint{coinbase.GetHash(), i}, coinbase.vout()[i].value, cb_planned[i].tag,
                                                  cb_planned[i].kind, cb_planned[i].variant, true, h});
            }
        }

        // Header: time above the median of the last 11, then grind the nonce (regtest: ~2 tries).
        block.version = 0x20000000;
        block.hash_prev_block = prev;
        block.hash_merkle_root = BlockMerkleRoot(block);
        block.bits = 0x207fffff;
        int64_t t = opts.start_time + int64_t(h - 1) * GEN_BLOCK_SPACING + (h > 1 ? rng.Range(-240, 240) : 0);
        t = std::max(t, MedianTimePast() + 1);
        block.time = uint32_t(t);
        block.nonce = 0;
        while (!CheckProofOfWork(block.GetHash().ToUint256(), block.bits, params.consensus)) ++block.nonce;

        Verify(block, h);

        const std::size_t total = GetBlockTotalSize(block);
        const std::size_t bweight = GetBlockWeight(block);
        stats.height = h;
        stats.tip = block.GetHash();
        stats.tip_time = t;
        stats.txs += block.vtx.size();
        stats.block_bytes += total;
        stats.block_weight += bweight;
        stats.max_block_weight = std::max<uint64_t>(stats.max_block_weight, bweight);
        stats.witness_blocks += has_witness ? 1 : 0;
        if (block.vtx.size() > 1) {
            spend_bytes += double(total);
            spend_weight += double(bweight);
        }
        prev = stats.tip;
        times.push_back(HeaderInfo{block.time, block.bits});
        return block;
    }

    void CountOutput(OutKind k)
    {
        ++stats.outputs;
        if (k != OutKind::OP_RETURN_DATA) ++stats.utxos;
        if (!IsSpendable(k) && k != OutKind::OP_RETURN_DATA) ++stats.never_spent_outputs;
        switch (k) {
        case OutKind::P2SH_TRUE:
        case OutKind::P2SH_OTHER: ++stats.out_p2sh; break;
        case OutKind::P2WSH_TRUE:
        case OutKind::P2WSH_OTHER: ++stats.out_p2wsh; break;
        case OutKind::P2TR_TRUE:
        case OutKind::P2TR_KEY:
        case OutKind::P2TR_KEY_SIG:
        case OutKind::TAPSCRIPT_SIG: ++stats.out_p2tr; break;
        case OutKind::P2PKH:
        case OutKind::P2PKH_SIG: ++stats.out_p2pkh; break;
        case OutKind::P2WPKH:
        case OutKind::P2WPKH_SIG: ++stats.out_p2wpkh; break;
        case OutKind::P2SH_MULTISIG_SIG: ++stats.out_p2sh; break;
        case OutKind::P2WSH_MULTISIG_SIG: ++stats.out_p2wsh; break;
        case OutKind::P2PK_COMPRESSED:
        case OutKind::P2PK_UNCOMPRESSED: ++stats.out_p2pk; break;
        case OutKind::MULTISIG: ++stats.out_multisig; break;
        case OutKind::OP_RETURN_DATA: ++stats.out_op_return; break;
        }
    }

    int64_t MedianTimePast() const
    {
        return GetMedianTimePast(HeaderAncestry{0, times});
    }

    /// The rules Core applies without the UTXO set; a failure is a bug in the generator.
    void Verify(const Block& block, int h) const
    {
        BlockValidationState state;
        const bool ok = CheckBlockRules(block, state, params.consensus) && CheckWitnessMalleation(block, true, state) &&
                        CheckBlockWeight(block, state) && CheckCoinbaseHeight(block, h, state);
        if (!ok) {
            throw std::logic_error("gen-chain: generated block " + std::to_string(h) + " fails " + state.ToString());
        }
    }
};

ChainGenerator::ChainGenerator(const ChainGenOptions& opts) : m_impl(std::make_unique<Impl>(opts)) {}
ChainGenerator::~ChainGenerator() = default;

const Block& ChainGenerator::Genesis() const
{
    return m_impl->params.genesis;
}

bool ChainGenerator::Done() const noexcept
{
    return m_impl->stats.height >= m_impl->opts.blocks;
}

Block ChainGenerator::Next()
{
    if (Done()) throw std::logic_error("gen-chain: Next() after the last block");
    return m_impl->MakeBlock();
}

const ChainGenStats& ChainGenerator::Stats() const noexcept
{
    return m_impl->stats;
}

// ---- block files --------------------------------------------------------------------------------

namespace {

/// Appends to a byte vector that keeps its capacity from block to block (VectorWriter zero-fills
/// on every field it appends).
class AppendWriter {
public:
    explicit AppendWriter(std::vector<uint8_t>& v) : m_v(v) {}
    void write(std::span<const std::byte> src)
    {
        const auto* p = reinterpret_cast<const uint8_t*>(src.data());
        m_v.insert(m_v.end(), p, p + src.size());
    }
    template <typename T>
    AppendWriter& operator<<(const T& obj)
    {
        Serialize(*this, obj);
        return *this;
    }

private:
    std::vector<uint8_t>& m_v;
};

} // namespace

Result<ChainWriteResult> WriteGeneratedChain(const std::filesystem::path& out_dir, const ChainGenOptions& opts,
                                             const ChainWriteOptions& wopts,
                                             const std::function<void(const ChainGenStats&)>& progress)
{
    std::unique_ptr<ChainGenerator> gen;
    try {
        gen = std::make_unique<ChainGenerator>(opts);
    } catch (const std::invalid_argument& e) {
        return Error{Errc::InvalidValue, e.what()};
    }
    namespace fs = std::filesystem;
    const fs::path dir = out_dir / "blocks";
    std::error_code ec;
    fs::create_directories(dir, ec);
    if (ec) return Error{Errc::Corrupt, dir.string() + ": " + ec.message()};
    // Replace a previous chain: stale blk files after the new last one would be read as more blocks.
    for (const fs::path& p : ListBlockFiles(dir)) fs::remove(p, ec);
    fs::remove(dir / "xor.dat", ec);

    ObfuscationKey key;
    if (wopts.xor_files) {
        key.bytes = GeneratedXorKey(opts.seed);
        std::FILE* f = std::fopen((dir / "xor.dat").c_str(), "wb");
        if (!f || std::fwrite(key.bytes.data(), 1, 8, f) != 8 || std::fclose(f) != 0) {
            return Error{Errc::Corrupt, (dir / "xor.dat").string() + ": cannot write"};
        }
    }

    BlockFileWriter writer(dir, GetChainParams(ChainType::REGTEST).message_start, key, wopts.max_file_size);
    std::string err;
    if (wopts.include_genesis && !writer.Write(EncodeBlock(gen->Genesis()), &err)) return Error{Errc::Corrupt, err};
    std::vector<uint8_t> bytes;
    while (!gen->Done()) {
        const Block block = gen->Next();
        bytes.assign(8, 0); // room for the record's magic and size
        AppendWriter w(bytes);
        Serialize(w, block);
        if (!writer.WriteFramed(bytes, &err)) return Error{Errc::Corrupt, err};
        if (progress) progress(gen->Stats());
    }
    if (!writer.Close(&err)) return Error{Errc::Corrupt, err};
    ChainWriteResult res;
    res.stats = gen->Stats();
    res.file_bytes = writer.total();
    res.files = writer.files();
    return res;
}

} // namespace ibdkit

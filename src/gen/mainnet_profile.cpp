// src/gen/mainnet_profile.cpp — the mainnet profile (docs/generator.md, "The mainnet profile": every
// number here is cited there): the size plan, eras, transaction shapes, output types and values, and
// the height at which each output will be spent.
#include "gen/generator.h"

#include <algorithm>
#include <cmath>
#include <span>

namespace ibdkit {

using namespace gen_detail;
using gen::Rng;
using gen::SplitMix64;

// Mainnet profile: blocks fill up as mainnet's did, then stay nearly full: weight(x) =
// cap·min(1, x/a) for x = (h − first + 1)/span, a fitted to the target (when the target needs less
// than half-full blocks on average, cap·x^k instead); each block then gets 90–100% of that (a
// full mainnet block is 3.99 M WU give or take a few percent).
void ChainGenerator::Impl::MakeMainnetPlan(int span, int first, double cap, double want)
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

/// The era of a height: by the share of the planned bytes before it (mainnet: ~20% of its bytes
/// before segwit, ~40% between segwit and taproot, ~40% since; utxo_heavy: 5 / 15 / 80%, the
/// taproot era standing for the dust era in which mainnet's UTXO set doubled).
Era ChainGenerator::Impl::EraAt(int h) const
{
    const int first = COINBASE_MATURITY + 1;
    if (h < first || plan_suffix[std::size_t(first)] <= 0) return Era::LEGACY;
    const double done = 1.0 - plan_suffix[std::size_t(h)] / plan_suffix[std::size_t(first)];
    const double segwit_from = opts.utxo_heavy ? 0.05 : 0.2, taproot_from = opts.utxo_heavy ? 0.2 : 0.6;
    return done < segwit_from ? Era::LEGACY : done < taproot_from ? Era::SEGWIT : Era::TAPROOT;
}

/// The P2WSH tag / taproot variant of an output, from what a DueCoin keeps.
uint64_t ChainGenerator::Impl::CoinTag(int height, uint32_t vout, Amount value) const noexcept
{
    uint64_t x = opts.seed ^ (uint64_t(uint32_t(height)) << 32) ^ (uint64_t(vout) << 8) ^ (uint64_t(value) * 0x9E3779B97F4A7C15ULL);
    return SplitMix64(x);
}

/// Blocks between an output's creation and its spend, for an output that will be spent: spent
/// outputs' lifespans (80% under a day, 15% a day to a month, 5% longer; within a day, a large
/// share in the same or the next few blocks).
int ChainGenerator::Impl::DrawSpendDelay()
{
    const uint64_t r = rng.Below(1000);
    if (r < 220) return 0;                                 // same block (chains of payments)
    if (r < 350) return int(rng.Range(1, 6));              // within an hour
    if (r < 780) return int(rng.LogUniform(7, 144));       // within a day
    if (r < 940) return int(rng.LogUniform(145, 4320));    // a day to a month
    return int(rng.LogUniform(4321, 210'000));             // a month to ~4 years
}

/// Type of an output that will be spent: mainnet's spent types mapped onto the three keyless
/// ones (key hashes → P2WSH in the witness eras, P2SH before; taproot → P2TR script path).
OutKind ChainGenerator::Impl::KeylessKind(Era e)
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
OutKind ChainGenerator::Impl::PickSignedKind(Era e)
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
OutKind ChainGenerator::Impl::KeyedKind(Era e)
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
/// mainnet's upper quartile to tens of millions of outputs; utxo_heavy: up to its median, since
/// 15,000 BTC over 170 M coins leaves under 9,000 sat a coin.
Amount ChainGenerator::Impl::DrawDustValue()
{
    const uint64_t r = rng.Below(opts.utxo_heavy ? 66 : 100);
    if (r < 13) return Amount(rng.LogUniform(330, 846));
    if (r < 33) return Amount(rng.LogUniform(846, 4070));
    if (r < 66) return Amount(rng.LogUniform(4070, 15441));
    return Amount(rng.LogUniform(15441, 174621));
}

/// A transaction shape (inputs, outputs) by era: one row of the measured table.
std::pair<int, int> ChainGenerator::Impl::DrawShape(Era e)
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

void ChainGenerator::Impl::Schedule(const DueCoin& c, int spend_height)
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

void ChainGenerator::Impl::BeginMainnetBlock(int h)
{
    auto& bucket = due[std::size_t(h)];
    backlog.insert(backlog.end(), bucket.begin(), bucket.end());
    std::vector<DueCoin>().swap(bucket);
    pull_from = std::max(pull_from, h + 1);
}

/// Moves coins due later into the backlog (spent a little early) until it holds `want`; coinbase
/// outputs not yet mature at `height` stay where they are.
void ChainGenerator::Impl::PullEarly(int height, std::size_t want)
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

/// Takes the coin at backlog[idx]: its value is added to `value`, and the input spending it returned.
TxIn ChainGenerator::Impl::SpendDue(std::size_t idx, int height, Amount& value)
{
    const DueCoin c = backlog[idx];
    backlog[idx] = backlog.back();
    backlog.pop_back();
    --stats.pending_coins;
    value += c.value;
    const uint64_t tag = CoinTag(c.height, c.vout, c.value);
    return SpendInput(PoolCoin{OutPoint{c.txid, c.vout}, c.value, tag, c.kind, uint8_t(tag % TAPROOT_VARIANTS), c.coinbase != 0, c.height},
                      height);
}

/// One mainnet-shaped transaction within `budget` weight units; false if no coin is left to spend.
bool ChainGenerator::Impl::BuildMainnetTx(int height, uint64_t budget, MutableTransaction& mtx, std::vector<PlannedOut>& planned, Amount& fee)
{
    constexpr uint64_t W_OUT_MAX = 4 * (9 + 105); // 1-of-3 bare multisig
    if (budget < W_TX_OVERHEAD + w_in_max + W_OUT_MAX + 4 * 60) return false;
    if (backlog.empty()) PullEarly(height, 1);
    if (backlog.empty()) return false;
    const Era era = EraAt(height);
    if (opts.utxo_heavy && era == Era::TAPROOT && rng.Chance(DROP_PM) && BuildDustDrop(height, budget, mtx, planned, fee)) return true;
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
        TxIn in = SpendDue(rng.Below(backlog.size()), height, v);
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

/// Type of a dust drop's output: block 866,342's outputs under 1,000 sat (P2TR 77.9%, P2WPKH 19.0%,
/// P2WSH 1.5%, P2PKH 1.0%, P2SH 0.6%).
OutKind ChainGenerator::Impl::DropKind()
{
    const uint64_t r = rng.Below(1000);
    OutKind k = r < 779 ? OutKind::P2TR_KEY : r < 969 ? OutKind::P2WPKH : r < 984 ? OutKind::P2WSH_OTHER
        : r < 994 ? OutKind::P2PKH : OutKind::P2SH_OTHER;
    if (block_sigops + SigopCost(k) > SIGOPS_CAP) k = OutKind::P2WPKH;
    block_sigops += SigopCost(k);
    return k;
}

/// Value of a dust drop's output: 866,342's outputs under 1,000 sat (546 sat 40%, 330 sat 23%, the
/// rest spread up to 1,000), never under the type's dust limit in Core's relay policy (546 for
/// P2PKH, 540 for P2SH).
Amount ChainGenerator::Impl::DropValue(OutKind k)
{
    const uint64_t r = rng.Below(100);
    const Amount v = r < 40 ? 546 : r < 63 ? 330 : Amount(rng.LogUniform(331, 1000));
    return k == OutKind::P2PKH || k == OutKind::P2SH_OTHER ? std::max<Amount>(v, 546) : v;
}

/// utxo_heavy, dust era: a dust drop. One coin pays tens to hundreds of dust outputs that are never
/// spent (a rune airdrop, an inscription-era batch send) and its change, which will be, often with a
/// runestone (OP_RETURN). False, with nothing taken, when the block has no room for one.
bool ChainGenerator::Impl::BuildDustDrop(int height, uint64_t budget, MutableTransaction& mtx, std::vector<PlannedOut>& planned, Amount& fee)
{
    constexpr uint64_t W_DROP_OUT = 4 * 43;                                 // P2TR or P2WSH, the largest it pays
    const uint64_t fixed = W_TX_OVERHEAD + w_in_max + W_DROP_OUT + 4 * 90; // the input, the change, an OP_RETURN
    if (budget < fixed + DROP_MIN_OUTPUTS * W_DROP_OUT) return false;
    // The richest coin due now pays (all of them are due, so no lifetime changes): most coins
    // waiting are worth little (docs/generator.md, "Limits"), and the dust should be worth its 546.
    std::size_t idx = 0;
    for (std::size_t i = 1; i < backlog.size(); ++i) idx = backlog[i].value > backlog[idx].value ? i : idx;
    const uint64_t n = std::min(rng.LogUniform(DROP_MIN_OUTPUTS, DROP_MAX_OUTPUTS), (budget - fixed) / W_DROP_OUT);

    mtx = MutableTransaction{};
    planned.clear();
    spend_at.clear();
    mtx.version = 2;
    Amount v = 0;
    mtx.vin.push_back(SpendDue(idx, height, v));
    fee = Fee(fixed + n * W_DROP_OUT, v);
    const Amount avail = v - fee;
    // Half the coin at most goes to dust: the rest is change, kept in the economy.
    const Amount cap_each = avail / (2 * Amount(n));
    Amount used = 0;
    auto add = [&](OutKind kind, Amount value, int spend) {
        PlannedOut po{kind};
        const uint64_t tag = CoinTag(height, uint32_t(mtx.vout.size()), value);
        Script s = MakeScript(po.kind, po, &tag);
        mtx.vout.push_back(TxOut{value, std::move(s)});
        planned.push_back(po);
        spend_at.push_back(spend);
    };
    for (uint64_t i = 0; i < n; ++i) {
        const OutKind k = DropKind();
        const Amount value = std::min(DropValue(k), cap_each);
        used += value;
        add(k, value, -1);
    }
    // Change due past the tip would take its value out of the chain's economy: the miner takes it.
    const OutKind change = KeylessKind(Era::TAPROOT);
    const int spend = height + DrawSpendDelay();
    if (spend <= opts.blocks) {
        add(change, avail - used, spend);
    } else {
        fee += avail - used;
    }
    if (rng.Chance(500)) add(OutKind::OP_RETURN_DATA, 0, -1);
    ++stats.fanouts;
    return true;
}

} // namespace ibdkit

// src/gen/tx_factory.cpp — the generator's transaction factory: the scripts of every output kind,
// the inputs that spend them (with signatures on signed chains), fees, and the default profile's
// transactions (fan-outs, consolidations, payments).
#include "gen/generator.h"

#include <ibdkit/crypto/sha256.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <stdexcept>

namespace ibdkit {

using namespace gen_detail;

/// `tag` (mainnet profile): the P2WSH tag and taproot variant come from it instead of the rng.
Script ChainGenerator::Impl::MakeScript(OutKind kind, PlannedOut& po, const uint64_t* tag)
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

int64_t ChainGenerator::Impl::SigopCost(OutKind k) noexcept
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

OutKind ChainGenerator::Impl::PickSpendableKind()
{
    if (signer) return PickSignedKind(Era::TAPROOT);
    const uint64_t r = rng.Below(100);
    if (r < 40) return OutKind::P2WSH_TRUE;
    if (r < 75) return OutKind::P2SH_TRUE;
    return OutKind::P2TR_TRUE;
}

OutKind ChainGenerator::Impl::PickUnspendableKind()
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

TxIn ChainGenerator::Impl::SpendInput(const PoolCoin& c, int height)
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

PoolCoin ChainGenerator::Impl::TakeCoin(std::size_t i)
{
    PoolCoin c = pool[i];
    pool[i] = pool.back();
    pool.pop_back();
    return c;
}

/// The richest of a few random coins (fan-outs need value to split).
std::size_t ChainGenerator::Impl::PickRichCoin(int tries)
{
    std::size_t best = rng.Below(pool.size());
    for (int t = 1; t < tries; ++t) {
        const std::size_t i = rng.Below(pool.size());
        if (pool[i].value > pool[best].value) best = i;
    }
    return best;
}

Amount ChainGenerator::Impl::Fee(uint64_t weight_bound, Amount available) noexcept
{
    const uint64_t vsize = (weight_bound + 3) / 4;
    const Amount fee = Amount(vsize * (block_fee_rate + rng.Below(block_fee_rate + 1)));
    return std::min(fee, available / 4);
}

/// The transaction BuildTx is making: where it goes, the coins it spends, and a bound on its weight.
struct ChainGenerator::Impl::TxDraft {
    MutableTransaction& mtx;
    std::vector<PlannedOut>& planned;
    std::vector<PoolCoin> spent;
    uint64_t bound{W_TX_OVERHEAD};
};

void ChainGenerator::Impl::AddOut(TxDraft& d, OutKind kind, Amount value)
{
    PlannedOut po{kind};
    Script s = MakeScript(kind, po);
    d.bound += uint64_t(4 * (8 + GetSizeOfCompactSize(s.size()) + s.size()));
    d.mtx.vout.push_back(TxOut{value, std::move(s)});
    d.planned.push_back(po);
}

/// Builds one transaction that fits `budget` weight units; false if nothing can be spent.
bool ChainGenerator::Impl::BuildTx(int height, uint64_t budget, MutableTransaction& mtx, std::vector<PlannedOut>& planned, Amount& fee)
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

    TxDraft d{mtx, planned, {}};
    if (shape == Shape::FANOUT && !BuildFanout(d, budget, fee)) shape = Shape::CONSOLIDATION;
    if (shape == Shape::CONSOLIDATION && !BuildConsolidation(d, budget, fee)) shape = Shape::ORDINARY;
    if (shape == Shape::ORDINARY) BuildOrdinary(d, fee);
    for (const PoolCoin& c : d.spent) {
        TxIn in = SpendInput(c, height);
        in.sequence = sequence;
        mtx.vin.push_back(std::move(in));
    }
    return true;
}

/// One rich coin split into many outputs; false (nothing taken) if the coin found is too poor.
bool ChainGenerator::Impl::BuildFanout(TxDraft& d, uint64_t budget, Amount& fee)
{
    const std::size_t idx = PickRichCoin(8);
    if (pool[idx].value < 200'000 && pool.size() >= 16) return false;
    d.spent.push_back(TakeCoin(idx));
    d.bound += w_in_max;
    const Amount v = d.spent[0].value;
    const int want = int(rng.Range(10, rng.Chance(120) ? 500 : 150));
    // Leave room for the outputs' weight (largest script: 1-of-3 multisig, 114 bytes).
    const uint64_t room = budget > d.bound + 600 ? (budget - d.bound - 600) / (4 * 114) : 0;
    const int m = int(std::min<uint64_t>(uint64_t(want), std::max<uint64_t>(room, 2)));
    const Amount fee_est = Fee(d.bound + uint64_t(m) * 4 * 40, v);
    const Amount avail = v - fee_est;
    if (avail < Amount(m) * 2) {
        // Too poor to split: send it back as a plain change output.
        AddOut(d, PickSpendableKind(), avail);
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
            AddOut(d, spend_flags[std::size_t(i)] ? PickSpendableKind() : PickUnspendableKind(), values[std::size_t(i)]);
        }
        ++stats.fanouts;
    }
    Amount paid = 0;
    for (const auto& o : d.mtx.vout) paid += o.value;
    fee = v - paid;
    return true;
}

/// Many coins joined into one output; false (nothing taken) if fewer than two fit.
bool ChainGenerator::Impl::BuildConsolidation(TxDraft& d, uint64_t budget, Amount& fee)
{
    const uint64_t room = budget > d.bound + 4 * 60 ? (budget - d.bound - 4 * 60) / w_in_max : 0;
    const int want = int(rng.Range(10, rng.Chance(100) ? 400 : 150));
    const std::size_t k = std::min<std::size_t>({std::size_t(want), std::size_t(room), pool.size()});
    if (k < 2) return false;
    Amount v = 0;
    for (std::size_t i = 0; i < k; ++i) {
        d.spent.push_back(TakeCoin(rng.Below(pool.size())));
        v += d.spent.back().value;
    }
    d.bound += k * w_in_max;
    fee = Fee(d.bound + 4 * 43, v);
    AddOut(d, PickSpendableKind(), v - fee);
    ++stats.consolidations;
    return true;
}

/// One or two coins paying someone and sending back change.
void ChainGenerator::Impl::BuildOrdinary(TxDraft& d, Amount& fee)
{
    const std::size_t k = std::min<std::size_t>(pool.size(), rng.Chance(700) ? 1 : 2);
    Amount v = 0;
    for (std::size_t i = 0; i < k; ++i) {
        d.spent.push_back(TakeCoin(rng.Below(pool.size())));
        v += d.spent.back().value;
    }
    d.bound += k * w_in_max;
    fee = Fee(d.bound + 4 * 2 * 40, v);
    const Amount avail = v - fee;
    if (avail >= 2) {
        // Payments to outside keys are modest (log-uniform 1 k .. 10 M sat): value paid away
        // never comes back, and the generator must not run out of it.
        const bool outside = rng.Chance(650);
        Amount pay = avail * rng.Range(5, 60) / 100;
        if (outside) pay = std::min<Amount>(pay, Amount(std::pow(10.0, 3.0 + double(rng.Below(4001)) / 1000.0)));
        pay = std::clamp<Amount>(pay, 1, avail - 1);
        AddOut(d, outside ? PickUnspendableKind() : PickSpendableKind(), pay);
        AddOut(d, PickSpendableKind(), avail - pay);
        if (rng.Chance(500)) std::swap(d.mtx.vout[0], d.mtx.vout[1]), std::swap(d.planned[0], d.planned[1]);
    } else {
        AddOut(d, PickSpendableKind(), avail);
    }
    if (rng.Chance(40)) AddOut(d, OutKind::OP_RETURN_DATA, 0);
    ++stats.ordinary;
}
} // namespace ibdkit

#include <ibdkit/utxo/stats.h>

#include <ibdkit/crypto/sha256.h>
#include <ibdkit/encoding/endian.h>

#include "crypto/muhash.h"

#include <algorithm>
#include <cassert>
#include <cstring>
#include <vector>

namespace ibdkit {

std::string_view ScriptTypeLabel(TxoutType t) noexcept
{
    switch (t) {
    case TxoutType::PUBKEY: return "P2PK";
    case TxoutType::PUBKEYHASH: return "P2PKH";
    case TxoutType::SCRIPTHASH: return "P2SH";
    case TxoutType::WITNESS_V0_KEYHASH: return "P2WPKH";
    case TxoutType::WITNESS_V0_SCRIPTHASH: return "P2WSH";
    case TxoutType::WITNESS_V1_TAPROOT: return "P2TR";
    case TxoutType::ANCHOR: return "P2A";
    case TxoutType::WITNESS_UNKNOWN: return "witness_unknown";
    case TxoutType::MULTISIG: return "bare_multisig";
    case TxoutType::NULL_DATA: return "nulldata";
    case TxoutType::NONSTANDARD: return "nonstandard";
    }
    return "nonstandard";
}

void AppendTxOutSer(std::vector<uint8_t>& buf, const Txid& txid, uint32_t n, const Coin& coin)
{
    const auto& script = coin.out.script_pubkey;
    const std::size_t off = buf.size();
    buf.resize(off + 32 + 4 + 4 + 8 + 9 + script.size());
    uint8_t* p = buf.data() + off;
    std::memcpy(p, txid.data(), 32);
    p += 32;
    WriteLE32(p, n);
    p += 4;
    WriteLE32(p, (coin.height << 1) + uint32_t(coin.coinbase));
    p += 4;
    WriteLE64(p, uint64_t(coin.out.value));
    p += 8;
    const uint64_t len = script.size();
    if (len < 253) {
        *p++ = uint8_t(len);
    } else if (len <= 0xffff) {
        *p++ = 253;
        WriteLE16(p, uint16_t(len));
        p += 2;
    } else {
        *p++ = 254;
        WriteLE32(p, uint32_t(len));
        p += 4;
    }
    if (len) std::memcpy(p, script.data(), len);
    p += len;
    buf.resize(std::size_t(p - buf.data()));
}

// Coins arrive in key order: one txid's outputs together, but in VARINT byte order, which is not
// numeric order past vout 127 (hash_serialized_3 wants numeric order). Each coin's bytes go straight
// into the hash buffer; only a transaction whose outputs came out of order is re-sorted there at its
// end. The counters, the breakdown and MuHash (a set hash) take each coin as it comes.
struct UtxoStatsBuilder::Impl {
    struct Rec {
        uint32_t n;
        uint32_t offset; ///< from tx_start
        uint32_t size;
    };
    UtxoHashTypes hashes;
    Sha256d hasher;
    MuHash3072 muhash;
    Txid current;
    bool have_current{false};
    std::vector<uint8_t> buf;    // hash_serialized_3 bytes not yet hashed; the current tx's from tx_start
    std::size_t tx_start{0};
    std::vector<Rec> recs;       // the current tx's outputs in buf
    bool in_order{true};
    std::vector<uint8_t> tmp;    // for re-sorting
    std::vector<uint8_t> one;    // one coin's bytes for MuHash
    uint64_t txouts{0}, transactions{0}, bogosize{0};
    Amount total{0};
    uint32_t max_height{0};
    std::array<ScriptTypeTotals, TXOUT_TYPE_COUNT> by_type{};

    void FlushTx()
    {
        if (!in_order) {
            std::sort(recs.begin(), recs.end(), [](const Rec& a, const Rec& b) { return a.n < b.n; });
            tmp.assign(buf.begin() + std::ptrdiff_t(tx_start), buf.end());
            uint8_t* p = buf.data() + tx_start;
            for (const Rec& r : recs) {
                std::memcpy(p, tmp.data() + r.offset, r.size);
                p += r.size;
            }
            in_order = true;
        }
        recs.clear();
        if (buf.size() >= 1 << 16) {
            hasher.Write(std::span<const uint8_t>(buf));
            buf.clear();
        }
        tx_start = buf.size();
    }

    void Add(const OutPoint& outpoint, const Coin& coin, TxoutType type)
    {
        if (!have_current || outpoint.hash != current) {
            FlushTx();
            current = outpoint.hash;
            have_current = true;
            ++transactions;
        }
        max_height = std::max(max_height, coin.height);
        ++txouts;
        total += coin.out.value;
        bogosize += GetBogoSize(coin.out.script_pubkey);
        auto& t = by_type[std::size_t(type)];
        ++t.count;
        t.amount += coin.out.value;
        if (hashes.hash_serialized) {
            const std::size_t off = buf.size();
            AppendTxOutSer(buf, current, outpoint.n, coin);
            if (!recs.empty() && outpoint.n < recs.back().n) in_order = false;
            recs.push_back(Rec{outpoint.n, uint32_t(off - tx_start), uint32_t(buf.size() - off)});
        }
        if (hashes.muhash) {
            one.clear();
            AppendTxOutSer(one, current, outpoint.n, coin);
            muhash.Insert(std::span<const uint8_t>(one));
        }
    }
};

UtxoStatsBuilder::UtxoStatsBuilder(UtxoHashTypes hashes) : m_impl(std::make_unique<Impl>())
{
    m_impl->hashes = hashes;
    m_impl->buf.reserve(1 << 17);
}
UtxoStatsBuilder::~UtxoStatsBuilder() = default;

void UtxoStatsBuilder::Add(const OutPoint& outpoint, const Coin& coin)
{
    m_impl->Add(outpoint, coin, Solver(coin.out.script_pubkey.span()));
}

void UtxoStatsBuilder::Add(const OutPoint& outpoint, const Coin& coin, TxoutType type)
{
    m_impl->Add(outpoint, coin, type);
}

void UtxoStatsBuilder::Finish(UtxoStats& stats)
{
    Impl& im = *m_impl;
    im.FlushTx();
    stats.hashes = im.hashes;
    if (im.hashes.hash_serialized) {
        if (!im.buf.empty()) im.hasher.Write(std::span<const uint8_t>(im.buf));
        im.buf.clear();
        im.hasher.Finalize(stats.hash_serialized.data());
    }
    if (im.hashes.muhash) {
        const auto h = im.muhash.Finalize();
        std::memcpy(stats.muhash.data(), h.data(), 32);
    }
    stats.txouts = im.txouts;
    stats.transactions = im.transactions;
    stats.bogosize = im.bogosize;
    stats.total_amount = im.total;
    stats.by_type = im.by_type;
    assert(stats.BreakdownAddsUp()); // the breakdown is a partition of the set
    if (stats.height_from_coins) stats.height = im.max_height;
}

Result<UtxoStats> ComputeUtxoStats(const CoinsDB& db, std::optional<uint32_t> height, const StatsProgress& progress)
{
    return ComputeUtxoStats(db, UtxoHashTypes{}, height, progress);
}

Result<UtxoStats> ComputeUtxoStats(const CoinsDB& db, UtxoHashTypes hashes, std::optional<uint32_t> height,
                                   const StatsProgress& progress)
{
    UtxoStats stats;
    auto best = db.GetBestBlock();
    if (!best) return best.error();
    stats.best_block = *best;
    auto replay = db.NeedsReplay();
    if (!replay) return replay.error();
    stats.interrupted_flush = *replay;
    if (height) {
        stats.height = *height;
        stats.height_from_coins = false;
    }
    UtxoStatsBuilder builder(hashes);
    uint64_t seen = 0;
    auto r = db.ForEachCoin([&](const OutPoint& op, const Coin& coin) {
        builder.Add(op, coin);
        if (progress && (++seen & 0xffff) == 0) {
            const uint8_t* h = op.hash.data();
            progress(seen, (h[0] * 256.0 + h[1]) / 65536.0);
        }
        return true;
    });
    if (!r) return r.error();
    builder.Finish(stats);
    if (progress) progress(stats.txouts, 1.0);
    return stats;
}

std::string FormatMoney(Amount sat)
{
    const bool neg = sat < 0;
    const uint64_t a = neg ? uint64_t(0) - uint64_t(sat) : uint64_t(sat);
    const std::string frac = std::to_string(a % uint64_t(COIN));
    // Appended piece by piece: GCC 12's -O3 reports a false -Wrestrict on `const char* + string`.
    std::string out;
    if (neg) out += '-';
    out += std::to_string(a / uint64_t(COIN));
    out += '.';
    out.append(8 - frac.size(), '0');
    out += frac;
    return out;
}

} // namespace ibdkit

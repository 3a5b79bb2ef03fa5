#include <ibdkit/coins/stats.h>

#include <ibdkit/crypto/muhash.h>
#include <ibdkit/crypto/sha256.h>
#include <ibdkit/encoding/endian.h>

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

struct UtxoStatsBuilder::Impl {
    UtxoHashTypes hashes;
    Sha256d hasher;
    MuHash3072 muhash;
    Txid current;
    bool have_current{false};
    std::vector<std::pair<uint32_t, Coin>> outputs; // of `current`
    std::vector<uint8_t> buf;
    std::vector<uint8_t> one; // one coin's bytes for MuHash
    uint64_t txouts{0}, transactions{0}, bogosize{0};
    Amount total{0};
    uint32_t max_height{0};
    std::array<ScriptTypeTotals, TXOUT_TYPE_COUNT> by_type{};

    void FlushTx()
    {
        if (outputs.empty()) return;
        if (outputs.size() > 1) {
            std::sort(outputs.begin(), outputs.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
        }
        ++transactions;
        for (const auto& [n, coin] : outputs) {
            ++txouts;
            total += coin.out.value;
            bogosize += GetBogoSize(coin.out.script_pubkey);
            auto& t = by_type[std::size_t(Solver(coin.out.script_pubkey.span()))];
            ++t.count;
            t.amount += coin.out.value;
            if (hashes.hash_serialized) AppendTxOutSer(buf, current, n, coin);
            if (hashes.muhash) {
                one.clear();
                AppendTxOutSer(one, current, n, coin);
                muhash.Insert(std::span<const uint8_t>(one));
            }
        }
        outputs.clear();
        if (buf.size() >= 1 << 16) {
            hasher.Write(std::span<const uint8_t>(buf));
            buf.clear();
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
    Impl& im = *m_impl;
    if (!im.have_current || outpoint.hash != im.current) {
        im.FlushTx();
        im.current = outpoint.hash;
        im.have_current = true;
    }
    im.max_height = std::max(im.max_height, coin.height);
    im.outputs.emplace_back(outpoint.n, coin);
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

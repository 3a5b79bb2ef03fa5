#include <ibdkit/coins/stats.h>

#include <ibdkit/crypto/sha256.h>
#include <ibdkit/encoding/endian.h>

#include <algorithm>
#include <cstring>
#include <vector>

namespace ibdkit {

struct UtxoStatsBuilder::Impl {
    Sha256d hasher;
    Txid current;
    bool have_current{false};
    std::vector<std::pair<uint32_t, Coin>> outputs; // of `current`
    std::vector<uint8_t> buf;
    uint64_t txouts{0}, transactions{0}, bogosize{0};
    Amount total{0};
    uint32_t max_height{0};

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
            const auto& script = coin.out.script_pubkey;
            const std::size_t off = buf.size();
            buf.resize(off + 32 + 4 + 4 + 8 + 9 + script.size());
            uint8_t* p = buf.data() + off;
            std::memcpy(p, current.data(), 32);
            p += 32;
            WriteLE32(reinterpret_cast<std::byte*>(p), n);
            p += 4;
            WriteLE32(reinterpret_cast<std::byte*>(p), (coin.height << 1) + uint32_t(coin.coinbase));
            p += 4;
            WriteLE64(reinterpret_cast<std::byte*>(p), uint64_t(coin.out.value));
            p += 8;
            const uint64_t len = script.size();
            if (len < 253) {
                *p++ = uint8_t(len);
            } else if (len <= 0xffff) {
                *p++ = 253;
                WriteLE16(reinterpret_cast<std::byte*>(p), uint16_t(len));
                p += 2;
            } else {
                *p++ = 254;
                WriteLE32(reinterpret_cast<std::byte*>(p), uint32_t(len));
                p += 4;
            }
            if (len) std::memcpy(p, script.data(), len);
            p += len;
            buf.resize(std::size_t(p - buf.data()));
        }
        outputs.clear();
        if (buf.size() >= 1 << 16) {
            hasher.Write(std::span<const uint8_t>(buf));
            buf.clear();
        }
    }
};

UtxoStatsBuilder::UtxoStatsBuilder() : m_impl(std::make_unique<Impl>()) { m_impl->buf.reserve(1 << 17); }
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
    if (!im.buf.empty()) im.hasher.Write(std::span<const uint8_t>(im.buf));
    im.buf.clear();
    im.hasher.Finalize(stats.hash_serialized.data());
    stats.txouts = im.txouts;
    stats.transactions = im.transactions;
    stats.bogosize = im.bogosize;
    stats.total_amount = im.total;
    if (stats.height_from_coins) stats.height = im.max_height;
}

Result<UtxoStats> ComputeUtxoStats(const CoinsDB& db, std::optional<uint32_t> height, const StatsProgress& progress)
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
    UtxoStatsBuilder builder;
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

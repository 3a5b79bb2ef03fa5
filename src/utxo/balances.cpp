// Balances per output script (include/ibdkit/utxo/balances.h): a walk of the chainstate into an
// external sort by script that folds equal scripts, then an order by value (a second external
// sort, or a heap for a small top).
#include <ibdkit/common/write_guard.h>
#include <ibdkit/utxo/balances.h>

#include <ibdkit/primitives/consensus_constants.h>

#include "common/external_sort.h"

#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

namespace ibdkit {
namespace {

// A record: value i64 | coins u64 (host order: the runs never leave this process) | script bytes.
constexpr std::size_t HEAD = 16;
constexpr std::size_t MAX_RECORD = HEAD + MAX_SCRIPT_SIZE;

int64_t ValueOf(std::span<const uint8_t> r)
{
    int64_t v;
    std::memcpy(&v, r.data(), 8);
    return v;
}
uint64_t CoinsOf(std::span<const uint8_t> r)
{
    uint64_t c;
    std::memcpy(&c, r.data() + 8, 8);
    return c;
}

bool ScriptLess(std::span<const uint8_t> a, std::span<const uint8_t> b)
{
    const std::size_t la = a.size() - HEAD, lb = b.size() - HEAD;
    const int c = std::memcmp(a.data() + HEAD, b.data() + HEAD, std::min(la, lb));
    return c < 0 || (c == 0 && la < lb);
}

struct ByScript {
    bool operator()(std::span<const uint8_t> a, std::span<const uint8_t> b) const { return ScriptLess(a, b); }
};

/// Adds a record's value and coins to the accumulated record of the same script.
struct AddUp {
    bool* overflow;
    void operator()(std::span<uint8_t> acc, std::span<const uint8_t> r) const
    {
        int64_t v = 0;
        uint64_t c = 0;
        const bool value_overflow = __builtin_add_overflow(ValueOf(acc), ValueOf(r), &v);
        const bool coins_overflow = __builtin_add_overflow(CoinsOf(acc), CoinsOf(r), &c);
        if (value_overflow || coins_overflow) *overflow = true;
        std::memcpy(acc.data(), &v, 8);
        std::memcpy(acc.data() + 8, &c, 8);
    }
};

/// The output order: larger value first, equal values by script bytes.
struct ByValue {
    bool operator()(std::span<const uint8_t> a, std::span<const uint8_t> b) const
    {
        const int64_t va = ValueOf(a), vb = ValueOf(b);
        if (va != vb) return va > vb;
        return ScriptLess(a, b);
    }
};

BalanceRow RowOf(std::span<const uint8_t> r) { return {r.subspan(HEAD), CoinsOf(r), ValueOf(r)}; }

} // namespace

Result<BalancesResult> ComputeBalances(const CoinsDB& db, const BalancesOptions& options, const BalanceSink& sink,
                                       const BalancesProgress& progress)
{
    // Run files live in tmp_dir only while open, but making them writes into it: never a Core datadir.
    if (auto refused = CheckTempDirWritable(options.tmp_dir, "tmpdir")) return *refused;
    BalancesResult res;
    auto best = db.GetBestBlock();
    if (!best) return best.error();
    auto replay = db.NeedsReplay();
    if (!replay) return replay.error();
    if (*replay) {
        return Error{Errc::Corrupt, "the chainstate holds an interrupted flush (up to block " +
                                        (*replay)->new_tip.ToHex() + "): let the engine finish it first"};
    }
    res.stats.best_block = *best;

    const ExternalSortOptions sort_opt{options.tmp_dir, options.memory_bytes, 64};
    bool overflow = false;
    ExternalSorter<ByScript, AddUp> by_script(sort_opt, MAX_RECORD, ByScript{}, AddUp{&overflow});
    UtxoStatsBuilder builder(UtxoHashTypes{false, false});
    std::vector<uint8_t> rec;
    std::optional<Error> failed;
    uint64_t seen = 0;
    auto walked = db.ForEachCoin([&](const OutPoint& op, const Coin& coin) {
        builder.Add(op, coin);
        const auto script = coin.out.script_pubkey.span();
        if (script.size() > MAX_SCRIPT_SIZE) {
            // Core's script decompression never yields a longer script.
            failed = Error{Errc::Corrupt, "coin " + op.hash.ToHex() + ":" + std::to_string(op.n) + " has a script of " +
                                              std::to_string(script.size()) + " bytes"};
            return false;
        }
        rec.resize(HEAD + script.size());
        const int64_t value = coin.out.value;
        const uint64_t one = 1;
        std::memcpy(rec.data(), &value, 8);
        std::memcpy(rec.data() + 8, &one, 8);
        if (!script.empty()) std::memcpy(rec.data() + HEAD, script.data(), script.size());
        if (auto e = by_script.Add(rec)) {
            failed = std::move(e);
            return false;
        }
        if (progress && (++seen & 0xffff) == 0) {
            const uint8_t* h = op.hash.data();
            progress("walk", seen, (h[0] * 256.0 + h[1]) / 65536.0);
        }
        return true;
    });
    if (!walked) return walked.error();
    if (failed) return *failed;
    builder.Finish(res.stats);
    if (progress) progress("walk", res.stats.txouts, 1.0);

    // Fold by script, feeding the order by value (a heap when the top rows fit a small share of the budget).
    const bool use_heap = options.top && *options.top <= options.memory_bytes / 256;
    ExternalSorter<ByValue> by_value(sort_opt, MAX_RECORD);
    std::vector<std::vector<uint8_t>> heap;
    const ByValue by_value_less;
    bool sums_overflow = false;
    auto merged = by_script.Finish([&](std::span<const uint8_t> r) {
        ++res.scripts;
        const bool coins_overflow = __builtin_add_overflow(res.coins, CoinsOf(r), &res.coins);
        const bool value_overflow = __builtin_add_overflow(res.value, ValueOf(r), &res.value);
        if (coins_overflow || value_overflow) sums_overflow = true;
        if (progress && (res.scripts & 0xffff) == 0) progress("merge", res.scripts, by_script.MergeFraction());
        if (use_heap) {
            if (heap.size() < *options.top || (!heap.empty() && by_value_less(r, heap.front()))) {
                heap.emplace_back(r.begin(), r.end());
                std::push_heap(heap.begin(), heap.end(), by_value_less);
                if (heap.size() > *options.top) {
                    std::pop_heap(heap.begin(), heap.end(), by_value_less);
                    heap.pop_back();
                }
            }
            return true;
        }
        if (auto e = by_value.Add(r)) {
            failed = std::move(e);
            return false;
        }
        return true;
    });
    if (merged) return *merged;
    if (failed) return *failed;
    if (progress) progress("merge", res.scripts, 1.0);

    if (overflow || sums_overflow || res.coins != res.stats.txouts || res.value != res.stats.total_amount) {
        return Error{Errc::Corrupt, "balances do not reconcile with the UTXO set: " + std::to_string(res.coins) +
                                        " coins and " + FormatMoney(res.value) + " over " +
                                        std::to_string(res.scripts) + " scripts, but txouts " +
                                        std::to_string(res.stats.txouts) + " and total_amount " +
                                        FormatMoney(res.stats.total_amount) +
                                        (overflow || sums_overflow ? " (a sum overflowed)" : "")};
    }

    const uint64_t want = options.top ? std::min(*options.top, res.scripts) : res.scripts;
    const auto emit = [&](std::span<const uint8_t> r) {
        if (res.rows == want) return false;
        ++res.rows;
        if (progress && (res.rows & 0xffff) == 0) progress("order", res.rows, double(res.rows) / double(want));
        return sink(RowOf(r));
    };
    if (use_heap) {
        std::sort_heap(heap.begin(), heap.end(), by_value_less);
        for (const auto& r : heap) {
            if (!emit(r)) break;
        }
    } else if (auto e = by_value.Finish(emit)) {
        return *e;
    }
    if (progress) progress("order", res.rows, 1.0);
    res.runs = by_script.Runs() + by_value.Runs();
    return res;
}

} // namespace ibdkit

// The flush: Core's CCoinsViewDB::BatchWrite over the cache's maps (coins_db_internal.h), in key
// order, on one thread or several, straight into table files when the database is new.
#include "coins/coins_db_internal.h"

#include "coins/coins_map.h"
#include "coins/markers.h"
#include "common/handoff.h"
#include "common/test_hooks.h"
#include "kv/store.h"
#include "memory/cleanse.h"
#include "stream/streams.h"

#include <algorithm>
#include <array>
#include <cassert>
#include <cstring>
#include <thread>

namespace ibdkit {

namespace {

/// Below this many dirty entries a flush stays on one thread (a thread costs more than it saves).
constexpr std::size_t PARALLEL_FLUSH_MIN_ENTRIES = 65'536;

/// One and two-byte VARINTs (n < 16512) order as their numbers do; longer ones need their bytes.
constexpr uint32_t TWO_BYTE_VARINT_END = 128 + (128 << 7);
static_assert(TWO_BYTE_VARINT_END <= 0xFFFF, "BatchWriteImpl's sort key keeps n in 16 bits");

/// A dirty entry in the flush's order: its sort key (see BatchWriteImpl) and its node. Trivial, so
/// the index's memory is only touched where entries are written.
struct OrderEntry {
    uint64_t first;
    CoinsMap::value_type* second;
};

/// The flush reads the nodes in key order, i.e. at random: each is asked for this many entries ahead.
constexpr std::size_t PREFETCH_AHEAD = 8;

/// LevelDB's order of two coin keys: txid bytes, then the VARINT encoding of n.
bool KeyLess(const OutPoint& a, const OutPoint& b)
{
    const int c = std::memcmp(a.hash.data(), b.hash.data(), 32);
    if (c != 0) return c < 0;
    if (a.n < TWO_BYTE_VARINT_END && b.n < TWO_BYTE_VARINT_END) return a.n < b.n;
    std::array<std::byte, 5> ea{}, eb{};
    auto enc = [](uint32_t n, std::array<std::byte, 5>& out) {
        struct W {
            std::array<std::byte, 5>& o;
            std::size_t len{0};
            void write(std::span<const std::byte> b)
            {
                std::memcpy(o.data() + len, b.data(), b.size());
                len += b.size();
            }
        } w{out};
        WriteVarInt(w, n);
        return w.len;
    };
    const std::size_t la = enc(a.n, ea), lb = enc(b.n, eb);
    const int d = std::memcmp(ea.data(), eb.data(), std::min(la, lb));
    return d != 0 ? d < 0 : la < lb;
}

/// Runs fn(0) .. fn(n - 1), all but the first on threads of their own, and waits for them.
template <typename Fn>
void OnThreads(std::size_t n, const Fn& fn)
{
    std::vector<std::thread> helpers;
    for (std::size_t i = 1; i < n; ++i) helpers.emplace_back(fn, i);
    fn(0);
    for (auto& t : helpers) t.join();
}

/// The first flush into a new database (nothing in it but its obfuscation key): the sorted
/// entries go straight into table files (Store::BeginBulkLoad), one part per thread (the first on
/// this one), each written in key order and finished (and synced) by its thread. `slices(part,
/// write)` calls write(entries) with each sorted slice of the part's share of the key order, in
/// order, and stops when it returns false.
template <typename P, typename Slices>
StoreStatus BulkWriteImpl(const Store& store, BulkLoad& load, std::size_t parts, const Slices& slices)
{
    std::vector<StoreStatus> status(parts);
    std::vector<uint64_t> cleansed(parts, 0);
    OnThreads(parts, [&](std::size_t part) {
        const uint64_t before = CleansedBytes();
        DataStream<P> key, value;
        key.reserve(DBWRAPPER_PREALLOC_KEY_SIZE);
        value.reserve(DBWRAPPER_PREALLOC_VALUE_SIZE);
        slices(part, [&](std::span<const OrderEntry> order) {
            for (std::size_t i = 0; i < order.size(); ++i) {
                if (i + PREFETCH_AHEAD < order.size()) CoinsMap::PrefetchEntry(order[i + PREFETCH_AHEAD].second);
                const auto* kv = order[i].second;
                if (kv->second.IsSpent()) continue; // nothing to erase: the database holds no coin
                key << CoinKey{kv->first};
                value << kv->second;
                value.Xor(store.Obfuscation());
                status[part] = load.Add(part, key.span(), value.span());
                key.clear();
                value.clear();
                if (!status[part].ok()) return false;
            }
            return true;
        });
        if (status[part].ok()) status[part] = load.FinishPart(part);
        cleansed[part] = CleansedBytes() - before;
    });
    for (std::size_t p = 1; p < parts; ++p) detail::g_cleansed_bytes += cleansed[p]; // on the caller's count
    for (const auto& st : status) {
        if (!st.ok()) return st;
    }
    return StoreStatus::Ok();
}

/// The dirty entries of the maps a flush writes, in key order, a run at a time.
///
/// Dirty entries are written in key order, not hash-table order: LevelDB's memtable inserts
/// then walk a hot path of its skiplist, and consecutive memtables become non-overlapping
/// level-0 tables that compaction can move instead of merging (docs/chainstate.md).
///
/// They come in runs: the maps of a run are collected into one index and sorted together, and
/// the runs follow one another in key order. Maps that are key ranges (the cache's shards) are
/// a run each; maps whose keys interleave are one run. Only one run's index is held at a time
/// by each sorting thread (at most FLUSH_INDEXES): 16 bytes (BATCH_WRITE_INDEX_BYTES) per entry
/// of the largest run, not per entry of every map (FlushIndexBytes).
///
/// The sort key is the txid's first 6 bytes and then n (capped at TWO_BYTE_VARINT_END, below
/// which numbers order as their VARINTs do): the outputs of one transaction come out in key
/// order without a node being read. Only a run of equal 6-byte prefixes holding two txids, or
/// an n past the cap, is sorted again by the whole key.
class FlushOrder {
public:
    using Index = std::unique_ptr<OrderEntry[]>;

    FlushOrder(std::span<CoinsMap* const> maps, MapKeys keys)
    {
        static_assert(sizeof(OrderEntry) <= BATCH_WRITE_INDEX_BYTES, "the cache budgets BATCH_WRITE_INDEX_BYTES per entry");
        if (keys == MapKeys::Ranges) {
            for (std::size_t i = 0; i < maps.size(); ++i) m_runs.push_back(maps.subspan(i, 1));
        } else {
            m_runs.push_back(maps);
        }
        for (const auto& run : m_runs) {
            std::size_t n = 0;
            for (const CoinsMap* coins : run) n += coins->size();
            m_entries += n;
            m_largest = std::max(m_largest, n);
        }
    }

    std::size_t runs() const noexcept { return m_runs.size(); }
    /// Entries in all the maps (dirty or not).
    std::size_t entries() const noexcept { return m_entries; }
    /// An index for the largest run, left uninitialized.
    Index NewIndex() const { return Index(new OrderEntry[m_largest]); }

    /// The dirty entries of run `r`, in key order, in `index`.
    std::span<const OrderEntry> Collect(std::size_t r, OrderEntry* index) const
    {
        OrderEntry* out = index;
        for (CoinsMap* coins : m_runs[r]) {
            coins->ForEach([&](CoinsMap::value_type& kv) {
                if (kv.second.IsDirty()) *out++ = OrderEntry{SortKey(kv.first), &kv};
            });
        }
        Sort(index, out);
        assert(std::is_sorted(index, out, EntryLess));
        return std::span<const OrderEntry>(index, out);
    }

private:
    static uint64_t SortKey(const OutPoint& o) noexcept
    {
        return (ReadBE64(o.hash.data()) & ~uint64_t(0xFFFF)) | std::min(o.n, TWO_BYTE_VARINT_END);
    }
    static bool EntryLess(const OrderEntry& a, const OrderEntry& b) { return KeyLess(a.second->first, b.second->first); }
    static void Sort(OrderEntry* first, OrderEntry* last)
    {
        std::sort(first, last, [](const OrderEntry& a, const OrderEntry& b) { return a.first < b.first; });
        for (auto run = first; run != last;) {
            const uint64_t prefix = run->first >> 16;
            auto end = std::next(run);
            bool resort = (run->first & 0xFFFF) == TWO_BYTE_VARINT_END;
            while (end != last && end->first >> 16 == prefix) {
                resort = resort || (end->first & 0xFFFF) == TWO_BYTE_VARINT_END || end->second->first.hash != run->second->first.hash;
                ++end;
            }
            if (resort) std::sort(run, end, EntryLess);
            run = end;
        }
    }

    std::vector<std::span<CoinsMap* const>> m_runs;
    std::size_t m_entries{0}, m_largest{1};
};

/// After the write: a cache that stays keeps its unspent coins, now clean (with `erase`, nothing).
/// Each of `groups` threads settles a group of consecutive maps.
void SettleMaps(std::span<CoinsMap* const> maps, bool erase, std::size_t groups)
{
    OnThreads(groups, [&](std::size_t g) {
        for (CoinsMap* coins : maps.subspan(maps.size() * g / groups, maps.size() * (g + 1) / groups - maps.size() * g / groups)) {
            if (erase) {
                coins->clear();
                continue;
            }
            for (auto it = coins->begin(); it != coins->end();) {
                if (it->second.IsSpent()) {
                    it = coins->erase(it);
                } else {
                    it->second.flags = 0;
                    ++it;
                }
            }
        }
    });
}

/// The first flush into a new database as table files (BulkWriteImpl), B going in with the coins:
/// no H is needed, the database switches in one step. nullopt if the store cannot bulk-load.
template <typename P>
std::optional<StoreStatus> BulkFlush(Store& store, const CoinsDBOptions& opt, const FlushOrder& order, bool threaded,
                                     const BlockHash& tip)
{
    DataStream<P> key, value;
    key << MarkerKey{DB_BEST_BLOCK};
    value << HashValue{tip.ToUint256()};
    value.Xor(store.Obfuscation());
    std::vector<RawRecord> records(1);
    records[0].key.assign(key.span().begin(), key.span().end());
    records[0].value.assign(value.span().begin(), value.span().end());
    // Several runs: each part takes consecutive runs, sorting each in an index of its own (so
    // at most FLUSH_INDEXES parts). One run: it is sorted here and cut evenly.
    const std::size_t runs = order.runs();
    const std::size_t parts = !threaded   ? 1
                              : runs > 1 ? std::min<std::size_t>({opt.flush_threads, FLUSH_INDEXES, runs})
                                         : opt.flush_threads;
    auto load = store.BeginBulkLoad(parts, std::move(records), opt.sync_markers);
    if (!load) return std::nullopt;
    StoreStatus st;
    if (runs > 1) {
        st = BulkWriteImpl<P>(store, *load, parts, [&](std::size_t part, const auto& write) {
            FlushOrder::Index index = order.NewIndex();
            for (std::size_t r = runs * part / parts; r < runs * (part + 1) / parts; ++r) {
                if (!write(order.Collect(r, index.get()))) return;
            }
        });
    } else {
        FlushOrder::Index index = order.NewIndex();
        const std::span<const OrderEntry> sorted = order.Collect(0, index.get());
        st = BulkWriteImpl<P>(store, *load, parts, [&](std::size_t part, const auto& write) {
            const std::size_t first = sorted.size() * part / parts, last = sorted.size() * (part + 1) / parts;
            write(sorted.subspan(first, last - first));
        });
    }
    if (st.ok()) st = store.CommitBulkLoad(std::move(load), opt.test_hooks ? opt.test_hooks->after_partial_batch : std::function<void()>{});
    return st;
}

template <typename P>
StoreStatus BatchWriteImpl(Store& store, const CoinsDBOptions& opt, std::span<CoinsMap* const> maps, MapKeys keys,
                           const BlockHash& tip, bool erase, const BlockHash& old_tip, bool fresh)
{
    const FlushOrder order(maps, keys);
    const bool threaded = opt.flush_threads > 1 && order.entries() >= PARALLEL_FLUSH_MIN_ENTRIES;
    const std::size_t settle_groups = threaded ? std::min<std::size_t>(opt.flush_threads, maps.size()) : 1;
    if (fresh && opt.bulk_load_new) {
        if (auto st = BulkFlush<P>(store, opt, order, threaded, tip)) {
            if (st->ok()) SettleMaps(maps, erase, settle_groups);
            return *st;
        }
    }

    // This thread collects, sorts and serializes (through DataStream<P>, so its cleansing stays on
    // the caller's count); the handoff's thread writes each full batch, in order. The first one
    // carries H: it is synced before any later coin batch is written.
    bool first_written = false;
    StoreStatus failed;
    Handoff<DbBatch<P>> writer(
        2,
        [&](DbBatch<P>& b) {
            failed = store.WriteBatch(b.Raw(), opt.sync_markers && !first_written);
            first_written = true;
            b.Clear();
            if (!failed.ok()) return false;
            if (opt.test_hooks && opt.test_hooks->after_partial_batch) opt.test_hooks->after_partial_batch();
            return true;
        },
        threaded, store);
    writer.Current().Erase(MarkerKey{DB_BEST_BLOCK});
    writer.Current().Write(MarkerKey{DB_HEAD_BLOCKS}, HeadsValue{{tip.ToUint256(), old_tip.ToUint256()}});
    FlushOrder::Index index = order.NewIndex();
    const OutPoint* last_written = nullptr;
    bool stopped = false;
    for (std::size_t r = 0; r < order.runs() && !stopped; ++r) {
        const std::span<const OrderEntry> sorted = order.Collect(r, index.get());
        assert(sorted.empty() || !last_written || KeyLess(*last_written, sorted.front().second->first));
        for (std::size_t i = 0; i < sorted.size(); ++i) {
            if (i + PREFETCH_AHEAD < sorted.size()) CoinsMap::PrefetchEntry(sorted[i + PREFETCH_AHEAD].second);
            const auto* kv = sorted[i].second;
            DbBatch<P>& batch = writer.Current();
            const CoinKey key{kv->first};
            if (kv->second.IsSpent()) {
                batch.Erase(key);
            } else {
                batch.Write(key, kv->second);
            }
            if (batch.SizeEstimate() > opt.batch_write_bytes && !writer.Hand()) {
                stopped = true;
                break;
            }
        }
        if (!sorted.empty()) last_written = &sorted.back().second->first;
    }
    (void)last_written;
    index.reset();
    if (!writer.Finish()) return failed;
    SettleMaps(maps, erase, settle_groups);
    // Last batch (the coins left, then B): the database is consistent with `tip` again.
    DbBatch<P>& batch = writer.Current();
    batch.Erase(MarkerKey{DB_HEAD_BLOCKS});
    batch.Write(MarkerKey{DB_BEST_BLOCK}, HashValue{tip.ToUint256()});
    return store.WriteBatch(batch.Raw(), opt.sync_markers);
}

} // namespace

StoreStatus BatchWrite(CoinsDB& db, CoinsMap& coins, const BlockHash& tip, bool erase)
{
    CoinsMap* const one = &coins;
    return BatchWrite(db, std::span<CoinsMap* const>(&one, 1), tip, erase);
}

StoreStatus BatchWrite(CoinsDB& db, std::span<CoinsMap* const> maps, const BlockHash& tip, bool erase, MapKeys keys)
{
    if (tip.IsNull()) return StoreStatus::Error(StoreStatus::Code::InvalidArgument, "BatchWrite: null tip");
    auto best = db.GetBestBlock();
    if (!best) return StoreStatus::Error(StoreStatus::Code::Corruption, best.error().message);
    BlockHash old_tip = *best;
    bool fresh = old_tip.IsNull(); // no B: possibly a new database (BatchWriteImpl checks it holds nothing)
    if (old_tip.IsNull()) {
        // We may be in the middle of a replay: H must name the same new tip (Core asserts this).
        auto heads = db.GetHeadBlocks();
        if (!heads) return StoreStatus::Error(StoreStatus::Code::Corruption, heads.error().message);
        if (heads->size() == 2) {
            if ((*heads)[0] != tip) {
                return StoreStatus::Error(StoreStatus::Code::Corruption,
                                          "the coins database is in an inconsistent state (interrupted flush to " +
                                              (*heads)[0].ToHex() + ", now writing " + tip.ToHex() +
                                              "): replay the blocks or rebuild the chainstate");
            }
            old_tip = (*heads)[1];
            fresh = false;
        }
    }
    return VisitPolicy(db.policy(), [&]<typename P>(P) {
        return BatchWriteImpl<P>(db.store(), db.options(), maps, keys, tip, erase, old_tip, fresh);
    });
}

} // namespace ibdkit

#include "coins/coins_cache_access.h"
#include "coins/coins_db_internal.h"

#include <sys/mman.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <new>
#include <stdexcept>
#include <tuple>
#include <vector>

namespace ibdkit {

void* CoinsMap::NewSlab()
{
    void* p = ::mmap(nullptr, SLAB_BYTES, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) throw std::bad_alloc();
    return p;
}

void CoinsMap::FreeSlab(void* slab) noexcept { ::munmap(slab, SLAB_BYTES); }

uint64_t* CoinsMap::NewSlots(std::size_t n)
{
    // Written to zero here rather than calloc'd: every page of a table is touched anyway (homes are
    // random), and a page first read as the kernel's shared zero page and then written costs a
    // second fault and a TLB flush on every core that ran the process.
    // A table of whole huge pages asks for transparent huge pages (THP in `always` or `madvise`
    // mode): every lookup touches a random slot, with 4 KiB pages nearly always a TLB miss too.
    // Best effort: without THP the pages stay small. (Node slabs stay small: the kernel's zeroing of
    // fresh huge pages cost more than the TLB saved there, and part-used slabs grew the RSS;
    // docs/chainstate.md.)
    const std::size_t bytes = n * sizeof(uint64_t);
    void* p = nullptr;
    if (bytes % HUGE_PAGE_BYTES == 0) {
        if (::posix_memalign(&p, HUGE_PAGE_BYTES, bytes) != 0) throw std::bad_alloc();
#ifdef MADV_HUGEPAGE
        ::madvise(p, bytes, MADV_HUGEPAGE);
#endif
    } else if (!(p = std::malloc(bytes))) {
        throw std::bad_alloc();
    }
    std::memset(p, 0, bytes);
    return static_cast<uint64_t*>(p);
}

void CoinsMap::FreeDeleter::operator()(uint64_t* p) const noexcept { std::free(p); }

CoinsCache::CoinsCache(CoinsDB& db, std::size_t budget_bytes)
    : m_db(db), m_budget(budget_bytes), m_shards(std::make_unique<std::array<Shard, SHARDS>>())
{
    static_assert(SHARDS >= 1 && SHARDS <= 256 && (SHARDS & (SHARDS - 1)) == 0);
    SetBudget(budget_bytes);
}

CoinsCache::~CoinsCache() = default;

bool CoinsCache::HasEntry(const OutPoint& outpoint) const { return ShardFor(outpoint).map.contains(outpoint); }
void CoinsCache::PrefetchSlot(const OutPoint& outpoint) const noexcept { ShardFor(outpoint).map.PrefetchSlot(outpoint); }
void CoinsCache::PrefetchNode(const OutPoint& outpoint) const noexcept { ShardFor(outpoint).map.PrefetchNode(outpoint); }

void CoinsCache::SetBudget(std::size_t bytes) noexcept
{
    m_budget = bytes;
    // The least an entry costs when the cache is full: a small node, a slot at load 0.8, its share
    // of the flush's index. A shard may hold a little more than its share: 3% over.
    constexpr std::size_t LEAST = CoinsMap::SMALL_NODE_BYTES + sizeof(uint64_t) * 5 / 4 + FLUSH_INDEXES * BATCH_WRITE_INDEX_BYTES / SHARDS;
    for (Shard& sh : *m_shards) sh.map.SetSizeHint(bytes / LEAST / SHARDS * 103 / 100);
}

CoinsMap::iterator CoinsCacheAccess::FetchCoin(CoinsCache& cache, const OutPoint& outpoint)
{
    CoinsCache::Shard& sh = cache.ShardFor(outpoint);
    auto it = sh.map.find(outpoint);
    if (it != sh.map.end()) return it;
    auto r = ReadCoin(cache.m_db, outpoint);
    if (!r) throw DecodeError(r.error().code, r.error().message.c_str());
    if (!*r) return End();
    auto ret = sh.map.try_emplace(outpoint, **r).first;
    sh.script_usage += ret->second.HeapUsage();
    ++sh.coins_read;
    return ret;
}

bool CoinsCache::AddFetched(const OutPoint& outpoint, Coin&& coin)
{
    if (coin.IsSpent()) return false;
    Shard& sh = ShardFor(outpoint);
    auto [it, inserted] = sh.map.try_emplace(outpoint, coin);
    if (!inserted) return false;
    sh.script_usage += it->second.HeapUsage();
    ++sh.coins_read;
    return true;
}

uint64_t CoinsCache::CoinsReadFromDisk() const noexcept
{
    uint64_t n = 0;
    for (const Shard& sh : *m_shards) n += sh.coins_read;
    return n;
}

Coin CoinsCache::AccessCoin(const OutPoint& outpoint)
{
    auto it = CoinsCacheAccess::FetchCoin(*this, outpoint);
    return it == CoinsCacheAccess::End() ? Coin() : it->second.GetCoin();
}

std::optional<Coin> CoinsCache::GetCoin(const OutPoint& outpoint)
{
    auto it = CoinsCacheAccess::FetchCoin(*this, outpoint);
    if (it == CoinsCacheAccess::End() || it->second.IsSpent()) return std::nullopt;
    return it->second.GetCoin();
}

bool CoinsCache::HaveCoin(const OutPoint& outpoint)
{
    auto it = CoinsCacheAccess::FetchCoin(*this, outpoint);
    return it != CoinsCacheAccess::End() && !it->second.IsSpent();
}

bool CoinsCache::HaveCoinInCache(const OutPoint& outpoint) const
{
    const CoinsMap& map = ShardFor(outpoint).map;
    auto it = map.find(outpoint);
    return it != map.end() && !it->second.IsSpent();
}

void CoinsCache::AddCoin(const OutPoint& outpoint, Coin&& coin, bool possible_overwrite)
{
    if (coin.IsSpent()) throw std::logic_error("AddCoin: spent coin");
    if (!TryAddCoin(outpoint, std::move(coin), possible_overwrite)) {
        throw std::logic_error("Attempted to overwrite an unspent coin (when possible_overwrite is false)");
    }
}

bool CoinsCache::TryAddCoin(const OutPoint& outpoint, Coin&& coin, bool possible_overwrite)
{
    if (coin.IsSpent()) return false;
    if (IsUnspendable(coin.out.script_pubkey)) return true;
    Shard& sh = ShardFor(outpoint);
    // One probe: an entry is made only where there was none (then the parent's state is unknown,
    // so FRESH only where no overwrite is possible); an entry already there is left as it was.
    const uint8_t flags = CoinsCacheEntry::DIRTY | (possible_overwrite ? 0 : CoinsCacheEntry::FRESH);
    auto [it, inserted] = sh.map.try_emplace(outpoint, coin, flags);
    if (inserted) {
        sh.script_usage += it->second.HeapUsage();
        return true;
    }
    bool fresh = false;
    if (!possible_overwrite) {
        if (!it->second.IsSpent()) return false;
        // A spent DIRTY entry's spentness has not reached the database yet: re-adding it must not
        // make it FRESH, or spending it again before a flush would lose the erase (Core's comment).
        fresh = !it->second.IsDirty();
    }
    sh.script_usage -= it->second.HeapUsage();
    it = sh.map.Assign(it, coin);
    it->second.flags |= CoinsCacheEntry::DIRTY | (fresh ? CoinsCacheEntry::FRESH : 0);
    sh.script_usage += it->second.HeapUsage();
    return true;
}

bool CoinsCache::SpendCoin(const OutPoint& outpoint, Coin* moveout)
{
    auto it = CoinsCacheAccess::FetchCoin(*this, outpoint);
    if (it == CoinsCacheAccess::End() || it->second.IsSpent()) return false;
    CoinsCacheAccess::SpendCoinAt(*this, it, moveout);
    return true;
}

void CoinsCacheAccess::SpendCoinAt(CoinsCache& cache, CoinsMap::iterator it, Coin* moveout)
{
    CoinsCache::Shard& sh = cache.ShardFor(it->first);
    sh.script_usage -= it->second.HeapUsage();
    if (moveout) it->second.CopyTo(*moveout);
    if (it->second.IsFresh()) {
        sh.map.erase(it);
    } else {
        it->second.flags |= CoinsCacheEntry::DIRTY;
        sh.map.Spend(it);
    }
}

void CoinsCache::Uncache(const OutPoint& outpoint)
{
    Shard& sh = ShardFor(outpoint);
    auto it = sh.map.find(outpoint);
    if (it != sh.map.end() && it->second.flags == 0) {
        sh.script_usage -= it->second.HeapUsage();
        sh.map.erase(it);
    }
}

BlockHash CoinsCache::GetBestBlock()
{
    if (m_best_block.IsNull()) {
        auto r = m_db.GetBestBlock();
        if (!r) throw DecodeError(r.error().code, r.error().message.c_str());
        m_best_block = *r;
    }
    return m_best_block;
}

StoreStatus CoinsCache::Write(bool erase)
{
    std::array<CoinsMap*, SHARDS> maps{};
    for (std::size_t i = 0; i < SHARDS; ++i) maps[i] = &(*m_shards)[i].map;
    StoreStatus st = BatchWrite(m_db, maps, GetBestBlock(), erase, MapKeys::Ranges);
    if (!st.ok()) return st;
    // A full flush left the maps empty (their memory returned). Otherwise only spent entries went,
    // and a spent entry's script was already uncounted when it was spent: nothing to recount.
    if (erase) {
        for (Shard& sh : *m_shards) sh.script_usage = 0;
    }
    return st;
}

StoreStatus CoinsCache::Flush() { return Write(/*erase=*/true); }

StoreStatus CoinsCache::Sync()
{
    StoreStatus st = Write(/*erase=*/false); // drops spent entries
    if (st.ok()) ReturnFreeNodes();
    return st;
}

void CoinsCache::ReturnFreeNodes(const TaskRunner* runner)
{
    RunTasks(runner, SHARDS, [&](std::size_t s) { (*m_shards)[s].map.Compact(); });
}

std::size_t CoinsCache::GetCacheSize() const noexcept
{
    std::size_t n = 0;
    for (const Shard& sh : *m_shards) n += sh.map.size();
    return n;
}

std::size_t CoinsCache::DirtyCount() const noexcept
{
    std::size_t n = 0;
    for (const Shard& sh : *m_shards) {
        for (const auto& [op, e] : sh.map) n += e.IsDirty();
    }
    return n;
}

std::size_t CoinsCache::DynamicMemoryUsage() const noexcept
{
    // Nodes in use (freed nodes are reused before the map takes another slab, so the slabs never
    // hold more than the highest figure, rounded up to a slab), the slot table, the scripts that
    // do not fit inline, and what a flush will need to order the entries: it sorts one shard at a
    // time on each of its (at most FLUSH_INDEXES) sorting threads.
    std::size_t bytes = 0, largest = 0;
    for (const Shard& sh : *m_shards) {
        bytes += sh.map.NodeBytes() + sh.map.bucket_count() * sizeof(uint64_t) + sh.script_usage;
        largest = std::max(largest, sh.map.size());
    }
    return bytes + FlushIndexBytes(largest);
}

StoreStatus CoinsCache::FlushWarm(std::size_t keep_bytes, const TaskRunner* runner)
{
    StoreStatus st = Write(/*erase=*/false); // drops spent entries
    if (!st.ok()) return st;
    EvictOldest(keep_bytes, runner);
    ReturnFreeNodes(runner);
    return st;
}

void CoinsCache::EvictOldest(std::size_t keep_bytes, const TaskRunner* runner)
{
    const std::size_t usage = DynamicMemoryUsage();
    if (usage <= keep_bytes || GetCacheSize() == 0) return;
    // Heights into a fixed number of bins (memory that does not grow with the cache), bytes per
    // bin, then keep whole bins from the youngest down while they fit. Each pass over the entries
    // is a task per shard (a flush of a full cache walks millions of them).
    std::array<uint32_t, SHARDS> shard_lo, shard_hi;
    RunTasks(runner, SHARDS, [&](std::size_t s) {
        uint32_t l = UINT32_MAX, h = 0;
        for (const auto& [op, e] : (*m_shards)[s].map) {
            l = std::min(l, e.Height());
            h = std::max(h, e.Height());
        }
        shard_lo[s] = l;
        shard_hi[s] = h;
    });
    const uint32_t lo = *std::min_element(shard_lo.begin(), shard_lo.end());
    const uint32_t hi = *std::max_element(shard_hi.begin(), shard_hi.end());
    constexpr std::size_t BINS = 4096;
    const uint64_t span = uint64_t(hi) - lo + 1;
    auto bin = [&](uint32_t h) { return std::size_t((uint64_t(h - lo) * BINS) / span); };
    // Per shard and bin, the bytes of its entries and their number (the flush's index is counted
    // for the largest shard: FlushIndexBytes).
    std::vector<std::size_t> shard_bytes(SHARDS * BINS, 0), counts(SHARDS * BINS, 0);
    RunTasks(runner, SHARDS, [&](std::size_t s) {
        for (const auto& [op, e] : (*m_shards)[s].map) {
            shard_bytes[s * BINS + bin(e.Height())] += CoinsMap::NodeBytesOf(e) + e.HeapUsage();
            ++counts[s * BINS + bin(e.Height())];
        }
    });
    std::vector<std::size_t> bytes(BINS, 0);
    std::size_t fixed = 0;
    for (std::size_t s = 0; s < SHARDS; ++s) {
        for (std::size_t b = 0; b < BINS; ++b) bytes[b] += shard_bytes[s * BINS + b];
        fixed += (*m_shards)[s].map.bucket_count() * sizeof(uint64_t);
    }
    std::array<std::size_t, SHARDS> kept_counts{};
    std::size_t kept = fixed;
    std::size_t cut = BINS; // bins below `cut` are evicted
    while (cut > 0) {
        std::size_t largest = 0;
        for (std::size_t s = 0; s < SHARDS; ++s) largest = std::max(largest, kept_counts[s] + counts[s * BINS + cut - 1]);
        if (kept + bytes[cut - 1] + FlushIndexBytes(largest) > keep_bytes) break;
        kept += bytes[--cut];
        for (std::size_t s = 0; s < SHARDS; ++s) kept_counts[s] += counts[s * BINS + cut];
    }
    RunTasks(runner, SHARDS, [&](std::size_t s) {
        Shard& sh = (*m_shards)[s];
        for (auto it = sh.map.begin(); it != sh.map.end();) {
            if (it->second.flags == 0 && bin(it->second.Height()) < cut) {
                sh.script_usage -= it->second.HeapUsage();
                it = sh.map.erase(it);
            } else {
                ++it;
            }
        }
    });
}

} // namespace ibdkit

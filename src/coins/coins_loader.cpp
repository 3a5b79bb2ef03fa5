// CoinsLoader and SortedCoinsLoader (include/ibdkit/coins/coins_db.h): coins into a chainstate
// through the cache's map, or already sorted straight into table files.
#include <ibdkit/coins/coins_db.h>

#include "kv/store.h"

#include "coins/coins_db_internal.h"
#include "coins/coins_map.h"

#include <algorithm>
#include <vector>

namespace ibdkit {

CoinsLoader::CoinsLoader(CoinsDB& db, std::size_t batch_coins, const BlockHash& interim_tip)
    : m_db(db), m_batch_coins(batch_coins), m_interim_tip(interim_tip), m_map(std::make_unique<CoinsMap>())
{
}

CoinsLoader::~CoinsLoader() = default;

StoreStatus CoinsLoader::Add(const OutPoint& outpoint, const Coin& coin)
{
    m_map->try_emplace(outpoint, coin, CoinsCacheEntry::DIRTY | CoinsCacheEntry::FRESH);
    if (m_map->size() < m_batch_coins) return StoreStatus::Ok();
    StoreStatus st = BatchWrite(m_db, *m_map, m_interim_tip, true);
    m_map->clear();
    return st;
}

StoreStatus CoinsLoader::Finish(const BlockHash& tip)
{
    return BatchWrite(m_db, *m_map, tip, true);
}

struct SortedCoinsLoader::Impl {
    Store& store;
    std::unique_ptr<BulkLoad> load;
    std::vector<std::vector<std::byte>> value; ///< per part, the record's value, obfuscated here
};

std::unique_ptr<SortedCoinsLoader> SortedCoinsLoader::Begin(CoinsDB& db, const BlockHash& tip, std::size_t parts)
{
    Store& store = db.store();
    if (store.ReadOnly()) return nullptr;
    // The best block goes in with the coins: 'B' and the hash's 32 bytes, obfuscated.
    std::vector<RawRecord> records(1);
    records[0].key = {std::byte{DB_BEST_BLOCK}};
    const uint256 h = tip.ToUint256();
    records[0].value.assign(reinterpret_cast<const std::byte*>(h.data()), reinterpret_cast<const std::byte*>(h.data()) + 32);
    XorBytes(records[0].value, store.Obfuscation());
    parts = std::max<std::size_t>(parts, 1);
    auto load = store.BeginBulkLoad(parts, std::move(records), /*sync=*/true);
    if (!load) return nullptr;
    return std::unique_ptr<SortedCoinsLoader>(
        new SortedCoinsLoader(std::make_unique<Impl>(Impl{store, std::move(load), std::vector<std::vector<std::byte>>(parts)})));
}

SortedCoinsLoader::SortedCoinsLoader(std::unique_ptr<Impl> impl) : m_impl(std::move(impl)) {}
SortedCoinsLoader::~SortedCoinsLoader() = default;

StoreStatus SortedCoinsLoader::Add(std::size_t part, std::span<const uint8_t> key, std::span<const uint8_t> value)
{
    auto& v = m_impl->value.at(part);
    v.assign(reinterpret_cast<const std::byte*>(value.data()), reinterpret_cast<const std::byte*>(value.data()) + value.size());
    XorBytes(v, m_impl->store.Obfuscation());
    return m_impl->load->Add(part, std::as_bytes(key), v);
}

StoreStatus SortedCoinsLoader::Commit()
{
    return m_impl->store.CommitBulkLoad(std::move(m_impl->load));
}

} // namespace ibdkit

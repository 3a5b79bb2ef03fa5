// CoinsLoader (include/ibdkit/coins/coins_db.h): coins into a chainstate through the cache's map.
#include <ibdkit/coins/coins_db.h>

#include "coins/coins_map.h"

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
    StoreStatus st = m_db.BatchWrite(*m_map, m_interim_tip, true);
    m_map->clear();
    return st;
}

StoreStatus CoinsLoader::Finish(const BlockHash& tip)
{
    return m_db.BatchWrite(*m_map, tip, true);
}

} // namespace ibdkit

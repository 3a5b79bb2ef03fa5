// The coins a `bspent` with a cutoff leaves out, kept from the blocks just checked (check_peers.cpp).
#pragma once

#include "coins/salted_hasher.h"

#include <ibdkit/coins/coin.h>
#include <ibdkit/primitives/transaction.h>

#include <cstdint>
#include <deque>
#include <unordered_map>
#include <utility>
#include <vector>

namespace ibdkit::swiftsync {

/// The outputs of the last blocks checked, by outpoint: the coins a `bspent` asked for with a cutoff
/// leaves out (BIP 455's rationale: most coins are spent within a few blocks of their creation).
class RecentCoins {
public:
    /// Adds `coins`, the outputs of the block at height h that a later block may spend (h above
    /// every height added before).
    void Add(std::vector<std::pair<OutPoint, Coin>>&& coins, uint32_t h)
    {
        std::vector<OutPoint>& added = m_by_height.emplace_back(h, std::vector<OutPoint>{}).second;
        added.reserve(coins.size());
        for (auto& [op, coin] : coins) {
            added.push_back(op);
            m_coins.insert_or_assign(op, std::move(coin));
        }
    }
    /// Forgets the outputs of heights below h.
    void KeepFrom(uint32_t h)
    {
        while (!m_by_height.empty() && m_by_height.front().first < h) {
            for (const OutPoint& op : m_by_height.front().second) m_coins.erase(op);
            m_by_height.pop_front();
        }
    }
    const Coin* Find(const OutPoint& op) const
    {
        auto it = m_coins.find(op);
        return it == m_coins.end() ? nullptr : &it->second;
    }

private:
    std::unordered_map<OutPoint, Coin, SaltedOutPointHasher> m_coins; // outpoints of blocks: salted
    std::deque<std::pair<uint32_t, std::vector<OutPoint>>> m_by_height;
};

} // namespace ibdkit::swiftsync

// src/coins/coins_db_internal.h — the chainstate as the library's own code uses it: writing coins
// (the flush's BatchWrite, Core's CCoinsViewDB::BatchWrite, over the cache's maps, and the two
// loaders that write without the cache: a snapshot's coins, SwiftSync's sorted coins) and the
// UTXO cache's read. What a user opens and reads is CoinsDB (coins/coins_db.h); chainstates are
// written by the runs.
#pragma once

#include <ibdkit/coins/coins_db.h>

#include "kv/status.h"

#include <cstddef>
#include <filesystem>
#include <memory>
#include <span>

namespace ibdkit {

class CoinsMap;

/// CoinsDB::GetCoin, except that a failure of LevelDB itself is thrown (StoreError): the UTXO
/// cache's fetch-through carries it up to the run, which reports it for the chainstate.
Result<std::optional<Coin>> ReadCoin(const CoinsDB& db, const OutPoint& outpoint);

/// The store's status for CoinsDB::Open's error, and back (one code each way: NotFound, Io,
/// Corrupt, Locked, InvalidValue, Refused).
Error ErrorOf(const StoreStatus& status);
StoreStatus StatusOf(const Error& e);
/// CoinsDB::Open, its error as the store's status: null and `*status` set on failure.
std::unique_ptr<CoinsDB> OpenCoinsDB(const std::filesystem::path& path, const CoinsDBOptions& options,
                                     StoreStatus* status);

/// Core's CCoinsViewDB::BatchWrite: writes the dirty entries of `coins` to `db` under the protocol
/// in coins/coins_db.h's header comment, and `tip` as the new best block. With `erase`, entries
/// are removed from the map as they are written (a full flush); otherwise spent entries are
/// removed and the flags of the others cleared (Core's Sync). If the database holds H, `tip` must
/// equal H's new tip.
StoreStatus BatchWrite(CoinsDB& db, CoinsMap& coins, const BlockHash& tip, bool erase);
/// How the keys of the maps given to one BatchWrite relate.
enum class MapKeys {
    Interleaved, ///< any keys: the maps' dirty entries are sorted together, in one index
    Ranges,      ///< each map holds one key range, the maps in key order (a sharded cache's
                 ///< shards): sorted and written one map at a time
};
/// The same for the entries of several maps at once (a sharded cache), written as one flush.
StoreStatus BatchWrite(CoinsDB& db, std::span<CoinsMap* const> maps, const BlockHash& tip, bool erase,
                       MapKeys keys = MapKeys::Interleaved);

/// New coins written into a chainstate in batches, the way a flush writes the cache's entries
/// (each a FRESH, DIRTY entry through BatchWrite): what loading a UTXO snapshot needs
/// without the cache. Every `batch_coins` coins go out under `interim_tip` (a tip that names no
/// block, so an interrupted load never looks complete); Finish writes the rest under the real tip.
class CoinsLoader {
public:
    CoinsLoader(CoinsDB& db, std::size_t batch_coins, const BlockHash& interim_tip);
    ~CoinsLoader();
    CoinsLoader(const CoinsLoader&) = delete;
    CoinsLoader& operator=(const CoinsLoader&) = delete;

    /// Adds one coin; writes a batch when `batch_coins` are waiting.
    StoreStatus Add(const OutPoint& outpoint, const Coin& coin);
    /// Writes the coins still waiting, and `tip` as the best block.
    StoreStatus Finish(const BlockHash& tip);

private:
    CoinsDB& m_db;
    std::size_t m_batch_coins;
    BlockHash m_interim_tip;
    std::unique_ptr<CoinsMap> m_map;
};

/// A new chainstate written in one bulk load from coins already in chainstate key order (SwiftSync's
/// unspent coins after an external sort): each record is Core's key ('C' | txid | VARINT(n)) and
/// its value as Core serializes a coin, not obfuscated. The records go straight into table files
/// (Store::BeginBulkLoad) with `tip` as the best block; Commit switches the database to them in one
/// step, so a load that never commits leaves the chainstate as empty as it was. The records come
/// in `parts`, as BulkLoad's: keys increase within a part, every key of a part is below the next
/// part's, and different parts may be added to from different threads at once.
class SortedCoinsLoader {
public:
    /// nullptr when `db` already holds a record (a bulk load replaces the whole database) or is
    /// read-only.
    static std::unique_ptr<SortedCoinsLoader> Begin(CoinsDB& db, const BlockHash& tip, std::size_t parts = 1);
    ~SortedCoinsLoader();
    SortedCoinsLoader(const SortedCoinsLoader&) = delete;
    SortedCoinsLoader& operator=(const SortedCoinsLoader&) = delete;

    /// Appends one record to `part`; a key not above the part's last one is InvalidArgument.
    StoreStatus Add(std::size_t part, std::span<const uint8_t> key, std::span<const uint8_t> value);
    /// Finishes the tables and makes them the database.
    StoreStatus Commit();

private:
    struct Impl;
    explicit SortedCoinsLoader(std::unique_ptr<Impl> impl);
    std::unique_ptr<Impl> m_impl;
};

} // namespace ibdkit

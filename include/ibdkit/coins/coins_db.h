// ibdkit/coins/coins_db.h — the chainstate database in Bitcoin Core's format (Core's CCoinsViewDB,
// txdb.cpp): coin records, the best-block marker, the head-blocks marker and Core's flush protocol.
//
// Keys (never obfuscated):
//   'C' | txid (32) | VARINT(n)   a coin (value: Coin, coins/coin.h)
//   'B'                           best block hash (uint256)
//   'H'                           [new tip, old tip] while a flush is in progress (vector<uint256>)
//
// Flush protocol (BatchWrite): the first batch erases B and writes H = [new tip, old tip]; dirty
// coins are written (spent ones erased) in batches of at most `batch_write_bytes`; the last batch
// erases H and writes B. A database holding H was interrupted mid-flush: ReplayRange() reports the
// blocks (old tip, new tip] that the caller must replay before the database is consistent again.
//
// Every key and value goes through DataStream<Policy> for the policy chosen at open.
#pragma once

#include <ibdkit/coins/coin.h>
#include <ibdkit/coins/replay_range.h>
#include <ibdkit/error.h>
#include <ibdkit/memory/policy_id.h>
#include <ibdkit/primitives/hash.h>
#include <ibdkit/primitives/transaction.h>

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <vector>

namespace ibdkit {

struct TestHooks; ///< private to tests (src/common/test_hooks.h)
class Store;     ///< the LevelDB wrapper (src/kv/store.h)

/// The UTXO cache's map (private to src/coins/, coins_map.h): BatchWrite takes the cache's maps.

inline constexpr uint8_t DB_COIN = 'C';
inline constexpr uint8_t DB_BEST_BLOCK = 'B';
inline constexpr uint8_t DB_HEAD_BLOCKS = 'H';

/// A flush's batch size unless the caller sets one (Core's -dbbatchsize defaults to 16 MiB; the
/// engine passes --dbcache/64, 4 to 8 MiB: SplitDbCache).
inline constexpr std::size_t DEFAULT_DB_BATCH_SIZE = 32 << 20;

/// Bytes per dirty entry that BatchWrite holds while it puts the entries in key order (its sort
/// index); the UTXO cache counts them in its budget (coins/coins_cache.h, FlushIndexBytes).
inline constexpr std::size_t BATCH_WRITE_INDEX_BYTES = 16;
/// A flush of key-range maps (CoinsDB::MapKeys::Ranges) sorts at most this many of them at once:
/// one per flush thread, at most two, whatever the thread count, so that what a cache counts for
/// the flush (and so where it flushes) is the same for every thread count.
inline constexpr std::size_t FLUSH_INDEXES = 2;
/// The most a flush of key-range maps allocates for its key-order index, the largest map holding
/// `largest_map` entries.
constexpr std::size_t FlushIndexBytes(std::size_t largest_map) noexcept
{
    return BATCH_WRITE_INDEX_BYTES * FLUSH_INDEXES * largest_map;
}

/// The key of a coin record: 'C' | txid | VARINT(n) (Core's CoinEntry).
struct CoinKey {
    OutPoint outpoint;
    template <WriteStream S>
    friend void Serialize(S& s, const CoinKey& k)
    {
        Serialize(s, DB_COIN);
        Serialize(s, k.outpoint.hash);
        WriteVarInt(s, k.outpoint.n);
    }
    template <ReadStream S>
    friend void Unserialize(S& s, CoinKey& k)
    {
        uint8_t tag;
        Unserialize(s, tag);
        if (tag != DB_COIN) throw DecodeError(Errc::InvalidValue, "not a coin key");
        Unserialize(s, k.outpoint.hash);
        k.outpoint.n = ReadVarInt<uint32_t>(s);
    }
};

/// Decodes a raw coin key; Errc on malformed bytes (trailing bytes are Errc::TrailingData).
Result<OutPoint> DecodeCoinKey(std::span<const std::byte> key);
/// Decodes a deobfuscated coin value (Core's Coin serialization); Errc on malformed bytes.
Result<Coin> DecodeCoinValue(std::span<const std::byte> value);

struct CoinsDBOptions {
    PolicyId policy{PolicyId::ZeroAfterFree};   ///< buffer policy of every key/value stream
    std::size_t cache_bytes{8 << 20};           ///< LevelDB block cache + write buffer
    std::size_t batch_write_bytes{DEFAULT_DB_BATCH_SIZE};
    bool read_only{false};
    bool wipe{false};
    bool obfuscate{true};
    /// Write options (docs/chainstate.md): the first batch (H) and the last batch (B) of a flush
    /// are synced, so a power failure leaves either the old state or H + a replayable subset.
    bool sync_markers{true};
    std::shared_ptr<const TestHooks> test_hooks; ///< for tests only (null: none): after_partial_batch
    /// The first flush into a new database (nothing in it but its obfuscation key) writes LevelDB
    /// table files directly, one slice of the key order per flush thread, and switches the
    /// database to them in one step (Store::BeginBulkLoad). Off: it goes through LevelDB's writes.
    bool bulk_load_new{true};
    /// A new chainstate its writer fills in one go (SwiftSync's bulk load): the folder is marked
    /// unfinished (it holds `IBDKIT_UNFINISHED`) before LevelDB's first file, and stays so until
    /// the writer calls FinishChainstate. Without it, a folder so marked
    /// is refused (Errc::Refused), for reading and writing alike: it holds no UTXO set.
    bool unfinished{false};
    /// Threads a flush may use: with 2 or more, a second thread writes each batch to LevelDB while
    /// the calling thread collects, sorts and serializes the next (two batches in flight: up to
    /// 2 × batch_write_bytes), and a bulk load writes one part per thread (at most FLUSH_INDEXES
    /// parts for key-range maps). 1: everything on the calling thread.
    unsigned flush_threads{1};

    /// Options that only read a chainstate (read_only) with a `--dbcache` budget of `dbcache_mib`
    /// MiB: a reader keeps no UTXO cache, so LevelDB's block cache gets the whole budget (MiB to
    /// bytes as every run converts them, saturating rather than wrapping); `policy` for its streams.
    static CoinsDBOptions ForReading(std::size_t dbcache_mib, PolicyId policy);
};

/// Why a read-only open of a running node's chainstate is refused: its snapshot holds the
/// head-blocks marker (H), so Core was in the middle of a flush.
inline constexpr const char* CHAINSTATE_FLUSHING =
    "bitcoind is writing its chainstate (flush in progress): try again in a moment";
/// The same refusal for a chainstate ibdkit made (it holds IBDKIT_CHAINSTATE): another ibdkit is
/// the writer.
inline constexpr const char* IBDKIT_CHAINSTATE_FLUSHING =
    "another ibdkit is writing this chainstate (flush in progress): try again in a moment";

class CoinsDB {
public:
    /// Opens the chainstate at `path`; the caller owns it. A read-only open while another process
    /// writes it (its LOCK, or its datadir's `.lock`, held) reads a private snapshot of it
    /// (FromSnapshot() tells). Errors: a read-only open of no database (Errc::NotFound); a
    /// snapshot taken mid-flush, H present (Errc::Locked, CHAINSTATE_FLUSHING, or
    /// IBDKIT_CHAINSTATE_FLUSHING for a chainstate ibdkit made), or a writable open of a database
    /// another process holds (Errc::Locked, saying "another ibdkit is writing" when ibdkit made it); a writable open of a path ibdkit does not
    /// write, such as a Core datadir's (Errc::Refused, common/write_guard.h's words); LevelDB's
    /// failures (Errc::Corrupt, Errc::Io, Errc::InvalidValue). Several threads may read one open
    /// database at once.
    static Result<std::unique_ptr<CoinsDB>> Open(const std::filesystem::path& path, const CoinsDBOptions& options);

    // The reads below never throw for the database: a malformed record is Errc::Corrupt (or the
    // decoder's code), a failure of LevelDB itself Errc::Io or Errc::Corrupt, its message naming
    // the record.

    /// The coin at `outpoint`, nullopt if absent.
    Result<std::optional<Coin>> GetCoin(const OutPoint& outpoint) const;
    /// Whether a coin at `outpoint` exists (its record is not decoded).
    Result<bool> HaveCoin(const OutPoint& outpoint) const;

    /// The best block (B); null while H is present or for a new database.
    Result<BlockHash> GetBestBlock() const;
    /// [new tip, old tip] if a flush was interrupted, else empty.
    Result<std::vector<BlockHash>> GetHeadBlocks() const;
    /// Set when the database holds H: the block range the caller must replay (Core's ReplayBlocks).
    Result<std::optional<ReplayRange>> NeedsReplay() const;

    /// Walks every coin in key order: fn(outpoint, coin). Stops early when fn returns false.
    /// Returns an error for a malformed record or a LevelDB failure.
    Result<uint64_t> ForEachCoin(const std::function<bool(const OutPoint&, const Coin&)>& fn) const;

    /// ForEachCoin's walk pulled one coin at a time, for a caller that cannot hand over a
    /// callback (a Python iterator). Made by NewCursor; valid while its CoinsDB lives; one thread
    /// at a time (several cursors may walk one database at once).
    class Cursor {
    public:
        virtual ~Cursor() = default;
        /// The next coin in key order into `outpoint` and `coin`; false at the end, or on a
        /// malformed record or a failure of LevelDB (Failure() then says which), and ever after.
        virtual bool Next(OutPoint& outpoint, Coin& coin) = 0;
        /// Why Next returned false before the end, with ForEachCoin's errors (nullopt: the end).
        const std::optional<Error>& Failure() const noexcept { return m_failure; }

    protected:
        std::optional<Error> m_failure;
    };
    /// A cursor before the first coin; the caller owns it.
    std::unique_ptr<Cursor> NewCursor() const;

    /// The key-value store under it (valid while the CoinsDB lives) and the buffer policy of its
    /// streams.
    Store& store() noexcept { return *m_store; }
    const Store& store() const noexcept { return *m_store; }
    PolicyId policy() const noexcept { return m_options.policy; }
    /// Whether this read-only open reads a private snapshot, another process holding the
    /// database (Open's contract): what it reads is consistent, as of when it was opened.
    bool FromSnapshot() const noexcept;
    /// The options it was opened with (the flush's settings as last set below).
    const CoinsDBOptions& options() const noexcept { return m_options; }
    /// See CoinsDBOptions::flush_threads (the engine sets it from --threads).
    void SetFlushThreads(unsigned n) noexcept { m_options.flush_threads = n; }
    /// See CoinsDBOptions::batch_write_bytes (the engine's --dbbatchsize).
    void SetBatchWriteBytes(std::size_t n) noexcept { m_options.batch_write_bytes = n; }
    /// Approximate bytes on disk of the coin records.
    uint64_t EstimateSize() const;

    ~CoinsDB();
    CoinsDB(const CoinsDB&) = delete;
    CoinsDB& operator=(const CoinsDB&) = delete;

private:
    CoinsDB();
    std::unique_ptr<Store> m_store;
    CoinsDBOptions m_options;
};

} // namespace ibdkit

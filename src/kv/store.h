// src/kv/store.h — a small key-value store over LevelDB with Bitcoin Core's options and
// value obfuscation (Core's CDBWrapper / CDBBatch, dbwrapper.h).
//
//  - Options as Core: no compression (Debian's LevelDB would default to Snappy, which Core's build
//    cannot read), block cache = cache/2, write buffer = cache/4, max_file_size 32 MiB; but Bloom
//    filters of BLOOM_BITS_PER_KEY (Core: 10) and TABLE_BLOCK_BYTES table blocks (Core: 4 KiB), which
//    Core reads alike (a filter records its own probe count).
//  - Obfuscation: an 8-byte key stored unobfuscated under the key "\x0e\x00obfuscate_key" (the
//    serialized std::string "\000obfuscate_key"), value `08` + 8 bytes. A new, empty database gets
//    a random key (unless disabled); an existing database without one is plain (all-zero key).
//    Every value is XORed with it; keys never are.
//  - Keys and values are serialized through DataStream<Policy> (DbBatch<Policy>, ReadValue<Policy>),
//    so the buffer-memory policy reaches the database path as in Core.
//  - Read-only open (StoreOptions::read_only) never writes to the directory: LevelDB has no
//    read-only mode (it replays its log into a new table, writes a new MANIFEST and LOG on every
//    open), so ibdkit opens the database through an overlay environment: reads come from the
//    directory, anything LevelDB creates goes to a private scratch directory that is deleted on
//    close, and deletions/renames of the user's files are only recorded.
//  - A held LOCK (bitcoind running, detected with fcntl(F_GETLK)) makes a read-only open read a
//    private snapshot of the directory instead (src/kv/snapshot.h): tables hard-linked (or copied),
//    MANIFEST, logs and CURRENT copied into a temporary directory, taken again if the writer
//    compacted meanwhile. The snapshot is opened with LevelDB's paranoid checks off, so that a log
//    record torn by the copy is dropped as LevelDB's recovery drops a torn tail; every table block
//    is still checked (PreadFile). Nothing is locked, created or written in the directory.
//
// LevelDB types never appear here: the implementation lives in src/kv/store.cpp.
#pragma once

#include <ibdkit/error.h>
#include <ibdkit/stream/obfuscation.h>

#include "common/chainstate_format.h"
#include "kv/status.h"
#include "memory/policy.h"
#include "stream/streams.h"

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

namespace ibdkit {

/// Bits of Bloom filter per key in the tables ibdkit writes. LevelDB keeps every open table's
/// filter in memory, outside any cache; half of Core's 10 bits halves that and, where the chainstate
/// is much larger than the cache, leaves the coins cache more room than the extra block reads that
/// its false positives cost (the figures: docs/chainstate.md).
inline constexpr int BLOOM_BITS_PER_KEY = 5;

// TABLE_BLOCK_BYTES, the table block size of what ibdkit writes: common/chainstate_format.h.

struct StoreOptions {
    std::size_t cache_bytes{8 << 20};        ///< block cache gets half, write buffer a quarter
    std::size_t max_file_size{32 << 20};     ///< LevelDB table file size (Core: ≥ 32 MiB)
    bool create_if_missing{true};
    bool wipe{false};                        ///< destroy an existing database first
    bool obfuscate{true};                    ///< a new database gets a random obfuscation key
    bool read_only{false};                   ///< see the header comment: never writes the directory
    /// Read-only: read a private snapshot of the directory even when its LOCK is free (another
    /// process is known to be writing it, e.g. bitcoind holds its datadir's `.lock`).
    bool snapshot{false};
};

/// Core's obfuscation key key: the serialized std::string "\000obfuscate_key" (length 14).
inline constexpr std::array<uint8_t, 15> OBFUSCATE_KEY_KEY{0x0e, 0x00, 'o', 'b', 'f', 'u', 's', 'c',
                                                          'a', 't', 'e', '_', 'k', 'e', 'y'};

/// A LevelDB write batch (raw keys and already-obfuscated values).
class KvBatch {
public:
    KvBatch();
    ~KvBatch();
    KvBatch(const KvBatch&) = delete;
    KvBatch& operator=(const KvBatch&) = delete;

    void Put(std::span<const std::byte> key, std::span<const std::byte> value);
    void Delete(std::span<const std::byte> key);
    void Clear();
    /// Core's estimate of the batch's size in bytes.
    std::size_t SizeEstimate() const noexcept { return m_size_estimate; }

private:
    friend class Store;
    struct Impl;
    std::unique_ptr<Impl> m_impl;
    std::size_t m_size_estimate{0};
    bool m_puts{false}; ///< the batch writes a record (a Put since the last Clear)
};

class Store;

/// A record as stored: raw key, value already obfuscated.
struct RawRecord {
    std::vector<std::byte> key;
    std::vector<std::byte> value;
};

/// Records written straight into LevelDB table files, bypassing its log, memtable and level-0
/// compactions, then made the whole database in one step (Store::BeginBulkLoad, CommitBulkLoad).
/// The records come in `parts`: within a part keys increase, every key of a part is below every
/// key of the next, and each part is added to by one thread at a time (different parts may be
/// filled concurrently).
class BulkLoad {
public:
    ~BulkLoad();
    BulkLoad(const BulkLoad&) = delete;
    BulkLoad& operator=(const BulkLoad&) = delete;
    /// Appends a record to part `part`; a key not above the part's last one is InvalidArgument.
    StoreStatus Add(std::size_t part, std::span<const std::byte> key, std::span<const std::byte> value);
    /// Finishes (and, when syncing, persists) the part's last table on the calling thread; no
    /// record may be added to the part afterwards. Optional: the commit finishes what is left.
    StoreStatus FinishPart(std::size_t part);

private:
    friend class Store;
    struct Impl;
    explicit BulkLoad(std::unique_ptr<Impl> impl);
    std::unique_ptr<Impl> m_impl;
};

/// Iterates raw keys in LevelDB order; values are returned deobfuscated by ValueInto.
class StoreIterator {
public:
    ~StoreIterator();
    void Seek(std::span<const std::byte> key);
    void SeekToFirst();
    bool Valid() const;
    void Next();
    std::span<const std::byte> Key() const;
    /// The raw (still obfuscated) value; valid until the next move.
    std::span<const std::byte> RawValue() const;
    /// Bytes of the value, deobfuscated, appended to `out` (a DataStream<P> or similar).
    template <typename Stream>
    void ValueInto(Stream& out) const;
    /// Status of the iteration (LevelDB checksum errors surface here).
    StoreStatus status() const;

private:
    friend class Store;
    struct Impl;
    explicit StoreIterator(std::unique_ptr<Impl> impl, const ObfuscationKey& key);
    std::unique_ptr<Impl> m_impl;
    ObfuscationKey m_key;
};

class Store {
public:
    /// Opens (or creates) the database at `path`. On failure returns nullptr and fills *status
    /// (Locked for a LOCK held by another process on a writable open, NotFound for a missing
    /// database when create_if_missing is off or read_only is set, Corruption, IoError; a
    /// read-only open of a locked directory reads a snapshot, see the header comment).
    static std::unique_ptr<Store> Open(const std::filesystem::path& path, const StoreOptions& options,
                                       StoreStatus* status);
    ~Store();
    Store(const Store&) = delete;
    Store& operator=(const Store&) = delete;

    const ObfuscationKey& Obfuscation() const noexcept { return m_obfuscation; }
    const std::filesystem::path& Path() const noexcept { return m_path; }
    bool ReadOnly() const noexcept { return m_read_only; }
    /// The store reads a private snapshot of its directory (a writer held it; see the header comment).
    bool FromSnapshot() const noexcept { return m_snapshot; }

    /// Raw value of key (still obfuscated), nullopt if absent; throws StoreError on I/O failure.
    std::optional<std::string> ReadRaw(std::span<const std::byte> key) const;
    bool Exists(std::span<const std::byte> key) const;
    /// Applies the batch atomically. `sync` waits for the OS to persist the log record (fdatasync).
    /// A read-only store refuses every write (InvalidArgument).
    StoreStatus WriteBatch(KvBatch& batch, bool sync = false);
    std::unique_ptr<StoreIterator> NewIterator() const;
    /// True if the database holds no key at all.
    bool IsEmpty() const;
    /// True while the database holds no record but its obfuscation key: checked once at the open,
    /// false from the first write of a record (a batch with a Put, a bulk load) on. A new
    /// chainstate's reads of absent coins then skip LevelDB. Safe to call from any thread.
    bool HoldsNoRecords() const noexcept { return m_no_records.load(std::memory_order_relaxed); }
    /// Approximate bytes on disk of keys in [begin, end).
    uint64_t EstimateSize(std::span<const std::byte> begin, std::span<const std::byte> end) const;
    /// Compacts the whole key range (used by tests and tools; never on read-only stores).
    void CompactAll();

    /// Starts a bulk load in `parts` parts, or returns nullptr when the database holds any record
    /// but its obfuscation key (or is read-only): a bulk load replaces the whole database. Part 0
    /// starts with `records` and the obfuscation key record (sorted here; every key below those
    /// the caller adds). `sync`: every file is persisted before it is listed, and the directory
    /// after the switch.
    std::unique_ptr<BulkLoad> BeginBulkLoad(std::size_t parts, std::vector<RawRecord> records, bool sync);
    /// Finishes the load's tables and makes them the database: LevelDB is closed, a new MANIFEST
    /// listing only these tables becomes CURRENT (a rename), LevelDB opens again and deletes the
    /// old files. A crash before the rename leaves the database as it was (LevelDB deletes the
    /// unlisted tables on its next open); after it, the load is complete. No other thread may use
    /// the store meanwhile. `before_install`, if set, runs between the tables and the rename (a
    /// test's crash point).
    StoreStatus CommitBulkLoad(std::unique_ptr<BulkLoad> load, const std::function<void()>& before_install = {});

private:
    Store() = default;
    struct Impl;
    std::unique_ptr<Impl> m_impl;
    ObfuscationKey m_obfuscation;
    std::filesystem::path m_path;
    bool m_read_only{false};
    bool m_snapshot{false};
    std::atomic<bool> m_no_records{false};
};

/// True if another process holds the LevelDB LOCK of `dir` (fcntl F_GETLK). Missing LOCK = false.
bool IsDirectoryLocked(const std::filesystem::path& dir);
/// True if another process holds an fcntl lock on `file` (LevelDB's LOCK, bitcoind's datadir
/// `.lock`). Missing file = false.
bool IsFileLocked(const std::filesystem::path& file);

// ---- typed access through DataStream<Policy> (Core's CDBBatch::Write / CDBWrapper::Read) ----------

inline constexpr std::size_t DBWRAPPER_PREALLOC_KEY_SIZE = 64;
inline constexpr std::size_t DBWRAPPER_PREALLOC_VALUE_SIZE = 1024;

template <typename Policy>
class DbBatch {
public:
    explicit DbBatch(const Store& parent) : m_parent(parent) {}

    template <typename K, typename V>
    void Write(const K& key, const V& value)
    {
        m_key.reserve(DBWRAPPER_PREALLOC_KEY_SIZE);
        m_value.reserve(DBWRAPPER_PREALLOC_VALUE_SIZE);
        m_key << key;
        m_value << value;
        m_value.Xor(m_parent.Obfuscation());
        m_batch.Put(m_key.span(), m_value.span());
        m_key.clear();
        m_value.clear();
    }
    template <typename K>
    void Erase(const K& key)
    {
        m_key.reserve(DBWRAPPER_PREALLOC_KEY_SIZE);
        m_key << key;
        m_batch.Delete(m_key.span());
        m_key.clear();
    }
    std::size_t SizeEstimate() const noexcept { return m_batch.SizeEstimate(); }
    void Clear() { m_batch.Clear(); }
    KvBatch& Raw() noexcept { return m_batch; }

private:
    const Store& m_parent;
    KvBatch m_batch;
    DataStream<Policy> m_key;
    DataStream<Policy> m_value;
};

/// Reads and deserializes the value of `key`. Returns nullopt if absent; a value that does not
/// decode completely is Errc::Corrupt (or the decoder's own code).
template <typename Policy, typename V, typename K>
Result<std::optional<V>> ReadValue(const Store& store, const K& key)
{
    DataStream<Policy> ks;
    ks.reserve(DBWRAPPER_PREALLOC_KEY_SIZE);
    ks << key;
    std::optional<std::string> raw = store.ReadRaw(ks.span());
    if (!raw) return std::optional<V>{};
    return CatchDecode([&]() -> std::optional<V> {
        DataStream<Policy> vs{std::as_bytes(std::span<const char>(*raw))};
        vs.Xor(store.Obfuscation());
        V v{};
        vs >> v;
        if (!vs.empty()) throw DecodeError(Errc::TrailingData, "trailing bytes after database value");
        return v;
    });
}

template <typename Stream>
void StoreIterator::ValueInto(Stream& out) const
{
    const auto raw = RawValue();
    const std::size_t before = out.size();
    out.write(raw);
    XorBytes(std::span<std::byte>(out.data() + before, raw.size()), m_key);
}

} // namespace ibdkit

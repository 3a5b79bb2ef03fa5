// LevelDB wrapper with Core's options and obfuscation (the environments: leveldb_env.h).
#include <ibdkit/encoding/endian.h>

#include "kv/store.h"

#include "common/temp_dir.h"

#include "kv/bulk_load.h"
#include "kv/leveldb_env.h"
#include "kv/snapshot.h"

#include <leveldb/cache.h>
#include <leveldb/db.h>
#include <leveldb/env.h>
#include <leveldb/filter_policy.h>
#include <leveldb/iterator.h>
#include <leveldb/options.h>
#include <leveldb/write_batch.h>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdarg>
#include <cstring>
#include <mutex>
#include <random>
#include <set>
#include <system_error>

namespace ibdkit {


namespace {

using kv::NoMmapEnv;
using kv::NullLogger;
using kv::OverlayEnv;

leveldb::Slice ToSlice(std::span<const std::byte> s)
{
    return leveldb::Slice(reinterpret_cast<const char*>(s.data()), s.size());
}

StoreStatus FromLevelDb(const leveldb::Status& s, const std::string& what)
{
    if (s.ok()) return StoreStatus::Ok();
    StoreStatus::Code c = StoreStatus::Code::IoError;
    if (s.IsNotFound()) c = StoreStatus::Code::NotFound;
    else if (s.IsCorruption()) c = StoreStatus::Code::Corruption;
    else if (s.IsInvalidArgument()) c = StoreStatus::Code::InvalidArgument;
    return StoreStatus::Error(c, what + ": " + s.ToString());
}

/// What every operation on a store whose LevelDB could not be opened again returns.
StoreStatus Closed()
{
    return StoreStatus::Error(StoreStatus::Code::IoError, "the database is closed (it failed to open again after a bulk load)");
}

ObfuscationKey RandomKey()
{
    std::random_device rd;
    ObfuscationKey k;
    do {
        for (auto& b : k.bytes) b = std::byte(rd());
    } while (k.IsNull());
    return k;
}

} // namespace

// ---- KvBatch -----------------------------------------------------------------------------------

struct KvBatch::Impl {
    leveldb::WriteBatch batch;
};

KvBatch::KvBatch() : m_impl(std::make_unique<Impl>()) {}
KvBatch::~KvBatch() = default;

void KvBatch::Put(std::span<const std::byte> key, std::span<const std::byte> value)
{
    m_impl->batch.Put(ToSlice(key), ToSlice(value));
    // Core's estimate (dbwrapper.cpp): LevelDB serializes writes as:
    // - byte: header
    // - varint: key length (1 byte up to 127B, 2 bytes up to 16383B, ...)
    // - byte[]: key
    // - varint: value length
    // - byte[]: value
    m_size_estimate += 3 + (key.size() > 127) + key.size() + (value.size() > 127) + value.size();
    m_puts = true;
}

void KvBatch::Delete(std::span<const std::byte> key)
{
    m_impl->batch.Delete(ToSlice(key));
    m_size_estimate += 2 + (key.size() > 127) + key.size();
}

void KvBatch::Clear()
{
    m_impl->batch.Clear();
    m_size_estimate = 0;
    m_puts = false;
}

// ---- StoreIterator -----------------------------------------------------------------------------

struct StoreIterator::Impl {
    std::unique_ptr<leveldb::Iterator> it;
};

StoreIterator::StoreIterator(std::unique_ptr<Impl> impl, const ObfuscationKey& key) : m_impl(std::move(impl)), m_key(key) {}
StoreIterator::~StoreIterator() = default;
void StoreIterator::Seek(std::span<const std::byte> key) { m_impl->it->Seek(ToSlice(key)); }
void StoreIterator::SeekToFirst() { m_impl->it->SeekToFirst(); }
bool StoreIterator::Valid() const { return m_impl->it->Valid(); }
void StoreIterator::Next() { m_impl->it->Next(); }
std::span<const std::byte> StoreIterator::Key() const
{
    const leveldb::Slice s = m_impl->it->key();
    return {reinterpret_cast<const std::byte*>(s.data()), s.size()};
}
std::span<const std::byte> StoreIterator::RawValue() const
{
    const leveldb::Slice s = m_impl->it->value();
    return {reinterpret_cast<const std::byte*>(s.data()), s.size()};
}
StoreStatus StoreIterator::status() const { return FromLevelDb(m_impl->it->status(), "iterator"); }

// ---- Store -------------------------------------------------------------------------------------

struct Store::Impl {
    // Destruction order matters: db first, then env/options objects it uses, then the scratch dir.
    std::filesystem::path scratch;
    std::unique_ptr<OverlayEnv> env;
    std::unique_ptr<NullLogger> logger;
    std::unique_ptr<leveldb::Cache> block_cache;
    std::unique_ptr<const leveldb::FilterPolicy> filter;
    leveldb::Options options;
    leveldb::ReadOptions read_options;
    leveldb::ReadOptions iter_options;
    leveldb::WriteOptions write_options;
    leveldb::WriteOptions sync_options;
    std::unique_ptr<leveldb::DB> db;

    /// LevelDB's options as Core sets them, within `opt`'s cache budget.
    void Configure(const StoreOptions& opt)
    {
        block_cache.reset(leveldb::NewLRUCache(opt.cache_bytes / 2));
        filter.reset(leveldb::NewBloomFilterPolicy(BLOOM_BITS_PER_KEY));
        logger = std::make_unique<NullLogger>();
        options.block_cache = block_cache.get();
        options.write_buffer_size = std::max<std::size_t>(opt.cache_bytes / 4, 64 << 10);
        options.filter_policy = filter.get();
        options.compression = leveldb::kNoCompression; // Core's LevelDB has no Snappy
        options.info_log = logger.get();
        options.paranoid_checks = true;                 // as Core (LevelDB >= 1.16)
        options.max_file_size = std::max<std::size_t>(opt.max_file_size, 32 << 20);
        options.block_size = TABLE_BLOCK_BYTES;
        options.env = NoMmapEnv();
        // Core verifies every block it reads; PreadFile does (with the CPU's CRC instruction), so
        // LevelDB's own check would only repeat it. Compactions still check with paranoid_checks.
        read_options.verify_checksums = false;
        iter_options.verify_checksums = false;
        iter_options.fill_cache = false;
        sync_options.sync = true;
    }

    ~Impl()
    {
        db.reset();
        env.reset();
        if (!scratch.empty()) {
            std::error_code ec;
            std::filesystem::remove_all(scratch, ec);
        }
    }
};

bool IsDirectoryLocked(const std::filesystem::path& dir) { return IsFileLocked(dir / "LOCK"); }

bool IsFileLocked(const std::filesystem::path& lock)
{
    const int fd = ::open(lock.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return false;
    struct flock fl;
    std::memset(&fl, 0, sizeof(fl));
    fl.l_type = F_WRLCK;
    fl.l_whence = SEEK_SET;
    const int rc = ::fcntl(fd, F_GETLK, &fl);
    ::close(fd);
    return rc == 0 && fl.l_type != F_UNLCK;
}

std::unique_ptr<Store> Store::Open(const std::filesystem::path& path_in, const StoreOptions& opt, StoreStatus* status)
{
    auto fail = [&](StoreStatus st) -> std::unique_ptr<Store> {
        if (status) *status = std::move(st);
        return nullptr;
    };
    std::error_code ec;
    std::filesystem::path path = path_in;
    if (std::filesystem::exists(path, ec)) path = std::filesystem::canonical(path, ec);

    std::unique_ptr<Store> store(new Store);
    store->m_impl = std::make_unique<Impl>();
    store->m_path = path;
    store->m_read_only = opt.read_only;
    Impl& im = *store->m_impl;

    im.Configure(opt);

    if (opt.read_only) {
        if (!std::filesystem::is_directory(path, ec) || !std::filesystem::exists(path / "CURRENT", ec)) {
            return fail(StoreStatus::Error(StoreStatus::Code::NotFound,
                                           "no LevelDB database at " + path.string() + " (missing CURRENT)"));
        }
        // Private scratch directory for whatever LevelDB writes while opening (log replay, new
        // MANIFEST, compactions): the user's directory is never written.
        auto made = MakeTempDir("ro");
        if (!made) return fail(StoreStatus::Error(StoreStatus::Code::IoError, made.error().message));
        im.scratch = std::move(*made);
        store->m_snapshot = opt.snapshot || IsDirectoryLocked(path);
        if (store->m_snapshot) {
            // A copy can end in a log record the writer had not finished: LevelDB drops a torn
            // tail only with its paranoid checks off (table blocks are still checked by PreadFile).
            im.options.paranoid_checks = false;
        } else {
            im.env = std::make_unique<OverlayEnv>(NoMmapEnv(), path.string(), im.scratch.string());
            im.options.env = im.env.get();
        }
        im.options.create_if_missing = false;
        im.options.error_if_exists = false;
    } else {
        if (opt.wipe) {
            leveldb::Options o;
            o.info_log = im.logger.get();
            leveldb::DestroyDB(path.string(), o);
        }
        if (opt.create_if_missing) std::filesystem::create_directories(path, ec);
        im.options.create_if_missing = opt.create_if_missing;
    }

    leveldb::DB* raw = nullptr;
    leveldb::Status s;
    if (store->m_snapshot) {
        // The snapshot is checked for a consistent set of files; a MANIFEST record torn by the copy
        // still fails LevelDB's open, and the next attempt copies again.
        const auto db_dir = im.scratch / "db", overlay = im.scratch / "overlay";
        for (int attempt = 1; attempt <= kv::SNAPSHOT_ATTEMPTS; ++attempt) {
            im.env.reset();
            std::filesystem::remove_all(overlay, ec);
            std::filesystem::create_directories(overlay, ec);
            StoreStatus st = kv::SnapshotDatabase(path, db_dir, kv::SNAPSHOT_ATTEMPTS);
            if (!st.ok()) return fail(st);
            im.env = std::make_unique<OverlayEnv>(NoMmapEnv(), db_dir.string(), overlay.string());
            im.options.env = im.env.get();
            s = leveldb::DB::Open(im.options, db_dir.string(), &raw);
            if (s.ok()) break;
        }
        if (!s.ok()) return fail(FromLevelDb(s, "cannot open a snapshot of " + path.string()));
    } else {
        s = leveldb::DB::Open(im.options, path.string(), &raw);
    }
    if (!s.ok()) {
        std::string msg = s.ToString();
        if (!opt.read_only && msg.find("lock") != std::string::npos) {
            return fail(StoreStatus::Error(StoreStatus::Code::Locked,
                                           "database " + path.string() + " is locked by another process: " + msg));
        }
        return fail(FromLevelDb(s, "cannot open " + path.string()));
    }
    im.db.reset(raw);
    if (im.env) im.env->Freeze();

    // Obfuscation key: read from an existing database; a new, empty one gets a random key.
    const auto okey = std::as_bytes(std::span<const uint8_t>(OBFUSCATE_KEY_KEY));
    std::optional<std::string> kv;
    try {
        kv = store->ReadRaw(okey);
    } catch (const StoreError& e) {
        return fail(e.status());
    }
    if (kv) {
        if (kv->size() != 9 || uint8_t((*kv)[0]) != 8) {
            return fail(StoreStatus::Error(StoreStatus::Code::Corruption,
                                           "obfuscation key record has an unexpected format (" +
                                               std::to_string(kv->size()) + " bytes)"));
        }
        std::memcpy(store->m_obfuscation.bytes.data(), kv->data() + 1, 8);
    } else if (!opt.read_only && opt.obfuscate && store->IsEmpty()) {
        const ObfuscationKey k = RandomKey();
        std::array<std::byte, 9> value;
        value[0] = std::byte{8};
        std::memcpy(value.data() + 1, k.bytes.data(), 8);
        KvBatch b;
        b.Put(okey, value);
        StoreStatus st = store->WriteBatch(b, true);
        if (!st.ok()) return fail(st);
        store->m_obfuscation = k;
    }
    // Nothing but the obfuscation key: reads can answer "absent" without asking LevelDB.
    {
        std::unique_ptr<leveldb::Iterator> it(im.db->NewIterator(im.iter_options));
        it->SeekToFirst();
        if (it->Valid() && it->key() == ToSlice(okey)) it->Next();
        store->m_no_records.store(!it->Valid() && it->status().ok(), std::memory_order_relaxed);
    }
    if (status) *status = StoreStatus::Ok();
    return store;
}

Store::~Store() = default;

std::optional<std::string> Store::ReadRaw(std::span<const std::byte> key) const
{
    if (!m_impl->db) throw StoreError(Closed());
    std::string out;
    leveldb::Status s = m_impl->db->Get(m_impl->read_options, ToSlice(key), &out);
    if (s.IsNotFound()) return std::nullopt;
    if (!s.ok()) throw StoreError(FromLevelDb(s, "read"));
    return out;
}

bool Store::Exists(std::span<const std::byte> key) const { return ReadRaw(key).has_value(); }

StoreStatus Store::WriteBatch(KvBatch& batch, bool sync)
{
    if (m_read_only) return StoreStatus::Error(StoreStatus::Code::InvalidArgument, "write to a read-only store");
    if (!m_impl->db) return Closed();
    if (batch.m_puts) m_no_records.store(false, std::memory_order_relaxed); // before readers can see them
    leveldb::Status s = m_impl->db->Write(sync ? m_impl->sync_options : m_impl->write_options, &batch.m_impl->batch);
    return FromLevelDb(s, "write batch");
}

std::unique_ptr<StoreIterator> Store::NewIterator() const
{
    if (!m_impl->db) throw StoreError(Closed());
    auto impl = std::make_unique<StoreIterator::Impl>();
    impl->it.reset(m_impl->db->NewIterator(m_impl->iter_options));
    return std::unique_ptr<StoreIterator>(new StoreIterator(std::move(impl), m_obfuscation));
}

bool Store::IsEmpty() const
{
    if (!m_impl->db) throw StoreError(Closed());
    std::unique_ptr<leveldb::Iterator> it(m_impl->db->NewIterator(m_impl->iter_options));
    it->SeekToFirst();
    return !it->Valid();
}

uint64_t Store::EstimateSize(std::span<const std::byte> begin, std::span<const std::byte> end) const
{
    if (!m_impl->db) return 0;
    leveldb::Range r(ToSlice(begin), ToSlice(end));
    uint64_t size = 0;
    m_impl->db->GetApproximateSizes(&r, 1, &size);
    return size;
}

void Store::CompactAll()
{
    if (m_read_only || !m_impl->db) return;
    m_impl->db->CompactRange(nullptr, nullptr);
}

BulkLoad::BulkLoad(std::unique_ptr<Impl> impl) : m_impl(std::move(impl)) {}
BulkLoad::~BulkLoad() = default;

StoreStatus BulkLoad::Add(std::size_t part, std::span<const std::byte> key, std::span<const std::byte> value)
{
    return m_impl->Add(part, key, value);
}

StoreStatus BulkLoad::FinishPart(std::size_t part) { return m_impl->FinishPart(part); }

std::unique_ptr<BulkLoad> Store::BeginBulkLoad(std::size_t parts, std::vector<RawRecord> records, bool sync)
{
    if (m_read_only || parts == 0 || !m_impl->db) return nullptr;
    const auto okey = std::as_bytes(std::span<const uint8_t>(OBFUSCATE_KEY_KEY));
    std::unique_ptr<leveldb::Iterator> it(m_impl->db->NewIterator(m_impl->iter_options));
    for (it->SeekToFirst(); it->Valid(); it->Next()) {
        const auto k = std::as_bytes(std::span<const char>(it->key().data(), it->key().size()));
        if (!std::equal(k.begin(), k.end(), okey.begin(), okey.end())) return nullptr;
        const auto v = std::as_bytes(std::span<const char>(it->value().data(), it->value().size()));
        records.push_back({{k.begin(), k.end()}, {v.begin(), v.end()}});
    }
    if (!it->status().ok()) return nullptr;
    it.reset();
    auto impl = std::make_unique<BulkLoad::Impl>(m_path.string(), m_impl->options, m_impl->filter.get(), parts,
                                                 HighestFileNumber(m_path.string()) + 1, sync);
    std::sort(records.begin(), records.end(), [](const RawRecord& a, const RawRecord& b) { return a.key < b.key; });
    for (const auto& r : records) {
        if (!impl->Add(0, r.key, r.value).ok()) return nullptr;
    }
    return std::unique_ptr<BulkLoad>(new BulkLoad(std::move(impl)));
}

StoreStatus Store::CommitBulkLoad(std::unique_ptr<BulkLoad> load, const std::function<void()>& before_install)
{
    BulkLoad::Impl& b = *load->m_impl;
    m_no_records.store(false, std::memory_order_relaxed);
    uint64_t manifest = 0;
    if (auto st = b.Finish(&manifest); !st.ok()) return st;
    if (before_install) before_install();
    // LevelDB holds its MANIFEST and log open: close it, switch CURRENT, open it again.
    m_impl->db.reset();
    StoreStatus installed = b.Install(manifest);
    leveldb::DB* raw = nullptr;
    leveldb::Status s = leveldb::DB::Open(m_impl->options, m_path.string(), &raw);
    if (!s.ok()) return FromLevelDb(s, "reopen " + m_path.string() + " after a bulk load");
    m_impl->db.reset(raw);
    return installed;
}

} // namespace ibdkit

// Table files and a MANIFEST written directly (see bulk_load.h). The on-disk forms used here are
// LevelDB's (1.x, db/dbformat.h, db/version_edit.cc, db/log_format.h): an internal key is the user
// key followed by 8 little-endian bytes (sequence << 8 | type); a MANIFEST is a log of VersionEdit
// records in 32 KiB blocks, each fragment led by a masked CRC-32C, its length and its type.
#include "kv/bulk_load.h"
#include "common/crc32c.h"

#include <leveldb/comparator.h>
#include <leveldb/slice.h>

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <system_error>

namespace ibdkit {

namespace {

/// LevelDB's deepest level (config::kNumLevels - 1). Files there are never picked for a seek
/// compaction (a lookup reads at most one file of the level and none below), and a later level-5
/// compaction merges into them as it would into any bottom level.
constexpr int BULK_LEVEL = 6;
/// Every record gets this sequence number; the MANIFEST's last sequence is the same, so later
/// writes (2, 3, ...) shadow it as LevelDB's own would.
constexpr uint64_t BULK_SEQUENCE = 1;
constexpr uint8_t TYPE_VALUE = 1; ///< LevelDB's kTypeValue

StoreStatus IoError(const std::string& what) { return StoreStatus::Error(StoreStatus::Code::IoError, what); }

StoreStatus FromStatus(const leveldb::Status& s, const std::string& what)
{
    if (s.ok()) return StoreStatus::Ok();
    return IoError(what + ": " + s.ToString());
}

void PutFixed32(std::string& out, uint32_t v)
{
    for (int i = 0; i < 4; ++i) out.push_back(char(v >> (8 * i)));
}

void PutVarint(std::string& out, uint64_t v)
{
    while (v >= 128) {
        out.push_back(char(v | 128));
        v >>= 7;
    }
    out.push_back(char(v));
}

void PutLengthPrefixed(std::string& out, const std::string& s)
{
    PutVarint(out, s.size());
    out += s;
}

void MakeInternalKey(std::string& out, std::span<const std::byte> user_key)
{
    static constexpr char TRAILER[8] = {char(BULK_SEQUENCE << 8 | TYPE_VALUE), 0, 0, 0, 0, 0, 0, 0};
    static_assert(BULK_SEQUENCE < (uint64_t(1) << 48), "the trailer's bytes above are the sequence's");
    out.reserve(user_key.size() + 8);
    out.assign(reinterpret_cast<const char*>(user_key.data()), user_key.size());
    out.append(TRAILER, 8);
}

/// One record in LevelDB's log format, split into fragments that never cross a 32 KiB block.
void AppendLogRecord(std::string& log, const std::string& payload)
{
    constexpr std::size_t BLOCK = 32768, HEADER = 7;
    enum : uint8_t { FULL = 1, FIRST = 2, MIDDLE = 3, LAST = 4 };
    std::size_t done = 0;
    bool begin = true;
    do {
        const std::size_t left_in_block = BLOCK - log.size() % BLOCK;
        if (left_in_block < HEADER) log.append(left_in_block, '\0'); // a trailer LevelDB skips
        const std::size_t avail = BLOCK - log.size() % BLOCK - HEADER;
        const std::size_t frag = std::min(payload.size() - done, avail);
        const bool end = done + frag == payload.size();
        const uint8_t type = begin && end ? FULL : begin ? FIRST : end ? LAST : MIDDLE;
        std::string typed(1, char(type));
        typed.append(payload, done, frag);
        PutFixed32(log, Crc32cMask(Crc32c(0, typed.data(), typed.size())));
        log.push_back(char(frag & 0xFF));
        log.push_back(char(frag >> 8));
        log.append(typed);
        done += frag;
        begin = false;
    } while (done < payload.size());
}

std::string TableName(const std::string& dir, uint64_t n)
{
    char buf[32];
    std::snprintf(buf, sizeof(buf), "/%06llu.ldb", static_cast<unsigned long long>(n));
    return dir + buf;
}

std::string ManifestName(uint64_t n)
{
    char buf[40];
    std::snprintf(buf, sizeof(buf), "MANIFEST-%06llu", static_cast<unsigned long long>(n));
    return buf;
}

/// InternalKeyComparator's order for keys that differ in their user part (every key here does):
/// user keys bytewise, then the higher sequence first. Separators are left as they are (a valid,
/// if longer, choice), so no shortened key has to be valid as an internal key.
class InternalKeyOrder final : public leveldb::Comparator {
public:
    int Compare(const leveldb::Slice& a, const leveldb::Slice& b) const override
    {
        const leveldb::Slice ua(a.data(), a.size() - 8), ub(b.data(), b.size() - 8);
        if (int c = ua.compare(ub); c != 0) return c;
        const leveldb::Slice ta(a.data() + a.size() - 8, 8), tb(b.data() + b.size() - 8, 8);
        return -ta.compare(tb); // same type byte; little-endian only breaks ties we never make
    }
    const char* Name() const override { return "leveldb.InternalKeyComparator"; }
    void FindShortestSeparator(std::string*, const leveldb::Slice&) const override {}
    void FindShortSuccessor(std::string*) const override {}
};

/// The database's filter over user keys, applied to internal keys (LevelDB's InternalFilterPolicy:
/// same name, so reads find and use the filter blocks).
class UserKeyFilter final : public leveldb::FilterPolicy {
public:
    explicit UserKeyFilter(const leveldb::FilterPolicy* user) : m_user(user) {}
    const char* Name() const override { return m_user->Name(); }
    void CreateFilter(const leveldb::Slice* keys, int n, std::string* dst) const override
    {
        std::vector<leveldb::Slice> user(keys, keys + n);
        for (auto& k : user) k = leveldb::Slice(k.data(), k.size() - 8);
        m_user->CreateFilter(user.data(), n, dst);
    }
    bool KeyMayMatch(const leveldb::Slice& key, const leveldb::Slice& filter) const override
    {
        return m_user->KeyMayMatch(leveldb::Slice(key.data(), key.size() - 8), filter);
    }

private:
    const leveldb::FilterPolicy* m_user;
};

StoreStatus SyncDirectory(const std::string& dir)
{
    const int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0) return IoError("open " + dir + ": " + std::strerror(errno));
    const int rc = ::fsync(fd);
    const int err = errno;
    ::close(fd);
    if (rc != 0) return IoError("fsync " + dir + ": " + std::strerror(err));
    return StoreStatus::Ok();
}

StoreStatus WriteWholeFile(const std::string& path, const std::string& data, bool sync)
{
    leveldb::WritableFile* raw = nullptr;
    leveldb::Status s = leveldb::Env::Default()->NewWritableFile(path, &raw);
    if (!s.ok()) return FromStatus(s, "create " + path);
    std::unique_ptr<leveldb::WritableFile> f(raw);
    s = f->Append(data);
    if (s.ok() && sync) s = f->Sync();
    if (s.ok()) s = f->Close();
    return FromStatus(s, "write " + path);
}

} // namespace

uint64_t HighestFileNumber(const std::string& dir)
{
    uint64_t high = 0;
    std::error_code ec;
    for (const auto& e : std::filesystem::directory_iterator(dir, ec)) {
        std::string name = e.path().filename().string();
        if (name.rfind("MANIFEST-", 0) == 0) name = name.substr(9);
        std::size_t digits = 0;
        while (digits < name.size() && digits < 19 && name[digits] >= '0' && name[digits] <= '9') ++digits;
        if (digits == 0) continue;
        high = std::max<uint64_t>(high, std::stoull(name.substr(0, digits)));
    }
    return high;
}

BulkLoad::Impl::Impl(std::string dir, const leveldb::Options& options, const leveldb::FilterPolicy* filter,
                     std::size_t parts, uint64_t first_file_number, bool sync)
    : m_dir(std::move(dir)), m_options(options), m_order(std::make_unique<InternalKeyOrder>()),
      m_filter(filter ? std::make_unique<UserKeyFilter>(filter) : nullptr), m_sync(sync), m_parts(parts),
      m_next_file(first_file_number)
{
    m_options.comparator = m_order.get();
    m_options.filter_policy = m_filter.get();
}

BulkLoad::Impl::~Impl()
{
    for (auto& p : m_parts) {
        if (p.builder) p.builder->Abandon();
    }
}

StoreStatus BulkLoad::Impl::FinishFile(Part& p)
{
    leveldb::Status s = p.builder->Finish();
    p.meta.size = p.builder->FileSize();
    p.builder.reset();
    if (s.ok() && m_sync) s = p.file->Sync();
    if (s.ok()) s = p.file->Close();
    p.file.reset();
    if (!s.ok()) return FromStatus(s, "table " + TableName(m_dir, p.meta.number));
    std::lock_guard lock(m_mutex);
    m_files.push_back(std::move(p.meta));
    p.meta = {};
    return StoreStatus::Ok();
}

StoreStatus BulkLoad::Impl::Add(std::size_t part, std::span<const std::byte> key, std::span<const std::byte> value)
{
    Part& p = m_parts.at(part);
    if (!p.status.ok()) return p.status;
    if (p.finished) return p.status = StoreStatus::Error(StoreStatus::Code::InvalidArgument, "bulk load: part already finished");
    const std::string_view k(reinterpret_cast<const char*>(key.data()), key.size());
    if (p.any && k <= std::string_view(p.ikey).substr(0, p.ikey.size() - 8)) {
        return p.status = StoreStatus::Error(StoreStatus::Code::InvalidArgument, "bulk load: keys out of order");
    }
    p.any = true;
    if (!p.builder) {
        p.meta.number = m_next_file.fetch_add(1);
        leveldb::WritableFile* raw = nullptr;
        const std::string name = TableName(m_dir, p.meta.number);
        if (leveldb::Status s = leveldb::Env::Default()->NewWritableFile(name, &raw); !s.ok()) {
            return p.status = FromStatus(s, "create " + name);
        }
        p.file.reset(raw);
        p.builder = std::make_unique<leveldb::TableBuilder>(m_options, p.file.get());
    }
    MakeInternalKey(p.next, key);
    p.ikey.swap(p.next);
    if (p.builder->NumEntries() == 0) p.meta.smallest = p.ikey;
    p.builder->Add(p.ikey, leveldb::Slice(reinterpret_cast<const char*>(value.data()), value.size()));
    if (!p.builder->status().ok()) return p.status = FromStatus(p.builder->status(), "bulk load");
    if (p.builder->FileSize() >= m_options.max_file_size) {
        p.meta.largest = p.ikey;
        p.status = FinishFile(p);
    }
    return p.status;
}

StoreStatus BulkLoad::Impl::FinishPart(std::size_t part)
{
    Part& p = m_parts.at(part);
    if (!p.status.ok() || p.finished) return p.status;
    p.finished = true;
    if (!p.builder) return p.status;
    p.meta.largest = p.ikey;
    return p.status = FinishFile(p);
}

StoreStatus BulkLoad::Impl::Finish(uint64_t* manifest)
{
    for (std::size_t i = 0; i < m_parts.size(); ++i) {
        if (auto st = FinishPart(i); !st.ok()) return st;
    }
    std::sort(m_files.begin(), m_files.end(), [&](const FileMeta& a, const FileMeta& b) {
        return m_order->Compare(a.smallest, b.smallest) < 0;
    });
    for (std::size_t i = 1; i < m_files.size(); ++i) {
        if (m_order->Compare(m_files[i - 1].largest, m_files[i].smallest) >= 0) {
            return StoreStatus::Error(StoreStatus::Code::InvalidArgument, "bulk load: the parts' key ranges overlap");
        }
    }

    // One VersionEdit: comparator, log number, next file number, last sequence, every new file.
    *manifest = m_next_file.fetch_add(1);
    std::string edit;
    PutVarint(edit, 1); // kComparator
    PutLengthPrefixed(edit, leveldb::BytewiseComparator()->Name());
    PutVarint(edit, 2); // kLogNumber: every log numbered below the MANIFEST is obsolete
    PutVarint(edit, *manifest);
    PutVarint(edit, 3); // kNextFileNumber
    PutVarint(edit, *manifest + 1);
    PutVarint(edit, 4); // kLastSequence
    PutVarint(edit, BULK_SEQUENCE);
    for (const FileMeta& f : m_files) {
        PutVarint(edit, 7); // kNewFile
        PutVarint(edit, BULK_LEVEL);
        PutVarint(edit, f.number);
        PutVarint(edit, f.size);
        PutLengthPrefixed(edit, f.smallest);
        PutLengthPrefixed(edit, f.largest);
    }
    std::string log;
    AppendLogRecord(log, edit);
    return WriteWholeFile(m_dir + "/" + ManifestName(*manifest), log, m_sync);
}

StoreStatus BulkLoad::Impl::Install(uint64_t manifest)
{
    char tmp[32];
    std::snprintf(tmp, sizeof(tmp), "/%06llu.dbtmp", static_cast<unsigned long long>(manifest));
    const std::string tmp_path = m_dir + tmp;
    if (auto st = WriteWholeFile(tmp_path, ManifestName(manifest) + "\n", m_sync); !st.ok()) return st;
    std::error_code ec;
    std::filesystem::rename(tmp_path, m_dir + "/CURRENT", ec);
    if (ec) return IoError("rename " + tmp_path + " to CURRENT: " + ec.message());
    return m_sync ? SyncDirectory(m_dir) : StoreStatus::Ok();
}

} // namespace ibdkit

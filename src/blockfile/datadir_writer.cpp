// DatadirWriter (datadir_writer.h).
#include "blockfile/datadir_writer.h"

#include <ibdkit/blockfile/blockfile.h>
#include <ibdkit/blockfile/locate.h>
#include <ibdkit/encoding/endian.h>
#include <ibdkit/encoding/serialize.h>

#include "kv/store.h"
#include "stream/streams.h"

#include <fcntl.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <limits>

namespace ibdkit {

namespace fs = std::filesystem;

namespace {

constexpr uint8_t DB_BLOCK_FILES = 'f';
constexpr uint8_t DB_BLOCK_INDEX = 'b';
constexpr uint8_t DB_LAST_BLOCK = 'l';
/// Pending block and undo bytes are written out beyond this.
constexpr std::size_t WRITE_AT = 4 << 20;
/// Files written and left open for Sync to make durable, at most.
constexpr std::size_t MAX_UNSYNCED = 8;

[[noreturn]] void Fail(const std::string& what) { throw DatadirWriteError(what); }

std::string Errno() { return std::strerror(errno); }

bool PwriteFull(int fd, const uint8_t* p, std::size_t n, uint64_t offset) noexcept
{
    for (std::size_t done = 0; done < n;) {
        const ssize_t r = ::pwrite(fd, p + done, n - done, off_t(offset + done));
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) {
            if (r == 0) errno = ENOSPC;
            return false;
        }
        done += std::size_t(r);
    }
    return true;
}

/// The 'f' key: Core's std::pair<uint8_t, int>.
std::array<uint8_t, 5> FileKey(int number)
{
    std::array<uint8_t, 5> k{DB_BLOCK_FILES};
    WriteLE32(k.data() + 1, uint32_t(number));
    return k;
}

/// Writes `bytes` into the new file `path` and makes it durable.
std::optional<Error> WriteDurably(const fs::path& path, std::span<const uint8_t> bytes)
{
    const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) return Error{Errc::Io, path.string() + ": cannot create: " + Errno()};
    const bool ok = PwriteFull(fd, bytes.data(), bytes.size(), 0) && ::fsync(fd) == 0;
    const std::string why = Errno();
    ::close(fd);
    if (!ok) return Error{Errc::Io, path.string() + ": write failed: " + why};
    return std::nullopt;
}

void SyncDir(const fs::path& dir)
{
    const int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0) Fail(dir.string() + ": cannot open: " + Errno());
    const bool ok = ::fsync(fd) == 0;
    ::close(fd);
    if (!ok) Fail(dir.string() + ": sync failed: " + Errno());
}

bool EmptyOrMissing(const fs::path& dir)
{
    std::error_code ec;
    return !fs::exists(dir, ec) || (fs::is_directory(dir, ec) && fs::is_empty(dir, ec));
}

} // namespace

DatadirWriter::DatadirWriter(fs::path net_dir, const ChainParams& params, std::size_t max_file_size)
    : m_net(std::move(net_dir)), m_blocks(m_net / "blocks"), m_params(params), m_max_file_size(max_file_size)
{
}

DatadirWriter::~DatadirWriter()
{
    for (FlatFile* f : {&m_blk, &m_rev}) {
        if (f->fd >= 0) ::close(f->fd);
    }
    for (const auto& [fd, path] : m_unsynced) ::close(fd);
}

Result<std::unique_ptr<DatadirWriter>> DatadirWriter::Open(const fs::path& net_dir, const ChainParams& params, std::size_t max_file_size)
{
    const fs::path datadir = params.type == ChainType::MAIN ? net_dir : net_dir.parent_path();
    if (auto refused = CheckDatadirWritable(datadir, net_dir)) return *refused;
    std::unique_ptr<DatadirWriter> w(new DatadirWriter(net_dir, params, max_file_size));
    std::error_code ec;
    const bool ours = fs::exists(w->m_blocks / DATADIR_MARKER, ec);
    if (!ours && !EmptyOrMissing(w->m_blocks)) {
        return Error{Errc::Refused, w->m_blocks.string() + " holds blocks ibdkit did not write (no " + DATADIR_MARKER +
                                        "): ibdkit writes a data directory only into a new or empty folder"};
    }
    try {
        auto done = ours && fs::exists(w->m_blocks / "index" / "CURRENT", ec) ? w->Continue() : w->Start();
        if (!done) return done.error();
    } catch (const DatadirWriteError& e) {
        return Error{Errc::Io, e.what()};
    } catch (const StoreError& e) {
        return Error{Errc::Corrupt, w->m_blocks.string() + "/index: " + e.what()};
    }
    return w;
}

Result<bool> DatadirWriter::Start()
{
    std::error_code ec;
    fs::create_directories(m_blocks, ec);
    if (ec) return Error{Errc::Io, m_blocks.string() + ": cannot create: " + ec.message()};
    // The marker first: a folder ibdkit started and left unfinished is started again, never refused.
    if (auto e = WriteDurably(m_blocks / DATADIR_MARKER, {})) return *e;
    std::array<uint8_t, 8> key{};
    if (::getrandom(key.data(), key.size(), 0) != ssize_t(key.size())) return Error{Errc::Io, "no random bytes for xor.dat: " + Errno()};
    if (auto e = WriteDurably(m_blocks / "xor.dat", key)) return *e;
    std::memcpy(m_key.bytes.data(), key.data(), key.size());
    fs::remove_all(m_blocks / "index", ec);
    StoreOptions so;
    so.obfuscate = false; // Core's block index is not obfuscated
    StoreStatus st;
    m_index = ibdkit::Store::Open(m_blocks / "index", so, &st);
    if (!m_index) return Error{Errc::Io, m_blocks.string() + "/index: " + st.message};
    m_files.assign(1, BlockFileInfo{});
    OpenFlat(m_blk, 0, 0);
    OpenFlat(m_rev, 0, 0);
    m_buf.assign(8, 0);
    VectorWriter w(m_buf, 8);
    Serialize(w, m_params.genesis);
    StoreBlock(m_params.genesis.header(), uint32_t(m_params.genesis.vtx.size()), 0, {}, false);
    Sync();
    SyncDir(m_net);
    return true;
}

Result<bool> DatadirWriter::Continue()
{
    auto key = ReadXorKey(m_blocks);
    if (!key) return key.error();
    m_key = *key;
    auto index = ReadBlockIndex(m_blocks / "index");
    if (!index) return index.error();
    auto best = SelectBestChain(*index, m_params.consensus.hash_genesis_block);
    if (!best) return best.error();
    // A run killed before its first index batch (the genesis block's) left nothing indexed.
    if (best->entries.empty() && index->entries.empty()) return Start();
    if (best->entries.empty()) return Error{Errc::Corrupt, m_blocks.string() + "/index holds no genesis block"};
    for (std::size_t i : best->entries) m_hashes.push_back(index->entries[i].hash);
    for (const auto& e : index->entries) {
        if (e.status & BLOCK_HAVE_DATA) m_stored.emplace(e.hash, Stored{e.Prev(), e.height});
    }
    StoreOptions so;
    so.obfuscate = false;
    so.create_if_missing = false;
    StoreStatus st;
    m_index = ibdkit::Store::Open(m_blocks / "index", so, &st);
    if (!m_index) return Error{Errc::Corrupt, m_blocks.string() + "/index: " + st.message};
    const std::array<uint8_t, 1> lkey{DB_LAST_BLOCK};
    const auto last = m_index->ReadRaw(MakeByteSpan(lkey));
    if (!last || last->size() != 4) return Error{Errc::Corrupt, m_blocks.string() + "/index: no last block file record"};
    const int last_file = int(ReadLE32(reinterpret_cast<const uint8_t*>(last->data())));
    if (last_file < 0 || last_file > 99999) return Error{Errc::Corrupt, m_blocks.string() + "/index: last block file " + std::to_string(last_file)};
    for (int n = 0; n <= last_file; ++n) {
        const auto fkey = FileKey(n);
        const auto raw = m_index->ReadRaw(MakeByteSpan(fkey));
        if (!raw) return Error{Errc::Corrupt, m_blocks.string() + "/index: no record of block file " + std::to_string(n)};
        auto info = DecodeBlockFileInfo(std::span(reinterpret_cast<const uint8_t*>(raw->data()), raw->size()));
        if (!info) return Error{Errc::Corrupt, m_blocks.string() + "/index: block file " + std::to_string(n) + ": " + info.error().message};
        m_files.push_back(*info);
    }
    OpenFlat(m_blk, last_file, m_files.back().size);
    OpenFlat(m_rev, last_file, m_files.back().undo_size);
    return true;
}

fs::path DatadirWriter::FlatPath(const FlatFile& f, int number) const
{
    return f.prefix == std::string_view("blk") ? BlockFilePath(m_blocks, number) : UndoFilePath(m_blocks, uint32_t(number));
}

void DatadirWriter::OpenFlat(FlatFile& f, int number, uint64_t size)
{
    const fs::path path = FlatPath(f, number);
    const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
    if (fd < 0) Fail(path.string() + ": cannot open for writing: " + Errno());
    struct stat st {};
    if (::fstat(fd, &st) != 0 || uint64_t(st.st_size) < size) {
        ::close(fd);
        Fail(path.string() + " holds fewer bytes than the block index records (" + std::to_string(size) + "): the folder is damaged");
    }
    // What lies past the recorded size was written but never indexed: it is written over.
    if (::ftruncate(fd, off_t(size)) != 0) {
        ::close(fd);
        Fail(path.string() + ": cannot truncate: " + Errno());
    }
    f.fd = fd;
    f.number = number;
    f.size = size;
    f.behind = DropBehind(size);
    m_new_file = true;
}

void DatadirWriter::Flush(FlatFile& f, bool close)
{
    if (f.fd < 0) return;
    const fs::path path = FlatPath(f, f.number);
    if (!f.pending.empty()) {
        const uint64_t from = f.size - f.pending.size();
        if (!PwriteFull(f.fd, f.pending.data(), f.pending.size(), from)) Fail(path.string() + ": write failed: " + Errno());
        f.pending.clear();
        f.behind.Written(f.fd, from, f.size);
    }
    if (close) {
        // Made durable by the next Sync, with the rest: a file switch does not wait on the disk
        // (the oldest are synced once more are left open, by when the kernel has written them).
        m_unsynced.emplace_back(f.fd, path);
        f.fd = -1;
        SyncUnsynced(MAX_UNSYNCED);
    }
}

void DatadirWriter::SyncUnsynced(std::size_t keep)
{
    while (m_unsynced.size() > keep) {
        const auto [fd, path] = m_unsynced.front();
        const bool ok = ::fdatasync(fd) == 0;
        const std::string why = Errno();
        if (ok) DropCachedRange(fd, 0, UINT64_MAX >> 1); // durable: out of the cache (FlatFile::behind)
        ::close(fd);
        m_unsynced.pop_front();
        if (!ok) Fail(path.string() + ": sync failed: " + why);
    }
}

void DatadirWriter::Put(FlatFile& f, int number, uint64_t at, std::vector<uint8_t>& record)
{
    if (f.number != number) {
        Flush(f, /*close=*/true);
        OpenFlat(f, number, 0);
    }
    if (at != f.size) Fail(std::string(f.prefix) + " file " + std::to_string(number) + ": a record out of place");
    XorBytes(MakeWritableByteSpan(record), m_key, std::size_t(at));
    f.pending.insert(f.pending.end(), record.begin(), record.end());
    f.size += record.size();
    if (f.pending.size() >= WRITE_AT) Flush(f, /*close=*/false);
}

void DatadirWriter::Append(const Block& block, int height, std::span<const uint8_t> undo_bytes)
{
    if (!Follows(block.GetHash(), block.hash_prev_block, height)) return;
    m_buf.assign(8, 0);
    VectorWriter w(m_buf, 8);
    Serialize(w, block);
    StoreBlock(block.header(), uint32_t(block.vtx.size()), height, undo_bytes, true);
}

void DatadirWriter::Append(std::span<const uint8_t> block_bytes, const BlockHeader& header, uint32_t tx_count, int height,
                           std::span<const uint8_t> undo_bytes)
{
    if (!Follows(header.GetHash(), header.hash_prev_block, height)) return;
    m_buf.assign(8, 0);
    m_buf.insert(m_buf.end(), block_bytes.begin(), block_bytes.end());
    StoreBlock(header, tx_count, height, undo_bytes, true);
}

bool DatadirWriter::Follows(const BlockHash& hash, const BlockHash& prev, int height)
{
    if (height < 1) Fail("block height " + std::to_string(height) + ": the genesis block is written by Open");
    if (m_stored.contains(hash)) { // stored by an earlier run
        Follow(hash, height);
        return false;
    }
    Follow(prev, height - 1);
    return true;
}

void DatadirWriter::ReplaceUndo(const BlockHash& hash, std::span<const uint8_t> undo_bytes)
{
    auto e = std::find_if(m_pending.rbegin(), m_pending.rend(), [&](const BlockIndexEntry& p) { return p.hash == hash; });
    if (e == m_pending.rend() || !(e->status & BLOCK_HAVE_UNDO)) Fail("block " + hash.ToHex() + ": its undo data is indexed already");
    BlockFileInfo& info = m_files[std::size_t(e->file)];
    m_buf.clear();
    AppendUndoRecord(m_buf, m_params.message_start, e->Prev(), undo_bytes);
    e->undo_pos = info.undo_size + UNDO_HEADER_BYTES;
    if (e->file == m_rev.number) {
        Put(m_rev, e->file, info.undo_size, m_buf);
    } else {
        // An earlier rev file, closed: the record goes to its end, durable before the index names it.
        const fs::path path = UndoFilePath(m_blocks, uint32_t(e->file));
        const int fd = ::open(path.c_str(), O_WRONLY | O_CLOEXEC);
        if (fd < 0) Fail(path.string() + ": cannot open for writing: " + Errno());
        XorBytes(MakeWritableByteSpan(m_buf), m_key, std::size_t(info.undo_size));
        const bool ok = PwriteFull(fd, m_buf.data(), m_buf.size(), info.undo_size) && ::fdatasync(fd) == 0;
        const std::string why = Errno();
        ::close(fd);
        if (!ok) Fail(path.string() + ": write failed: " + why);
    }
    info.undo_size += uint32_t(m_buf.size());
    m_dirty_files.insert(e->file);
}

void DatadirWriter::Follow(const BlockHash& tip, int height)
{
    auto it = m_stored.find(tip);
    if (it == m_stored.end() || it->second.height != height) {
        Fail("block " + tip.ToHex() + " is not stored at height " + std::to_string(height) + " in " + m_blocks.string() +
             ": a block there must follow one the data directory holds");
    }
    // Down the branch of `tip` to where it meets the followed chain.
    std::vector<BlockHash> branch;
    BlockHash cur = tip;
    int h = height;
    while (h >= int(m_hashes.size()) || m_hashes[std::size_t(h)] != cur) {
        branch.push_back(cur);
        const auto parent = m_stored.find(cur);
        if (h == 0 || parent == m_stored.end()) Fail("block " + tip.ToHex() + " does not descend from the data directory's genesis block");
        cur = parent->second.prev;
        --h;
    }
    m_hashes.resize(std::size_t(h) + 1);
    m_hashes.insert(m_hashes.end(), branch.rbegin(), branch.rend());
}

void DatadirWriter::StoreBlock(const BlockHeader& header, uint32_t tx_count, int height, std::span<const uint8_t> undo_bytes, bool have_undo)
{
    // The block's record: magic, size, then the block with its witness (in m_buf after 8 bytes).
    const uint64_t add = m_buf.size();
    if (add - 8 > std::numeric_limits<uint32_t>::max()) Fail("a block of " + std::to_string(add) + " bytes");
    int number = int(m_files.size()) - 1;
    // Core's FindNextBlockPos: a block that would take the file to the limit starts the next one.
    if (m_files[std::size_t(number)].size + add >= m_max_file_size && m_files[std::size_t(number)].blocks > 0) {
        m_files.emplace_back();
        ++number;
        m_dirty_files.insert(number - 1);
    }
    BlockFileInfo& info = m_files[std::size_t(number)];
    std::memcpy(m_buf.data(), m_params.message_start.data(), 4);
    WriteLE32(m_buf.data() + 4, uint32_t(add - 8));
    BlockIndexEntry e;
    e.hash = header.GetHash();
    e.client_version = BLOCK_INDEX_DUMMY_VERSION;
    e.height = height;
    e.tx_count = tx_count;
    e.file = number;
    e.data_pos = info.size + 8;
    Put(m_blk, number, info.size, m_buf);
    info.size += uint32_t(add);
    info.AddBlock(uint32_t(height), header.time);
    // Core connects the genesis block without undo data and leaves it at VALID_TRANSACTIONS.
    e.status = (have_undo ? BLOCK_VALID_SCRIPTS | BLOCK_HAVE_UNDO : BLOCK_VALID_TRANSACTIONS) | BLOCK_HAVE_DATA;
    if (height >= m_params.consensus.segwit_height) e.status |= BLOCK_OPT_WITNESS;
    if (have_undo) {
        m_buf.clear();
        AppendUndoRecord(m_buf, m_params.message_start, header.hash_prev_block, undo_bytes);
        e.undo_pos = info.undo_size + UNDO_HEADER_BYTES;
        Put(m_rev, number, info.undo_size, m_buf);
        info.undo_size += uint32_t(m_buf.size());
    }
    m_buf.clear();
    VectorWriter hw(m_buf, 0);
    Serialize(hw, header);
    std::memcpy(e.header.data(), m_buf.data(), e.header.size());
    m_pending.push_back(e);
    m_dirty_files.insert(number);
    m_hashes.push_back(e.hash);
    m_stored.emplace(e.hash, Stored{header.hash_prev_block, height});
    ++m_blocks_written;
}

void DatadirWriter::Sync()
{
    for (FlatFile* f : {&m_blk, &m_rev}) {
        Flush(*f, /*close=*/false);
        if (f->fd < 0) continue;
        if (::fdatasync(f->fd) != 0) Fail(m_blocks.string() + ": sync of a " + f->prefix + " file failed: " + Errno());
        f->behind.Synced(f->fd, f->size);
    }
    SyncUnsynced(0);
    if (m_new_file) {
        SyncDir(m_blocks);
        m_new_file = false;
    }
    if (m_pending.empty() && m_dirty_files.empty()) return;
    // Only now the records that point at those bytes.
    KvBatch batch;
    for (const BlockIndexEntry& e : m_pending) {
        std::array<uint8_t, 33> k{DB_BLOCK_INDEX};
        std::memcpy(k.data() + 1, e.hash.data(), 32);
        batch.Put(MakeByteSpan(k), MakeByteSpan(EncodeBlockIndexEntry(e)));
    }
    for (int n : m_dirty_files) batch.Put(MakeByteSpan(FileKey(n)), MakeByteSpan(EncodeBlockFileInfo(m_files[std::size_t(n)])));
    std::array<uint8_t, 4> last{};
    WriteLE32(last.data(), uint32_t(m_files.size() - 1));
    const std::array<uint8_t, 1> lkey{DB_LAST_BLOCK};
    batch.Put(MakeByteSpan(lkey), MakeByteSpan(last));
    if (auto st = m_index->WriteBatch(batch, /*sync=*/true); !st.ok()) Fail(m_blocks.string() + "/index: " + st.message);
    m_pending.clear();
    m_dirty_files.clear();
}

} // namespace ibdkit

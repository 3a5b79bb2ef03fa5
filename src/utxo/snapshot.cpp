// assumeutxo snapshots (include/ibdkit/utxo/snapshot.h).
#include <ibdkit/common/atomic_file.h>
#include <ibdkit/utxo/snapshot.h>

#include <ibdkit/crypto/sha256.h>
#include <ibdkit/encoding/endian.h>
#include <ibdkit/encoding/serialize.h>
#include <ibdkit/primitives/amount.h>

#include "common/buffered_writer.h"
#include "common/write_guard_internal.h"
#include "coins/coins_db_internal.h"

#include <ibdkit/coins/coins_db.h>

#include <cerrno>
#include <cstring>
#include <string>
#include <system_error>
#include <vector>

namespace ibdkit {

namespace fs = std::filesystem;

namespace {

std::string Fmt(const char* prefix, uint64_t n, const char* suffix = "")
{
    return std::string(prefix) + std::to_string(n) + suffix;
}

/// Buffered input file satisfying ReadStream; a read past the end throws DecodeError(EndOfData).
class FileReader {
public:
    explicit FileReader(const fs::path& p) : m_f(std::fopen(p.c_str(), "rb")), m_buf(1 << 20) {}
    ~FileReader()
    {
        if (m_f) std::fclose(m_f);
    }
    bool ok() const noexcept { return m_f != nullptr; }
    void read(std::span<std::byte> out)
    {
        std::size_t done = 0;
        while (done < out.size()) {
            if (m_pos == m_end && !Fill()) throw DecodeError(Errc::EndOfData, "end of file");
            const std::size_t n = std::min(out.size() - done, m_end - m_pos);
            std::memcpy(out.data() + done, m_buf.data() + m_pos, n);
            m_pos += n;
            done += n;
        }
    }
    /// True if at least one more byte is available.
    bool MoreData()
    {
        return m_pos < m_end || Fill();
    }

private:
    bool Fill()
    {
        m_pos = 0;
        m_end = m_f ? std::fread(m_buf.data(), 1, m_buf.size(), m_f) : 0;
        return m_end > 0;
    }
    FILE* m_f;
    std::vector<uint8_t> m_buf;
    std::size_t m_pos{0}, m_end{0};
};

/// VARINT(n) bytes (the key order within a txid).
std::size_t VarIntBytes(uint32_t n, uint8_t out[8])
{
    uint8_t tmp[8];
    int len = 0;
    uint64_t v = n;
    while (true) {
        tmp[len] = uint8_t((v & 0x7f) | (len ? 0x80 : 0x00));
        if (v <= 0x7f) break;
        v = (v >> 7) - 1;
        len++;
    }
    for (int i = 0; i <= len; ++i) out[i] = tmp[len - i];
    return std::size_t(len + 1);
}

/// Key order of two output indexes of one txid: VARINT byte strings compared lexicographically.
bool KeyOrderLess(uint32_t a, uint32_t b)
{
    uint8_t ka[8], kb[8];
    const std::size_t la = VarIntBytes(a, ka), lb = VarIntBytes(b, kb);
    const int c = std::memcmp(ka, kb, std::min(la, lb));
    return c < 0 || (c == 0 && la < lb);
}

struct AssumeutxoEntry {
    ChainType chain;
    int height;
    const char* hash_serialized;
    uint64_t chain_tx_count;
    const char* blockhash;
};

// Core's kernel/chainparams.cpp m_assumeutxo_data.
constexpr AssumeutxoEntry ASSUMEUTXO[] = {
    {ChainType::MAIN, 840000, "a2a5521b1b5ab65f67818e5e8eccabb7171a517f9e2382208f77687310768f96", 991032194,
     "0000000000000000000320283a032748cef8227873ff4872689bf23f1cda83a5"},
    {ChainType::MAIN, 880000, "dbd190983eaf433ef7c15f78a278ae42c00ef52e0fd2a54953782175fbadcea9", 1145604538,
     "000000000000000000010b17283c3c400507969a9c2afd1dcf2082ec5cca2880"},
    {ChainType::MAIN, 910000, "4daf8a17b4902498c5787966a2b51c613acdab5df5db73f196fa59a4da2f1568", 1226586151,
     "0000000000000000000108970acb9522ffd516eae17acddcb1bd16469194a821"},
    {ChainType::TESTNET, 2500000, "f841584909f68e47897952345234e37fcd9128cd818f41ee6c3ca68db8071be7", 66484552,
     "0000000000000093bcb68c03a9a168ae252572d348a2eaeba2cdf9231d73206f"},
    {ChainType::TESTNET4, 90000, "784fb5e98241de66fdd429f4392155c9e7db5c017148e66e8fdbc95746f8b9b5", 11347043,
     "0000000002ebe8bcda020e0dd6ccfbdfac531d2f6a81457191b99fc2df2dbe3b"},
    {ChainType::SIGNET, 160000, "fe0a44309b74d6b5883d246cb419c6221bcccf0b308c9b59b7d70783dbdf928a", 2289496,
     "0000003ca3c99aff040f2563c2ad8f8ec88bd0fd6b8f0895cfaf1ef90353a62c"},
    {ChainType::REGTEST, 110, "b952555c8ab81fec46f3d4253b7af256d766ceb39fb7752b9d18cdf4a0141327", 111,
     "6affe030b7965ab538f820a56ef56c8149b7dc1d1c144af57113be080db7c397"},
    {ChainType::REGTEST, 200, "17dcc016d188d16068907cdeb38b75691a118d43053b8cd6a25969419381d13a", 201,
     "385901ccbd69dff6bbd00065d01fb8a9e464dede7cfe0372443884f9b1dcf6b9"},
    {ChainType::REGTEST, 299, "d2b051ff5e8eef46520350776f4100dd710a63447a8e01d917e92e79751a63e2", 334,
     "7cc695046fec709f8c9394b6f928f81e81fd3ac20977bb68760fa1faa7916ea2"},
};

std::string MagicHex(const MessageStart& m)
{
    static const char* H = "0123456789abcdef";
    std::string s;
    for (uint8_t b : m) {
        s += H[b >> 4];
        s += H[b & 15];
    }
    return s;
}

} // namespace

std::array<uint8_t, SNAPSHOT_METADATA_SIZE> SerializeSnapshotMetadata(const SnapshotMetadata& m) noexcept
{
    std::array<uint8_t, SNAPSHOT_METADATA_SIZE> out{};
    uint8_t* p = out.data();
    std::memcpy(p, SNAPSHOT_MAGIC_BYTES.data(), 5);
    WriteLE16(p + 5, SNAPSHOT_VERSION);
    std::memcpy(p + 7, m.network_magic.data(), 4);
    std::memcpy(p + 11, m.base_blockhash.data(), 32);
    WriteLE64(p + 43, m.coins_count);
    return out;
}

Result<SnapshotMetadata> ParseSnapshotMetadata(std::span<const uint8_t, SNAPSHOT_METADATA_SIZE> b,
                                               const MessageStart& expected)
{
    if (std::memcmp(b.data(), SNAPSHOT_MAGIC_BYTES.data(), 5) != 0) {
        return Error{Errc::BadMagic, "Invalid UTXO set snapshot magic bytes. Please check if this is indeed a snapshot "
                                     "file or if you are using an outdated snapshot format."};
    }
    const uint16_t version = ReadLE16(b.data() + 5);
    if (version != SNAPSHOT_VERSION) {
        return Error{Errc::InvalidValue,
                     "Version of snapshot " + std::to_string(version) + " does not match any of the supported versions."};
    }
    SnapshotMetadata m;
    std::memcpy(m.network_magic.data(), b.data() + 7, 4);
    if (m.network_magic != expected) {
        const auto theirs = ChainTypeFromMagic(m.network_magic);
        const auto ours = ChainTypeFromMagic(expected);
        if (theirs && ours) {
            return Error{Errc::BadMagic, "The network of the snapshot (" + std::string(ChainTypeName(*theirs)) +
                                             ") does not match the network of this node (" +
                                             std::string(ChainTypeName(*ours)) + ")."};
        }
        return Error{Errc::BadMagic, "This snapshot has been created for an unrecognized network (magic " +
                                         MagicHex(m.network_magic) +
                                         "). This could be a custom signet, a new testnet or possibly caused by data "
                                         "corruption."};
    }
    m.base_blockhash = BlockHash(uint256(std::span<const uint8_t, 32>(b.data() + 11, 32)));
    m.coins_count = ReadLE64(b.data() + 43);
    return m;
}

std::optional<AssumeutxoData> AssumeutxoForBlockHash(ChainType chain, const BlockHash& blockhash)
{
    for (const auto& e : ASSUMEUTXO) {
        if (e.chain != chain) continue;
        const auto bh = BlockHash::FromHex(e.blockhash);
        if (bh && *bh == blockhash) {
            return AssumeutxoData{e.height, *uint256::FromHex(e.hash_serialized), e.chain_tx_count, *bh};
        }
    }
    return std::nullopt;
}

// ---- reader ----------------------------------------------------------------------------------

struct SnapshotReader::Impl {
    explicit Impl(const fs::path& p) : file(p) {}
    FileReader file;
    uint64_t coins_left{0};
    uint64_t group_left{0};
    Txid group_txid;
    bool have_group{false};
    bool have_prev_n{false};
    uint32_t prev_n{0};
    bool finished{false};
};

SnapshotReader::~SnapshotReader() = default;

Result<std::unique_ptr<SnapshotReader>> SnapshotReader::Open(const fs::path& path, const MessageStart& expected)
{
    std::unique_ptr<SnapshotReader> r(new SnapshotReader());
    r->m_impl = std::make_unique<Impl>(path);
    if (!r->m_impl->file.ok()) {
        return Error{Errc::InvalidValue, "cannot open snapshot " + path.string() + ": " + std::strerror(errno)};
    }
    std::array<uint8_t, SNAPSHOT_METADATA_SIZE> head;
    try {
        r->m_impl->file.read(std::as_writable_bytes(std::span(head)));
    } catch (const DecodeError&) {
        return Error{Errc::EndOfData, "snapshot " + path.string() + " is shorter than its metadata"};
    }
    auto meta = ParseSnapshotMetadata(head, expected);
    if (!meta) return meta.error();
    r->m_meta = *meta;
    r->m_impl->coins_left = meta->coins_count;
    return r;
}

Result<ChainType> SnapshotNetwork(const fs::path& path)
{
    std::array<uint8_t, SNAPSHOT_METADATA_SIZE> head{};
    std::FILE* f = std::fopen(path.c_str(), "rb");
    if (!f) return Error{Errc::InvalidValue, "cannot open snapshot " + path.string() + ": " + std::strerror(errno)};
    const std::size_t got = std::fread(head.data(), 1, head.size(), f);
    std::fclose(f);
    if (got != head.size()) return Error{Errc::EndOfData, "snapshot " + path.string() + " is shorter than its metadata"};
    const MessageStart magic{head[7], head[8], head[9], head[10]};
    if (auto meta = ParseSnapshotMetadata(head, magic); !meta) return meta.error(); // the file's magic and version
    if (auto chain = ChainTypeFromMagic(magic)) return *chain;
    return ParseSnapshotMetadata(head, GetChainParams(ChainType::MAIN).message_start).error(); // Core's words for it
}

Result<bool> SnapshotReader::Next(OutPoint& op, Coin& coin)
{
    Impl& im = *m_impl;
    if (im.finished) return false;
    if (im.coins_left == 0) {
        // Core: one more byte means the metadata's count was too small.
        im.finished = true;
        if (im.file.MoreData()) {
            return Error{Errc::TrailingData, Fmt("Bad snapshot - coins left over after deserializing ", m_read, " coins")};
        }
        return false;
    }
    try {
        while (im.group_left == 0) {
            Txid txid;
            Unserialize(im.file, txid);
            const uint64_t count = ReadCompactSize(im.file);
            if (count > im.coins_left) {
                return Error{Errc::SizeTooLarge, "Mismatch in coins count in snapshot metadata and actual snapshot data"};
            }
            if (count == 0) {
                return Error{Errc::InvalidValue, Fmt("Bad snapshot data after deserializing ", m_read,
                                                     " coins - empty coin group (dumptxoutset never writes one)")};
            }
            if (im.have_group && !(im.group_txid < txid)) {
                return Error{Errc::InvalidValue,
                             Fmt("Bad snapshot data after deserializing ", m_read,
                                 (" coins - txid " + txid.ToHex() + " is not after the previous group's (" +
                                  (txid == im.group_txid ? "duplicate" : "unordered") + ")")
                                     .c_str())};
            }
            im.group_txid = txid;
            im.have_group = true;
            im.group_left = count;
            im.have_prev_n = false;
        }
        const uint64_t n = ReadCompactSize(im.file);
        op.hash = im.group_txid;
        op.n = uint32_t(n);
        Unserialize(im.file, coin);
    } catch (const DecodeError&) {
        im.finished = true;
        return Error{Errc::EndOfData, Fmt("Bad snapshot format or truncated snapshot after deserializing ", m_read, " coins")};
    }
    if ((m_base_height && coin.height > *m_base_height) || op.n == std::numeric_limits<uint32_t>::max()) {
        return Error{Errc::InvalidValue, Fmt("Bad snapshot data after deserializing ", m_read, " coins")};
    }
    if (!MoneyRange(coin.out.value)) {
        return Error{Errc::InvalidValue, Fmt("Bad snapshot data after deserializing ", m_read, " coins - bad tx out value")};
    }
    if (im.have_prev_n && !KeyOrderLess(im.prev_n, op.n)) {
        return Error{Errc::InvalidValue,
                     Fmt("Bad snapshot data after deserializing ", m_read,
                         (" coins - output " + std::to_string(op.n) + " of " + op.hash.ToHex() +
                          (op.n == im.prev_n ? " is a duplicate" : " is out of key order"))
                             .c_str())};
    }
    im.prev_n = op.n;
    im.have_prev_n = true;
    --im.group_left;
    --im.coins_left;
    ++m_read;
    return true;
}

Result<UtxoStats> ComputeSnapshotStats(const fs::path& path, const MessageStart& network, UtxoHashTypes hashes)
{
    auto reader = SnapshotReader::Open(path, network);
    if (!reader) return reader.error();
    UtxoStats stats;
    stats.best_block = (*reader)->metadata().base_blockhash;
    UtxoStatsBuilder builder(hashes);
    OutPoint op;
    Coin coin;
    while (true) {
        auto more = (*reader)->Next(op, coin);
        if (!more) return more.error();
        if (!*more) break;
        builder.Add(op, coin);
    }
    builder.Finish(stats);
    return stats;
}

// ---- writer ----------------------------------------------------------------------------------

Result<SnapshotWriteResult> WriteUtxoSnapshot(const CoinsDB& db, const ChainParams& params, const fs::path& out,
                                              const SnapshotProgress& progress)
{
    if (auto refused = CheckOutputFile(out)) return *refused;
    SnapshotWriteResult res;
    auto replay = db.NeedsReplay();
    if (!replay) return replay.error();
    if (*replay) {
        return Error{Errc::InvalidValue, "the chainstate holds an interrupted flush (H marker): replay it first"};
    }
    auto best = db.GetBestBlock();
    if (!best) return best.error();
    res.metadata.network_magic = params.message_start;
    res.metadata.base_blockhash = *best;

    // Written, re-read and checked under a temporary name; `out` appears only once it has passed.
    AtomicFile atomic(out);
    File f(atomic.Temp(), "wb");
    if (!f.get()) return Error{Errc::InvalidValue, "cannot open " + atomic.Temp().string() + " for writing: " + std::strerror(errno)};
    BufferedFileWriter w(f.get(), /*drop_behind=*/false);
    const auto placeholder = SerializeSnapshotMetadata(res.metadata); // count patched below
    w.write(std::as_bytes(std::span(placeholder)));

    UtxoStatsBuilder builder;
    std::vector<std::pair<uint32_t, Coin>> group;
    Txid group_txid;
    uint64_t coins = 0;
    auto flush_group = [&] {
        if (group.empty()) return;
        Serialize(w, group_txid);
        WriteCompactSize(w, group.size());
        for (const auto& [n, c] : group) {
            WriteCompactSize(w, n);
            Serialize(w, c);
        }
        group.clear();
    };
    auto r = db.ForEachCoin([&](const OutPoint& op, const Coin& c) {
        if (group.empty() || op.hash != group_txid) {
            flush_group();
            group_txid = op.hash;
        }
        group.emplace_back(op.n, c);
        builder.Add(op, c);
        if (progress && (++coins & 0xffff) == 0) progress(coins, (op.hash.data()[0] * 256.0 + op.hash.data()[1]) / 65536.0 * 0.5);
        return true;
    });
    if (!r) return r.error();
    flush_group();
    res.chainstate_stats.best_block = *best;
    builder.Finish(res.chainstate_stats);
    res.metadata.coins_count = res.chainstate_stats.txouts;
    uint8_t count[8];
    WriteLE64(count, res.metadata.coins_count);
    const bool written = w.PatchAt(43, std::span<const uint8_t>(count, 8));
    res.bytes = w.Bytes();
    if (!written || !f.Close()) {
        return Error{Errc::InvalidValue, "writing " + out.string() + " failed: " + std::strerror(w.Errno() ? w.Errno() : errno)};
    }

    // Re-read what was written and check it against the chainstate.
    auto file_stats = ComputeSnapshotStats(atomic.Temp(), params.message_start);
    if (!file_stats) return Error{file_stats.error().code, "re-reading " + out.string() + ": " + file_stats.error().message};
    res.file_stats = *file_stats;
    const UtxoStats& a = res.chainstate_stats;
    const UtxoStats& b = res.file_stats;
    if (a.txouts != b.txouts || a.total_amount != b.total_amount || a.hash_serialized != b.hash_serialized) {
        return Error{Errc::Corrupt, "snapshot " + out.string() + " does not match the chainstate: coins " +
                                        std::to_string(b.txouts) + " vs " + std::to_string(a.txouts) + ", amount " +
                                        FormatMoney(b.total_amount) + " vs " + FormatMoney(a.total_amount) +
                                        ", hash_serialized_3 " + b.hash_serialized.ToHex() + " vs " +
                                        a.hash_serialized.ToHex()};
    }
    if (auto e = atomic.Commit()) return *e;
    if (progress) progress(coins, 1.0);
    return res;
}

// ---- loader ----------------------------------------------------------------------------------

Result<SnapshotLoadResult> LoadUtxoSnapshot(const fs::path& file, const ChainParams& params, const fs::path& dir,
                                            const SnapshotLoadOptions& options, const SnapshotProgress& progress)
{
    if (auto refused = CheckChainstateWritable(dir)) return *refused;
    std::error_code ec;
    if (fs::exists(dir, ec) && !fs::is_empty(dir, ec)) {
        return Error{Errc::InvalidValue, "chainstate directory " + dir.string() + " exists and is not empty"};
    }
    auto reader_r = SnapshotReader::Open(file, params.message_start);
    if (!reader_r) return reader_r.error();
    SnapshotReader& reader = **reader_r;
    SnapshotLoadResult res;
    res.metadata = reader.metadata();

    const auto au = AssumeutxoForBlockHash(params.type, res.metadata.base_blockhash);
    std::optional<uint256> expected = options.expected_hash;
    if (au) {
        res.height = au->height;
        reader.SetBaseHeight(uint32_t(au->height));
        if (expected && *expected != au->hash_serialized) {
            return Error{Errc::InvalidValue, "--expect-hash " + expected->ToHex() + " contradicts Core's pinned " +
                                                 au->hash_serialized.ToHex() + " for this base block"};
        }
        expected = au->hash_serialized;
    }
    if (!expected) {
        return Error{Errc::InvalidValue, "assumeutxo block hash in snapshot metadata not recognized (" +
                                             res.metadata.base_blockhash.ToHex() +
                                             ") - refusing to load snapshot (give the expected hash_serialized_3)"};
    }

    // On failure what the load wrote goes: the folder too when the load made it, its contents
    // when it was there (empty) before.
    const bool existed = fs::exists(dir, ec);
    std::unique_ptr<CoinsDB> db;
    auto fail = [&](Error e) -> Result<SnapshotLoadResult> {
        db.reset();
        if (!existed) {
            fs::remove_all(dir, ec);
        } else {
            std::vector<fs::path> inside;
            for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) inside.push_back(it->path());
            for (const auto& p : inside) fs::remove_all(p, ec);
        }
        return e;
    };
    CoinsDBOptions dbopt;
    dbopt.policy = options.policy;
    dbopt.cache_bytes = 16 << 20;
    StoreStatus st;
    db = OpenCoinsDB(dir, dbopt, &st);
    if (!db) return fail(Error{Errc::InvalidValue, "cannot create chainstate " + dir.string() + ": " + st.message});

    // Intermediate flushes name a tip that is not the base block (Core flushes with a random hash),
    // so an interrupted load never looks like a complete chainstate.
    uint8_t incomplete[32];
    static constexpr char TAG[] = "ibdkit load-snapshot incomplete";
    Sha256().Write(reinterpret_cast<const uint8_t*>(TAG), sizeof(TAG) - 1).Finalize(incomplete);
    const BlockHash incomplete_tip{uint256(std::span<const uint8_t, 32>(incomplete))};

    {
        // Written as a flush writes the cache (CoinsDB::BatchWrite).
        CoinsLoader loader(*db, options.batch_coins, incomplete_tip);
        OutPoint op;
        Coin coin;
        const uint64_t total = std::max<uint64_t>(1, res.metadata.coins_count);
        while (true) {
            auto more = reader.Next(op, coin);
            if (!more) return fail(more.error());
            if (!*more) break;
            if (StoreStatus ws = loader.Add(op, coin); !ws.ok()) {
                return fail(Error{Errc::Corrupt, "writing the chainstate: " + ws.message});
            }
            if (progress && (reader.coins_read() & 0xffff) == 0) {
                progress(reader.coins_read(), 0.5 * double(reader.coins_read()) / double(total));
            }
        }
        StoreStatus ws = loader.Finish(res.metadata.base_blockhash);
        if (!ws.ok()) return fail(Error{Errc::Corrupt, "writing the chainstate: " + ws.message});
    }

    // Core recomputes the hash from the new chainstate, not from the file.
    auto stats = ComputeUtxoStats(*db, UtxoHashTypes{}, std::nullopt, [&](uint64_t n, double f) {
        if (progress) progress(n, 0.5 + 0.5 * f);
    });
    if (!stats) return fail(stats.error());
    res.stats = *stats;
    if (res.stats.txouts != res.metadata.coins_count) {
        return fail(Error{Errc::Corrupt, "the new chainstate holds " + std::to_string(res.stats.txouts) +
                                             " coins, the snapshot " + std::to_string(res.metadata.coins_count)});
    }
    if (res.stats.hash_serialized != *expected) {
        return fail(Error{Errc::InvalidValue, "Bad snapshot content hash: expected " + expected->ToHex() + ", got " +
                                                  res.stats.hash_serialized.ToHex()});
    }
    (void)RecordChainstateNetwork(dir, ChainTypeName(params.type)); // a hint for later readers only
    return res;
}

} // namespace ibdkit

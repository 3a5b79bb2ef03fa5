#include <ibdkit/replay/replay.h>

#include <ibdkit/coins/coins_cache.h>
#include <ibdkit/coins/coins_db.h>
#include <ibdkit/consensus/check.h>
#include <ibdkit/memory/cleanse.h>
#include <ibdkit/replay/connect.h>
#include <ibdkit/replay/connector.h>
#include <ibdkit/stream/streams.h>
#include <ibdkit/wire/message.h>

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <fstream>
#include <unordered_map>

namespace ibdkit {

namespace {

using Clock = std::chrono::steady_clock;

Error EnvError(std::string msg) { return Error{Errc::Corrupt, std::move(msg)}; }

// Keeps block files open for random reads of records.
class RecordReader {
public:
    RecordReader(const std::vector<std::filesystem::path>& files, const ObfuscationKey& key) : m_files(files), m_key(key)
    {
        m_streams.resize(files.size());
    }
    // Reads the record's bytes into dst (resized to the record size).
    template <typename Stream>
    bool Read(const BlockRecordPos& pos, Stream& dst)
    {
        auto& f = m_streams[pos.file];
        if (!f) f = std::make_unique<std::ifstream>(m_files[pos.file], std::ios::binary);
        dst.resize(pos.size);
        f->seekg(std::streamoff(pos.offset));
        if (!f->read(reinterpret_cast<char*>(dst.data()), std::streamsize(pos.size))) return false;
        XorBytes(std::span<std::byte>(reinterpret_cast<std::byte*>(dst.data()), pos.size), m_key, std::size_t(pos.offset));
        return true;
    }

private:
    const std::vector<std::filesystem::path>& m_files;
    ObfuscationKey m_key;
    std::vector<std::unique_ptr<std::ifstream>> m_streams;
};

struct Scanned {
    ChainParams const* params{nullptr};
    std::vector<std::filesystem::path> files;
    ObfuscationKey key;
    BlockFileScanStats scan;
    ChainOrder order;
    std::vector<uint32_t> times; ///< index 0 = the block before order.blocks[0] when genesis is not a record
    int base_height{0};          ///< height of order.blocks[0]
    bool genesis_is_record{false};
};

Result<Scanned> ScanChain(const ReplayOptions& opts, ChainType chain)
{
    Scanned s;
    s.params = &GetChainParams(chain);
    s.files = ListBlockFiles(opts.blocks_dir);
    if (s.files.empty()) {
        return Error{Errc::InvalidValue, "no blkNNNNN.dat files in " + opts.blocks_dir.string() +
                                             " (point --blocks-dir at a Bitcoin Core blocks directory or a blk file)"};
    }
    const auto key_dir = std::filesystem::is_directory(opts.blocks_dir) ? opts.blocks_dir : opts.blocks_dir.parent_path();
    auto key = ReadXorKey(key_dir);
    if (!key) return key.error();
    s.key = *key;
    const BlockHash genesis = s.params->consensus.hash_genesis_block;
    ChainOrderer orderer(genesis);
    std::unordered_map<BlockHash, uint32_t, Uint256Hasher> time_of;
    auto scan = ScanBlockFiles(s.files, std::span<const uint8_t, 4>(s.params->message_start), s.key,
                               [&](const BlockRecordPos& pos, std::span<const uint8_t> b) {
                                   auto hdr = b.first<80>();
                                   orderer.Add(pos, hdr);
                                   time_of.emplace(BlockHash(HashSha256d(std::span<const uint8_t>(hdr))), ReadLE32(hdr.data() + 68));
                               });
    if (!scan) return scan.error();
    s.scan = *scan;
    s.order = orderer.Finish();
    s.genesis_is_record = !s.order.hashes.empty() && s.order.hashes.front() == genesis;
    s.base_height = s.genesis_is_record ? 0 : 1;
    if (!s.genesis_is_record) s.times.push_back(s.params->genesis.time);
    for (const auto& h : s.order.hashes) s.times.push_back(time_of[h]);
    return s;
}

template <typename Policy>
Result<ReplayResult> RunPipeline(const ReplayOptions& opts, const Scanned& sc, CoinsDB& db, ReplayResult res)
{
    const auto& params = *sc.params;
    const auto& order = sc.order;
    BlockConnector conn(db, params, opts.dbcache_mib << 20);
    CoinsCache& cache = conn.cache();
    RecordReader reader(sc.files, sc.key);
    const int tip_height = sc.base_height + int(order.blocks.size()) - 1;
    // times[] index of the block at height h.
    const auto time_index = [&](int h) { return std::size_t(h - sc.base_height + (sc.genesis_is_record ? 0 : 1)); };
    const auto order_index = [&](int h) { return std::size_t(h - sc.base_height); };

    auto index_of = [&](const BlockHash& h) -> std::optional<int> {
        if (h.IsNull()) return std::nullopt;
        if (!sc.genesis_is_record && h == params.consensus.hash_genesis_block) return 0;
        auto it = std::find(order.hashes.begin(), order.hashes.end(), h);
        if (it == order.hashes.end()) return -2;
        return sc.base_height + int(it - order.hashes.begin());
    };

    // Decodes the block at height h through the policy's buffers. Each block gets a fresh buffer, as
    // each P2P message does in Core, so every policy pays its allocation and free once per block.
    MessageReceiver<Policy> rx(params.message_start);
    std::vector<uint8_t> wire;
    auto load = [&](int h) -> Result<Block> {
        const auto& pos = order.blocks[order_index(h)];
        DataStream<Policy> disk_buf;
        if (!reader.Read(pos, disk_buf)) return EnvError("cannot read block at height " + std::to_string(h));
        if (!opts.via_p2p) {
            auto b = DecodeBlock(std::span<const uint8_t>(UCharCast(disk_buf.data()), disk_buf.size()));
            disk_buf.clear();
            return b;
        }
        // As Core's IBD receives it: the block framed as a P2P message, fed in socket-sized reads.
        wire.clear();
        VectorWriter w(wire, 0);
        WriteMessage(w, params.message_start, "block", std::span<const uint8_t>(UCharCast(disk_buf.data()), disk_buf.size()));
        disk_buf.clear();
        std::span<const uint8_t> in(wire);
        while (!in.empty()) {
            auto chunk = in.first(std::min<std::size_t>(in.size(), 64 * 1024));
            in = in.subspan(chunk.size());
            while (!chunk.empty()) {
                auto r = rx.Feed(chunk);
                if (!r) return r.error();
                if (*r) {
                    auto msg = rx.TakeMessage();
                    return DecodeBlock(std::span<const uint8_t>(UCharCast(msg.payload.data()), msg.payload.size()));
                }
            }
        }
        return Error{Errc::EndOfData, "P2P framing delivered no block"};
    };

    // ---- recovery of an interrupted flush (H marker) ----
    auto needs = db.NeedsReplay();
    if (!needs) return needs.error();
    if (*needs) {
        const auto& range = **needs;
        auto from = index_of(range.old_tip);
        auto to = index_of(range.new_tip);
        if ((from && *from == -2) || !to || *to == -2) {
            return EnvError("chainstate was interrupted mid-flush between blocks that are not in these block files; "
                            "point --blocks-dir at the files it was built from");
        }
        const int start = from ? *from + 1 : sc.base_height;
        for (int h = std::max(start, 1); h <= *to; ++h) {
            auto b = load(h);
            if (!b) return b.error();
            conn.Rollforward(*b, h);
        }
        if (auto st = conn.Flush(range.new_tip); !st.ok()) return EnvError("flush failed: " + st.message);
    }

    // ---- resume after the chainstate's best block ----
    auto best = db.GetBestBlock();
    if (!best) return best.error();
    int next = sc.base_height;
    if (auto bi = index_of(*best)) {
        if (*bi == -2) {
            return EnvError("the chainstate's best block " + best->ToHex() +
                            " is not on the chain in these block files (use another --chainstate or the matching blocks)");
        }
        next = *bi + 1;
        res.height = *bi;
        res.tip = *best;
    }
    if (next == 0) { // the genesis block: its outputs are not spendable and never enter the UTXO set
        cache.SetBestBlock(order.hashes.front());
        res.height = 0;
        res.tip = order.hashes.front();
        next = 1;
    }
    res.start_height = next;
    const int last = std::min(tip_height, opts.stop_height.value_or(tip_height));
    const std::optional<BlockHash> bip34_hash =
        params.consensus.bip34_height >= sc.base_height && params.consensus.bip34_height <= tip_height
            ? std::optional<BlockHash>(order.hashes[order_index(params.consensus.bip34_height)])
            : std::nullopt;

    const uint64_t cleansed_before = CleansedBytes();
    const auto t0 = Clock::now();
    auto last_report = t0;
    auto report = [&](int h) {
        if (!opts.on_progress) return;
        ReplayProgress p;
        p.height = h;
        p.tip_height = last;
        p.blocks = conn.counters().blocks;
        p.txs = conn.counters().txs;
        p.bytes = conn.counters().bytes;
        p.elapsed_s = std::chrono::duration<double>(Clock::now() - t0).count();
        p.cache_bytes = cache.DynamicMemoryUsage();
        p.cache_budget = cache.Budget();
        p.flushes = conn.counters().flushes;
        opts.on_progress(p);
    };
    for (int h = next; h <= last; ++h) {
        if (opts.interrupt && opts.interrupt->load(std::memory_order_relaxed)) {
            res.interrupted = true;
            break;
        }
        const std::size_t size = order.blocks[order_index(h)].size;
        auto block = load(h);
        if (!block) {
            return Error{block.error().code, "block at height " + std::to_string(h) + " does not decode: " + block.error().message};
        }
        ConnectContext ctx;
        ctx.height = h;
        ctx.median_time_past = MedianTimePast(std::span<const uint32_t>(sc.times.data(), time_index(h)));
        if (bip34_hash && h > params.consensus.bip34_height) ctx.bip34_ancestor = bip34_hash;
        if (auto reason = conn.Connect(std::move(*block), ctx, size)) {
            res.reject_reason = *reason;
            res.reject_height = h;
            // The cache may hold part of the failed block: drop it by not flushing. Unflushed good
            // blocks since the last flush are lost too; the next run redoes them.
            break;
        }
        res.height = h;
        res.tip = order.hashes[order_index(h)];
        if (opts.after_block) opts.after_block(h);
        const auto now = Clock::now();
        if (now - last_report > std::chrono::milliseconds(250)) {
            last_report = now;
            report(h);
        }
    }
    if (!res.reject_reason) {
        if (auto st = conn.Flush(); !st.ok()) return EnvError("final flush failed: " + st.message);
    }
    static_cast<ConnectorCounters&>(res) = conn.counters();
    report(res.height);
    res.seconds = std::chrono::duration<double>(Clock::now() - t0).count();
    res.bytes_cleansed = CleansedBytes() - cleansed_before;
    return res;
}

} // namespace

std::optional<ChainType> DetectChain(const std::filesystem::path& blocks_dir)
{
    const auto files = ListBlockFiles(blocks_dir);
    if (files.empty()) return std::nullopt;
    const auto key_dir = std::filesystem::is_directory(blocks_dir) ? blocks_dir : blocks_dir.parent_path();
    auto key = ReadXorKey(key_dir);
    if (!key) return std::nullopt;
    std::ifstream f(files.front(), std::ios::binary);
    std::array<uint8_t, 4> magic{};
    if (!f.read(reinterpret_cast<char*>(magic.data()), 4)) return std::nullopt;
    XorBytes(MakeWritableByteSpan(magic), *key, 0);
    return ChainTypeFromMagic(magic);
}

Result<ReplayResult> Replay(const ReplayOptions& opts)
{
    const auto t_start = Clock::now();
    ReplayResult res;
    std::optional<ChainType> chain = opts.chain ? opts.chain : DetectChain(opts.blocks_dir);
    if (!chain) {
        return Error{Errc::BadMagic, "cannot tell the network of " + opts.blocks_dir.string() +
                                         ": its first record has no known magic (pass --network)"};
    }
    res.chain = *chain;
    auto sc = ScanChain(opts, *chain);
    if (!sc) return sc.error();
    res.scan = sc->scan;
    res.orphans = sc->order.orphans;
    res.stale = sc->order.stale;
    res.duplicates = sc->order.duplicates;
    if (sc->order.blocks.empty()) {
        return Error{Errc::InvalidValue, "no block in " + opts.blocks_dir.string() + " connects to the " +
                                             std::string(ChainTypeName(*chain)) + " genesis block"};
    }

    auto cs = ChainstateHandle::Open(opts.chainstate, opts.policy, opts.dbcache_mib, "ibdkit-replay");
    if (!cs) return cs.error();
    CoinsDB* db = &cs->db();
    const auto& dir = cs->dir();

    auto run = [&]() -> Result<ReplayResult> {
        try {
            return VisitPolicy(opts.policy, [&]<typename P>(P) { return RunPipeline<P>(opts, *sc, *db, res); });
        } catch (const StoreError& e) { // a LevelDB failure inside the cache (disk full, corruption)
            return EnvError(std::string("chainstate ") + dir.string() + ": " + e.what());
        } catch (const DecodeError& e) { // a corrupt coin record read back from the chainstate
            return Error{e.code(), std::string("chainstate ") + dir.string() + ": " + e.what()};
        }
    }();
    if (!run) return run.error();
    res = std::move(*run);
    if (res.height >= 0) {
        auto stats = ComputeUtxoStats(*db, uint32_t(res.height));
        if (!stats) return stats.error();
        res.utxo = *stats;
    }
    res.total_seconds = std::chrono::duration<double>(Clock::now() - t_start).count();
    return res;
}

} // namespace ibdkit

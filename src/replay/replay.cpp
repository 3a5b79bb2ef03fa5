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

template <typename Policy>
Result<ReplayResult> RunPipeline(const ReplayOptions& opts, const LocatedChain& sc, CoinsDB& db, ReplayResult res)
{
    const auto& params = GetChainParams(sc.chain);
    const auto& order = sc.order;
    BlockConnector conn(db, params, opts.dbcache_mib << 20);
    CoinsCache& cache = conn.cache();
    BlockFileReader reader(sc.files, sc.key);
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
        if (auto r = reader.Read(pos, disk_buf); !r) return Error{r.error().code, "cannot read block at height " + std::to_string(h) + ": " + r.error().message};
        // The bytes must be the block the index or the scan named (a stale index can point elsewhere).
        if (disk_buf.size() < 80 || BlockHash(HashSha256d(std::span<const std::byte>(disk_buf.data(), 80))) != order.hashes[order_index(h)]) {
            return Error{Errc::Corrupt, "the record at height " + std::to_string(h) + " is not block " + order.hashes[order_index(h)].ToHex()};
        }
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
    res.bytes_read = reader.bytes_read();
    return res;
}

} // namespace

std::optional<ChainType> DetectChain(const std::filesystem::path& blocks_dir) { return DetectChainFromBlockFiles(blocks_dir); }

Result<ReplayResult> Replay(const ReplayOptions& opts)
{
    const auto t_start = Clock::now();
    ReplayResult res;
    if (!opts.datadir.empty() && !opts.blocks_dir.empty()) {
        return Error{Errc::InvalidValue, "give either a data directory or a blocks directory, not both"};
    }
    auto sc = opts.datadir.empty() ? LocateFromBlocksDir(opts.blocks_dir, opts.chain) : LocateFromDatadir(opts.datadir, opts.chain);
    if (!sc) return sc.error();
    res.chain = sc->chain;
    res.scan = sc->scan;
    res.orphans = sc->order.orphans;
    res.stale = sc->order.stale;
    res.duplicates = sc->order.duplicates;
    if (sc->order.blocks.empty()) {
        return Error{Errc::InvalidValue, "no block in " + (opts.datadir.empty() ? opts.blocks_dir : sc->blocks_dir).string() + " connects to the " +
                                             std::string(ChainTypeName(sc->chain)) + " genesis block"};
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

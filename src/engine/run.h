// src/engine/run.h — the engine's run loop over a block source, and the pipeline that spreads
// decoding and checking over threads (private to the engine; the public view is engine/engine.h).
//
//   source thread          worker threads (N-1)              calling thread + helpers (N-2)
//   Produce(): raw bytes → DecodeBlock, txids/wtxids,     → blocks in chain order: ConnectBlock,
//   in a DataStream<P>     CheckBlock → ReadyBlock           its cache work one task per shard;
//   (decodes 1 in N-1      prevout reads from the         ←  flush within the budget, progress;
//   itself; helps with     chainstate (prefetch)              the missing prevouts of the next
//   the shard tasks)                                          decoded blocks
//
// The source thread decodes one block in every N - 1 itself, straight after reading it, while its
// bytes are still in that core's cache; with two threads, every block. Bytes read on one core and
// decoded on another cost more: parsing and sigop counting took 46% more CPU samples than on one
// thread, 13% more when decoded where they were read (docs/benchmarks.md). The workers take the
// other blocks, and the prefetch reads first.
//
// The source thread is also a helper of the connecting thread's shard tasks (TaskPool::Help):
// after each block it decodes, and instead of sleeping while the pipeline is full. The pool has
// N - 2 threads of its own beside it, so with two threads only the source and the connecting
// thread compete for the two cores: a third thread there preempted the connecting thread, whose
// work every block waits for, and the source lost its core to it (docs/benchmarks.md).
//
// Blocks in flight (queued, being decoded, decoded and waiting for their turn) are bounded by a
// byte budget and a count, so a fast source cannot run ahead of the connector by more than a few
// MiB. A decoded block holds about 3.5 times its raw bytes (every witness item and script is an
// allocation of its own), so this is part of the fixed memory beside the cache: at 4 MiB of raw
// bytes about 15 MiB, where 32 MiB cost ~110 MiB of peak RSS and ran slower (docs/benchmarks.md).
// With one thread the source's emit decodes, checks and connects in place.
//
// Prefetch: once the chainstate holds coins on disk (it was resumed, or the cache has flushed),
// the thread that decodes a block lists its prevouts that the block itself does not create; the
// connecting thread looks at the next few decoded blocks, keeps those its cache does not hold, and
// workers read them from the database while it connects; the coins are added to the
// cache just before their block is connected. Only the connecting thread flushes, so a read is
// used only if no flush happened between asking for it and using it (the flush count is the
// epoch); otherwise it is dropped and ConnectBlock reads the coin itself.
#pragma once

#include <ibdkit/blockfile/undo_file.h>
#include <ibdkit/coins/coins_db.h>
#include <ibdkit/connect/disconnect.h>
#include <ibdkit/consensus/check.h>
#include <ibdkit/consensus/header_check.h>
#include <ibdkit/engine/connector.h>
#include <ibdkit/engine/engine.h>
#include <ibdkit/memory/cleanse.h>
#include <ibdkit/primitives/block.h>
#include <ibdkit/stream/streams.h>
#include <ibdkit/wire/protocol.h>

#include "common/task_pool.h"

#include <atomic>
#include <cassert>
#include <chrono>
#include <climits>
#include <condition_variable>
#include <ctime>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <unordered_set>
#include <vector>

namespace ibdkit::engine {

using Clock = std::chrono::steady_clock;

inline Error EnvError(std::string msg) { return Error{Errc::Corrupt, std::move(msg)}; }

/// A block as a source delivers it: its place in the chain, what ConnectBlock needs to know of its
/// ancestors (the engine adds their times and bits, ctx.prev), and its bytes in the policy's
/// buffer (as a node holds a received message).
template <typename Policy>
struct RawBlock {
    int height{0};
    BlockHash hash;
    ConnectContext ctx;
    DataStream<Policy> bytes;
    /// A P2P `block` message: bytes after the block are ignored, as Core's handler does (a block
    /// file's record must be exactly one block).
    bool message{false};
};

/// Feeds the engine blocks in height order. The engine calls one method at a time; Produce may run
/// on a thread of its own, and nothing else is called while it runs except TipHeight().
template <typename Policy>
class BlockSource {
public:
    /// Takes the next block; returns false when the engine wants no more (stop producing).
    using Emit = std::function<bool(RawBlock<Policy>&&)>;

    virtual ~BlockSource() = default;
    /// Called first, with the chainstate's best block (null for a new chainstate): a peer makes
    /// its handshake and syncs headers here. An environment failure is an error; a failure of the
    /// source itself (a misbehaving peer) is recorded by the source and Failed() says so.
    virtual std::optional<Error> Prepare(const BlockHash& best) = 0;
    /// The source failed; the run ends (with a clean flush) and the source's result says why.
    virtual bool Failed() const = 0;
    /// Height of `hash` on the source's chain (the genesis block is height 0).
    virtual std::optional<int> HeightOf(const BlockHash& hash) const = 0;
    /// Time and bits of the header at `height` on the source's chain, for every height up to the
    /// chainstate's best block: the ancestry the engine checks the next headers against (called
    /// after Prepare and recovery, before Produce).
    virtual HeaderInfo HeaderAt(int height) const = 0;
    /// The highest height the run is expected to reach, as far as the source knows now (progress
    /// only; a peer may deliver beyond it). Safe to call while Produce runs.
    virtual int TipHeight() const = 0;
    /// Delivers heights [from, to] in order through `emit` until emit returns false, the source
    /// has nothing more, or it fails (recorded as for Prepare). Returns an environment error.
    virtual std::optional<Error> Produce(int from, int to, const Emit& emit) = 0;
    /// A delivered block's bytes did not decode: an environment error (block files) or, recorded
    /// as a source failure, nullopt (a peer sent garbage).
    virtual std::optional<Error> Undecodable(int height, const Error& e) = 0;
    /// The error text for a chainstate whose best block is not on the source's chain.
    virtual std::string NotOurChain(const BlockHash& best) const = 0;
    /// The error text for a chainstate left mid-flush between blocks the source does not have.
    virtual std::string NotOurRecovery() const = 0;

    /// A branch the source left in Prepare for one with more work: the chainstate's blocks above the
    /// fork, tip first, to be disconnected with their undo data before the new branch is connected.
    struct StaleBranch {
        std::vector<BlockHash> hashes; ///< tip first
        int tip_height{0};             ///< height of hashes.front(); the fork is tip_height - hashes.size()
    };
    virtual std::optional<StaleBranch> Reorganisation() const { return std::nullopt; }
    /// Delivers the stale branch's blocks, tip first, through `emit` (heights and hashes set) until
    /// emit returns false or the source fails (recorded as for Produce).
    virtual std::optional<Error> ProduceStale(const StaleBranch&, const Emit&) { return EnvError("this source has no stale blocks"); }
};

/// A block after the workers: decoded and through CheckBlock, or why not.
struct ReadyBlock {
    uint64_t seq{0};                     ///< order of emission (pipeline only)
    int height{0};
    BlockHash hash;
    ConnectContext ctx;
    std::size_t size{0};
    BlockHeader header;                  ///< set when the block decoded
    std::optional<CheckedBlock> block;   ///< set when the block decoded and passed CheckBlock
    /// Made by the pipeline thread that decoded the block (else empty: ConnectBlock plans it)...
    ConnectPlan plan;
    /// ...and so are the prevouts that no transaction of the block creates, prefetch's candidates,
    /// once the engine prefetches (Pipeline::StartPrefetch).
    std::vector<OutPoint> outside_prevouts;
    bool outside_listed{false};
    std::string reject_reason;           ///< CheckBlock's reason when it did not pass
    bool header_invalid{false};          ///< CheckBlock failed on the header itself (high-hash)
    std::optional<Error> decode_error;   ///< the bytes do not decode
};

/// Fills rb.plan and, with `list_outside`, rb.outside_prevouts for a block that passed CheckBlock.
inline void PlanAhead(ReadyBlock& rb, bool list_outside)
{
    const Block& block = rb.block->block();
    rb.plan.Assign(block);
    if (!list_outside) return;
    rb.outside_listed = true;
    thread_local std::unordered_set<Txid, Uint256Hasher> own;
    own.clear();
    for (const auto& tx : block.vtx) own.insert(tx.GetHash());
    rb.outside_prevouts.reserve(rb.plan.Inputs());
    for (const auto& tx : block.vtx) {
        if (tx.IsCoinBase()) continue;
        for (const auto& in : tx.vin()) {
            if (!own.contains(in.prevout.hash)) rb.outside_prevouts.push_back(in.prevout);
        }
    }
}

/// Decodes (computing every txid and wtxid) and checks a raw block; its buffer is freed here, as a
/// node frees a message once it has decoded it. With `plan_ahead`, a block that passed is planned
/// too (PlanAhead), on this thread.
template <typename Policy>
ReadyBlock DecodeAndCheck(RawBlock<Policy>&& raw, const ConsensusParams& params, bool plan_ahead = false,
                          bool list_outside = false)
{
    ReadyBlock rb;
    rb.height = raw.height;
    rb.hash = raw.hash;
    rb.ctx = raw.ctx;
    rb.size = raw.bytes.size();
    const std::span<const uint8_t> bytes(UCharCast(raw.bytes.data()), raw.bytes.size());
    auto block = DecodeBlock(bytes);
    if (!block && raw.message && block.error().code == Errc::TrailingData) block = DecodeBlockMessage(bytes);
    { DataStream<Policy> release(std::move(raw.bytes)); }
    if (!block) {
        rb.decode_error = block.error();
        return rb;
    }
    rb.header = block->header();
    BlockValidationState state;
    rb.block = CheckBlock(std::move(*block), state, params);
    if (!rb.block) {
        rb.reject_reason = state.GetRejectReason();
        rb.header_invalid = state.GetResult() == BlockValidationResult::BLOCK_INVALID_HEADER;
    } else if (plan_ahead) {
        PlanAhead(rb, list_outside);
    }
    return rb;
}

/// The threads behind the engine when it has more than one: a producer running the source and
/// `workers` decoding and checking, the producer one block in `workers` (above). Pop() hands
/// blocks out in the order the source emitted them.
template <typename Policy>
class Pipeline {
public:
    using Produce = std::function<std::optional<Error>(const typename BlockSource<Policy>::Emit&)>;
    /// Coins read ahead for one block, and the epoch (flush count) they were asked for in.
    struct Prefetched {
        uint64_t epoch{0};
        std::vector<std::pair<OutPoint, Coin>> coins;
    };
    /// Bytes of raw blocks in flight before the producer waits...
    static constexpr std::size_t MAX_BYTES_IN_FLIGHT = std::size_t(4) << 20;
    /// ...unless fewer blocks than this are in flight, so that a worker decodes the next block
    /// while the connector connects this one however large blocks are (4 MB each at most).
    static constexpr std::size_t MIN_BLOCKS_IN_FLIGHT = 2;

    /// `db`: where prefetch reads coins (may be null: no prefetch). `tasks` (may be null): the
    /// connecting thread's task sets, which the source thread helps with between blocks and while
    /// it waits for room (set before Start; it must outlive the pipeline).
    Pipeline(const ConsensusParams& params, unsigned workers, const CoinsDB* db, TaskPool* tasks = nullptr)
        : m_params(params), m_db(db), m_tasks(tasks), m_max_count(8 + 8 * std::size_t(workers)), m_decoders(std::max(1u, workers))
    {
        if (m_tasks) {
            m_tasks->OnPost([this] {
                if (!m_producer_idle.load()) return;
                { std::lock_guard lock(m_mutex); } // the producer is waiting now, or will see the set
                m_space.notify_all();
            });
        }
        m_workers.reserve(workers);
        for (unsigned i = 0; i < workers; ++i) m_workers.emplace_back([this] { Work(); });
    }
    Pipeline(const Pipeline&) = delete;
    Pipeline& operator=(const Pipeline&) = delete;
    ~Pipeline()
    {
        (void)Stop();
        if (m_tasks) m_tasks->OnPost({});
    }

    /// Runs `produce(emit)` on a thread of its own.
    void Start(Produce produce)
    {
        m_producer = std::thread([this, produce = std::move(produce)] {
            const uint64_t cleansed = CleansedBytes();
            std::optional<Error> err;
            try {
                err = produce([this](RawBlock<Policy>&& raw) { return Push(std::move(raw)); });
            } catch (const std::exception& e) {
                err = EnvError(std::string("block source failed: ") + e.what());
            }
            m_cleansed += CleansedBytes() - cleansed;
            std::lock_guard lock(m_mutex);
            m_producer_error = std::move(err);
            m_producer_done = true;
            m_work.notify_all();
            m_ready_cv.notify_all();
        });
    }

    /// The next block in emission order; nullopt once the producer finished and every block it
    /// emitted was handed out.
    std::optional<ReadyBlock> Pop()
    {
        std::unique_lock lock(m_mutex);
        m_ready_cv.wait(lock, [&] {
            return m_stop || m_ready.contains(m_next_pop) || (m_producer_done && m_next_pop == m_next_push);
        });
        auto it = m_ready.find(m_next_pop);
        if (m_stop || it == m_ready.end()) return std::nullopt;
        ReadyBlock rb = std::move(it->second);
        m_ready.erase(it);
        ++m_next_pop;
        m_bytes_in_flight -= rb.size;
        const bool space = LowWater();
        lock.unlock();
        if (space) m_space.notify_all();
        return rb;
    }

    /// Decoded blocks waiting behind the last one popped, from emission number `from` on, as long
    /// as they are contiguous, at most `max`. The pointers stay valid until those blocks are popped
    /// (only Pop removes them, and only the caller pops).
    std::vector<const ReadyBlock*> Peek(uint64_t from, std::size_t max)
    {
        std::vector<const ReadyBlock*> out;
        std::lock_guard lock(m_mutex);
        for (uint64_t seq = std::max(from, m_next_pop.load()); out.size() < max; ++seq) {
            auto it = m_ready.find(seq);
            if (it == m_ready.end()) break;
            out.push_back(&it->second);
        }
        return out;
    }

    /// Asks the workers to read `outpoints` (the prevouts block `seq` will spend that the cache does
    /// not hold) from the database, ahead of the block's decoding work.
    void Prefetch(uint64_t seq, uint64_t epoch, std::vector<OutPoint> outpoints)
    {
        if (!m_db || outpoints.empty()) return;
        {
            std::lock_guard lock(m_mutex);
            m_prefetch_jobs.push_back({seq, epoch, std::move(outpoints)});
        }
        m_work.notify_one();
    }

    /// From now on the decoding threads list each block's outside prevouts
    /// (ReadyBlock::outside_prevouts) for Prefetch.
    void StartPrefetch() noexcept { m_prefetching.store(true, std::memory_order_relaxed); }

    /// The coins read ahead for block `seq` (just popped), if the workers finished them.
    std::optional<Prefetched> TakePrefetched(uint64_t seq)
    {
        std::lock_guard lock(m_mutex);
        auto it = m_prefetched.find(seq);
        if (it == m_prefetched.end()) return std::nullopt;
        Prefetched p = std::move(it->second);
        m_prefetched.erase(it);
        return p;
    }

    /// Stops the producer (its next emit returns false) and the workers, joins them, and returns
    /// the producer's error, if any.
    std::optional<Error> Stop()
    {
        {
            std::lock_guard lock(m_mutex);
            m_stop = true;
            m_space.notify_all();
            m_work.notify_all();
            m_ready_cv.notify_all();
        }
        if (m_producer.joinable()) m_producer.join();
        for (auto& w : m_workers) {
            if (w.joinable()) w.join();
        }
        std::lock_guard lock(m_mutex);
        return m_producer_error;
    }

    /// Bytes cleansed by the policy's frees on the pipeline's threads (complete after Stop()).
    uint64_t Cleansed() const noexcept { return m_cleansed.load(); }

private:
    /// Whether the pipeline has drained to half its bounds (or below its minimum of blocks): a
    /// producer that found it full waits for this, then refills it in one go, rather than waking
    /// up for every block the connector takes.
    bool LowWater() const
    {
        const std::size_t blocks = m_next_push - m_next_pop;
        return blocks < MIN_BLOCKS_IN_FLIGHT || (m_bytes_in_flight <= MAX_BYTES_IN_FLIGHT / 2 && blocks <= m_max_count / 2);
    }

    bool Push(RawBlock<Policy>&& raw)
    {
        const std::size_t size = raw.bytes.size();
        std::unique_lock lock(m_mutex);
        auto fits = [&] {
            const std::size_t blocks = m_next_push - m_next_pop;
            return blocks < MIN_BLOCKS_IN_FLIGHT || (m_bytes_in_flight + size <= MAX_BYTES_IN_FLIGHT && blocks < m_max_count);
        };
        // Full: help the connecting thread with its task sets until there is room.
        while (!fits()) {
            m_producer_idle.store(true);
            m_space.wait(lock, [&] { return m_stop || (LowWater() && fits()) || (m_tasks && m_tasks->Pending()); });
            m_producer_idle.store(false);
            if (m_stop || (LowWater() && fits())) break;
            lock.unlock();
            m_tasks->Help();
            lock.lock();
        }
        if (m_stop) return false;
        m_bytes_in_flight += size;
        const uint64_t seq = m_next_push++;
        if (seq % m_decoders == 0) { // this thread's share (all of them with one worker)
            lock.unlock();
            Decode(seq, std::move(raw));
            if (m_tasks && m_tasks->Pending()) m_tasks->Help();
            return true;
        }
        m_input.emplace_back(seq, std::move(raw));
        lock.unlock();
        m_work.notify_one();
        return true;
    }

    /// Decodes and checks block `seq` and puts it with the decoded ones (m_mutex not held).
    void Decode(uint64_t seq, RawBlock<Policy>&& raw)
    {
        ReadyBlock rb = DecodeAndCheck(std::move(raw), m_params, /*plan_ahead=*/true, m_prefetching.load(std::memory_order_relaxed));
        rb.seq = seq;
        bool next;
        {
            std::lock_guard lock(m_mutex);
            m_ready.emplace(seq, std::move(rb));
            next = seq == m_next_pop;
        }
        if (next) m_ready_cv.notify_all();
    }

    struct PrefetchJob {
        uint64_t seq{0};
        uint64_t epoch{0};
        std::vector<OutPoint> outpoints;
    };

    void Work()
    {
        const uint64_t cleansed = CleansedBytes();
        std::unique_lock lock(m_mutex);
        for (;;) {
            m_work.wait(lock, [&] { return m_stop || !m_prefetch_jobs.empty() || !m_input.empty() || m_producer_done; });
            if (m_stop) break;
            if (!m_prefetch_jobs.empty()) { // the next blocks to connect wait for these: first
                PrefetchJob job = std::move(m_prefetch_jobs.front());
                m_prefetch_jobs.pop_front();
                // A block already handed out would drop its reads (TakePrefetched is past): skip
                // them, and stop a job whose block is handed out while it runs, so the worker's
                // time goes to blocks still to come.
                if (job.seq < m_next_pop) continue;
                lock.unlock();
                Prefetched got;
                got.epoch = job.epoch;
                try {
                    for (std::size_t i = 0; i < job.outpoints.size(); ++i) {
                        if (i % 32 == 0 && m_next_pop.load(std::memory_order_relaxed) > job.seq) break;
                        const OutPoint& op = job.outpoints[i];
                        auto coin = m_db->GetCoin(op);
                        // A corrupt record is left for ConnectBlock's own read to report.
                        if (coin && *coin) got.coins.emplace_back(op, std::move(**coin));
                    }
                } catch (const std::exception&) {
                    // A database failure: ConnectBlock's own read meets it again and reports it.
                }
                lock.lock();
                if (job.seq >= m_next_pop) m_prefetched.emplace(job.seq, std::move(got));
                continue;
            }
            if (m_input.empty() && m_producer_done) break;
            auto [seq, raw] = std::move(m_input.front());
            m_input.pop_front();
            lock.unlock();
            Decode(seq, std::move(raw));
            lock.lock();
        }
        lock.unlock();
        m_cleansed += CleansedBytes() - cleansed;
    }

    const ConsensusParams& m_params;
    const CoinsDB* m_db;
    TaskPool* const m_tasks;
    /// The producer is about to wait, or waits, for room (seen by the task pool's OnPost).
    std::atomic<bool> m_producer_idle{false};
    const std::size_t m_max_count;
    const unsigned m_decoders; ///< the producer decodes block numbers that are multiples of this
    std::mutex m_mutex;
    std::condition_variable m_space, m_work, m_ready_cv;
    std::deque<std::pair<uint64_t, RawBlock<Policy>>> m_input;
    std::map<uint64_t, ReadyBlock> m_ready;
    std::deque<PrefetchJob> m_prefetch_jobs;
    std::map<uint64_t, Prefetched> m_prefetched;
    uint64_t m_next_push{0};
    /// Changed under m_mutex; atomic so that a running prefetch job can see, without the mutex,
    /// that its block was handed out.
    std::atomic<uint64_t> m_next_pop{0};
    std::size_t m_bytes_in_flight{0};
    std::atomic<bool> m_prefetching{false};
    bool m_stop{false}, m_producer_done{false};
    std::optional<Error> m_producer_error;
    std::atomic<uint64_t> m_cleansed{0};
    std::thread m_producer;
    std::vector<std::thread> m_workers;
};

/// Where the connect loop stood as it went: at most ~2·MAX points, evenly spaced in bytes (the
/// spacing doubles whenever the list fills, so memory stays fixed however long the chain), from
/// which the run's throughput per tenth of its bytes is read at the end. The tenths end with the
/// last block connected: the final flush, which writes what every tenth left in the cache, is
/// not the last tenth's (EngineResult::final_flush_seconds).
class ThroughputLog {
public:
    /// After each block connected: its height, the bytes and seconds of the run so far.
    void Add(int height, uint64_t bytes, double seconds)
    {
        if (m_points.empty()) m_points.push_back({height - 1, 0, 0}); // the start
        m_last = {height, bytes, seconds};
        if (bytes < m_next) return;
        m_points.push_back({height, bytes, seconds});
        if (m_points.size() >= 2 * MAX) {
            std::vector<Point> kept; // every other point, keeping the start
            for (std::size_t i = 0; i < m_points.size(); i += 2) kept.push_back(m_points[i]);
            m_points = std::move(kept);
            m_step *= 2;
        }
        m_next = bytes + m_step;
    }
    /// Ten slices of equal bytes, up to the last block added.
    std::vector<ThroughputSlice> Deciles() const
    {
        std::vector<ThroughputSlice> out;
        const uint64_t bytes = m_last.bytes;
        if (m_points.empty() || bytes == 0) return out;
        std::vector<Point> pts = m_points;
        if (pts.back().bytes != bytes) pts.push_back(m_last);
        std::size_t prev = 0;
        for (int d = 1; d <= 10; ++d) {
            const uint64_t target = bytes * uint64_t(d) / 10;
            std::size_t i = prev;
            while (i + 1 < pts.size() && pts[i].bytes < target) ++i;
            if (i == prev) continue; // a slice inside one block: merged into the next
            const Point& a = pts[prev];
            const Point& b = pts[i];
            const double dt = std::max(b.seconds - a.seconds, 1e-9);
            out.push_back({a.height + 1, b.height, double(b.height - a.height) / dt, double(b.bytes - a.bytes) / 1e6 / dt});
            prev = i;
        }
        return out;
    }

private:
    struct Point {
        int height;
        uint64_t bytes;
        double seconds;
    };
    static constexpr std::size_t MAX = 1024;
    std::vector<Point> m_points;
    Point m_last{};
    uint64_t m_step{1 << 20};
    uint64_t m_next{0};
};

/// Runs the engine over `src` into `cs`, filling `res` (whose source-specific fields the caller
/// set). Database failures (StoreError, a corrupt coin) become errors naming the chainstate.
/// Decoded blocks ahead of the one being connected whose missing prevouts are read ahead.
inline constexpr std::size_t PREFETCH_BLOCKS = 4;

template <typename Policy>
Result<EngineResult> RunEngine(const EngineOptions& o, const ChainParams& params, BlockSource<Policy>& src,
                               ChainstateHandle& cs, EngineResult res)
{
    const auto t_start = Clock::now();
    const uint64_t cleansed_before = CleansedBytes();
    uint64_t cleansed_elsewhere = 0;
    const unsigned threads = ResolveThreads(o.threads);
    res.threads = threads;
    CoinsDB& db = cs.db();
    db.SetFlushThreads(threads);
    if (o.db_batch_bytes) db.SetBatchWriteBytes(o.db_batch_bytes);
    auto interrupted = [&] { return o.interrupt && o.interrupt->load(std::memory_order_relaxed); };

    auto body = [&]() -> std::optional<Error> {
        std::unique_ptr<UndoFileWriter> undo;
        if (!o.undo_dir.empty()) {
            auto w = UndoFileWriter::Open(o.undo_dir, params.message_start);
            if (!w) return w.error();
            undo = std::move(*w);
        }
        BlockConnector conn(db, params, SplitDbCache(o.dbcache_mib << 20).coins_bytes);
        conn.SetUndoWriter(undo.get());
        auto needs = db.NeedsReplay();
        if (!needs) return needs.error();
        auto best = db.GetBestBlock();
        if (!best) return best.error();
        if (auto e = src.Prepare(*best)) return e;
        if (src.Failed() || interrupted()) return std::nullopt;

        // ---- recovery of an interrupted flush: roll the blocks between the tips forward ----
        if (*needs) {
            const auto& range = **needs;
            auto from = range.old_tip.IsNull() ? std::optional<int>(0) : src.HeightOf(range.old_tip);
            auto to = src.HeightOf(range.new_tip);
            if (!from || !to) return EnvError(src.NotOurRecovery());
            int next = std::max(*from + 1, 1);
            std::optional<Error> undecodable;
            auto e = src.Produce(next, *to, [&](RawBlock<Policy>&& raw) {
                auto block = DecodeBlock(std::span<const uint8_t>(UCharCast(raw.bytes.data()), raw.bytes.size()));
                if (!block) {
                    undecodable = src.Undecodable(raw.height, block.error());
                    return false;
                }
                conn.Rollforward(*block, raw.height);
                ++next;
                return true;
            });
            if (e) return e;
            if (undecodable) return undecodable;
            if (next <= *to) return std::nullopt; // failed or interrupted: the chainstate keeps its H marker
            if (auto st = conn.Flush(range.new_tip); !st.ok()) return EnvError("flush after recovery failed: " + st.message);
            best = db.GetBestBlock();
            if (!best) return best.error();
        }

        // ---- a reorganisation below the tip: disconnect the stale branch with its undo data ----
        if (auto reorg = src.Reorganisation(); reorg && !reorg->hashes.empty() && !best->IsNull() && *best == reorg->hashes.front()) {
            if (!undo) {
                return EnvError("reorganising below the chainstate's tip needs the undo data of the blocks above the fork: "
                                "give the --undo directory the chainstate was built with");
            }
            // Every stale block's record must be there before anything is fetched or changed.
            for (std::size_t i = 0; i < reorg->hashes.size(); ++i) {
                auto pos = undo->Find(reorg->hashes[i]);
                if (!pos) return pos.error();
                if (!*pos) {
                    return EnvError("no undo data for block " + reorg->hashes[i].ToHex() + " at height " +
                                    std::to_string(reorg->tip_height - int(i)) + " in " + o.undo_dir.string() +
                                    ": it was connected without this --undo directory, so the chainstate cannot be reorganised below it");
                }
            }
            UndoFileReader rev(o.undo_dir, ObfuscationKey{}, params.message_start);
            std::optional<Error> failure;
            uint64_t done = 0;
            auto e = src.ProduceStale(*reorg, [&](RawBlock<Policy>&& raw) {
                const std::span<const uint8_t> bytes(UCharCast(raw.bytes.data()), raw.bytes.size());
                auto block = raw.message ? DecodeBlockMessage(bytes) : DecodeBlock(bytes);
                if (!block || block->GetHash() != raw.hash) {
                    failure = EnvError("stale block " + raw.hash.ToHex() + " at height " + std::to_string(raw.height) +
                                       (block ? " came back as another block" : " does not decode: " + block.error().message));
                    return false;
                }
                auto pos = undo->Find(raw.hash);
                if (!pos || !*pos) {
                    failure = EnvError("no undo data for block " + raw.hash.ToHex() + " at height " + std::to_string(raw.height) + " in " +
                                       o.undo_dir.string() + (pos ? ": it was connected without --undo" : ": " + pos.error().message));
                    return false;
                }
                auto u = rev.Read((*pos)->file, (*pos)->pos, block->hash_prev_block);
                if (!u) {
                    failure = EnvError("undo data of block " + raw.hash.ToHex() + ": " + u.error().message);
                    return false;
                }
                std::string why;
                const auto r = DisconnectBlock(*block, raw.height, raw.hash, std::move(*u), conn.cache(), &why);
                if (r != DisconnectResult::OK) {
                    failure = EnvError("DisconnectBlock of " + raw.hash.ToHex() + " at height " + std::to_string(raw.height) +
                                       (r == DisconnectResult::UNCLEAN ? " was unclean: the chainstate does not match the block" : " failed: " + why));
                    return false;
                }
                ++done;
                return !interrupted();
            });
            if (e) return e;
            if (failure) return failure;
            // Interrupted or the peer failed part way: the cache is dropped (not flushed), the
            // chainstate keeps its old tip and the next run starts the reorganisation again.
            if (done < reorg->hashes.size()) return std::nullopt;
            if (auto st = conn.Flush(); !st.ok()) return EnvError("flush after disconnecting failed: " + st.message);
            res.blocks_disconnected = done;
            res.reorg_fork_height = reorg->tip_height - int(reorg->hashes.size());
            best = db.GetBestBlock();
            if (!best) return best.error();
        }

        // ---- resume after the chainstate's best block; a new one starts after the genesis ----
        int next = 1;
        if (best->IsNull()) {
            conn.cache().SetBestBlock(params.consensus.hash_genesis_block);
            res.height = 0;
            res.tip = params.consensus.hash_genesis_block;
        } else {
            auto h = src.HeightOf(*best);
            if (!h) return EnvError(src.NotOurChain(*best));
            res.height = *h;
            res.tip = *best;
            next = *h + 1;
        }
        res.start_height = next;
        const int last = o.stop_height.value_or(INT_MAX);

        // ---- the (time, bits) of every block below the next one: the chain's headers up to the
        // best block, then each block as it connects. Headers are checked against them, and
        // ConnectBlock reads median times past from them (BIP113, BIP68). ----
        std::vector<HeaderInfo> ancestry;
        for (int h = 0; h < next; ++h) ancestry.push_back(src.HeaderAt(h));

        // ---- connect ----
        const auto t0 = Clock::now();
        auto last_report = t0;
        auto report = [&](bool force, bool flushing = false) {
            if (!o.on_progress) return;
            const auto now = Clock::now();
            if (!force && now - last_report < std::chrono::milliseconds(250)) return;
            last_report = now;
            EngineProgress p;
            p.height = res.height;
            p.tip_height = std::min(src.TipHeight(), last);
            p.blocks = conn.counters().blocks;
            p.txs = conn.counters().txs;
            p.bytes = conn.counters().bytes;
            p.elapsed_s = std::chrono::duration<double>(now - t0).count();
            p.cache_bytes = conn.cache().DynamicMemoryUsage();
            p.cache_budget = conn.cache().Budget();
            p.flushes = conn.counters().flushes;
            p.flushing = flushing;
            o.on_progress(p);
        };
        // A flush stops the blocks for seconds (minutes at mainnet scale): say so.
        conn.OnFlush([&] { report(true, true); });
        ThroughputLog tlog;
        std::optional<std::pair<int, Error>> undecodable;
        // Connects one block; false ends the run.
        auto connect = [&](ReadyBlock& rb) {
            if (rb.decode_error) {
                undecodable.emplace(rb.height, *rb.decode_error);
                return false;
            }
            // In Core's order (AcceptBlock): the header's proof of work, its contextual rules on top
            // of its ancestors (now: the local clock), then CheckBlock's other rules, then connecting.
            assert(std::size_t(rb.height) == ancestry.size() && "a source delivers heights in order");
            const HeaderAncestry prev{0, std::span<const HeaderInfo>(ancestry)};
            std::optional<std::string> reason;
            BlockValidationState header_state;
            if (rb.header_invalid) {
                reason = rb.reject_reason;
            } else if (!ContextualCheckBlockHeader(rb.header, prev, params.consensus, int64_t(std::time(nullptr)), header_state)) {
                reason = header_state.GetRejectReason();
            } else if (!rb.block) {
                reason = rb.reject_reason;
            } else {
                rb.ctx.prev = prev;
                reason = conn.Connect(*rb.block, rb.ctx, rb.size, rb.plan.Transactions() ? &rb.plan : nullptr);
            }
            if (reason) {
                // The cache may hold part of the block: it is dropped by not flushing. Good blocks
                // since the last flush are lost too; the next run redoes them.
                res.reject_reason = std::move(reason);
                res.reject_height = rb.height;
                return false;
            }
            ancestry.push_back(HeaderInfo{rb.header.time, rb.header.bits});
            res.height = rb.height;
            res.tip = rb.hash;
            tlog.Add(rb.height, conn.counters().bytes, std::chrono::duration<double>(Clock::now() - t0).count());
            if (o.after_block) o.after_block(rb.height);
            report(false);
            return !interrupted();
        };
        std::optional<Error> produce_error;
        if (next <= last && !interrupted()) {
            if (threads <= 1) {
                produce_error = src.Produce(next, last, [&](RawBlock<Policy>&& raw) {
                    ReadyBlock rb = DecodeAndCheck(std::move(raw), params.consensus);
                    return connect(rb);
                });
            } else {
                // The cache work of each block (ConnectBlock's lookups, spends and adds) is spread
                // over this thread, the source thread (between its blocks) and threads - 2 helpers,
                // one task per shard of the cache.
                TaskPool helpers(threads - 2);
                const TaskRunner runner = [&helpers](std::size_t n, const TaskPool::Task& task) { helpers.Run(n, task); };
                conn.SetTaskRunner(&runner);
                Pipeline<Policy> pipe(params.consensus, threads - 1, &db, &helpers);
                // Coins are on disk once the chainstate was resumed or the cache flushed.
                bool prefetch = !best->IsNull();
                if (prefetch) pipe.StartPrefetch();
                pipe.Start([&](const typename BlockSource<Policy>::Emit& emit) { return src.Produce(next, last, emit); });
                uint64_t scanned = 0; // next emission number to look at for prefetch
                while (auto rb = pipe.Pop()) {
                    if (prefetch) {
                        if (auto pf = pipe.TakePrefetched(rb->seq); pf && pf->epoch == conn.counters().flushes) {
                            for (auto& [op, coin] : pf->coins) res.coins_prefetched += conn.cache().AddFetched(op, std::move(coin));
                        }
                        for (const ReadyBlock* ahead : pipe.Peek(std::max(scanned, rb->seq + 1), PREFETCH_BLOCKS)) {
                            scanned = ahead->seq + 1;
                            if (!ahead->outside_listed) continue; // decoded before prefetch started
                            std::vector<OutPoint> missing;
                            for (const OutPoint& prevout : ahead->outside_prevouts) {
                                if (!conn.cache().HasEntry(prevout)) missing.push_back(prevout);
                            }
                            pipe.Prefetch(ahead->seq, conn.counters().flushes, std::move(missing));
                        }
                    }
                    if (!connect(*rb)) break;
                    if (!prefetch && conn.counters().flushes > 0) {
                        prefetch = true;
                        pipe.StartPrefetch();
                    }
                }
                produce_error = pipe.Stop();
                conn.SetTaskRunner(nullptr);
                cleansed_elsewhere = pipe.Cleansed() + helpers.Cleansed();
            }
        }
        if (produce_error) return produce_error;
        if (undecodable) {
            if (auto e = src.Undecodable(undecodable->first, undecodable->second)) return e;
        }
        conn.OnFlush({});
        if (!res.reject_reason) {
            report(true, true);
            const auto t_flush = Clock::now();
            if (auto st = conn.Flush(); !st.ok()) return EnvError("final flush failed: " + st.message);
            res.final_flush_seconds = std::chrono::duration<double>(Clock::now() - t_flush).count();
        }
        static_cast<ConnectorCounters&>(res) = conn.counters();
        res.coins_read_from_disk = conn.cache().CoinsReadFromDisk();
        if (undo) {
            undo->Sync();
            res.undo_records = undo->records_written();
            res.undo_bytes = undo->bytes_written();
        }
        report(true);
        res.seconds = std::chrono::duration<double>(Clock::now() - t0).count();
        res.throughput_by_decile = tlog.Deciles();
        return std::nullopt;
    };

    std::optional<Error> err;
    try {
        err = body();
    } catch (const StoreError& e) { // a LevelDB failure inside the cache (disk full, corruption)
        err = EnvError("chainstate " + cs.dir().string() + ": " + e.what());
    } catch (const DecodeError& e) { // a corrupt coin record read back from the chainstate
        err = Error{e.code(), "chainstate " + cs.dir().string() + ": " + e.what()};
    } catch (const UndoWriteError& e) { // writing undo data failed (disk full, I/O error)
        err = EnvError(std::string("undo data: ") + e.what());
    }
    if (err) return *err;
    res.interrupted = interrupted();
    res.bytes_cleansed = CleansedBytes() - cleansed_before + cleansed_elsewhere;

    // ---- the statistics of what is on disk ----
    auto best = db.GetBestBlock();
    if (!best) return best.error();
    if (!best->IsNull()) {
        if (auto h = src.HeightOf(*best)) {
            res.height = *h;
            res.tip = *best;
            if (o.statistics) {
                auto stats = ComputeUtxoStats(db, uint32_t(*h));
                if (!stats) return stats.error();
                res.utxo = *stats;
            }
        }
    }
    res.total_seconds = std::chrono::duration<double>(Clock::now() - t_start).count();
    res.peak_rss_bytes = PeakRssBytes();
    return res;
}

} // namespace ibdkit::engine

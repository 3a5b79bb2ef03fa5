// src/engine/pipeline.h — the pipeline that spreads decoding and checking over threads ahead of
// the connecting thread (private to the engine; run.h drives it).
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

#include "block_source.h"
#include "common/task_pool.h"

#include <ibdkit/coins/coins_db.h>
#include <ibdkit/consensus/check.h>
#include <ibdkit/memory/cleanse.h>
#include <ibdkit/primitives/block.h>
#include <ibdkit/wire/protocol.h>

#include <atomic>
#include <condition_variable>
#include <deque>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

namespace ibdkit::engine {

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
void PlanAhead(ReadyBlock& rb, bool list_outside);

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

} // namespace ibdkit::engine

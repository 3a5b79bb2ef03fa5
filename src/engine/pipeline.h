// src/engine/pipeline.h — the pipeline that spreads decoding and checking over threads ahead of
// the connecting thread (private to the engine; run.h drives it).
//
//   source thread          worker threads (N-1)              calling thread + helpers (N-2)
//   Produce(): raw bytes → DecodeBlock, txids/wtxids,     → blocks in chain order: ConnectBlock,
//   (OwnedBytes)           CheckBlock → ReadyBlock           its cache work one task per shard;
//   (decodes 1 in N-1      prevout reads from the         ←  flush within the budget, progress;
//   itself; helps with     chainstate (prefetch)              the missing prevouts of the next
//   the shard tasks)                                          decoded blocks
//
// The source thread decodes one block in every N - 1 itself, straight after reading it, while its
// bytes are still in that core's cache; with two threads, every block. Bytes read on one core and
// decoded on another cost more to parse and to count sigops in than bytes decoded where they were
// read (docs/benchmarks.md). The workers take the
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
// allocation of its own), so this is part of the fixed memory beside the cache; a larger budget
// only costs peak RSS (docs/benchmarks.md).
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
#include <ibdkit/primitives/block.h>

#include <atomic>
#include <condition_variable>
#include <deque>
#include <functional>
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

/// Decodes (computing every txid and wtxid) and checks a raw block; its buffer is released here
/// (with its policy's cleanse), as a node frees a message once it has decoded it. With
/// `plan_ahead`, a block that passed is planned too (PlanAhead), on this thread.
ReadyBlock DecodeAndCheck(RawBlock&& raw, const ConsensusParams& params, bool plan_ahead = false, bool list_outside = false);

/// The threads behind the engine when it has more than one: a producer running the source and
/// `workers` decoding and checking, the producer one block in `workers` (above). Pop() hands
/// blocks out in the order the source emitted them.
class Pipeline {
public:
    using Produce = std::function<std::optional<Error>(const BlockSource::Emit&)>;
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
    Pipeline(const ConsensusParams& params, unsigned workers, const CoinsDB* db, TaskPool* tasks = nullptr);
    Pipeline(const Pipeline&) = delete;
    Pipeline& operator=(const Pipeline&) = delete;
    ~Pipeline();

    /// Runs `produce(emit)` on a thread of its own.
    void Start(Produce produce);

    /// The next block in emission order; nullopt once the producer finished and every block it
    /// emitted was handed out.
    std::optional<ReadyBlock> Pop();

    /// Decoded blocks waiting behind the last one popped, from emission number `from` on, as long
    /// as they are contiguous, at most `max`. The pointers stay valid until those blocks are popped
    /// (only Pop removes them, and only the caller pops).
    std::vector<const ReadyBlock*> Peek(uint64_t from, std::size_t max);

    /// Asks the workers to read `outpoints` (the prevouts block `seq` will spend that the cache does
    /// not hold) from the database, ahead of the block's decoding work.
    void Prefetch(uint64_t seq, uint64_t epoch, std::vector<OutPoint> outpoints);

    /// From now on the decoding threads list each block's outside prevouts
    /// (ReadyBlock::outside_prevouts) for Prefetch.
    void StartPrefetch() noexcept { m_prefetching.store(true, std::memory_order_relaxed); }

    /// The coins read ahead for block `seq` (just popped), if the workers finished them.
    std::optional<Prefetched> TakePrefetched(uint64_t seq);

    /// Stops the producer (its next emit returns false) and the workers, joins them, and returns
    /// the producer's error, if any.
    std::optional<Error> Stop();

    /// Bytes cleansed by the policy's frees on the pipeline's threads (complete after Stop()).
    uint64_t Cleansed() const noexcept { return m_cleansed.load(); }

private:
    /// Whether the pipeline has drained to half its bounds (or below its minimum of blocks): a
    /// producer that found it full waits for this, then refills it in one go, rather than waking
    /// up for every block the connector takes.
    bool LowWater() const;
    bool Push(RawBlock&& raw);
    /// Decodes and checks block `seq` and puts it with the decoded ones (m_mutex not held).
    void Decode(uint64_t seq, RawBlock&& raw);
    void Work();

    struct PrefetchJob {
        uint64_t seq{0};
        uint64_t epoch{0};
        std::vector<OutPoint> outpoints;
    };

    const ConsensusParams& m_params;
    const CoinsDB* m_db;
    TaskPool* const m_tasks;
    /// The producer is about to wait, or waits, for room (seen by the task pool's OnPost).
    std::atomic<bool> m_producer_idle{false};
    const std::size_t m_max_count;
    const unsigned m_decoders; ///< the producer decodes block numbers that are multiples of this
    std::mutex m_mutex;
    std::condition_variable m_space, m_work, m_ready_cv;
    std::deque<std::pair<uint64_t, RawBlock>> m_input;
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

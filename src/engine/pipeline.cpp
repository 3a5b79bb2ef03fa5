// src/engine/pipeline.cpp — decoding and checking ahead of the connecting thread (pipeline.h).
#include "pipeline.h"

#include "memory/cleanse.h"
#include "wire/protocol.h"

#include <unordered_set>

namespace ibdkit::engine {

void PlanAhead(ReadyBlock& rb, bool list_outside)
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

ReadyBlock DecodeAndCheck(RawBlock&& raw, const ConsensusParams& params, bool plan_ahead, bool list_outside)
{
    ReadyBlock rb;
    rb.height = raw.height;
    rb.hash = raw.hash;
    rb.ctx = raw.ctx;
    rb.size = raw.bytes.size();
    const std::span<const uint8_t> bytes = raw.bytes.uchars();
    auto block = DecodeBlock(bytes);
    if (!block && raw.message && block.error().code == Errc::TrailingData) block = DecodeBlockMessage(bytes);
    raw.bytes.Release();
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

Pipeline::Pipeline(const ConsensusParams& params, unsigned workers, const CoinsDB* db, TaskPool* tasks)
    : m_params(params), m_db(db), m_tasks(tasks), m_max_count(8 + 8 * std::size_t(workers)), m_decoders(std::max(1u, workers))
{
    if (m_tasks) {
        m_tasks->OnPost([this] {
            if (!m_producer_idle.load()) return;
            { std::lock_guard lock(m_mutex); } // the producer is waiting now, or will see the set
            m_space.notify_all();
        });
    }
    try {
        m_workers.reserve(workers);
        for (unsigned i = 0; i < workers; ++i) m_workers.emplace_back([this] { Work(); });
    } catch (...) { // std::system_error: the workers started must not outlive a pipeline never made
        (void)Stop();
        if (m_tasks) m_tasks->OnPost({});
        throw;
    }
}

Pipeline::~Pipeline()
{
    (void)Stop();
    if (m_tasks) m_tasks->OnPost({});
}

void Pipeline::Start(Produce produce)
{
    m_producer = std::thread([this, produce = std::move(produce)] {
        const uint64_t cleansed = CleansedBytes();
        std::optional<Error> err;
        try {
            err = produce([this](RawBlock&& raw) { return Push(std::move(raw)); });
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

std::optional<ReadyBlock> Pipeline::Pop()
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

std::vector<const ReadyBlock*> Pipeline::Peek(uint64_t from, std::size_t max)
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

void Pipeline::Prefetch(uint64_t seq, uint64_t epoch, std::vector<OutPoint> outpoints)
{
    if (!m_db || outpoints.empty()) return;
    {
        std::lock_guard lock(m_mutex);
        m_prefetch_jobs.push_back({seq, epoch, std::move(outpoints)});
    }
    m_work.notify_one();
}

std::optional<Pipeline::Prefetched> Pipeline::TakePrefetched(uint64_t seq)
{
    std::lock_guard lock(m_mutex);
    auto it = m_prefetched.find(seq);
    if (it == m_prefetched.end()) return std::nullopt;
    Prefetched p = std::move(it->second);
    m_prefetched.erase(it);
    return p;
}

std::optional<Error> Pipeline::Stop()
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

bool Pipeline::LowWater() const
{
    const std::size_t blocks = m_next_push - m_next_pop;
    return blocks < MIN_BLOCKS_IN_FLIGHT || (m_bytes_in_flight <= MAX_BYTES_IN_FLIGHT / 2 && blocks <= m_max_count / 2);
}

bool Pipeline::Push(RawBlock&& raw)
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

void Pipeline::Decode(uint64_t seq, RawBlock&& raw)
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

void Pipeline::Work()
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

} // namespace ibdkit::engine

#include "connector.h"
#include <ibdkit/blockfile/locate.h>
#include <ibdkit/engine/engine.h>

#include <ibdkit/consensus/check.h>

#include "stream/streams.h"
#include "coins/coins_db_internal.h"
#include "common/temp_dir.h"
#include "common/write_guard_internal.h"

#include <sys/resource.h>
#ifdef __GLIBC__
#include <malloc.h>
#endif
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <atomic>
#include <chrono>
#include <mutex>
#include <thread>
#include <vector>

namespace ibdkit {

uint64_t PeakRssBytes() noexcept
{
    struct rusage ru{};
    if (::getrusage(RUSAGE_SELF, &ru) != 0) return 0;
    return uint64_t(ru.ru_maxrss) * 1024; // Linux reports KiB
}

Result<ChainstateHandle> ChainstateHandle::Open(const std::filesystem::path& dir, PolicyId policy,
                                                const CacheBudget& budget, const std::string& temp_prefix,
                                                std::optional<ChainType> chain)
{
    ChainstateHandle h;
    h.m_dir = dir;
    h.m_temporary = dir.empty();
    if (h.m_temporary) {
        auto made = MakeTempDir(temp_prefix);
        if (!made) return made.error();
        h.m_dir = std::move(*made);
    }
    CoinsDBOptions dbo;
    dbo.policy = policy;
    budget.ApplyTo(dbo);
    h.m_budget = budget;
    StoreStatus status;
    h.m_db = OpenCoinsDB(h.m_dir, dbo, &status);
    if (!h.m_db) {
        // Another writer is named, with what to do, in CoinsDB::Open's words; the rest are LevelDB's.
        if (status.code == StoreStatus::Code::Locked) return ErrorOf(status);
        return Error{Errc::Corrupt, "cannot open chainstate " + h.m_dir.string() + ": " + status.message};
    }
    // A new chainstate's network goes into its marker now, not only when the run ends, so that
    // what reads it meanwhile (from a snapshot) knows it; an existing one's waits for the run to
    // accept its blocks as this network's.
    const auto best = h.m_db->GetBestBlock();
    if (chain && !h.m_temporary && best && best->IsNull() && HoldsChainstateMarker(h.m_dir) && !ChainstateNetworkRecord(h.m_dir)) {
        (void)RecordChainstateNetwork(h.m_dir, ChainTypeName(*chain)); // a hint for later readers only
    }
    return h;
}

std::optional<Error> ChainstateHandle::CheckOutputs(const EngineOptions& o)
{
    if (auto bad = CheckRunSettings(o)) return bad;
    if (auto refused = CheckChainstateWritable(o.chainstate)) return refused;
    if (auto refused = CheckUndoDirWritable(o.undo_dir)) return refused;
    return CheckUndoApartFromChainstate(o.undo_dir, o.chainstate);
}

Result<ChainstateHandle> ChainstateHandle::OpenFor(const EngineOptions& o, const std::string& temp_prefix, ChainType chain)
{
    if (auto bad = CheckRunSettings(o)) return *bad;
    std::filesystem::path dir = o.chainstate;
    if (!o.datadir_out.empty()) {
        // Refused before anything is written; with no chainstate named, bitcoind's place for it.
        auto in_datadir = DatadirChainstate(o.datadir_out, chain);
        if (!in_datadir) return in_datadir.error();
        if (dir.empty()) dir = *in_datadir;
    }
    if (auto refused = CheckUndoDirWritable(o.undo_dir)) return *refused; // not only once the first block connects
    if (auto refused = CheckUndoApartFromChainstate(o.undo_dir, dir)) return *refused;
    return Open(dir, o.policy, CacheBudget::FromMiB(o.dbcache_mib), temp_prefix, chain);
}

ChainstateHandle::~ChainstateHandle()
{
    m_db.reset(); // close before removing
    std::error_code ec;
    if (m_temporary && !m_dir.empty()) std::filesystem::remove_all(m_dir, ec);
}

namespace {
/// Gives the heap's free memory back to the kernel (glibc; elsewhere nothing). Buffers of 1 MiB and
/// more are mmap'd, so a flush's write batches and LevelDB's memtables return when freed (glibc's
/// default threshold rises after each large free and keeps them in the heap); malloc_trim returns
/// the free pages inside the heap, which decoded blocks and LevelDB's tables, freed on threads other
/// than the ones that allocated them, leave scattered. What it returns on a large chain, and what a
/// trim costs, are in docs/benchmarks.md (*Memory*).
void ReturnFreeHeap() noexcept
{
#ifdef __GLIBC__
    static std::once_flag once;
    std::call_once(once, [] { (void)::mallopt(M_MMAP_THRESHOLD, 1 << 20); });
    (void)::malloc_trim(0);
#endif
}
} // namespace

BlockConnector::BlockConnector(CoinsDB& db, const ChainParams& params, const CacheBudget& budget)
    : m_params(params), m_budget(budget), m_cache(db, budget.CoinsBytes())
{
    FitBudget();
}

void BlockConnector::FitBudget()
{
    m_cache.SetBudget(m_budget.CacheBytesBeside(m_cache.db().EstimateSize()));
    ReturnFreeHeap();
}

std::optional<std::string> BlockConnector::Connect(Block&& block, const ConnectContext& ctx, std::size_t size)
{
    BlockValidationState state;
    auto checked = CheckBlock(std::move(block), state, m_params.consensus);
    if (!checked) return state.GetRejectReason();
    return Connect(*checked, ctx, size);
}

std::optional<std::string> BlockConnector::Connect(const CheckedBlock& block, const ConnectContext& ctx, std::size_t size,
                                                   const ConnectPlan* plan)
{
    BlockValidationState state;
    ConnectStats cs;
    if (ctx.check_scripts && !m_counters.script_checks_from_height) {
        m_counters.script_checks_from_height = ctx.height;
        m_counters.script_check_reason = std::string(ctx.script_check_reason);
    }
    if (!ConnectBlock(block, ctx, m_cache, m_params.consensus, state,
                      {.stats = &cs, .undo = m_undo_writer || m_datadir || m_connected ? &m_undo : nullptr, .runner = m_runner, .plan = plan, .scratch = &m_scratch}) ||
        state.IsInvalid()) {
        return state.GetRejectReason();
    }
    if (m_undo_writer || m_datadir) {
        m_undo_bytes.clear();
        VectorWriter<std::vector<uint8_t>> w(m_undo_bytes, 0);
        Serialize(w, m_undo);
    }
    if (m_undo_writer) m_undo_writer->Write(block->GetHash(), ctx.height, block->hash_prev_block, m_undo_bytes);
    if (m_datadir) m_datadir->Append(block.block(), ctx.height, m_undo_bytes);
    if (m_connected) m_connected(block.block(), ctx.height, m_undo);
    ++m_counters.blocks;
    m_counters.txs += block->vtx.size();
    m_counters.inputs += cs.inputs;
    m_counters.outputs += cs.outputs_added;
    m_counters.script_checked_inputs += cs.script_checked_inputs;
    m_counters.bytes += size;
    if (m_cache.NeedsFlush()) {
        if (m_on_flush) m_on_flush();
        if (m_counters.cache_full_entries == 0) {
            m_counters.cache_full_entries = m_cache.GetCacheSize();
            m_counters.cache_full_bytes = m_cache.DynamicMemoryUsage();
        }
        const auto t0 = std::chrono::steady_clock::now();
        if (m_undo_writer) m_undo_writer->Sync(); // undo data is durable before the chainstate moves
        if (m_datadir) m_datadir->Sync();         // and so are the datadir's blocks and index
        if (auto st = m_cache.FlushWarm(m_cache.Budget() / 2, m_runner); !st.ok()) throw StoreError(st);
        ++m_counters.flushes;
        FitBudget();
        m_counters.flush_seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    }
    return std::nullopt;
}

void BlockConnector::Rollforward(const Block& block, int height)
{
    RollforwardBlock(block, height, m_cache);
    ++m_counters.recovered_blocks;
}

StoreStatus BlockConnector::Flush(const BlockHash& tip)
{
    if (!tip.IsNull()) m_cache.SetBestBlock(tip);
    if (m_undo_writer) m_undo_writer->Sync();
    if (m_datadir) m_datadir->Sync();
    auto st = m_cache.Flush();
    if (st.ok()) ++m_counters.flushes;
    return st;
}

} // namespace ibdkit

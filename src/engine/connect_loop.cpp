#include "connect_loop.h"

#include "common/test_hooks.h"

#include <cassert>
#include <ctime>
#include <span>
#include <string>

namespace ibdkit::engine {

ConnectLoop::ConnectLoop(const EngineOptions& o, const ChainParams& params, BlockConnector& conn, EngineResult& res,
                         std::vector<HeaderInfo> ancestry, std::function<int()> tip_height, int last)
    : m_o(o), m_params(params), m_conn(conn), m_res(res), m_ancestry(std::move(ancestry)), m_tip_height(std::move(tip_height)),
      m_last(last), m_t0(Clock::now()), m_last_report(m_t0)
{
}

void ConnectLoop::Report(bool force, bool flushing)
{
    if (!m_o.on_progress) return;
    const auto now = Clock::now();
    if (!force && now - m_last_report < std::chrono::milliseconds(250)) return;
    m_last_report = now;
    EngineProgress p;
    p.height = m_res.height;
    p.tip_height = std::min(m_tip_height(), m_last);
    p.blocks = m_conn.counters().blocks;
    p.txs = m_conn.counters().txs;
    p.bytes = m_conn.counters().bytes;
    p.elapsed_s = std::chrono::duration<double>(now - m_t0).count();
    p.cache_bytes = m_conn.cache().DynamicMemoryUsage();
    p.cache_budget = m_conn.cache().Budget();
    p.flushes = m_conn.counters().flushes;
    p.flushing = flushing;
    m_o.on_progress(p);
}

bool ConnectLoop::ConnectStep(ReadyBlock& rb)
{
    if (rb.decode_error) {
        m_undecodable.emplace(rb.height, *rb.decode_error);
        return false;
    }
    // The header's contextual rules run against the local clock, as Core's AcceptBlock does.
    assert(std::size_t(rb.height) == m_ancestry.size() && "a source delivers heights in order");
    const HeaderAncestry prev{0, std::span<const HeaderInfo>(m_ancestry)};
    std::optional<std::string> reason;
    BlockValidationState header_state;
    if (rb.header_invalid) {
        reason = rb.reject_reason;
    } else if (!ContextualCheckBlockHeader(rb.header, prev, m_params.consensus, int64_t(std::time(nullptr)), header_state)) {
        reason = header_state.GetRejectReason();
    } else if (!rb.block) {
        reason = rb.reject_reason;
    } else {
        rb.ctx.prev = prev;
        reason = m_conn.Connect(*rb.block, rb.ctx, rb.size, rb.plan.Transactions() ? &rb.plan : nullptr);
    }
    if (reason) {
        // ConnectBlock took back whatever the block changed in the cache: it holds exactly the
        // blocks connected before it, which Finish flushes.
        m_res.reject_reason = std::move(reason);
        m_res.reject_height = rb.height;
        return false;
    }
    m_ancestry.push_back(HeaderInfo{rb.header.time, rb.header.bits});
    m_res.height = rb.height;
    m_res.tip = rb.hash;
    m_tlog.Add(rb.height, m_conn.counters().bytes, std::chrono::duration<double>(Clock::now() - m_t0).count());
    if (m_o.test_hooks && m_o.test_hooks->after_block) m_o.test_hooks->after_block(rb.height);
    Report(false);
    return !Interrupted(m_o);
}

std::optional<Error> ConnectLoop::Finish(UndoFileWriter* undo)
{
    m_conn.OnFlush({});
    Report(true, true);
    const auto t_flush = Clock::now();
    if (auto st = m_conn.Flush(); !st.ok()) return EnvError("final flush failed: " + st.message);
    m_res.final_flush_seconds = std::chrono::duration<double>(Clock::now() - t_flush).count();
    static_cast<ConnectorCounters&>(m_res) = m_conn.counters();
    m_res.coins_read_from_disk = m_conn.cache().CoinsReadFromDisk();
    if (undo) {
        undo->Sync();
        m_res.undo_records = undo->records_written();
        m_res.undo_bytes = undo->bytes_written();
    }
    Report(true);
    m_res.seconds = std::chrono::duration<double>(Clock::now() - m_t0).count();
    m_res.throughput_by_decile = m_tlog.Deciles();
    return std::nullopt;
}

} // namespace ibdkit::engine

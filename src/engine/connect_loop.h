// src/engine/connect_loop.h — the connect loop's step: one decoded block through Core's
// AcceptBlock order onto the chainstate, the run's progress and throughput as it goes, and the
// final flush (private to the engine; run.h feeds it blocks, inline or from the pipeline).
#pragma once

#include "common/throughput.h"
#include "connector.h"
#include "pipeline.h"

#include <ibdkit/chain/params.h>
#include <ibdkit/consensus/header_check.h>
#include <ibdkit/engine/engine.h>

#include "blockfile/undo_file.h"

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <utility>
#include <vector>

namespace ibdkit::engine {

/// Whether the run was asked to stop (Ctrl-C).
inline bool Interrupted(const EngineOptions& o) { return o.interrupt && o.interrupt->load(std::memory_order_relaxed); }

/// The connecting thread's side of a run, from the first block after the chainstate's best block
/// to the final flush. Blocks arrive in height order, decoded and checked (ReadyBlock), from the
/// source's emit (one thread) or from the pipeline.
class ConnectLoop {
public:
    /// `ancestry`: (time, bits) of every block below the first one to connect. `tip_height`: the
    /// source's expected tip (progress only; called while the source produces). `last`: the
    /// highest height the run connects (--stop-height).
    ConnectLoop(const EngineOptions& o, const ChainParams& params, BlockConnector& conn, EngineResult& res,
                std::vector<HeaderInfo> ancestry, std::function<int()> tip_height, int last);

    /// Connects one block in Core's order (AcceptBlock): the header's proof of work, its contextual
    /// rules on top of its ancestors, then CheckBlock's other rules, then ConnectBlock. Records the
    /// new tip, or the reject reason (res.reject_reason) or undecodable bytes (Undecodable()).
    /// Returns false when the run ends: a rejected or undecodable block, or an interrupt.
    bool ConnectStep(ReadyBlock& rb);

    /// Reports progress to the options' callback: at most every 250 ms unless `force`;
    /// `flushing` says the blocks wait for a flush.
    void Report(bool force, bool flushing = false);

    /// The block whose bytes did not decode, if one ended the run: its height and the error.
    const std::optional<std::pair<int, Error>>& Undecodable() const noexcept { return m_undecodable; }

    /// Ends the run: the final flush of every block connected (timed apart from the blocks), also
    /// after a rejected block (which left nothing in the cache) or a failed source;
    /// then the connector's counters, the undo files synced, the run's time and its throughput
    /// per tenth into the result. An error when the final flush fails.
    std::optional<Error> Finish(UndoFileWriter* undo);

private:
    const EngineOptions& m_o;
    const ChainParams& m_params;
    BlockConnector& m_conn;
    EngineResult& m_res;
    std::vector<HeaderInfo> m_ancestry;
    std::function<int()> m_tip_height;
    const int m_last;
    const Clock::time_point m_t0;
    Clock::time_point m_last_report;
    ThroughputLog m_tlog;
    std::optional<std::pair<int, Error>> m_undecodable;
};

} // namespace ibdkit::engine

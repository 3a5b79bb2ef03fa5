// src/engine/connect_loop.h — the connect loop's step: one decoded block through Core's
// AcceptBlock order onto the chainstate, the run's progress and throughput as it goes, and the
// final flush (private to the engine; run.h feeds it blocks, inline or from the pipeline).
#pragma once

#include "pipeline.h"

#include <ibdkit/blockfile/undo_file.h>
#include <ibdkit/chain/params.h>
#include <ibdkit/consensus/header_check.h>
#include <ibdkit/engine/connector.h>
#include <ibdkit/engine/engine.h>

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

    /// Ends the run: unless a block was rejected, the final flush (timed apart from the blocks);
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

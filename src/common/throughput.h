// src/common/throughput.h — a run's throughput per tenth of its block bytes (ThroughputSlice,
// run_stats.h), kept in fixed memory as the run goes.
#pragma once

#include <ibdkit/run_stats.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <vector>

namespace ibdkit {

/// Where a run stood as it went: at most ~2·MAX points, evenly spaced in bytes (the spacing
/// doubles whenever the list fills, so memory stays fixed however long the chain), from which the
/// run's throughput per tenth of its bytes is read at the end. The tenths end with the last block
/// added: what a run does after it (the engine's final flush, SwiftSync's chainstate write) is not
/// the last tenth's. Not thread-safe: one thread adds.
class ThroughputLog {
public:
    /// Where the run starts: after block `height`, at 0 bytes and 0 seconds. Without it, the first
    /// Add's block is taken as the first of the run.
    void Start(int height) { m_points.assign(1, Point{height, 0, 0}); }
    /// After a block (or a batch of blocks ending with it): its height, the block bytes and the
    /// seconds of the run so far.
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

} // namespace ibdkit

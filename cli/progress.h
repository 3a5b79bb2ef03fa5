// cli/progress.h — one progress line on stderr: redrawn in place on a terminal; elsewhere nothing,
// unless asked (`--progress`: a plain line every few seconds, so logs of long runs show progress).
#pragma once

#include "commands.h"

#include <ibdkit/swiftsync/replay.h>

#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <string>

namespace ibdkit::cli {

class ProgressLine {
public:
    explicit ProgressLine(bool enabled)
        : m_enabled(enabled && (::isatty(STDERR_FILENO) != 0 || ProgressForced())), m_tty(::isatty(STDERR_FILENO) != 0)
    {
    }
    ProgressLine(const ProgressLine&) = delete;
    ProgressLine& operator=(const ProgressLine&) = delete;
    ~ProgressLine() { Done(); }

    /// fraction in [0, 1] (negative: unknown); text follows the bar.
    void Update(double fraction, const std::string& text)
    {
        if (!m_enabled) return;
        const auto now = Clock::now();
        if (!m_tty && now - m_last < std::chrono::seconds(5)) return;
        m_last = now;
        std::string bar;
        if (fraction >= 0) {
            const int width = 30, filled = int(std::min(1.0, fraction) * width);
            bar = "[" + std::string(std::size_t(filled), '#') + std::string(std::size_t(width - filled), '.') + "] ";
            char pct[16];
            std::snprintf(pct, sizeof pct, "%5.1f%% ", fraction * 100);
            bar += pct;
        }
        std::fprintf(stderr, m_tty ? "\r\033[K%s%s" : "%s%s\n", bar.c_str(), text.c_str());
        std::fflush(stderr);
        m_drawn = true;
    }
    void Done()
    {
        if (m_enabled && m_tty && m_drawn) std::fprintf(stderr, "\n");
        m_drawn = false;
    }

private:
    using Clock = std::chrono::steady_clock;
    bool m_enabled;
    bool m_tty;
    bool m_drawn{false};
    Clock::time_point m_last{};
};

/// SwiftSync's progress text, as the classic sync's: height, blocks/s, MB/s, the peers still
/// serving (over P2P) and the time left at the rate so far; then the chainstate's write, in coins.
inline std::string SwiftSyncProgressText(const swiftsync::SwiftSyncProgress& p, const std::string& label)
{
    char text[200];
    if (p.writing) {
        std::snprintf(text, sizeof text, "%s: height %u checked, writing the chainstate: %llu/%llu coins", label.c_str(), p.n,
                      static_cast<unsigned long long>(p.coins_written), static_cast<unsigned long long>(p.coins_to_write));
        return text;
    }
    const double s = std::max(p.elapsed_s, 1e-9), bps = double(p.height) / s;
    const std::string peers = p.peers ? "  peers " + std::to_string(p.peers) : "";
    std::snprintf(text, sizeof text, "%s: height %u/%u  %.0f blk/s  %.1f MB/s%s  ETA %s", label.c_str(), p.height, p.n, bps,
                  double(p.bytes) / 1e6 / s, peers.c_str(), bps > 0 ? (std::to_string(int((p.n - p.height) / bps)) + " s").c_str() : "?");
    return text;
}

/// How far a progress bar of SwiftSync is: the blocks checked, then the coins written.
inline double SwiftSyncProgressFraction(const swiftsync::SwiftSyncProgress& p)
{
    if (p.writing) return p.coins_to_write ? double(p.coins_written) / double(p.coins_to_write) : 1.0;
    return p.n ? double(p.height) / p.n : 1.0;
}

} // namespace ibdkit::cli

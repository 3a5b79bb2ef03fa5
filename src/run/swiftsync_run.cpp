// `replay --swiftsync` as one driver (include/ibdkit/run/swiftsync_run.h): the check, the
// statistics of what it wrote, the classic replay as the fallback of a refused history.
#include <ibdkit/run/swiftsync_run.h>

#include <ibdkit/coins/coins_db.h>
#include <ibdkit/utxo/stats.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <system_error>
#include <utility>

namespace ibdkit::run {
namespace {

namespace fs = std::filesystem;

/// A folder made for this run in the system's temporary directory, removed with what it holds.
class ScratchDir {
public:
    static Result<ScratchDir> Make(const std::string& what)
    {
        std::error_code ec;
        const fs::path base = fs::temp_directory_path(ec);
        if (ec) return Error{Errc::Io, "no temporary directory (TMPDIR): " + ec.message()};
        std::string tmpl = (base / ("ibdkit-" + what + "-XXXXXX")).string();
        if (::mkdtemp(tmpl.data()) == nullptr) {
            return Error{Errc::Io, "cannot make a temporary folder in " + base.string() + ": " + std::strerror(errno) +
                                       " (TMPDIR chooses another)"};
        }
        ScratchDir d;
        d.m_path = tmpl;
        return d;
    }
    ScratchDir() = default;
    ScratchDir(ScratchDir&& o) noexcept : m_path(std::exchange(o.m_path, {})) {}
    ScratchDir& operator=(ScratchDir&&) = delete;
    ~ScratchDir()
    {
        std::error_code ec;
        if (!m_path.empty()) fs::remove_all(m_path, ec);
    }
    const fs::path& Path() const noexcept { return m_path; }

private:
    fs::path m_path;
};

/// The statistics of the chainstate SwiftSync wrote.
Result<UtxoStats> StatsOf(const fs::path& dir)
{
    CoinsDBOptions o;
    o.read_only = true;
    auto db = CoinsDB::Open(dir, o);
    if (!db) return Error{Errc::Corrupt, "cannot read the chainstate written: " + db.error().message};
    return ComputeUtxoStats(**db);
}

/// The classic replay of blocks 1..n into a temporary chainstate, as a verdict.
FallbackVerdict Fallback(ReplayOptions classic, uint32_t n)
{
    classic.chainstate.clear();
    classic.stop_height = int(n);
    classic.statistics = true;
    FallbackVerdict f;
    auto r = Replay(classic);
    if (!r) {
        f.error = r.error().message;
        return f;
    }
    f.height = r->height;
    if (r->reject_reason) {
        f.reject_reason = r->reject_reason;
        f.reject_height = r->reject_height;
        return f;
    }
    f.valid = r->height == int(n);
    if (r->utxo) f.hash_serialized = r->utxo->hash_serialized;
    return f;
}

} // namespace

Result<SwiftSyncRunResult> RunSwiftSync(SwiftSyncRunOptions options)
{
    swiftsync::SwiftSyncOptions& o = options.swiftsync;
    // Without a chainstate the statistics need one: a temporary one, removed after.
    std::optional<ScratchDir> temporary;
    if (o.chainstate.empty() && options.statistics) {
        auto made = ScratchDir::Make("swiftsync");
        if (!made) return made.error();
        o.chainstate = temporary.emplace(std::move(*made)).Path();
    }
    auto r = swiftsync::SwiftSyncReplay(o);
    if (!r) return r.error();
    SwiftSyncRunResult out;
    out.swiftsync = std::move(*r);
    if (out.swiftsync.verdict.ok && options.statistics) {
        auto s = StatsOf(o.chainstate);
        if (!s) return s.error();
        out.utxo = *s;
    }
    if (!out.swiftsync.verdict.ok && options.fallback) out.fallback = Fallback(*options.fallback, out.swiftsync.height);
    out.peak_rss_bytes = PeakRssBytes();
    return out;
}

SwiftSyncOutcome OutcomeOf(const SwiftSyncRunResult& r)
{
    if (r.swiftsync.verdict.ok) return SwiftSyncOutcome::Accepted;
    if (!r.fallback) return SwiftSyncOutcome::Refused;
    if (r.fallback->error) return SwiftSyncOutcome::FallbackFailed;
    return r.fallback->valid ? SwiftSyncOutcome::HintsWrong : SwiftSyncOutcome::Refused;
}

} // namespace ibdkit::run

// SwiftSync in the Python module (python/ibdkit/swiftsync.py wraps these): the salt, hintsfiles,
// located blocks, the range check, partials as bytes with their unspent runs, the verdict, and the
// runs' coins as statistics, Coin objects or Arrow batches (swiftsync/check_range.h, partial.h).
//
// The salt's bytes leave a _Salt only through _copy_for_worker; it has no text form and refuses
// pickling, so it cannot reach a log or a file by accident (docs/swiftsync.md, *The salt*).
#include "bindings.h"
#include "coin_cursor.h"

#include <ibdkit/blockfile/locate.h>
#include <ibdkit/run/result_fields.h>
#include <ibdkit/run/swiftsync_ranges.h>
#include <ibdkit/run/swiftsync_run.h>
#include <ibdkit/run/swiftsync_sync.h>
#include <ibdkit/swiftsync/aggregate.h>
#include <ibdkit/swiftsync/check_range.h>
#include <ibdkit/swiftsync/hints.h>
#include <ibdkit/swiftsync/partial.h>
#include <ibdkit/swiftsync/replay.h>
#include <ibdkit/threads.h>
#include <ibdkit/spent/tables.h> // AddressNetworkOf
#include <ibdkit/utxo/address.h>
#include <ibdkit/utxo/stats.h>
#include <ibdkit/wire/host_port.h>

#include <nanobind/stl/optional.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace nb = nanobind;
using namespace nb::literals;

namespace ibdkit::py {
namespace {

namespace fs = std::filesystem;
using swiftsync::Partial;

struct PySalt {
    swiftsync::Salt salt;
};

struct PyHints {
    std::shared_ptr<const swiftsync::Hints> hints;
};

struct PyBlocks {
    std::shared_ptr<const LocatedChain> chain;
    fs::path datadir; ///< the Core data directory the blocks came from (empty: blk files)
    /// Its undo data (coins mode), located on first use and kept: one read of the block index.
    std::shared_ptr<const DatadirUndo> undo;

    /// Height h's block record size (0 when the chain does not hold it).
    uint64_t SizeAt(uint32_t h) const
    {
        const int64_t i = int64_t(h) - chain->base_height;
        return i >= 0 && std::size_t(i) < chain->order.blocks.size() ? chain->order.blocks[std::size_t(i)].size : 0;
    }
    /// 1..height split into `count` consecutive ranges of about equal block bytes.
    std::vector<std::pair<uint32_t, uint32_t>> Split(uint32_t height, uint32_t count) const
    {
        if (height == 0) return {};
        count = std::max(1u, std::min(count, height));
        uint64_t total = 0;
        for (uint32_t h = 1; h <= height; ++h) total += SizeAt(h) + 1;
        std::vector<std::pair<uint32_t, uint32_t>> out;
        uint64_t done = 0;
        uint32_t first = 1;
        for (uint32_t h = 1; h <= height; ++h) {
            done += SizeAt(h) + 1;
            const uint32_t left = count - uint32_t(out.size()) - 1; // ranges still to start after this one
            const bool share_reached = done * count >= total * (out.size() + 1);
            if (h == height || (left > 0 && (share_reached || height - h == left))) {
                out.emplace_back(first, h);
                first = h + 1;
            }
        }
        return out;
    }
};

/// A partial without its coins, and the coins as a sorted run (None when not collected): a Python
/// bytes object, handed out and pickled without copying it again.
struct PyPartial {
    Partial p;
    nb::object run;
};

/// The check's mode: the one place a mode name is read.
swiftsync::AggregateMode ParseMode(const std::string& mode)
{
    if (auto m = swiftsync::ParseAggregateMode(mode)) return *m;
    throw PyError{"InvalidArgument", "mode must be 'coins' or 'outpoints', got '" + mode + "'"};
}

/// A Core data directory (its block index, or a network's subdirectory) or blk files.
PyBlocks Locate(const std::string& path, std::optional<std::string> network)
{
    const BlockFileSource source = SourceOf(path, network);
    Result<LocatedChain> located = Error{};
    {
        nb::gil_scoped_release nogil;
        located = LocateBlocks(source);
    }
    if (!located) Throw(located.error());
    return PyBlocks{std::make_shared<const LocatedChain>(std::move(*located)), source.datadir, nullptr};
}

PyHints ReadHints(const std::string& path)
{
    Result<swiftsync::Hints> h = Error{};
    {
        nb::gil_scoped_release nogil;
        h = swiftsync::Hints::Read(path);
    }
    if (!h) Throw(h.error());
    return PyHints{std::make_shared<const swiftsync::Hints>(std::move(*h))};
}

/// Coins mode's options: the datadir's undo data (located once per PyBlocks), assumevalid as the
/// CLI's --assumevalid ("0", a block hash, or None: the network's), skip_scripts.
swiftsync::CoinsModeOptions CoinsOptions(PyBlocks& blocks, const std::optional<std::string>& assumevalid, bool skip_scripts)
{
    if (blocks.datadir.empty()) {
        throw PyError{"InvalidArgument", "mode='coins' reads the spent coins from a Bitcoin Core data directory's rev files: give "
                                         "a datadir as the source, or mode='outpoints' for bare block files (it checks much less)"};
    }
    if (!blocks.undo) {
        Result<DatadirUndo> undo = Error{};
        {
            nb::gil_scoped_release nogil;
            undo = LocateUndoInDatadir(blocks.datadir, blocks.chain->chain);
        }
        if (!undo) Throw(undo.error());
        // Set once, with the GIL held: a check already running on another thread keeps its pointer.
        if (!blocks.undo) blocks.undo = std::make_shared<const DatadirUndo>(std::move(*undo));
    }
    swiftsync::CoinsModeOptions c;
    c.undo = blocks.undo.get();
    c.skip_scripts = skip_scripts;
    if (assumevalid) {
        if (skip_scripts) throw PyError{"InvalidArgument", "skip_scripts trusts every script: drop assumevalid"};
        c.assumevalid = ParseAssumeValidArg(*assumevalid);
    }
    return c;
}

PyPartial CheckRange_(PyBlocks& blocks, const PyHints& hints, const PySalt& salt, uint32_t first, uint32_t last,
                      unsigned threads, bool collect_unspent, const std::string& mode, std::optional<std::string> assumevalid,
                      bool skip_scripts)
{
    swiftsync::CheckRangeOptions o;
    const swiftsync::AggregateMode m = ParseMode(mode);
    if (m == swiftsync::AggregateMode::OutPoints && (assumevalid || skip_scripts)) {
        throw PyError{"InvalidArgument", "mode='outpoints' checks no scripts: assumevalid and skip_scripts go with mode='coins'"};
    }
    const auto coins = m == swiftsync::AggregateMode::Coins ? CoinsOptions(blocks, assumevalid, skip_scripts) : swiftsync::CoinsModeOptions{};
    o.threads = ThreadsArg(threads);
    o.collect_unspent = collect_unspent;
    const uint32_t n = hints.hints->height();
    if (first < 1 || first > last || last > n) {
        throw PyError{"InvalidArgument", "first..last must be within the hintsfile's 1.." + std::to_string(n) + ", got " +
                                             std::to_string(first) + ".." + std::to_string(last)};
    }
    if (blocks.chain->TipHeight() < int(last)) {
        throw PyError{"InvalidArgument", "the blocks end at height " + std::to_string(blocks.chain->TipHeight()) +
                                             ", before last=" + std::to_string(last)};
    }
    PyPartial out;
    std::optional<Error> error;
    std::vector<uint8_t> run_bytes;
    {
        nb::gil_scoped_release nogil;
        auto r = m == swiftsync::AggregateMode::Coins ? swiftsync::CheckRangeCoins(*blocks.chain, *hints.hints, salt.salt, first, last, o, coins)
                                                      : swiftsync::CheckRange(*blocks.chain, *hints.hints, salt.salt, first, last, o);
        if (!r) {
            error = r.error();
        } else {
            out.p = std::move(*r);
            if (collect_unspent) {
                auto run = swiftsync::SerializeUnspentRun(first, last, out.p.unspent);
                if (run) run_bytes = std::move(*run);
                else error = run.error();
            }
            out.p.unspent = {};
        }
    }
    if (error) Throw(*error);
    out.run = collect_unspent ? nb::object(Bytes(run_bytes)) : nb::none();
    return out;
}

std::span<const uint8_t> View(const nb::bytes& b) { return {static_cast<const uint8_t*>(b.data()), b.size()}; }

PyPartial FromParts(const nb::bytes& partial, std::optional<nb::bytes> run)
{
    auto p = swiftsync::DeserializePartial(View(partial));
    if (!p) Throw(p.error());
    PyPartial out{std::move(*p), nb::none()};
    if (run) {
        auto reader = swiftsync::UnspentRunReader::Open(View(*run));
        if (!reader) Throw(reader.error());
        if (reader->first() != out.p.from || reader->last() != out.p.to) {
            throw PyError{"InvalidValue", "the unspent run's range is not the partial's"};
        }
        if (reader->count() != out.p.counts.unspent) {
            throw PyError{"InvalidValue", "the unspent run holds " + std::to_string(reader->count()) + " coins, the partial counts " +
                                              std::to_string(out.p.counts.unspent)};
        }
        out.run = *run;
    }
    return out;
}

nb::object FailureDict(const std::optional<swiftsync::BlockFailure>& f)
{
    if (!f) return nb::none();
    nb::dict d;
    d["height"] = f->height;
    d["hash"] = f->hash.ToHex();
    d["reason"] = f->reason;
    return d;
}

nb::dict Combine_(const std::vector<const PyPartial*>& parts, uint32_t height, const std::string& network, const std::string& mode)
{
    run::SwiftSyncRangesResult r;
    r.chain = ParseNetwork(network);
    r.mode = ParseMode(mode);
    r.height = height;
    r.ranges = parts.size();
    std::vector<Partial> ps;
    ps.reserve(parts.size());
    for (const PyPartial* p : parts) ps.push_back(p->p);
    r.verdict = swiftsync::Combine(ps, height, r.chain);
    return FieldsDict(RangesVerdictFields(r));
}

/// The coins of several runs (Python bytes, kept alive by the cursor's owner) in key order.
class RunCursor final : public CoinCursor {
public:
    explicit RunCursor(const std::vector<nb::bytes>& runs)
    {
        std::vector<std::span<const uint8_t>> spans;
        for (const nb::bytes& b : runs) spans.push_back(View(b));
        auto m = swiftsync::UnspentRunMerger::Open(spans);
        if (!m) Throw(m.error());
        m_merger = std::move(*m);
    }
    bool Next(OutPoint& op, Coin& coin) override
    {
        if (m_error) return false;
        auto more = m_merger->Next(op, coin);
        if (!more) {
            m_error = more.error();
            return false;
        }
        return *more;
    }

private:
    std::unique_ptr<swiftsync::UnspentRunMerger> m_merger;
};

nb::dict RunStats(const std::vector<nb::bytes>& runs, const std::string& hash_type, std::optional<uint32_t> height)
{
    if (hash_type != "hash_serialized_3" && hash_type != "none") {
        throw PyError{"InvalidArgument", "hash_type must be 'hash_serialized_3' or 'none'"};
    }
    RunCursor cur(runs);
    UtxoStats stats;
    {
        nb::gil_scoped_release nogil;
        UtxoStatsBuilder builder(UtxoHashTypes{hash_type == "hash_serialized_3", false});
        OutPoint op;
        Coin coin;
        while (cur.Next(op, coin)) builder.Add(op, coin);
        builder.Finish(stats);
    }
    cur.ThrowIfFailed();
    if (height) {
        stats.height = *height;
        stats.height_from_coins = false;
    }
    return FieldsDict(UtxoStatsFields(stats));
}

/// SwiftSync's progress as the dict a progress callback receives: height and tip_height (n), as
/// the classic run's, the bytes checked, the seconds and the peers still serving; the phase
/// ("check", then "write") and the coins written of those to write.
void SwiftSyncProgressInto(nb::dict& d, const swiftsync::SwiftSyncProgress& p)
{
    d["height"] = p.height;
    d["tip_height"] = p.n;
    d["bytes"] = p.bytes;
    d["elapsed_s"] = p.elapsed_s;
    d["peers"] = p.peers;
    d["phase"] = p.writing ? "write" : "check";
    d["coins_written"] = p.coins_written;
    d["coins_to_write"] = p.coins_to_write;
}

/// `ibdkit.replay(..., swiftsync=HINTS)`: the SwiftSync driver (run/swiftsync_run.h) without the
/// GIL, its result as the CLI's `replay --swiftsync --json` fields.
nb::dict ReplaySwiftSync(const std::string& blocks, const std::string& hints, std::optional<std::string> network,
                         std::optional<std::string> chainstate, const RunSettings& settings, bool statistics, const std::string& mode,
                         bool fallback, nb::object progress)
{
    run::SwiftSyncRunOptions o;
    swiftsync::SwiftSyncOptions& s = o.swiftsync;
    s.source = SourceOf(blocks, network);
    s.hints = hints;
    if (chainstate) s.chainstate = *chainstate;
    s.mode = ParseMode(mode);
    if (s.mode == swiftsync::AggregateMode::Coins && s.source.datadir.empty()) {
        throw PyError{"InvalidArgument", "swiftsync_mode='coins' reads the spent coins from a Bitcoin Core datadir's rev files: give a "
                                         "datadir, or swiftsync_mode='outpoints' for bare block files (it checks much less)"};
    }
    // The settings as the classic replay takes them (the fallback's), and as SwiftSync does.
    s.Settings() = settings;
    o.statistics = statistics;
    ProgressBridge bridge(progress);
    s.on_progress = [&](const swiftsync::SwiftSyncProgress& p) { bridge.Call([&](nb::dict& d) { SwiftSyncProgressInto(d, p); }); };
    s.interrupt = bridge.flag();
    if (fallback) {
        ReplayOptions& c = o.fallback.emplace();
        c.source = s.source;
        c.Settings() = settings;
        c.interrupt = bridge.flag();
    }
    Result<run::SwiftSyncRunResult> r = Error{};
    {
        nb::gil_scoped_release nogil;
        r = run::RunSwiftSync(std::move(o));
    }
    bridge.Rethrow();
    if (!r) Throw(r.error());
    return FieldsDict(SwiftSyncRunFields(*r, settings.policy));
}

/// `ibdkit.sync(..., swiftsync=HINTS)`: SwiftSync from the peers, then the classic sync.
nb::dict SyncSwiftSync(const std::vector<std::string>& connect, const std::string& hints, std::optional<std::string> network,
                       std::optional<std::string> chainstate, const RunSettings& settings, double timeout, std::size_t window,
                       uint32_t keep_recent, bool statistics, std::optional<std::string> datadir, const std::string& mode,
                       nb::object progress)
{
    run::SwiftSyncPeersOptions o;
    swiftsync::SwiftSyncOptions& s = o.swiftsync;
    s.mode = ParseMode(mode);
    if (s.mode == swiftsync::AggregateMode::OutPoints && (datadir || keep_recent)) {
        throw PyError{"InvalidArgument", "datadir and keep_recent need the peers' spent coins: swiftsync_mode='coins'"};
    }
    o.chain = SyncNetwork(network ? std::optional<ChainType>(ParseNetwork(*network)) : std::nullopt, chainstate.value_or(""),
                          datadir.value_or(""));
    for (const std::string& c : connect) {
        if (!SplitHostPort(c, GetChainParams(o.chain).default_port)) throw PyError{"InvalidArgument", "cannot parse '" + c + "' as HOST:PORT"};
    }
    if (connect.empty()) throw PyError{"InvalidArgument", "connect names no peer"};
    if (window < 1 || window > 1024) throw PyError{"InvalidArgument", "window must be in 1..1024"};
    o.connect = connect;
    o.timeout = std::chrono::milliseconds(int64_t(timeout * 1000));
    o.window = window;
    o.keep_recent = keep_recent;
    o.statistics = statistics;
    s.hints = hints;
    s.source.chain = o.chain;
    if (chainstate) s.chainstate = *chainstate;
    if (datadir) o.datadir = *datadir; // the run keeps the chainstate in it when none is named
    // The continuation takes them from `s` (run::SyncSwiftSync).
    s.Settings() = settings;
    SyncOptions& c = o.continuation.emplace();
    c.datadir_out = o.datadir;
    c.timeout = o.timeout;
    c.window = window;
    ProgressBridge bridge(progress);
    s.on_progress = [&](const swiftsync::SwiftSyncProgress& p) { bridge.Call([&](nb::dict& d) { SwiftSyncProgressInto(d, p); }); };
    o.interrupt = bridge.flag();
    Result<run::SwiftSyncPeersResult> r = Error{};
    {
        nb::gil_scoped_release nogil;
        r = run::SyncSwiftSync(std::move(o));
    }
    bridge.Rethrow();
    if (!r) Throw(r.error());
    return FieldsDict(SwiftSyncPeersFields(*r, s.policy));
}

} // namespace

void BindSwiftSync(nb::module_& m)
{
    nb::class_<PySalt>(m, "_Salt")
        .def_static("_random", [] { return PySalt{swiftsync::Salt::Random()}; })
        .def_static("_from_bytes", [](const nb::bytes& b) {
            if (b.size() != swiftsync::Salt::SIZE) {
                throw PyError{"InvalidArgument", "a salt is 32 bytes, got " + std::to_string(b.size())};
            }
            return PySalt{swiftsync::Salt::FromBytes(std::span<const uint8_t, 32>(View(b).data(), 32))};
        })
        .def("_copy_for_worker", [](const PySalt& s) {
            std::array<uint8_t, swiftsync::Salt::SIZE> b{};
            s.salt.CopyForWorker(b);
            nb::bytes out = Bytes(b);
            b.fill(0);
            return out;
        })
        .def("__repr__", [](const PySalt&) { return std::string("<ibdkit.swiftsync.Salt (hidden)>"); })
        .def("__reduce__", [](const PySalt&) -> nb::object {
            throw nb::type_error("an ibdkit.swiftsync.Salt is not pickled: hand it to a worker with "
                                 "salt.to_worker_bytes() and Salt.from_worker_bytes(b)");
        });

    nb::class_<PyHints>(m, "_Hints")
        .def(nb::new_(&ReadHints), "path"_a)
        .def_prop_ro("height", [](const PyHints& h) { return h.hints->height(); })
        .def_prop_ro("total", [](const PyHints& h) { return h.hints->total(); })
        .def("indices", [](const PyHints& h, uint32_t height) {
            if (height < 1 || height > h.hints->height()) {
                throw PyError{"InvalidArgument", "height must be in 1.." + std::to_string(h.hints->height())};
            }
            return h.hints->Indices(height);
        }, "height"_a);

    nb::class_<PyBlocks>(m, "_SwiftSyncBlocks")
        .def(nb::new_(&Locate), "path"_a, "network"_a.none())
        .def_prop_ro("network", [](const PyBlocks& b) { return std::string(ChainTypeName(b.chain->chain)); })
        .def_prop_ro("tip_height", [](const PyBlocks& b) { return b.chain->TipHeight(); })
        .def_prop_ro("is_datadir", [](const PyBlocks& b) { return !b.datadir.empty(); })
        .def("hash_at", [](const PyBlocks& b, uint32_t height) {
            const int64_t i = int64_t(height) - b.chain->base_height;
            if (i < 0 || height > uint32_t(std::max(b.chain->TipHeight(), 0))) {
                throw PyError{"InvalidArgument", "the blocks hold heights " + std::to_string(b.chain->base_height) + ".." +
                                                     std::to_string(b.chain->TipHeight()) + ", not " + std::to_string(height)};
            }
            return b.chain->headers.Hash(int(height)).ToHex();
        }, "height"_a)
        .def("split", &PyBlocks::Split, "height"_a, "count"_a);

    nb::class_<PyPartial>(m, "_Partial")
        .def_prop_ro("first", [](const PyPartial& p) { return p.p.from; })
        .def_prop_ro("last", [](const PyPartial& p) { return p.p.to; })
        .def_prop_ro("agg_in", [](const PyPartial& p) { return Bytes(p.p.agg_in.ToBytes()); })
        .def_prop_ro("agg_out", [](const PyPartial& p) { return Bytes(p.p.agg_out.ToBytes()); })
        .def_prop_ro("counts", [](const PyPartial& p) { return FieldValue(RangeCountsValue(p.p.counts)); })
        .def_prop_ro("supply", [](const PyPartial& p) { return p.p.supply; })
        .def_prop_ro("failure", [](const PyPartial& p) { return FailureDict(p.p.failure); })
        .def_prop_ro("mode", [](const PyPartial& p) { return std::string(swiftsync::AggregateModeName(p.p.mode)); })
        .def_prop_ro("script_checked_inputs", [](const PyPartial& p) { return p.p.script_checked_inputs; })
        .def("_to_bytes", [](const PyPartial& p) { return Bytes(swiftsync::SerializePartial(p.p)); })
        .def("_run", [](const PyPartial& p) { return p.run; })
        .def_static("_from_parts", &FromParts, "partial"_a, "run"_a.none());

    m.def("_replay_swiftsync", &ReplaySwiftSync, "blocks"_a, "hints"_a, "network"_a.none(), "chainstate"_a.none(), "settings"_a,
          "statistics"_a, "mode"_a, "fallback"_a, "progress"_a.none());
    m.def("_sync_swiftsync", &SyncSwiftSync, "connect"_a, "hints"_a, "network"_a.none(), "chainstate"_a.none(), "settings"_a,
          "timeout"_a, "window"_a, "keep_recent"_a, "statistics"_a, "datadir"_a.none(), "mode"_a, "progress"_a.none());
    m.def("_swiftsync_mode", [](const std::string& mode) { ParseMode(mode); }, "mode"_a);
    m.def("_check_range", &CheckRange_, "blocks"_a, "hints"_a, "salt"_a, "first"_a, "last"_a, "threads"_a,
          "collect_unspent"_a, "mode"_a, "assumevalid"_a.none(), "skip_scripts"_a);
    m.def("_combine", &Combine_, "partials"_a, "height"_a, "network"_a, "mode"_a);
    m.def("_write_chainstate", [](const std::vector<nb::bytes>& runs, const std::string& path, const std::string& network,
                                  const std::string& tip) {
        auto hash = BlockHash::FromHex(tip);
        if (!hash) throw PyError{"InvalidArgument", "tip must be a block hash (64 hex digits), got '" + tip + "'"};
        const ChainType chain = ParseNetwork(network);
        std::vector<std::span<const uint8_t>> spans;
        for (const nb::bytes& b : runs) spans.push_back(View(b));
        Result<uint64_t> written = Error{};
        {
            nb::gil_scoped_release nogil;
            written = swiftsync::WriteUnspentRuns(spans, path, chain, *hash);
        }
        if (!written) Throw(written.error());
        return *written;
    }, "runs"_a, "path"_a, "network"_a, "tip"_a);
    m.def("_unspent_stats", &RunStats, "runs"_a, "hash_type"_a, "height"_a.none());
    m.def("_unspent_coins", [](std::vector<nb::bytes> runs, const std::string& network) {
        auto cur = std::make_unique<RunCursor>(runs);
        return CoinIterator(nb::cast(runs), std::move(cur), AddressNetworkOf(ParseNetwork(network)));
    }, "runs"_a, "network"_a);
    m.def("_unspent_batches", [](std::vector<nb::bytes> runs, const std::string& network, std::size_t batch_size, bool script_hex) {
        if (batch_size == 0 || batch_size > (1u << 24)) throw PyError{"InvalidArgument", "batch_size must be in 1..16777216"};
        auto cur = std::make_unique<RunCursor>(runs);
        return BatchIterator(nb::cast(runs), std::move(cur), AddressNetworkOf(ParseNetwork(network)), batch_size, script_hex);
    }, "runs"_a, "network"_a, "batch_size"_a, "script_hex"_a);
}

} // namespace ibdkit::py

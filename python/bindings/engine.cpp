// replay and sync in the Python module: the options from Python, the run without the GIL, the
// progress callback, and the result as a dict of the same fields as the CLI's --json
// (run/result_fields.h).
#include "bindings.h"

#include <ibdkit/chain/params.h>
#include <ibdkit/common/write_guard.h>
#include <ibdkit/engine/replay.h>
#include <ibdkit/engine/sync.h>
#include <ibdkit/memory/policy_id.h>
#include <ibdkit/run/classic_run.h>
#include <ibdkit/run/result_fields.h>
#include <ibdkit/wire/host_port.h>

#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <chrono>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace nb = nanobind;
using namespace nb::literals;

namespace ibdkit::py {
namespace {

namespace fs = std::filesystem;

/// The engine's progress as a dict (replay's and sync's callbacks).
void ProgressInto(nb::dict& d, const EngineProgress& p)
{
    d["height"] = p.height;
    d["tip_height"] = p.tip_height;
    d["blocks"] = p.blocks;
    d["txs"] = p.txs;
    d["bytes"] = p.bytes;
    d["elapsed_s"] = p.elapsed_s;
    d["cache_bytes"] = p.cache_bytes;
    d["cache_budget"] = p.cache_budget;
    d["flushes"] = p.flushes;
    d["flushing"] = p.flushing;
}

/// Runs `run` (Replay or Sync) on `o` without the GIL, re-raises what the progress callback or a
/// signal raised (after the run flushed), raises a peer's failure (a sync's: ibdkit.Error of the
/// NetErrc's kind, after the blocks connected were flushed, as the CLI exits 1), and returns the
/// result's fields as a dict.
template <typename Options, typename Run, typename ToFields>
nb::dict RunAndReport(const Options& o, ProgressBridge& bridge, Run run, ToFields to_fields)
{
    decltype(run(o)) r = Error{};
    {
        nb::gil_scoped_release nogil;
        r = run(o);
    }
    bridge.Rethrow();
    if (!r) Throw(r.error());
    if constexpr (requires { r->failure; }) {
        if (r->failure) {
            throw PyError{std::string(NetErrcName(r->failure->code)), SyncStopped(*r) + ": " + r->failure->message};
        }
    }
    return FieldsDict(to_fields(*r, o.policy));
}

/// Before any block is read: the chainstate folder must be one ibdkit may write (common/write_guard.h).
void CheckWritable(const EngineOptions& o)
{
    if (auto refused = CheckChainstateWritable(o.chainstate)) throw PyError{"Refused", refused->message};
}

nb::dict Replay_(const std::string& blocks, std::optional<std::string> network, std::optional<std::string> chainstate,
                 const RunSettings& settings, std::optional<int> stop_height, bool via_p2p, bool statistics, nb::object progress)
{
    ReplayOptions o;
    o.Settings() = settings;
    o.statistics = statistics;
    // A Core data directory (its block index, or a network's subdirectory) is read through the index.
    o.source = SourceOf(blocks, network);
    if (chainstate) o.chainstate = *chainstate;
    o.stop_height = stop_height;
    o.via_p2p = via_p2p;
    CheckWritable(o);
    ProgressBridge bridge(progress);
    o.interrupt = bridge.flag();
    o.on_progress = [&](const ReplayProgress& p) { bridge.Call([&](nb::dict& d) { ProgressInto(d, p); }); };
    return RunAndReport(o, bridge, Replay, ReplayResultFields);
}

nb::dict Sync_(const std::vector<std::string>& connect, std::optional<std::string> network, std::optional<std::string> chainstate,
               const RunSettings& settings, double timeout, double headers_wait, std::size_t window, std::optional<int> stop_height,
               bool getblocks, bool statistics, std::optional<std::string> datadir, nb::object progress)
{
    SyncOptions o;
    o.Settings() = settings;
    o.statistics = statistics;
    o.chain = SyncNetwork(network ? std::optional<ChainType>(ParseNetwork(*network)) : std::nullopt, chainstate.value_or(""),
                          datadir.value_or(""));
    if (connect.empty()) throw PyError{"InvalidArgument", "connect names no peer"};
    for (const std::string& c : connect) {
        if (!SplitHostPort(c, GetChainParams(o.chain).default_port)) throw PyError{"InvalidArgument", "cannot parse '" + c + "' as HOST:PORT"};
    }
    if (connect.size() > 1 && getblocks) throw PyError{"InvalidArgument", "getblocks takes one peer"};
    if (chainstate) o.chainstate = *chainstate;
    o.timeout = std::chrono::milliseconds(int64_t(timeout * 1000));
    o.headers_wait = std::chrono::milliseconds(int64_t(headers_wait * 1000));
    if (window < 1 || window > 1024) throw PyError{"InvalidArgument", "window must be in 1..1024"};
    o.window = window;
    o.stop_height = stop_height;
    o.force_getblocks = getblocks;
    if (datadir) o.datadir_out = *datadir; // the run keeps the chainstate in it when none is named
    CheckWritable(o);
    ProgressBridge bridge(progress);
    o.interrupt = bridge.flag();
    o.on_sync_progress = [&](const SyncProgress& p) {
        bridge.Call([&](nb::dict& d) {
            ProgressInto(d, p);
            d["header_height"] = p.header_height;
            d["in_flight"] = p.in_flight;
            d["headers_phase"] = p.headers_phase;
        });
    };
    // One driver for one peer or several, as the CLI's (run/classic_run.h); the engine's result goes
    // through RunAndReport, the peers' side beside it.
    run::SyncPeersResult side;
    auto sync = [&](const SyncOptions& so) -> Result<SyncResult> {
        auto r = run::RunSync(so, connect, {});
        if (!r) return r.error();
        side = std::move(r->sync);
        return side.sync;
    };
    auto fields = [&](const SyncResult& r, PolicyId id) {
        side.sync = r;
        return connect.size() > 1 ? SyncPeersFields(side, id) : SyncResultFields(r, id);
    };
    return RunAndReport(o, bridge, sync, fields);
}

} // namespace

void BindEngine(nb::module_& m)
{
    // The settings every run shares, checked once by the library (CheckRunSettings) before a run is
    // asked for: the functions below take them whole.
    nb::class_<RunSettings>(m, "_RunSettings");
    m.def("_run_settings", &SettingsOf, "dbcache"_a, "policy"_a, "threads"_a, "assumevalid"_a.none(), "skip_scripts"_a,
          "minimum_chain_work"_a.none());
    m.def("_replay", &Replay_, "blocks"_a, "network"_a, "chainstate"_a, "settings"_a, "stop_height"_a, "via_p2p"_a, "statistics"_a,
          "progress"_a.none());
    m.def("_sync", &Sync_, "connect"_a, "network"_a.none(), "chainstate"_a, "settings"_a, "timeout"_a, "headers_wait"_a, "window"_a,
          "stop_height"_a, "getblocks"_a, "statistics"_a, "datadir"_a.none(), "progress"_a.none());
    m.def("policies", [] {
        std::vector<std::string> out;
        for (PolicyId id : ALL_POLICIES) out.emplace_back(PolicyName(id));
        return out;
    }, "The buffer policy names accepted wherever a policy is asked for.");
}

} // namespace ibdkit::py

// The classic engine's runs as drivers (include/ibdkit/run/classic_run.h): the run, then the
// height export and the hintsfile of the chainstate it leaves.
#include <ibdkit/run/classic_run.h>

#include <ibdkit/common/write_guard.h>
#include <ibdkit/wire/host_port.h>

#include "run/scratch_dir.h"

#include <cstddef>
#include <string>
#include <utility>

namespace ibdkit::run {
namespace {

namespace fs = std::filesystem;

/// The export `format` names (EXPORT_FORMAT_NAMES): a dump's format, or nullopt for Core's
/// snapshot; Errc::InvalidValue for another name.
Result<std::optional<ExportFormat>> KindOf(std::string_view format)
{
    if (format == "snapshot") return std::optional<ExportFormat>();
    if (format == "csv") return std::optional(ExportFormat::Csv);
    if (format == "jsonl") return std::optional(ExportFormat::Jsonl);
    if (format == "sqlite") return std::optional(ExportFormat::Sqlite);
    return Error{Errc::InvalidValue, "unknown export format '" + std::string(format) + "' (csv, jsonl, sqlite or snapshot)"};
}

/// Before the run: the output files checked, the stop height set for the export, and a temporary
/// chainstate (held in `scratch`) when the outputs need one and none was named.
Result<bool> Prepare(EngineOptions& o, const RunOutputs& outputs, std::optional<ScratchDir>& scratch)
{
    const auto& ex = outputs.height_export;
    if (ex) {
        if (auto kind = KindOf(ex->format); !kind) return kind.error();
        if (auto refused = CheckOutputFile(ex->out)) return *refused;
        if (o.stop_height && *o.stop_height != ex->height) {
            return Error{Errc::InvalidValue, "the export at height " + std::to_string(ex->height) + " stops the run there, not at " +
                                                 std::to_string(*o.stop_height)};
        }
        o.stop_height = ex->height;
    }
    if (!outputs.write_hints.empty()) {
        if (auto refused = CheckOutputFile(outputs.write_hints)) return *refused;
    }
    if ((ex || !outputs.write_hints.empty()) && o.chainstate.empty()) {
        auto dir = ScratchDir::Make(ex ? "height" : "hints");
        if (!dir) return dir.error();
        o.chainstate = scratch.emplace(std::move(*dir)).Path();
    }
    return true;
}

/// The UTXO set at the export's height, written from the chainstate the run left.
Result<ChainstateExport> ExportAt(const EngineOptions& o, const EngineResult& r, const HeightExport& ex, const ExportProgress& progress)
{
    if (r.height != ex.height) {
        return Error{Errc::InvalidValue, "the export at height " + std::to_string(ex.height) + ": the chainstate stands at height " +
                                             std::to_string(r.height) +
                                             (r.height > ex.height ? " (a chainstate cannot go back: use a new chainstate)"
                                                                   : " (the chain ended before)") +
                                             "; nothing exported"};
    }
    CoinsDBOptions opt;
    opt.read_only = true;
    opt.policy = o.policy;
    opt.cache_bytes = std::size_t(64) << 20;
    auto db = CoinsDB::Open(o.chainstate, opt);
    if (!db) return Error{db.error().code, "opening " + o.chainstate.string() + ": " + db.error().message};
    const auto net = ParseAddressNetwork(ChainTypeName(r.chain)).value_or(AddressNetwork::Main);
    return ExportChainstate(**db, ex.format, ex.out, GetChainParams(r.chain), net, progress);
}

/// After the run: the export and the hintsfile (from `blocks`: a replay's), when it ended cleanly.
Result<RunOutputsResult> Finish(const EngineOptions& o, const BlockFileSource* blocks, const EngineResult& r, bool clean,
                                const RunOutputs& outputs)
{
    RunOutputsResult done;
    if (!clean) return done;
    if (outputs.height_export) {
        auto ex = ExportAt(o, r, *outputs.height_export, outputs.on_export_progress);
        if (!ex) return ex.error();
        done.exported = std::move(*ex);
    }
    if (!outputs.write_hints.empty() && blocks && r.height >= 0) {
        swiftsync::BuildHintsOptions h;
        h.chainstate = o.chainstate;
        h.source = *blocks;
        h.source.chain = r.chain;
        h.out = outputs.write_hints;
        h.threads = o.threads;
        h.policy = o.policy;
        h.on_progress = outputs.on_hints_progress;
        auto built = swiftsync::BuildHints(h);
        if (!built) return Error{built.error().code, "the hintsfile: " + built.error().message};
        done.hints = *built;
    }
    return done;
}

} // namespace

Result<ChainstateExport> ExportChainstate(const CoinsDB& db, std::string_view format, const fs::path& out, const ChainParams& params,
                                          AddressNetwork net, const ExportProgress& progress)
{
    auto kind = KindOf(format);
    if (!kind) return kind.error();
    ChainstateExport done;
    if (!*kind) {
        auto r = WriteUtxoSnapshot(db, params, out, [&](uint64_t n, double f) {
            if (progress) progress("write", n, f);
        });
        if (!r) return r.error();
        done.snapshot = std::move(*r);
        return done;
    }
    auto r = ExportUtxoSet(db, **kind, out, net, progress);
    if (!r) return r.error();
    done.dump = std::move(*r);
    return done;
}

Result<ReplayRunResult> RunReplay(ReplayOptions options, const RunOutputs& outputs)
{
    std::optional<ScratchDir> scratch;
    if (auto ready = Prepare(options, outputs, scratch); !ready) return ready.error();
    auto r = Replay(options);
    if (!r) return r.error();
    const bool clean = !r->reject_reason && !r->interrupted;
    auto written = Finish(options, &options.source, *r, clean, outputs);
    if (!written) return written.error();
    return ReplayRunResult{std::move(*r), std::move(*written)};
}

Result<SyncRunResult> RunSync(SyncOptions options, const std::vector<std::string>& connect, const RunOutputs& outputs)
{
    IBDKIT_EXPECTS(!connect.empty() && outputs.write_hints.empty(), "RunSync: at least one peer, and no hintsfile");
    std::optional<ScratchDir> scratch;
    StartedDatadir started(options.datadir_out, options.chain);
    if (auto ready = Prepare(options, outputs, scratch); !ready) return ready.error();
    SyncRunResult run;
    if (connect.size() > 1) {
        auto r = SyncFromPeers(options, connect);
        if (!r) return r.error();
        run.sync = std::move(*r);
    } else {
        auto hp = SplitHostPort(connect.front(), GetChainParams(options.chain).default_port);
        if (!hp) return Error{Errc::InvalidValue, "expected HOST:PORT, got '" + connect.front() + "'"};
        options.host = hp->first;
        options.port = hp->second;
        auto r = Sync(options);
        if (!r) return r.error();
        run.sync.sync = std::move(*r);
    }
    const SyncResult& s = run.sync.sync;
    if (s.blocks > 0 || s.recovered_blocks > 0 || (!s.failure && !s.interrupted)) started.Keep();
    const bool clean = !s.reject_reason && !s.interrupted && !s.failure;
    auto written = Finish(options, nullptr, s, clean, outputs);
    if (!written) return written.error();
    run.outputs = std::move(*written);
    return run;
}

} // namespace ibdkit::run

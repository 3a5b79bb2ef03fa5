// src/engine/run.cpp — the engine's run over a block source, phase by phase (run.h).
#include "run.h"

#include "common/task_pool.h"
#include "connect_loop.h"
#include "pipeline.h"

#include <ibdkit/blockfile/locate.h>
#include <ibdkit/coins/coins_db.h>
#include <ibdkit/threads.h>
#include <ibdkit/utxo/stats.h>

#include "blockfile/datadir_writer.h"
#include "blockfile/undo_file.h"
#include "common/write_guard_internal.h"
#include "connect/disconnect.h"
#include "memory/cleanse.h"
#include "wire/protocol.h"

#include <algorithm>
#include <climits>
#include <memory>
#include <optional>
#include <string>
#include <system_error>
#include <vector>

namespace ibdkit::engine {

namespace {

/// Decoded blocks ahead of the one being connected whose missing prevouts are read ahead.
constexpr std::size_t PREFETCH_BLOCKS = 4;

/// What the phases of one run share.
struct EngineRun {
    const EngineOptions& o;
    const ChainParams& params;
    BlockSource& src;
    CoinsDB& db;
    BlockConnector& conn;
    UndoFileWriter* undo; ///< null without --undo
    EngineResult& res;
    const BlockContexts& contexts;
    BlockSource::Prepared prepared; ///< what the source's Prepare found

    /// The source's blocks from..to with their contexts, each through `emit`.
    std::optional<Error> Produce(int from, int to, const BlockSource::Emit& emit)
    {
        return src.Produce(from, to, [&](RawBlock&& raw) {
            raw.ctx = contexts.At(raw.height);
            return emit(std::move(raw));
        });
    }
};

/// After a phase before the connect loop: the run goes on, or ends cleanly (the source failed or
/// the user interrupted; the chainstate is left as the next run can pick it up).
enum class Next { Continue, End };

/// Recovery of an interrupted flush: rolls the blocks between the tips of `range` forward onto the
/// cache and flushes them.
Result<Next> RecoverInterruptedFlush(EngineRun& run, const ReplayRange& range)
{
    auto& src = run.src;
    auto from = range.old_tip.IsNull() ? std::optional<int>(0) : src.Headers().HeightOf(range.old_tip);
    auto to = src.Headers().HeightOf(range.new_tip);
    if (!from || !to) return EnvError(run.prepared.recovery);
    int next = std::max(*from + 1, 1);
    std::optional<Error> undecodable;
    auto e = src.Produce(next, *to, [&](RawBlock&& raw) {
        auto block = DecodeBlock(raw.bytes.uchars());
        if (!block) {
            undecodable = src.Undecodable(raw.height, block.error());
            return false;
        }
        run.conn.Rollforward(*block, raw.height);
        ++next;
        return true;
    });
    if (e) return *e;
    if (undecodable) return *undecodable;
    if (next <= *to) return Next::End; // failed or interrupted: the chainstate keeps its H marker
    if (auto st = run.conn.Flush(range.new_tip); !st.ok()) return EnvError("flush after recovery failed: " + st.message);
    return Next::Continue;
}

/// Every stale block's undo record must be there before anything is fetched or changed.
std::optional<Error> CheckStaleUndoRecords(EngineRun& run, const BlockSource::StaleBranch& reorg)
{
    if (!run.undo) {
        return EnvError("reorganising below the chainstate's tip needs the undo data of the blocks above the fork: "
                        "give the --undo directory the chainstate was built with");
    }
    for (std::size_t i = 0; i < reorg.hashes.size(); ++i) {
        auto pos = run.undo->Find(reorg.hashes[i]);
        if (!pos) return pos.error();
        if (!*pos) {
            return EnvError("no undo data for block " + reorg.hashes[i].ToHex() + " at height " +
                            std::to_string(reorg.tip_height - int(i)) + " in " + run.o.undo_dir.string() +
                            ": it was connected without this --undo directory, so the chainstate cannot be reorganised below it");
        }
    }
    return std::nullopt;
}

/// A reorganisation below the tip: disconnects the stale branch, tip first, with its undo data,
/// and flushes.
Result<Next> DisconnectStaleBranch(EngineRun& run, const BlockSource::StaleBranch& reorg)
{
    if (auto e = CheckStaleUndoRecords(run, reorg)) return *e;
    const std::string undo_dir = run.o.undo_dir.string();
    UndoFileReader rev(run.o.undo_dir, ObfuscationKey{}, run.params.message_start);
    std::optional<Error> failure;
    uint64_t done = 0;
    auto e = run.src.ProduceStale(reorg, [&](RawBlock&& raw) {
        const std::span<const uint8_t> bytes = raw.bytes.uchars();
        auto block = raw.message ? DecodeBlockMessage(bytes) : DecodeBlock(bytes);
        const std::string at = raw.hash.ToHex() + " at height " + std::to_string(raw.height);
        if (!block || block->GetHash() != raw.hash) {
            failure = EnvError("stale block " + at + (block ? " came back as another block" : " does not decode: " + block.error().message));
            return false;
        }
        auto pos = run.undo->Find(raw.hash);
        if (!pos || !*pos) {
            failure = EnvError("no undo data for block " + at + " in " + undo_dir +
                               (pos ? ": it was connected without --undo" : ": " + pos.error().message));
            return false;
        }
        auto u = rev.Read((*pos)->file, (*pos)->pos, block->hash_prev_block);
        if (!u) {
            failure = EnvError("undo data of block " + raw.hash.ToHex() + ": " + u.error().message);
            return false;
        }
        std::string why;
        const auto r = DisconnectBlock(*block, raw.height, raw.hash, std::move(*u), run.conn.cache(), &why);
        if (r != DisconnectResult::OK) {
            failure = EnvError("DisconnectBlock of " + at +
                               (r == DisconnectResult::UNCLEAN ? " was unclean: the chainstate does not match the block" : " failed: " + why));
            return false;
        }
        ++done;
        return !Interrupted(run.o);
    });
    if (e) return *e;
    if (failure) return *failure;
    // Interrupted or the peer failed part way: the cache is dropped (not flushed), the
    // chainstate keeps its old tip and the next run starts the reorganisation again.
    if (done < reorg.hashes.size()) return Next::End;
    if (auto st = run.conn.Flush(); !st.ok()) return EnvError("flush after disconnecting failed: " + st.message);
    run.res.blocks_disconnected = done;
    run.res.reorg_fork_height = reorg.tip_height - int(reorg.hashes.size());
    return Next::Continue;
}

/// Resume after the chainstate's best block `best`; a new chainstate (null) starts after the
/// genesis. Returns the first height to connect and sets the result's tip and start height.
Result<int> ResumeHeight(EngineRun& run, const BlockHash& best)
{
    int next = 1;
    if (best.IsNull()) {
        run.conn.cache().SetBestBlock(run.params.consensus.hash_genesis_block);
        run.res.height = 0;
        run.res.tip = run.params.consensus.hash_genesis_block;
    } else {
        auto h = run.src.Headers().HeightOf(best);
        if (!h) {
            return EnvError("the chainstate's best block " + best.ToHex() + " is not on " + run.prepared.chain +
                            run.prepared.chain_advice);
        }
        run.res.height = *h;
        run.res.tip = best;
        next = *h + 1;
    }
    run.res.start_height = next;
    return next;
}

/// The connect loop on one thread: the source's emit decodes, checks and connects in place.
std::optional<Error> ConnectInline(EngineRun& run, ConnectLoop& loop, int next, int last)
{
    return run.Produce(next, last, [&](RawBlock&& raw) {
        ReadyBlock rb = DecodeAndCheck(std::move(raw), run.params.consensus);
        return loop.ConnectStep(rb);
    });
}

/// Before block `rb` connects: adds the coins read ahead for it (unless a flush came between),
/// and asks the pipeline to read the missing prevouts of the decoded blocks behind it, from
/// emission number `scanned` on (advanced past those looked at).
void PrefetchAhead(Pipeline& pipe, BlockConnector& conn, EngineResult& res, const ReadyBlock& rb, uint64_t& scanned)
{
    if (auto pf = pipe.TakePrefetched(rb.seq); pf && pf->epoch == conn.counters().flushes) {
        for (auto& [op, coin] : pf->coins) res.coins_prefetched += conn.cache().AddFetched(op, std::move(coin));
    }
    for (const ReadyBlock* ahead : pipe.Peek(std::max(scanned, rb.seq + 1), PREFETCH_BLOCKS)) {
        scanned = ahead->seq + 1;
        if (!ahead->outside_listed) continue; // decoded before prefetch started
        std::vector<OutPoint> missing;
        for (const OutPoint& prevout : ahead->outside_prevouts) {
            if (!conn.cache().HasEntry(prevout)) missing.push_back(prevout);
        }
        pipe.Prefetch(ahead->seq, conn.counters().flushes, std::move(missing));
    }
}

/// The connect loop over `threads` (at least two): the source and the decoders on the pipeline's
/// threads, blocks connected here. `on_disk`: the chainstate already holds coins (resumed), so
/// prefetch starts at once; otherwise after the first flush. Adds the bytes the pipeline's and the
/// helpers' threads cleansed to `cleansed_elsewhere`.
std::optional<Error> ConnectPipelined(EngineRun& run, ConnectLoop& loop, int next, int last, unsigned threads, bool on_disk,
                                      uint64_t& cleansed_elsewhere)
{
    BlockConnector& conn = run.conn;
    // The cache work of each block (ConnectBlock's lookups, spends and adds) is spread over this
    // thread, the source thread (between its blocks) and threads - 2 helpers, one task per shard
    // of the cache.
    TaskPool helpers(threads - 2);
    const TaskRunner runner = [&helpers](std::size_t n, const TaskPool::Task& task) { helpers.Run(n, task); };
    conn.SetTaskRunner(&runner);
    Pipeline pipe(run.params.consensus, threads - 1, &run.db, &helpers);
    bool prefetch = on_disk;
    if (prefetch) pipe.StartPrefetch();
    pipe.Start([&](const BlockSource::Emit& emit) { return run.Produce(next, last, emit); });
    uint64_t scanned = 0; // next emission number to look at for prefetch
    while (auto rb = pipe.Pop()) {
        if (prefetch) PrefetchAhead(pipe, conn, run.res, *rb, scanned);
        if (!loop.ConnectStep(*rb)) break;
        if (!prefetch && conn.counters().flushes > 0) { // coins are on disk from the first flush on
            prefetch = true;
            pipe.StartPrefetch();
        }
    }
    auto produce_error = pipe.Stop();
    conn.SetTaskRunner(nullptr);
    cleansed_elsewhere += pipe.Cleansed() + helpers.Cleansed();
    return produce_error;
}

/// The run from the source's Prepare to the final flush. An error is an environment failure; a
/// rejected block, a failed source or an interrupt end the run cleanly (recorded in `res`). A block
/// the source could not read or decode ends it in `source_failure`, after the final flush of the
/// blocks before it.
std::optional<Error> RunPhases(const EngineOptions& o, const ChainParams& params, BlockSource& src, CoinsDB& db,
                               const CacheBudget& budget, unsigned threads, EngineResult& res, uint64_t& cleansed_elsewhere,
                               std::optional<Error>& source_failure)
{
    std::unique_ptr<UndoFileWriter> undo;
    if (!o.undo_dir.empty()) {
        auto w = UndoFileWriter::Open(o.undo_dir, params.message_start);
        if (!w) return w.error();
        undo = std::move(*w);
    }
    std::unique_ptr<DatadirWriter> datadir;
    if (!o.datadir_out.empty()) {
        auto w = DatadirWriter::Open(NetworkDataDir(o.datadir_out, params.type), params);
        if (!w) return Error{w.error().code, "--datadir " + o.datadir_out.string() + ": " + w.error().message};
        datadir = std::move(*w);
    }
    BlockConnector conn(db, params, budget);
    conn.SetUndoWriter(undo.get());
    conn.SetDatadirWriter(datadir.get());
    conn.SetConnectedSink(o.on_connected);
    const BlockContexts contexts(o, params, src.Headers());
    EngineRun run{o, params, src, db, conn, undo.get(), res, contexts, {}};
    auto needs = db.NeedsReplay();
    if (!needs) return needs.error();
    auto best = db.GetBestBlock();
    if (!best) return best.error();
    auto prepared = src.Prepare(*best);
    if (!prepared) return prepared.error();
    if (prepared->failed || Interrupted(o)) return std::nullopt;
    run.prepared = std::move(*prepared);

    if (*needs) {
        auto r = RecoverInterruptedFlush(run, **needs);
        if (!r) return r.error();
        if (*r == Next::End) return std::nullopt;
        best = db.GetBestBlock();
        if (!best) return best.error();
    }
    if (const auto& reorg = run.prepared.stale; reorg && !reorg->hashes.empty() && !best->IsNull() && *best == reorg->hashes.front()) {
        auto r = DisconnectStaleBranch(run, *reorg);
        if (!r) return r.error();
        if (*r == Next::End) return std::nullopt;
        best = db.GetBestBlock();
        if (!best) return best.error();
    }
    auto next = ResumeHeight(run, *best);
    if (!next) return next.error();
    const int last = o.stop_height.value_or(INT_MAX);

    // The (time, bits) of every block below the next one: the chain's headers up to the best
    // block, then each block as it connects. Headers are checked against them, and ConnectBlock
    // reads median times past from them (BIP113, BIP68).
    std::vector<HeaderInfo> ancestry;
    for (int h = 0; h < *next; ++h) ancestry.push_back(src.Headers().Info(h));
    ConnectLoop loop(o, params, conn, res, std::move(ancestry), [&src] { return src.TipHeight(); }, last);
    // A flush stops the blocks for seconds (minutes at mainnet scale): say so.
    conn.OnFlush([&loop] { loop.Report(true, true); });
    std::optional<Error> produce_error;
    if (*next <= last && !Interrupted(o)) {
        produce_error = threads <= 1 ? ConnectInline(run, loop, *next, last)
                                     : ConnectPipelined(run, loop, *next, last, threads, !best->IsNull(), cleansed_elsewhere);
    }
    // A block that cannot be read or decoded left nothing in the cache, as a rejected one does:
    // every block before it is flushed all the same (a rerun resumes after them).
    source_failure = std::move(produce_error);
    if (const auto& u = loop.Undecodable(); u && !source_failure) source_failure = src.Undecodable(u->first, u->second);
    return loop.Finish(undo.get());
}

/// The tip of what is on disk (a run may end below the block it last connected) and, with
/// `statistics`, the statistics of its UTXO set.
std::optional<Error> RecordDiskTip(bool statistics, BlockSource& src, const CoinsDB& db, EngineResult& res)
{
    auto best = db.GetBestBlock();
    if (!best) return best.error();
    if (best->IsNull()) return std::nullopt;
    auto h = src.Headers().HeightOf(*best);
    if (!h) return std::nullopt;
    res.height = *h;
    res.tip = *best;
    if (statistics) {
        auto stats = ComputeUtxoStats(db, uint32_t(*h));
        if (!stats) return stats.error();
        res.utxo = *stats;
    }
    return std::nullopt;
}

/// A source's failure after the final flush, saying what the chainstate keeps.
Error KeptAfter(Error failure, const EngineResult& res, const ChainstateHandle& cs)
{
    if (res.kept_height) {
        failure.message += "; the chainstate " + cs.dir().string() + " keeps every block before it, up to height " +
                           std::to_string(*res.kept_height) + ": a rerun resumes there";
    }
    return failure;
}

} // namespace

/// Runs the engine over `src` into `cs`, filling `res` (whose source-specific fields the caller
/// set). Database failures (StoreError, a corrupt coin) become errors naming the chainstate.
Result<EngineResult> RunEngine(const EngineOptions& o, const ChainParams& params, BlockSource& src,
                               ChainstateHandle& cs, EngineResult res)
{
    const auto t_start = Clock::now();
    const uint64_t cleansed_before = CleansedBytes();
    uint64_t cleansed_elsewhere = 0;
    const unsigned threads = ResolveThreads(o.threads);
    res.threads = threads;
    CoinsDB& db = cs.db();
    db.SetFlushThreads(threads);
    if (o.db_batch_bytes) db.SetBatchWriteBytes(o.db_batch_bytes);

    std::optional<Error> err;
    std::optional<Error> source_failure;
    try {
        err = RunPhases(o, params, src, db, cs.budget(), threads, res, cleansed_elsewhere, source_failure);
        if (!err) {
            res.interrupted = Interrupted(o);
            res.bytes_cleansed = CleansedBytes() - cleansed_before + cleansed_elsewhere;
            // reads the chainstate too: inside the try
            err = RecordDiskTip(o.statistics && !source_failure, src, db, res);
        }
    } catch (const StoreError& e) { // a LevelDB failure inside the cache (disk full, corruption)
        err = EnvError("chainstate " + cs.dir().string() + ": " + e.what());
    } catch (const DecodeError& e) { // a corrupt coin record read back from the chainstate
        err = Error{e.code(), "chainstate " + cs.dir().string() + ": " + e.what()};
    } catch (const DatadirWriteError& e) { // writing the data directory failed (disk full, I/O error)
        err = EnvError(std::string("data directory: ") + e.what());
    } catch (const UndoWriteError& e) { // writing undo data failed (disk full, I/O error)
        err = EnvError(std::string("undo data: ") + e.what());
    } catch (const std::system_error& e) { // a thread the system would not start (TaskPool, Pipeline)
        err = Error{Errc::Io, "cannot start " + std::to_string(threads) + " threads (" + e.what() + "): ask for fewer"};
    }
    if (err) return *err;
    if (!cs.temporary() && res.height >= 0) res.kept_height = res.height;
    if (source_failure) return KeptAfter(std::move(*source_failure), res, cs);
    // The chainstate ibdkit wrote records its network, for whoever reads it next without being
    // told (a new one's was recorded when it was opened; an existing one's once its blocks were
    // accepted as this network's). A hint only: a failure to write it fails nothing.
    if (!cs.temporary() && HoldsChainstateMarker(cs.dir())) (void)RecordChainstateNetwork(cs.dir(), ChainTypeName(params.type));
    res.total_seconds = std::chrono::duration<double>(Clock::now() - t_start).count();
    res.peak_rss_bytes = PeakRssBytes();
    return res;
}

} // namespace ibdkit::engine

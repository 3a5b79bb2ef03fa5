// src/engine/connector.h (private to the engine) — the engine's connecting step once it has a checked block and its
// height: ConnectBlock into the UTXO cache, flush to the chainstate when the cache budget is
// reached (Core's FlushStateToDisk on a full cache), and the roll-forward that recovers a
// chainstate left mid-flush. The engine (engine/engine.h) drives it for every block source.
#pragma once

#include <ibdkit/chain/params.h>
#include <ibdkit/engine/engine.h>
#include <ibdkit/coins/coins_db.h>
#include <ibdkit/consensus/validation.h>
#include <ibdkit/primitives/block.h>
#include <ibdkit/consensus/check.h>

#include "blockfile/datadir_writer.h"
#include "blockfile/undo_file.h"
#include "coins/budget.h"
#include "coins/coins_cache.h"
#include "connect/connect.h"

#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>

namespace ibdkit {

/// The chainstate of an IBD run: `dir`, or a fresh temporary directory (removed when the handle is
/// destroyed) when `dir` is empty. LevelDB's cache and the flush's batch size come from `budget`,
/// which the handle keeps for the run (budget()). `chain`, when given, is recorded in the marker of
/// a chainstate that records none yet (common/write_guard.h), for readers during the run. Errors:
/// CoinsDB::Open's Locked as it is (another writer named), other failures Errc::Corrupt.
class ChainstateHandle {
public:
    static Result<ChainstateHandle> Open(const std::filesystem::path& dir, PolicyId policy, const CacheBudget& budget,
                                         const std::string& temp_prefix, std::optional<ChainType> chain = std::nullopt);
    /// The refusals of a run's outputs, each Errc::Refused and nothing written: a chainstate or
    /// undo folder ibdkit may not write (common/write_guard.h), or the two sharing a folder. A
    /// run makes them before its first read (a scan of blk files takes minutes at mainnet's size).
    static std::optional<Error> CheckOutputs(const EngineOptions& o);
    /// The chainstate of a run described by `o`: its chainstate folder (none named and a data
    /// directory to write: DatadirChainstate's, in it), buffer policy and `--dbcache` budget.
    /// Refuses first (Errc::Refused, nothing written) a data directory or undo folder ibdkit may not
    /// write, and an undo folder that is the chainstate, lies inside it or holds it; then as Open.
    static Result<ChainstateHandle> OpenFor(const EngineOptions& o, const std::string& temp_prefix, ChainType chain);
    ChainstateHandle(ChainstateHandle&&) noexcept = default;
    ChainstateHandle& operator=(ChainstateHandle&&) noexcept = default;
    ~ChainstateHandle();

    CoinsDB& db() noexcept { return *m_db; }
    const std::filesystem::path& dir() const noexcept { return m_dir; }
    /// Whether the chainstate is a temporary one (removed with the handle: a run keeps nothing).
    bool temporary() const noexcept { return m_temporary; }
    const CacheBudget& budget() const noexcept { return m_budget; }

private:
    ChainstateHandle() = default;
    std::filesystem::path m_dir;
    bool m_temporary{false};
    CacheBudget m_budget{0};
    std::unique_ptr<CoinsDB> m_db;
};

class BlockConnector {
public:
    /// `db` must outlive the connector. The UTXO cache gets budget.CoinsBytes() (0: flush after every
    /// block). A full cache is written and kept warm (CoinsCache::FlushWarm), holding its youngest
    /// coins in half its share. After each flush (and at the start) the cache's share becomes
    /// budget.CacheBytesBeside(the chainstate's size), so LevelDB's growing table memory stays
    /// inside, and the heap's free memory goes back to the kernel (glibc's malloc_trim).
    BlockConnector(CoinsDB& db, const ChainParams& params, const CacheBudget& budget);

    /// ConnectBlock at ctx.height. On success the cache's best block is the block and the cache
    /// is flushed if over budget; returns nullopt. On a consensus failure returns Core's reject
    /// reason: the cache is then as it was before the block (ConnectBlock takes its changes back),
    /// so the blocks connected before it may be flushed. `size` is the
    /// block's serialized size (for the byte counter). Throws StoreError/DecodeError on a database
    /// failure, as CoinsCache does. `plan`: the block's ConnectPlan, if made already.
    std::optional<std::string> Connect(const CheckedBlock& block, const ConnectContext& ctx, std::size_t size,
                                       const ConnectPlan* plan = nullptr);
    /// CheckBlock, then Connect.
    std::optional<std::string> Connect(Block&& block, const ConnectContext& ctx, std::size_t size);

    /// Re-applies an already-connected block idempotently (recovery of an interrupted flush).
    void Rollforward(const Block& block, int height);

    /// Writes the cache to the chainstate with `tip` as best block (after recovery) or the
    /// current best block (tip null).
    StoreStatus Flush(const BlockHash& tip = {});

    /// Writes each connected block's undo data to `writer` (may be null: none), which must outlive
    /// the connector; the writer is synced before every flush of the cache. Write failures throw
    /// UndoWriteError.
    void SetUndoWriter(UndoFileWriter* writer) noexcept { m_undo_writer = writer; }
    /// Appends each connected block with its undo data to the data directory `writer` (may be null:
    /// none), which must outlive the connector; it is synced, blocks and undo before its index,
    /// before every flush of the cache, so the chainstate never names a block the datadir lacks.
    void SetDatadirWriter(DatadirWriter* writer) noexcept { m_datadir = writer; }
    /// Hands each connected block, its height and its undo data (the coins it spent) to `sink`
    /// (empty: none), on the connecting thread, before a flush the block may trigger.
    void SetConnectedSink(std::function<void(const Block&, int, const BlockUndo&)> sink) { m_connected = std::move(sink); }
    /// Spreads each block's cache work over `runner`'s threads (ConnectBlock; may be null: this
    /// thread alone), which must outlive the connector or be reset.
    void SetTaskRunner(const TaskRunner* runner) noexcept { m_runner = runner; }
    /// Called on the connecting thread when a full cache is about to be flushed (not by Flush()),
    /// so a progress display can say why the blocks stopped. Empty: nothing.
    void OnFlush(std::function<void()> notice) { m_on_flush = std::move(notice); }

    CoinsCache& cache() noexcept { return m_cache; }
    const ConnectorCounters& counters() const noexcept { return m_counters; }
    const ChainParams& params() const noexcept { return m_params; }

private:
    void FitBudget();

    const ChainParams& m_params;
    const CacheBudget m_budget;
    CoinsCache m_cache;
    ConnectorCounters m_counters;
    UndoFileWriter* m_undo_writer{nullptr};
    DatadirWriter* m_datadir{nullptr};
    const TaskRunner* m_runner{nullptr};
    ConnectScratch m_scratch; ///< ConnectBlock's buffers, kept from block to block
    std::function<void()> m_on_flush;
    std::function<void(const Block&, int, const BlockUndo&)> m_connected;
    BlockUndo m_undo;                 ///< reused between blocks
    std::vector<uint8_t> m_undo_bytes;
};

} // namespace ibdkit

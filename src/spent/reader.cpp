#include <ibdkit/spent/reader.h>

#include <ibdkit/blockfile/blockfile.h>
#include <ibdkit/blockfile/locate.h>
#include <ibdkit/engine/replay.h>
#include <ibdkit/primitives/block.h>

#include <ibdkit/blockfile/checked_read.h>
#include "blockfile/undo_file.h"

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <string>
#include <thread>
#include <utility>

namespace ibdkit {

namespace {

namespace fs = std::filesystem;

/// A Core data directory: blocks through the block index, spent coins from the rev files.
class DatadirReader final : public SpentBlockReader {
public:
    DatadirReader(LocatedChain loc, DatadirUndo undo, int first, int last)
        : m_loc(std::move(loc)), m_undo(std::move(undo)), m_blocks(m_loc.files, m_loc.key),
          m_rev(m_undo.blocks_dir, m_undo.key, GetChainParams(m_loc.chain).message_start), m_next(first), m_last(last)
    {
        m_chain = m_loc.chain;
        m_first = first;
        // The first undo entry at or above the first height; later ones follow in height order.
        m_undo_at = std::size_t(std::lower_bound(m_undo.blocks.begin(), m_undo.blocks.end(), first,
                                                 [](const DatadirUndo::Block& b, int h) { return b.height < h; }) -
                                m_undo.blocks.begin());
    }

    int last_height() const noexcept override { return m_last; }

    Result<std::optional<SpentBlock>> Next() override
    {
        if (m_next > m_last) return std::optional<SpentBlock>{};
        const int h = m_next++;
        const BlockHash& hash = m_loc.headers.Hash(h);
        // Checked as the replay checks a block before connecting it, so that a damaged record is
        // refused here as it is from blk files, never exported as transactions that do not exist.
        auto bytes = ReadCheckedBlock(m_blocks, m_loc, h);
        if (!bytes) return bytes.error();
        BlockUndo undo; // the genesis block spends nothing and has no record
        if (h > 0) {
            while (m_undo_at < m_undo.blocks.size() && m_undo.blocks[m_undo_at].height < h) ++m_undo_at;
            if (m_undo_at == m_undo.blocks.size() || m_undo.blocks[m_undo_at].height != h) {
                return Error{Errc::Corrupt, "block " + hash.ToHex() + " at height " + std::to_string(h) +
                                                " has no undo data in the datadir (pruned, or not connected by Core yet): "
                                                "read up to --to " + std::to_string(h - 1) + ", or from above it"};
            }
            const DatadirUndo::Block& u = m_undo.blocks[m_undo_at];
            if (u.hash != hash) {
                return Error{Errc::Corrupt, "the block index gives two blocks at height " + std::to_string(h) + ": " +
                                                hash.ToHex() + " and, with undo data, " + u.hash.ToHex()};
            }
            auto r = m_rev.Read(u.file, u.undo_pos, u.prev);
            if (!r) {
                return Error{r.error().code, "block " + hash.ToHex() + " at height " + std::to_string(h) + ", rev" +
                                                 std::to_string(u.file) + " at " + std::to_string(u.undo_pos) + ": " + r.error().message};
            }
            undo = std::move(*r);
        }
        auto b = SpentBlock::Make(std::move(*bytes), h, std::move(undo), m_chain);
        if (!b) return b.error();
        return std::optional<SpentBlock>(std::move(*b));
    }

private:
    LocatedChain m_loc;
    DatadirUndo m_undo;
    BlockFileReader m_blocks;
    UndoFileReader m_rev;
    std::size_t m_undo_at{0};
    int m_next;
    int m_last;
};

/// Blk files replayed by the engine on a thread of its own; each connected block's bytes and
/// spent coins wait in a short queue for Next().
class ReplayReader final : public SpentBlockReader {
public:
    ReplayReader(const SpentReaderOptions& o, ChainType chain) : m_o(o)
    {
        m_chain = chain;
        m_first = o.from_height;
        m_known_last.store(o.to_height.value_or(-1));
        m_cap = std::max<std::size_t>(o.read_ahead, 1);
        m_thread = std::thread([this] { Run(); });
    }
    ~ReplayReader() override
    {
        {
            std::lock_guard lock(m_mutex);
            m_cancel = true;
        }
        m_interrupt.store(true);
        m_cv.notify_all();
        m_thread.join();
    }

    int last_height() const noexcept override { return m_known_last.load(std::memory_order_relaxed); }

    Result<std::optional<SpentBlock>> Next() override
    {
        Item item;
        {
            std::unique_lock lock(m_mutex);
            m_cv.wait(lock, [&] { return !m_items.empty() || m_done; });
            if (m_items.empty()) {
                if (m_error) return *m_error;
                return std::optional<SpentBlock>{};
            }
            item = std::move(m_items.front());
            m_items.pop_front();
        }
        m_cv.notify_all();
        // Checked here, on the reader's thread, so that the connecting thread only copies.
        auto b = SpentBlock::Make(std::move(item.bytes), item.height, std::move(item.undo), m_chain);
        if (!b) return b.error();
        return std::optional<SpentBlock>(std::move(*b));
    }

private:
    struct Item {
        int height{0};
        std::vector<uint8_t> bytes;
        BlockUndo undo;
    };

    /// Waits for room, then queues; false once the reader is going away.
    bool Push(Item&& item)
    {
        std::unique_lock lock(m_mutex);
        m_cv.wait(lock, [&] { return m_items.size() < m_cap || m_cancel; });
        if (m_cancel) return false;
        m_items.push_back(std::move(item));
        lock.unlock();
        m_cv.notify_all();
        return true;
    }

    void Run()
    {
        const ChainParams& params = GetChainParams(m_chain);
        std::optional<Error> error;
        // The engine never connects the genesis block (Core does not either): it comes from the
        // network's parameters, spending nothing.
        if (m_o.from_height == 0 && !Push(Item{0, EncodeBlock(params.genesis), {}})) return;
        ReplayOptions ro;
        ro.source.blocks_dir = m_o.source.blocks_dir;
        ro.source.chain = m_chain;
        ro.dbcache_mib = m_o.dbcache_mib;
        ro.threads = m_o.threads;
        ro.statistics = false;
        ro.skip_scripts = m_o.skip_scripts;
        ro.stop_height = m_o.to_height;
        ro.interrupt = &m_interrupt;
        ro.on_progress = [this](const EngineProgress& p) {
            if (!m_o.to_height) m_known_last.store(p.tip_height, std::memory_order_relaxed);
        };
        ro.on_connected = [this](const Block& block, int height, const BlockUndo& spent) {
            if (height < m_o.from_height) return;
            if (!Push(Item{height, EncodeBlock(block), spent})) m_interrupt.store(true);
        };
        auto r = Replay(ro);
        if (!r) {
            error = r.error();
        } else if (r->reject_reason) {
            error = InvalidBlockError(r->reject_height, *r->reject_reason);
        } else if (m_o.to_height && r->height < *m_o.to_height && !m_interrupt.load()) {
            error = Error{Errc::InvalidValue, "the blocks end at height " + std::to_string(r->height) + ", below --to " +
                                                  std::to_string(*m_o.to_height)};
        }
        {
            std::lock_guard lock(m_mutex);
            m_done = true;
            m_error = std::move(error);
        }
        m_cv.notify_all();
    }

    SpentReaderOptions m_o;
    std::atomic<bool> m_interrupt{false};
    std::atomic<int> m_known_last{-1};
    std::size_t m_cap{1};
    std::mutex m_mutex;
    std::condition_variable m_cv;
    std::deque<Item> m_items;
    bool m_done{false};
    bool m_cancel{false};
    std::optional<Error> m_error;
    std::thread m_thread;
};

Result<std::unique_ptr<SpentBlockReader>> OpenDatadir(const SpentReaderOptions& o)
{
    auto loc = LocateFromDatadir(o.source.datadir, o.source.chain);
    if (!loc) return loc.error();
    auto undo = LocateUndoInDatadir(o.source.datadir, loc->chain);
    if (!undo) return undo.error();
    // The spent outputs come from the rev files: without them, say where the blocks can be replayed from.
    std::error_code ec;
    const bool no_rev = undo->blocks.empty() ? loc->TipHeight() > 0
                                             : !fs::exists(UndoFilePath(undo->blocks_dir, undo->blocks.front().file), ec);
    if (no_rev) {
        return Error{Errc::NotFound, o.source.datadir.string() + " holds no undo data (rev files) for its blocks, and the spent outputs "
                                         "come from there: export from its blk files instead, which ibdkit replays: --blocks-dir " +
                                         loc->blocks_dir.string()};
    }
    // Blocks have undo data once Core has connected them: the last such block ends the default range.
    int tip = std::min(loc->TipHeight(), undo->blocks.empty() ? loc->base_height : undo->blocks.back().height);
    if (o.to_height) {
        if (*o.to_height > loc->TipHeight()) {
            return Error{Errc::InvalidValue, "--to " + std::to_string(*o.to_height) + " is above the datadir's tip, height " +
                                                 std::to_string(loc->TipHeight())};
        }
        tip = *o.to_height;
    }
    if (o.from_height < loc->base_height || o.from_height > tip + 1) {
        return Error{Errc::InvalidValue, "--from " + std::to_string(o.from_height) + " is outside the heights the datadir holds (" +
                                             std::to_string(loc->base_height) + " to " + std::to_string(tip) + ")"};
    }
    return std::unique_ptr<SpentBlockReader>(new DatadirReader(std::move(*loc), std::move(*undo), o.from_height, tip));
}

} // namespace

Result<std::unique_ptr<SpentBlockReader>> SpentBlockReader::Open(const SpentReaderOptions& o)
{
    if (!o.source.NamesOne()) {
        return Error{Errc::InvalidValue, "give a Core data directory (its rev files hold the spent outputs) or a blocks "
                                         "directory (replayed to compute them), one of the two"};
    }
    if (o.from_height < 0 || (o.to_height && *o.to_height < o.from_height)) {
        return Error{Errc::InvalidValue, "the height range is empty: from " + std::to_string(o.from_height) + " to " +
                                             std::to_string(o.to_height.value_or(-1))};
    }
    if (!o.source.datadir.empty()) return OpenDatadir(o);
    std::error_code ec;
    const fs::path& blocks_dir = o.source.blocks_dir;
    if (!fs::exists(blocks_dir, ec)) return Error{Errc::InvalidValue, "no such blocks directory or file: " + blocks_dir.string()};
    std::optional<ChainType> chain = o.source.chain ? o.source.chain : DetectChain(blocks_dir);
    if (!chain) {
        return Error{Errc::InvalidValue, "no blk file with a known network magic in " + blocks_dir.string() + ": give --network"};
    }
    return std::unique_ptr<SpentBlockReader>(new ReplayReader(o, *chain));
}

} // namespace ibdkit

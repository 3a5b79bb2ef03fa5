// ibdkit/spent/reader.h — blocks with their spent outputs, in height order, pulled one at a time.
//
// Two sources (docs/spent-outputs.md):
//  - a Bitcoin Core data directory: each block's spent coins come from Core's own rev files, found
//    through its block index (LocateFromDatadir, LocateUndoInDatadir); no UTXO set is needed and
//    one block is in hand at a time, whatever the chain's size;
//  - a bare blocks directory (or one blk file, or a generated chain): the engine replays the blocks
//    into a temporary chainstate and hands over each block's spent coins as it connects it
//    (EngineOptions::on_connected); the replay runs on a thread of its own, a few blocks ahead,
//    and its cache is bounded by `dbcache_mib`.
// Nothing is ever written into the directories read.
#pragma once

#include <ibdkit/blockfile/source.h>
#include <ibdkit/chain/params.h>
#include <ibdkit/error.h>
#include <ibdkit/spent/spent_block.h>

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>

namespace ibdkit {

struct SpentReaderOptions {
    /// Exactly one: a Core data directory (spent outputs from its rev files) or blk files (a
    /// directory or one file), replayed.
    BlockFileSource source;
    int from_height{0};                ///< the first block delivered (the ones below are still replayed)
    std::optional<int> to_height;      ///< the last (default: the tip; a datadir's last block with undo data)
    std::size_t dbcache_mib{200};      ///< replay only: the engine's UTXO cache budget
    unsigned threads{0};               ///< replay only: the engine's threads (0: every core)
    /// Replay only: trust every script, as a node trusts its own files (every other rule still
    /// runs). On by default here, unlike the other runs' skip_scripts: the reader's blocks are
    /// usually a node's own. Off: Core's assumevalid rule decides which blocks' scripts run.
    bool skip_scripts{true};
    std::size_t read_ahead{4};         ///< replay only: blocks handed over and not yet taken (at least 1)
};

/// Blocks with their spent outputs in height order; Next() until it returns nullopt.
class SpentBlockReader {
public:
    /// Locates the chain and the spent outputs' source. Errors: both or neither directory given,
    /// a datadir without a block index, no blk file, from above to. A datadir bitcoind is running
    /// on is read from a snapshot of its block index (docs/live-node.md). Codes: Errc::InvalidValue for
    /// the options, a datadir without rev files is Errc::NotFound, else LocateFromDatadir's. With
    /// blocks_dir the replay starts on its own thread at once; its failures come from Next(). The
    /// caller owns the reader.
    static Result<std::unique_ptr<SpentBlockReader>> Open(const SpentReaderOptions& options);
    /// A replay still running is interrupted and waited for (it flushes first).
    virtual ~SpentBlockReader() = default;

    /// The next block (nullopt after the last). Errors: unreadable files, an undo record that does
    /// not check (BadChecksum, BadMagic, EndOfData, Corrupt), spent outputs that do not match the
    /// block (SpentBlock::Make), a block that breaks a rule (Corrupt, "the block at height N breaks
    /// a consensus rule: REASON" from either source: a datadir's blocks pass the replay's checks
    /// before connecting, blockfile/checked_read.h), a datadir record that is not the block
    /// its index names (Corrupt), a datadir block without undo data. One thread at a time; each SpentBlock is the caller's. Stop
    /// after an error.
    virtual Result<std::optional<SpentBlock>> Next() = 0;

    /// The chain the blocks are of, and the height of the first block Next gives.
    ChainType chain() const noexcept { return m_chain; }
    int first_height() const noexcept { return m_first; }
    /// The last height this reader will deliver, as far as known (a replay learns its tip as it
    /// goes; -1 until then): for progress. May be called while another thread is in Next().
    virtual int last_height() const noexcept = 0;

protected:
    ChainType m_chain{ChainType::MAIN};
    int m_first{0};
};

} // namespace ibdkit

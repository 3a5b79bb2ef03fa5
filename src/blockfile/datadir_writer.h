// src/blockfile/datadir_writer.h (internal) — a Bitcoin Core data directory's blocks written by
// ibdkit, so that bitcoind starts on what a sync connected (docs/formats.md §§5, 6, 8).
//
// Into one network's folder (DATADIR, DATADIR/regtest, ...), the layout Core ≥ 28 writes:
//  - blocks/xor.dat: a random 8-byte key that obfuscates every blk and rev file;
//  - blocks/blkNNNNN.dat: records of magic, size and block (with witness), the genesis block
//    first; a block that would take a file to MAX_BLOCKFILE_SIZE starts the next file, as Core's
//    FindNextBlockPos does;
//  - blocks/revNNNNN.dat: each block's undo record (magic, size, undo bytes, checksum over the
//    previous block's hash and the undo bytes) in the rev file of the blk file's number;
//  - blocks/index: Core's LevelDB block index, not obfuscated: a 'b' record per block (Core's
//    CDiskBlockIndex with the status Core gives a connected block), an 'f' record per file
//    number (CBlockFileInfo) and 'l', the last file number;
//  - blocks/IBDKIT_DATADIR: says ibdkit made the folder, so that a later sync may append to it.
//
// Blocks are appended in height order. Sync() makes the blk and rev files durable first, then
// writes the index records that point into them in one synced batch: a crash leaves an index that
// names only bytes on disk, as Core orders its own flushes. Bytes past what the index records are
// overwritten when the writer opens the folder again.
#pragma once

#include "blockfile/block_index.h"
#include "blockfile/undo_file.h"
#include "common/buffered_writer.h" // DropBehind
#include "common/write_guard_internal.h" // DATADIR_MARKER

#include <ibdkit/blockfile/blockfile.h> // MAX_BLOCKFILE_SIZE
#include <ibdkit/chain/params.h>
#include <ibdkit/error.h>
#include <ibdkit/primitives/block.h>
#include <ibdkit/stream/obfuscation.h>

#include <cstdint>
#include <deque>
#include <filesystem>
#include <memory>
#include <set>
#include <unordered_map>
#include <span>
#include <utility>
#include <vector>

namespace ibdkit {

/// A failure writing the data directory (disk full, I/O error, a block that does not follow).
class DatadirWriteError : public UndoWriteError {
public:
    using UndoWriteError::UndoWriteError;
};

class Store;

class DatadirWriter {
public:
    /// Opens the network folder `net_dir` for appending; a `datadir` (the folder holding it, or
    /// `net_dir` itself for main) that CheckDatadirWritable refuses is refused. A folder without blocks/ (or an empty
    /// blocks/) is started: xor.dat, the index and the genesis block, made durable. One that holds
    /// DATADIR_MARKER is continued from its index's best chain. Anything else is Errc::Refused (a
    /// Core datadir ibdkit did not make); an unreadable index Errc::Corrupt.
    static Result<std::unique_ptr<DatadirWriter>> Open(const std::filesystem::path& net_dir, const ChainParams& params,
                                                       std::size_t max_file_size = MAX_BLOCKFILE_SIZE);
    ~DatadirWriter();
    DatadirWriter(const DatadirWriter&) = delete;
    DatadirWriter& operator=(const DatadirWriter&) = delete;

    /// Appends `block` at `height` with its serialized undo data (coins/undo.h); the chain the
    /// writer follows then ends at it. A block the folder holds already is not written again; any
    /// other must be the child of a block the folder holds at height - 1: the tip, or a block
    /// below it when the sync reorganises (the blocks of the branch it left stay in the files and
    /// the index, as Core keeps them). Buffered: durable with Sync(). Throws DatadirWriteError.
    void Append(const Block& block, int height, std::span<const uint8_t> undo_bytes);
    /// As Append, with the block as it was serialized (with its witness): `block_bytes` begins with
    /// the 80 bytes of `header` and holds `tx_count` transactions (a block decoded from them).
    void Append(std::span<const uint8_t> block_bytes, const BlockHeader& header, uint32_t tx_count, int height,
                std::span<const uint8_t> undo_bytes);
    /// Gives the block `hash`, appended since the last Sync, `undo_bytes` instead of what Append
    /// wrote: a new record at the end of the rev file of its number (the old record stays, named by
    /// nothing). Throws DatadirWriteError, also for a block whose undo data is indexed already.
    void ReplaceUndo(const BlockHash& hash, std::span<const uint8_t> undo_bytes);
    /// Makes the blk and rev files durable, then writes the index records of the blocks appended
    /// since the last Sync (one synced batch). Throws DatadirWriteError.
    void Sync();

    int TipHeight() const noexcept { return int(m_hashes.size()) - 1; }
    const BlockHash& Tip() const noexcept { return m_hashes.back(); }
    const std::filesystem::path& BlocksDir() const noexcept { return m_blocks; }
    const ObfuscationKey& Key() const noexcept { return m_key; }
    uint64_t blocks_written() const noexcept { return m_blocks_written; }

private:
    DatadirWriter(std::filesystem::path net_dir, const ChainParams& params, std::size_t max_file_size);
    /// One kind of flat file (blk or rev) appended at the end the index records.
    struct FlatFile {
        const char* prefix;
        int number{-1};
        int fd{-1};
        uint64_t size{0};
        std::vector<uint8_t> pending; ///< obfuscated bytes not yet written
        /// Nothing in a sync reads the blocks it wrote again: they leave the page cache once
        /// written back, so that hundreds of gigabytes of blocks do not push the chainstate's files
        /// out of it, and later writes reuse pages the kernel has at hand.
        DropBehind behind{};
    };
    Result<bool> Start();
    Result<bool> Continue();
    /// Whether the block `hash` (child of `prev`, at `height`) is new: the followed chain then ends
    /// at `prev`; else at the stored block.
    bool Follows(const BlockHash& hash, const BlockHash& prev, int height);
    /// Stores the block serialized in m_buf after 8 bytes left for its record's framing.
    void StoreBlock(const BlockHeader& header, uint32_t tx_count, int height, std::span<const uint8_t> undo_bytes, bool have_undo);
    void Put(FlatFile& f, int number, uint64_t at, std::vector<uint8_t>& record);
    void Flush(FlatFile& f, bool close);
    void OpenFlat(FlatFile& f, int number, uint64_t size);
    std::filesystem::path FlatPath(const FlatFile& f, int number) const;

    std::filesystem::path m_net;
    std::filesystem::path m_blocks;
    const ChainParams& m_params;
    std::size_t m_max_file_size;
    ObfuscationKey m_key;
    std::unique_ptr<ibdkit::Store> m_index;
    /// Makes the followed chain end at the stored block `tip` at `height`. Throws
    /// DatadirWriteError when `tip` is not stored there.
    void Follow(const BlockHash& tip, int height);

    struct Stored {
        BlockHash prev;
        int height{0};
    };
    std::vector<BlockHash> m_hashes;             ///< the followed chain by height
    std::unordered_map<BlockHash, Stored, Uint256Hasher> m_stored; ///< every block the folder holds
    std::vector<BlockFileInfo> m_files;          ///< by file number
    std::set<int> m_dirty_files;
    std::vector<BlockIndexEntry> m_pending;      ///< 'b' records not yet in the index
    FlatFile m_blk{"blk", -1, -1, 0, {}, {}}, m_rev{"rev", -1, -1, 0, {}, {}};
    bool m_new_file{false};                      ///< a file was created since the last Sync
    /// Files left for the next ones since the last Sync, written, open until Sync makes them durable.
    std::deque<std::pair<int, std::filesystem::path>> m_unsynced;
    /// Makes all but the last `keep` of m_unsynced durable and closes them.
    void SyncUnsynced(std::size_t keep);
    std::vector<uint8_t> m_buf;
    uint64_t m_blocks_written{0};
};

} // namespace ibdkit

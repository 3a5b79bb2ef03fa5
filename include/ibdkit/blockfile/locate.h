// ibdkit/blockfile/locate.h — where the blocks of the best chain are: the seam between block storage
// and the IBD engine.
//
// Two sources give the same LocatedChain:
//  - a bare blocks directory (or one blk file): every record's 88 leading bytes are scanned and the
//    chain is ordered by following prev-hashes (ChainOrderer);
//  - a Bitcoin Core data directory: the block index (`blocks/index`, read-only, see
//    block_index.h) gives every block's file and position; no blk file is scanned.
// Either way the engine then reads each block's bytes once, with a BlockFileReader over `files`.
// Nothing is ever written into the directories.
//
// The functions here keep no state between calls: several threads may call them at once. Failures
// are returned as Result errors (environment failures mostly Errc::Corrupt), with messages naming
// the path.
#pragma once

#include <ibdkit/blockfile/blockfile.h>
#include <ibdkit/blockfile/source.h>
#include <ibdkit/chain/params.h>
#include <ibdkit/consensus/header_chain.h>
#include <ibdkit/error.h>

#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace ibdkit {

/// The best chain found in a set of block files, ready to be read in height order.
struct LocatedChain {
    ChainType chain{ChainType::MAIN};
    std::filesystem::path blocks_dir;           ///< the directory holding `files` (and xor.dat)
    std::vector<std::filesystem::path> files;   ///< BlockRecordPos::file indexes into this
    ObfuscationKey key;                         ///< xor.dat (null when absent)
    /// The blocks' positions, genesis or first known first, and what the ordering met; their
    /// hashes are kept once, in `headers` (headers.Hash(height)): order.hashes is empty.
    ChainOrder order;
    /// The chain's headers from the genesis to the tip (the genesis from the network's parameters
    /// when it is not a record): hashes, times, bits, chain work, heights by hash.
    HeaderChain headers{GetChainParams(ChainType::MAIN)};
    int base_height{0};                         ///< height of order.blocks[0]: 0, or 1 when the genesis is not a record
    BlockFileScanStats scan;                    ///< bare scan: what the scan met (datadir: zeros)
    bool from_index{false};                     ///< located through Core's block index
    uint64_t index_entries{0};                  ///< datadir: 'b' records in the block index
    uint64_t failed{0};                         ///< datadir: entries Core marked invalid
    /// datadir: bitcoind was running; the chain is that of a private snapshot of its block index
    /// and the data is consistent up to TipHeight() (headers.Hash(TipHeight())); nothing later is read.
    bool live{false};
    /// datadir, located with `keep_unreadable`: the chain blocks whose records the files cannot
    /// frame (a blk file cut short, overwritten), by height, each with its error; their entries in
    /// order.blocks are empty. The blocks before the first of them can still be read.
    std::map<int, Error> unreadable;

    /// Height of the last block (base_height - 1 when empty).
    int TipHeight() const noexcept { return base_height + int(order.blocks.size()) - 1; }
};

/// The network whose magic starts the first block file of `blocks_dir` (a directory or one file).
/// nullopt too when there is no blk file, xor.dat is unreadable or the first record is too short.
std::optional<ChainType> DetectChainFromBlockFiles(const std::filesystem::path& blocks_dir);

/// Scans the blk files of a blocks directory (or one blk file) and orders the best chain from the
/// network's genesis. `chain` nullopt: detected from the first record's magic. Errors: no blk file,
/// unknown magic, unreadable files. An empty order is not an error (order.blocks may be empty).
/// Codes: no blk file or an unfinished gen-chain output (Errc::InvalidValue), unknown magic
/// (Errc::BadMagic), an unreadable blk file or xor.dat (Errc::Corrupt).
Result<LocatedChain> LocateFromBlocksDir(const std::filesystem::path& blocks_dir, std::optional<ChainType> chain);

/// Core's folder of network `chain` in the data directory `datadir` (nothing is read): the
/// directory itself for main, else its testnet3, testnet4, signet or regtest subfolder.
std::filesystem::path NetworkDataDir(const std::filesystem::path& datadir, ChainType chain);

/// The chainstate of a run that writes the data directory `datadir` for `chain` and was given no
/// chainstate of its own: NetworkDataDir(datadir, chain) / "chainstate", where bitcoind looks for
/// it. Checks first that ibdkit may write `datadir` (CheckDatadirWritable, common/write_guard.h:
/// Errc::Refused). Only reads the file system.
Result<std::filesystem::path> DatadirChainstate(const std::filesystem::path& datadir, ChainType chain);

/// The network of the one chainstate in `datadir`'s network folders whose marker records its own
/// folder's network (ChainstateNetworkRecord, common/write_guard.h): what an earlier sync writing
/// `datadir` ran on, so that a rerun needs no network. nullopt when none does, or several do.
/// Only reads the markers; never throws.
std::optional<ChainType> DatadirNetworkRecord(const std::filesystem::path& datadir);

/// Where a data directory keeps a network's blocks: DIR/blocks (main), DIR/testnet3/blocks,
/// DIR/testnet4/blocks, DIR/signet/blocks, DIR/regtest/blocks. `dir` may also be a network's own
/// directory (e.g. ~/.bitcoin/testnet3) or a blocks directory holding `index/`. With `chain`
/// nullopt the network comes from the layout (and, for DIR/blocks, the files' magic); several
/// networks present is an error asking for one, as is none.
struct DatadirLayout {
    ChainType chain{ChainType::MAIN};
    std::filesystem::path blocks_dir;           ///< …/blocks
    std::filesystem::path lock_file;            ///< the network datadir's `.lock`
};
/// Errors: no such directory or no block index in it (Errc::NotFound), a file, several networks or
/// none to tell (Errc::InvalidValue), blk files of another network than `chain` or the layout says
/// (Errc::BadMagic).
Result<DatadirLayout> ResolveDatadir(const std::filesystem::path& dir, std::optional<ChainType> chain);

/// Reads a Bitcoin Core data directory strictly read-only: the block index gives the best chain
/// (most work, HAVE_DATA, no FAILED flag, every ancestor present) and each block's position; each
/// chain block's 8-byte record framing is read to learn its size. While bitcoind runs (the
/// datadir's `.lock` or `blocks/index/LOCK` held) the index is read from a private snapshot of its
/// files, `live` is set, and blk files are read only where that index says a block is complete
/// (docs/live-node.md). The index's genesis must be the network's. Errors: ResolveDatadir's, an
/// unreadable or inconsistent block index (Errc::Corrupt; a malformed record: the decoder's code),
/// an index being rebuilt or without the genesis (Errc::InvalidValue), a chain block whose record
/// framing does not read (its code), unless `keep_unreadable`: then such blocks are listed in
/// `unreadable`, for a reader that stops there after reading the blocks before them (replay).
Result<LocatedChain> LocateFromDatadir(const std::filesystem::path& dir, std::optional<ChainType> chain,
                                       bool keep_unreadable = false);

/// The best chain of a run's source: LocateFromDatadir when it names a datadir (with
/// `keep_unreadable` as there), else LocateFromBlocksDir. The caller has refused a source naming
/// both directories (BlockFileSource::NamesOne); with neither, LocateFromBlocksDir's error. Errors:
/// theirs.
Result<LocatedChain> LocateBlocks(const BlockFileSource& source, bool keep_unreadable = false);

/// Where a Core data directory keeps the undo data of its best chain (read through the block index,
/// read-only, as LocateFromDatadir does: from a snapshot of the index while bitcoind runs). Read the records with an
/// UndoFileReader(blocks_dir, key, the network's magic) (blockfile/undo_file.h).
struct DatadirUndo {
    ChainType chain{ChainType::MAIN};
    std::filesystem::path blocks_dir;
    ObfuscationKey key;
    struct Block {
        int height{0};
        BlockHash hash;
        BlockHash prev;          ///< the checksum binds the record to it
        uint32_t file{0};        ///< revNNNNN.dat
        uint32_t undo_pos{0};    ///< Core's nUndoPos: offset of the undo bytes
    };
    std::vector<Block> blocks;   ///< best-chain blocks with BLOCK_HAVE_UNDO, in height order (never the genesis)
    uint64_t without_undo{0};    ///< best-chain blocks above the genesis without undo data (pruned, or not yet connected)
    int tip_height{0};           ///< height of the best chain's tip
    bool live{false};            ///< bitcoind was running: the index is a snapshot's, consistent up to `blocks.back()`
};

/// What a command says when it reads a running node's datadir: "bitcoind is running: reading a
/// snapshot of its block index; data consistent up to height H (hash)".
std::string LiveDatadirMessage(int height, const BlockHash& hash);
/// Errors: as LocateFromDatadir's, without its reads of blk files.
Result<DatadirUndo> LocateUndoInDatadir(const std::filesystem::path& dir, std::optional<ChainType> chain);

/// The chainstate a path names, for reading: `path` itself when it holds a LevelDB database
/// (CURRENT); else, as for blocks (ResolveDatadir), a data directory's DIR/chainstate (main) or
/// DIR/testnet3|testnet4|signet|regtest/chainstate, the one of `chain` when given. The network is
/// `chain`, else the one ibdkit recorded in its own chainstate (common/write_guard.h), else the one
/// the data directory's layout says; nullopt when nothing says.
struct ChainstateLocation {
    std::filesystem::path dir;
    std::optional<ChainType> chain;
};
/// Errors (each naming the path and what to do): Errc::NotFound (no such path; no chainstate in
/// it), Errc::InvalidValue (a file where a folder is expected; several networks' chainstates and no
/// `chain`; `chain` other than the one the layout or ibdkit's record says, naming that one),
/// Errc::Refused (a folder that cannot be read: its permissions; an unfinished chainstate, which an
/// interrupted `replay --swiftsync` left, with or without LevelDB's files yet).
Result<ChainstateLocation> LocateChainstate(const std::filesystem::path& path, std::optional<ChainType> chain);

} // namespace ibdkit

// src/blockfile/block_index.h — Bitcoin Core's block index (`blocks/index`, LevelDB), read-only.
//
// Records (docs/formats.md §8): 'b' + block hash → VARINT-signed(client version), VARINT-signed(height),
// VARINT(status), VARINT(tx count), [VARINT-signed(file)], [VARINT(data pos)], [VARINT(undo pos)],
// 80-byte header. The database is opened through the chainstate store's read-only overlay
// (kv/store.h): the directory stays byte-identical and gains no file. While a running bitcoind
// holds it, the index is read from a private snapshot of its files (kv/store.h, docs/live-node.md).
#pragma once

#include <ibdkit/error.h>
#include <ibdkit/primitives/hash.h>

#include <array>
#include <cstdint>
#include <filesystem>
#include <span>
#include <vector>

namespace ibdkit {

// Core's BlockStatus bits (chain.h).
inline constexpr uint32_t BLOCK_VALID_TRANSACTIONS = 3;
inline constexpr uint32_t BLOCK_VALID_SCRIPTS = 5;
inline constexpr uint32_t BLOCK_VALID_MASK = 7;
inline constexpr uint32_t BLOCK_HAVE_DATA = 8;
inline constexpr uint32_t BLOCK_HAVE_UNDO = 16;
inline constexpr uint32_t BLOCK_FAILED_VALID = 32;
inline constexpr uint32_t BLOCK_FAILED_CHILD = 64;
inline constexpr uint32_t BLOCK_FAILED_MASK = BLOCK_FAILED_VALID | BLOCK_FAILED_CHILD;
inline constexpr uint32_t BLOCK_OPT_WITNESS = 128;

/// One 'b' record of the block index (Core's CDiskBlockIndex).
struct BlockIndexEntry {
    BlockHash hash;                  ///< from the key
    int32_t client_version{0};
    int32_t height{0};
    uint32_t status{0};
    uint32_t tx_count{0};
    int32_t file{-1};                ///< blkNNNNN.dat number (status has HAVE_DATA or HAVE_UNDO)
    uint32_t data_pos{0};            ///< offset of the block bytes in the blk file (HAVE_DATA)
    uint32_t undo_pos{0};            ///< offset of the undo bytes in the rev file (HAVE_UNDO)
    std::array<uint8_t, 80> header{};

    BlockHash Prev() const { return BlockHash(uint256(std::span<const uint8_t, 32>(header.data() + 4, 32))); }
    uint32_t Time() const noexcept;
    uint32_t Bits() const noexcept;
};

/// Core's CDiskBlockIndex::DUMMY_VERSION, the client version Core writes into every 'b' record.
inline constexpr int32_t BLOCK_INDEX_DUMMY_VERSION = 259900;

/// Encodes a 'b' record's value (the inverse of DecodeBlockIndexEntry; `hash` is the key's).
std::vector<uint8_t> EncodeBlockIndexEntry(const BlockIndexEntry& e);

/// One 'f' record of the block index (Core's CBlockFileInfo): what blkNNNNN.dat and revNNNNN.dat of
/// one number hold. Sizes are the bytes used, records with their framing.
struct BlockFileInfo {
    uint32_t blocks{0};
    uint32_t size{0};        ///< bytes of the blk file
    uint32_t undo_size{0};   ///< bytes of the rev file
    uint32_t height_first{0};
    uint32_t height_last{0};
    uint64_t time_first{0};
    uint64_t time_last{0};

    /// Counts a block as Core's CBlockFileInfo::AddBlock does (sizes are the caller's).
    void AddBlock(uint32_t height, uint64_t time) noexcept;
    friend bool operator==(const BlockFileInfo&, const BlockFileInfo&) = default;
};

/// Encodes and decodes an 'f' record's value: seven VARINTs (Errc::EndOfData, VarIntOverflow,
/// TrailingData when decoding).
std::vector<uint8_t> EncodeBlockFileInfo(const BlockFileInfo& info);
Result<BlockFileInfo> DecodeBlockFileInfo(std::span<const uint8_t> value);

/// Decodes a 'b' record's value (Errc::EndOfData, VarIntOverflow, TrailingData, InvalidValue for a
/// negative or oversized field).
Result<BlockIndexEntry> DecodeBlockIndexEntry(const BlockHash& hash, std::span<const uint8_t> value);

/// The whole block index.
struct BlockIndex {
    std::vector<BlockIndexEntry> entries; ///< in key order
    bool reindexing{false};               ///< the 'R' flag: Core was reindexing
    bool from_snapshot{false};            ///< read from a private snapshot (a writer held the index)
};

/// Reads every 'b' record of `index_dir` (e.g. DIR/blocks/index) read-only. From a private snapshot
/// of its files when `snapshot` is set or another process holds its LOCK; a missing database
/// Errc::InvalidValue; a record that does not decode, or whose key hash differs from its header's
/// hash, Errc::Corrupt.
Result<BlockIndex> ReadBlockIndex(const std::filesystem::path& index_dir, bool snapshot = false);

/// The best chain of an index: the most-work chain (SelectMostWorkChain, consensus/best_chain.h) of
/// entries that have HAVE_DATA, no FAILED flag and every ancestor likewise, starting at `genesis`.
/// Ties go to the chain whose tip's data comes first on disk (file, then position) — Core's
/// arrival order is not stored. Returns indexes into `index.entries`, genesis first, in height
/// order; empty if the genesis itself is not usable. A stored height that does not match the
/// entry's place in the tree is Errc::Corrupt.
struct BestChain {
    std::vector<std::size_t> entries; ///< indexes into BlockIndex::entries, height 0 first
    uint64_t with_data{0};            ///< entries with HAVE_DATA
    uint64_t failed{0};               ///< entries with a FAILED flag
    uint64_t orphans{0};              ///< usable entries whose ancestry does not reach the genesis usably
    uint64_t stale{0};                ///< usable entries reaching the genesis but off the best chain
};
Result<BestChain> SelectBestChain(const BlockIndex& index, const BlockHash& genesis);

} // namespace ibdkit

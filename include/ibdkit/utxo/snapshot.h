// ibdkit/utxo/snapshot.h — assumeutxo snapshots in Bitcoin Core's format (`dumptxoutset` /
// `loadtxoutset`; node/utxo_snapshot.h, rpc/blockchain.cpp, validation.cpp).
//
// File: metadata (51 bytes) = "utxo" 0xff | version u16 LE (2) | network magic (4) | base block
// hash (32, internal order) | coin count u64 LE; then coins grouped per txid in the chainstate's key
// order: txid (32) | CompactSize(coins in the group) | per coin CompactSize(vout) | Coin (the
// chainstate value format, coins/coin.h, unobfuscated). Within a txid the order is the key order
// of VARINT(vout), which is not numeric order once vouts reach 16,512 (three VARINT bytes:
// VARINT(16383) = fe 7f sorts after VARINT(65535) = 82 fe 7f).
//
// The reader is strict: besides Core's checks (network, a group count above the coins left,
// truncation, trailing bytes, out-of-range amounts, heights above the base when known) it refuses
// what `dumptxoutset` never writes: empty groups, txids out of ascending order and coins out of
// key order within a txid — so duplicates are refused too. Nothing is allocated from a count.
// Design notes: docs/chainstate.md.
//
// SerializeSnapshotMetadata, ParseSnapshotMetadata and AssumeutxoForBlockHash are pure and
// thread-safe; the rest read or write files and use the usual rule (one thread per object).
#pragma once

#include <ibdkit/chain/params.h>
#include <ibdkit/coins/coin.h>
#include <ibdkit/coins/coins_db.h>
#include <ibdkit/error.h>
#include <ibdkit/primitives/hash.h>
#include <ibdkit/utxo/stats.h>

#include <array>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>

namespace ibdkit {

inline constexpr std::array<uint8_t, 5> SNAPSHOT_MAGIC_BYTES{'u', 't', 'x', 'o', 0xff};
inline constexpr uint16_t SNAPSHOT_VERSION = 2;
inline constexpr std::size_t SNAPSHOT_METADATA_SIZE = 5 + 2 + 4 + 32 + 8;

struct SnapshotMetadata {
    MessageStart network_magic{};
    BlockHash base_blockhash;
    uint64_t coins_count{0};
};

/// The metadata's 51 bytes as Core's dumptxoutset writes them (magic, version 2, network magic, base
/// block hash, coin count).
std::array<uint8_t, SNAPSHOT_METADATA_SIZE> SerializeSnapshotMetadata(const SnapshotMetadata& m) noexcept;
/// Parses and checks metadata with Core's messages: bad magic (Errc::BadMagic), unsupported
/// version (Errc::InvalidValue), another or an unknown network (Errc::BadMagic).
Result<SnapshotMetadata> ParseSnapshotMetadata(std::span<const uint8_t, SNAPSHOT_METADATA_SIZE> bytes,
                                               const MessageStart& expected_network);

/// An entry of Core's m_assumeutxo_data (kernel/chainparams.cpp).
struct AssumeutxoData {
    int height;
    uint256 hash_serialized; ///< internal byte order (ToHex() gives Core's display form)
    uint64_t chain_tx_count;
    BlockHash blockhash;
};
/// The pinned entry for `blockhash` on `chain`, if Core pins one.
std::optional<AssumeutxoData> AssumeutxoForBlockHash(ChainType chain, const BlockHash& blockhash);

/// Coins done and the fraction of the work done (0..1).
using SnapshotProgress = std::function<void(uint64_t coins, double fraction)>;

struct SnapshotWriteResult {
    SnapshotMetadata metadata;
    UtxoStats chainstate_stats; ///< of the chainstate, computed during the same walk
    UtxoStats file_stats;       ///< of the file, re-read after writing
    uint64_t bytes{0};
};

/// Writes the snapshot of `db` to `out` (dumptxoutset), then re-reads the file and checks coin
/// count, total amount and hash_serialized_3 against the chainstate walk; a mismatch is an error
/// (Errc::Corrupt). The chainstate must not hold an interrupted flush (Errc::InvalidValue). Also:
/// `out` refused by the write guard (Errc::Refused), a file that cannot be written
/// (Errc::InvalidValue), a malformed record or a LevelDB failure while walking (Errc::Corrupt).
/// `out` appears only once checked. LevelDB's failure reading the best-block or head-blocks record
/// is Errc::Io or Errc::Corrupt. Only reads `db`; `progress` runs on the calling thread.
Result<SnapshotWriteResult> WriteUtxoSnapshot(const CoinsDB& db, const ChainParams& params,
                                              const std::filesystem::path& out, const SnapshotProgress& progress = {});

/// Streams the coins of a snapshot file; every check of the header comment. Errors carry Core's
/// messages where Core has one ("Bad snapshot format or truncated snapshot after deserializing N
/// coins", "Mismatch in coins count in snapshot metadata and actual snapshot data", "Bad snapshot
/// - coins left over after deserializing N coins", …).
class SnapshotReader {
public:
    /// Reads and checks the metadata; the caller owns the reader. Errors: a file that cannot be
    /// opened (Errc::InvalidValue), one shorter than the metadata (Errc::EndOfData),
    /// ParseSnapshotMetadata's.
    static Result<std::unique_ptr<SnapshotReader>> Open(const std::filesystem::path& path,
                                                        const MessageStart& expected_network);
    ~SnapshotReader();
    SnapshotReader(const SnapshotReader&) = delete;
    SnapshotReader& operator=(const SnapshotReader&) = delete;

    /// The snapshot's metadata, read and checked by Open.
    const SnapshotMetadata& metadata() const noexcept { return m_meta; }
    /// Optional: coins above this height are refused (Core knows the base block's height).
    void SetBaseHeight(uint32_t h) noexcept { m_base_height = h; }
    /// The next coin: true and fills op/coin; false after the last coin (trailing bytes checked).
    /// Errors: bytes after the last coin (TrailingData), a group larger than the coins left
    /// (SizeTooLarge), a truncated or undecodable coin (EndOfData), the other checks (InvalidValue).
    /// Stop reading after an error.
    Result<bool> Next(OutPoint& op, Coin& coin);
    uint64_t coins_read() const noexcept { return m_read; }

private:
    SnapshotReader() = default;
    struct Impl;
    std::unique_ptr<Impl> m_impl;
    SnapshotMetadata m_meta;
    std::optional<uint32_t> m_base_height;
    uint64_t m_read{0};
};

/// The network a snapshot file was written for, from the magic in its metadata (the rest of the file
/// unread). Errors: SnapshotReader::Open's (an unknown network: Errc::BadMagic, Core's message).
Result<ChainType> SnapshotNetwork(const std::filesystem::path& path);

/// Statistics of a snapshot file's coins (hash_serialized_3 as Core computes on the loaded set).
/// Errors: SnapshotReader's.
Result<UtxoStats> ComputeSnapshotStats(const std::filesystem::path& path, const MessageStart& network,
                                       UtxoHashTypes hashes = {});

struct SnapshotLoadOptions {
    /// The hash_serialized_3 the loaded set must have when Core pins none for the base block.
    std::optional<uint256> expected_hash;
    std::size_t batch_coins{200000}; ///< coins per chainstate write batch (memory bound)
    PolicyId policy{PolicyId::ZeroAfterFree};
};

struct SnapshotLoadResult {
    SnapshotMetadata metadata;
    UtxoStats stats;            ///< of the new chainstate
    std::optional<int> height;  ///< when Core pins the base block
};

/// loadtxoutset: reads and verifies every coin, writes a new chainstate at `chainstate_dir` (must
/// not exist or be empty) in Core's format with the base block as best block, recomputes its
/// hash_serialized_3 and checks it against Core's pinned value for the base block or
/// `expected_hash` (one of them is required: unknown bases are refused as Core does). On any
/// error what it wrote is removed (the directory too unless it was there, empty, before); a
/// loaded one records the network (`ChainstateNetworkRecord`, common/write_guard.h). Errors:
/// `chainstate_dir` refused by the write guards (Errc::Refused), not empty, an unknown base, a hash
/// that contradicts the pinned one or differs from it (Errc::InvalidValue), SnapshotReader's, a
/// failed write or read back (Errc::Corrupt, Errc::Io). `progress` runs on the calling thread.
Result<SnapshotLoadResult> LoadUtxoSnapshot(const std::filesystem::path& file, const ChainParams& params,
                                            const std::filesystem::path& chainstate_dir,
                                            const SnapshotLoadOptions& options = {},
                                            const SnapshotProgress& progress = {});

} // namespace ibdkit

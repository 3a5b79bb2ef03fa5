// ibdkit/swiftsync/build_hints.h — making a hintsfile (BIP 456) for the height of a UTXO set: the
// tip of a chainstate (Bitcoin Core's, read-only, or ibdkit's) or the base of an assumeutxo
// snapshot, with the blocks 1..n of a data directory or blocks directory.
//
// Two passes, so that mainnet fits in memory: first every coin of the UTXO set becomes a salted
// 64-bit key of (txid, vout, height) in a sorted array (8 bytes a coin); then the blocks are read
// in height order and each spendable output asks whether its key is there. A key collision would
// only mark a spent output unspent — a SwiftSync run with such a file fails, it never accepts a
// wrong UTXO set — and is caught here anyway: every coin is hit exactly once, so more hits than
// coins means a collision, and the build starts again with a fresh salt. The height in the key
// keeps a coin from answering for an earlier output with the same outpoint (BIP 30's duplicate
// coinbases). The file is written under a temporary name and renamed when complete.
#pragma once

#include <ibdkit/blockfile/source.h>
#include <ibdkit/chain/params.h>
#include <ibdkit/error.h>
#include <ibdkit/memory/policy_id.h>
#include <ibdkit/primitives/hash.h>

#include <cstdint>
#include <filesystem>
#include <functional>
#include <optional>

namespace ibdkit::swiftsync {

struct BuildHintsOptions {
    /// The UTXO set: a chainstate directory (Core's DATADIR/chainstate or ibdkit's; a datadir
    /// holding one is accepted), or an assumeutxo snapshot file — exactly one. With neither, the
    /// chainstate of `source.datadir`.
    std::filesystem::path chainstate;
    std::filesystem::path snapshot;
    BlockFileSource source;         ///< the blocks, exactly one
    std::filesystem::path out;      ///< the hintsfile to write
    unsigned threads{0};            ///< threads decoding blocks and looking up their outputs (0: every core, ibdkit/threads.h)
    PolicyId policy{PolicyId::Hardened}; ///< the buffer policy of the blocks' bytes as read (memory/policy_id.h)
    /// Called now and then, on the calling thread, with the height reached and the target height.
    std::function<void(uint32_t height, uint32_t target)> on_progress;
};

struct BuildHintsResult {
    ChainType chain{ChainType::MAIN};
    uint32_t height{0};        ///< n: the UTXO set's block
    BlockHash tip;             ///< its hash
    uint64_t coins{0};         ///< coins in the UTXO set (= outputs hinted unspent)
    uint64_t outputs{0};       ///< spendable outputs of blocks 1..n
    uint64_t bytes{0};         ///< the hintsfile's size
    uint64_t key_bytes{0};     ///< memory of the key array
    unsigned attempts{1};      ///< builds run (more than one after a key collision)
};

/// Builds the hintsfile. Errors: options that name no or two sources, an unreadable source, a
/// chainstate mid-flush, a UTXO set whose block is not in the blocks' best chain, a coin above that
/// height, coins the blocks never create (the set and the blocks disagree), I/O failures. Most are
/// Errc::InvalidValue; `out` refused by the write guard is Errc::Refused, checked before any block is
/// read; LevelDB's failure reading the chainstate's best-block or head-blocks record is Errc::Io or
/// Errc::Corrupt. Only reads the sources.
Result<BuildHintsResult> BuildHints(const BuildHintsOptions& options);

} // namespace ibdkit::swiftsync

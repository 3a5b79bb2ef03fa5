// ibdkit/blockfile/source.h — where a run's blocks come from: a Bitcoin Core data directory or a
// blocks directory, and their network. Every run that reads blocks from disk (Replay, SwiftSync's
// replay, the spent-output reader, verify-snapshot, the hints build, Serve) takes one as its
// `source`; LocateBlocks (blockfile/locate.h) finds its best chain.
#pragma once

#include <ibdkit/chain/chain_type.h>

#include <filesystem>
#include <optional>

namespace ibdkit {

/// Exactly one of `datadir` and `blocks_dir` is given: a run refuses both, and one that finds
/// neither fails (Errc::InvalidValue, each run in its own words). Nothing here is ever written to.
struct BlockFileSource {
    /// A Bitcoin Core data directory (or one network's folder of it), read strictly read-only
    /// through its block index (LocateFromDatadir; a running bitcoind's from a snapshot of it). Its
    /// rev files are what SwiftSync's coins mode and the spent-output reader need.
    std::filesystem::path datadir;
    /// Or a blocks directory or a single blk file (a generated chain too), ordered by following
    /// prev-hashes (LocateFromBlocksDir).
    std::filesystem::path blocks_dir;
    /// The network; nullopt: from the datadir's layout or the files' magic.
    std::optional<ChainType> chain;

    /// Whether exactly one of the two directories is given, as every run requires.
    bool NamesOne() const noexcept { return datadir.empty() != blocks_dir.empty(); }
};

} // namespace ibdkit

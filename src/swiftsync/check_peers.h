// src/swiftsync/check_peers.h (internal) — SwiftSync over P2P (BIP 457's default path): blocks 1..n
// with their spent coins from several peers (peer_fetch.h), each block checked in coins mode on
// every thread as a datadir's block is (coins_block.h), the aggregate over the whole range, and the
// hinted-unspent coins written as the chainstate at n (replay.cpp's sort and bulk load).
//
// The peers are untrusted. A block that does not decode or is mutated (its merkle root or witness
// commitment does not match its header), spent coins that do not fit the block, and spent coins
// that fail a rule reading them (amounts, maturity, scripts, …) are the serving peer's: it is
// dropped and the block asked for from another peer. When no peer is left the run fails; a block
// whose coins failed a rule is not called invalid (the coins are unproven until the aggregate
// balances): the error names the rule and the peers, any of which may have lied. Whether the coins
// are the right ones at all, only the aggregate tells at the end: an imbalance refuses the run (no
// chainstate is written) and names the peers that served coins.
// With a data directory to write, each settled block goes into it with undo data made from the coins
// it was checked with; its index is written only once the aggregate accepts the run.
#pragma once

#include <ibdkit/consensus/header_chain.h>
#include <ibdkit/error.h>
#include <ibdkit/swiftsync/replay.h>

#include "swiftsync/peer_fetch.h"

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace ibdkit {
class DatadirWriter;
}

namespace ibdkit::swiftsync {

struct PeersRun {
    std::vector<std::string> connect; ///< HOST[:PORT] of each peer
    ChainType chain{ChainType::REGTEST};
    /// Coins: blocks with their spent coins from the peers that serve them (BIP 455), every rule.
    /// Outpoints: blocks alone from every peer (stock Core peers too), BIP 457's assume-valid
    /// extension: much less is checked (no amounts, maturity, BIP68, sigops, scripts).
    AggregateMode mode{AggregateMode::Coins};
    FetchOptions fetch;
    /// A Bitcoin Core data directory to write blocks 1..n into, each with undo data made from the
    /// spent coins it was checked with (a liar's replaced by the others'); its index names them only
    /// once the aggregate accepts the run, just before the chainstate is written. Null: none.
    DatadirWriter* datadir{nullptr};
    /// Called with the peers' header chain once the accepted coins are written, before the new
    /// chainstate stops being marked unfinished: what must lie beside a finished chainstate (a
    /// sync's headers file) is written first, so a kill at any moment leaves either an unfinished
    /// chainstate (cleared by the rerun) or a finished one with it. Its error ends the run (the
    /// chainstate is removed). Empty: nothing.
    std::function<std::optional<Error>(const HeaderChain& headers)> before_keep;
};

struct PeersRunResult {
    SwiftSyncResult run;              ///< block_bytes: the blocks' bytes as they arrived
    std::vector<PeerSummary> peers;   ///< every peer that completed the handshake
    std::vector<std::string> unreachable; ///< peers left out before the download, with why
    std::vector<std::string> notes;   ///< what the run found wrong with peers (headers, dropped peers)
    uint64_t spent_bytes{0};          ///< `bspent` payload bytes received for the blocks checked
    uint64_t spent_bytes_saved{0};    ///< what the coins a cutoff left out would have taken in them
    std::optional<HeaderChain> headers; ///< the peers' header chain (all of it, also above n)
};

/// Runs SwiftSync over `peers.connect` into `options.chainstate` in `peers.mode` (options.source
/// and mode are ignored; outpoints mode takes no data directory to write, and no cutoff). The
/// hintsfile's height n must be on the peers' header chain.
/// A refused history is not an error (result.run.verdict says why). Errors: no peer reachable or
/// serving BIP 455 (Errc::NotFound, naming each peer's reason), a hintsfile above the peers'
/// headers (Errc::InvalidValue), no peer left for a block (Errc::NotFound; when the last peers'
/// spent coins failed one of its rules, the message names the rule and those peers), the
/// chainstate's (as SwiftSyncReplay's).
Result<PeersRunResult> SwiftSyncFromPeers(const SwiftSyncOptions& options, const PeersRun& peers);

} // namespace ibdkit::swiftsync

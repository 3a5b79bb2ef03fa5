// ibdkit/engine/sync.h — the IBD engine fed by one P2P peer.
//
// 1. Handshake (version/verack; pings answered throughout).
// 2. Headers-first: getheaders with a locator from our best header; each `headers` answer (≤ 2000)
//    must link to our chain and every header must meet its own nBits (proof of work); repeated
//    until an answer is short. A peer whose chain forks from our stored headers has its whole branch
//    fetched and checked (linked, proof of work), and is followed only when the branch has more
//    chain work (GetBlockProof) than ours above the fork; our headers are kept otherwise. A fork
//    below the chainstate's tip is a reorganisation: it needs the `undo_dir` the chainstate was built
//    with (refused without one); the engine fetches the left branch's blocks from the peer (Core
//    serves them), disconnects them tip first with their undo data (DisconnectBlock), flushes at the
//    fork and connects the new branch. The new headers are stored only after the disconnect, so an
//    interrupted reorganisation starts again on the next run. A header chain with less total work
//    than the network's minimum chain work (Core's nMinimumChainWork) is refused before any block
//    is asked for. A peer that does not answer getheaders within `headers_wait`
//    (btcd and Core ignore it while their tip is older than ~24 h) is synced with the older
//    getblocks/inv protocol instead: hashes from `inv`, headers learnt from the blocks.
// 3. Blocks: getdata (MSG_WITNESS_BLOCK when the peer has NODE_WITNESS) in a window of at most
//    `window` blocks in flight; each `block` message goes through a MessageReceiver into a
//    DataStream<Policy> of opts.policy and goes to the engine (engine/engine.h), which decodes, checks (CheckBlock,
//    PoW included), connects (every rule; scripts where assumevalid does not skip them) and
//    flushes within the dbcache budget, exactly as for `ibdkit replay`.
// 4. Stop: when the peer has nothing more, on Ctrl-C (interrupt flag), or on a peer failure
//    (stall beyond `timeout`, framing violation, a block that is not what was asked, a header
//    chain that does not link). The cache is flushed in every case except a consensus-invalid
//    block, so the next run resumes from the chainstate's best block.
//
// Headers are kept next to the coins in CHAINSTATE/ibdkit-headers.dat (80 bytes per header from
// height 1, appended; validated again when loaded) so a resumed run knows the height and the
// median time past of the chainstate's best block. A chainstate left mid-flush is recovered by
// fetching the interrupted blocks again and rolling them forward.
#pragma once

#include <ibdkit/chain/params.h>
#include <ibdkit/engine/engine.h>
#include <ibdkit/error.h>
#include <ibdkit/memory/policy_id.h>
#include <ibdkit/utxo/stats.h>
#include <ibdkit/wire/net_error.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

namespace ibdkit {

/// File name of the peer's header chain inside the chainstate directory.
inline constexpr const char* HEADERS_FILE = "ibdkit-headers.dat";

/// The engine's progress plus the peer's side of it.
struct SyncProgress : EngineProgress {
    int header_height{0};
    std::size_t in_flight{0};
    bool headers_phase{false};
};

struct SyncOptions : EngineOptions {
    std::string host{"127.0.0.1"};
    uint16_t port{0};
    ChainType chain{ChainType::REGTEST};
    /// A peer that sends nothing we asked for during this long has stalled (also the connect and
    /// handshake limit).
    std::chrono::milliseconds timeout{std::chrono::seconds(30)};
    /// How long to wait for an answer to the first getheaders before falling back to getblocks.
    std::chrono::milliseconds headers_wait{std::chrono::seconds(3)};
    /// Force the getblocks/inv protocol (tests; peers without headers support).
    bool force_getblocks{false};
    std::size_t window{16};             ///< blocks in flight
    /// Progress with the peer's side (header height, blocks in flight, the headers phase), about
    /// 4 times a second (EngineOptions::on_progress, when set, is called too), on the calling thread.
    std::function<void(const SyncProgress&)> on_sync_progress;
};

/// The engine's result plus the peer's side of the run.
struct SyncResult : EngineResult {
    std::string mode;            ///< "headers" or "getblocks"
    std::string peer_user_agent;
    int32_t peer_version{0};
    int peer_height{0};          ///< start height in the peer's version message
    uint64_t peer_services{0};
    int header_height{0};
    uint64_t headers_received{0};             ///< headers that arrived (every peer; above the tip held, from the locator)
    uint64_t competing_branches{0};           ///< branches the peer offered that fork from our headers
    uint64_t messages{0}, dropped_messages{0}, bytes_received{0}, bytes_sent{0};
    double handshake_seconds{0};
    double headers_seconds{0};
    std::optional<NetError> failure;          ///< the peer failed us (stall, misbehaviour, closed)
    std::vector<std::string> peer_rejects;    ///< reject messages the peer sent
};

/// Runs a sync. Environment failures (chainstate cannot be opened, headers file unwritable, a
/// chainstate whose best block the peer does not know) are errors; peer failures and invalid
/// blocks are reported in the result after a clean flush. Blocks until the run ends; every callback
/// runs on the calling thread. Database failures come back as errors, as from Replay.
Result<SyncResult> Sync(const SyncOptions& opts);

/// The network a sync runs on (SyncOptions::chain, and a SwiftSync sync's): `given` when the
/// caller names one; else the one ibdkit recorded in `chainstate`, a chainstate the sync resumes
/// (ChainstateNetworkRecord, common/write_guard.h); else the one recorded in `datadir_out`, a data
/// directory an earlier sync wrote (DatadirNetworkRecord, blockfile/locate.h); else regtest, a new
/// sync from local test peers. Empty paths are skipped. Only reads the markers; never throws.
ChainType SyncNetwork(std::optional<ChainType> given, const std::filesystem::path& chainstate,
                      const std::filesystem::path& datadir_out);

} // namespace ibdkit

// ibdkit/wire/sync.h — initial block download from one P2P peer.
//
// 1. Handshake (version/verack; pings answered throughout).
// 2. Headers-first: getheaders with a locator from our best header; each `headers` answer (≤ 2000)
//    must link to our chain and every header must meet its own nBits (proof of work); repeated
//    until an answer is short. A peer that does not answer getheaders within `headers_wait`
//    (btcd and Core ignore it while their tip is older than ~24 h) is synced with the older
//    getblocks/inv protocol instead: hashes from `inv`, headers learnt from the blocks.
// 3. Blocks: getdata (MSG_WITNESS_BLOCK when the peer has NODE_WITNESS) in a window of at most
//    `window` blocks in flight; each `block` message goes through MessageReceiver<Policy> into a
//    DataStream<Policy>, is decoded, checked (CheckBlock, PoW included) and connected
//    (replay/connector.h: UTXO rules without scripts), and the cache is flushed to the chainstate
//    within the dbcache budget, exactly as `ibdkit replay` does.
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

#include <ibdkit/replay/connector.h>
#include <ibdkit/chain/params.h>
#include <ibdkit/coins/stats.h>
#include <ibdkit/error.h>
#include <ibdkit/memory/policy.h>
#include <ibdkit/wire/peer.h>

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

/// File name of the header chain inside the chainstate directory.
inline constexpr const char* HEADERS_FILE = "ibdkit-headers.dat";

/// The best header chain known, by height (genesis at 0), with checks on every append.
class HeaderChain {
public:
    explicit HeaderChain(const ChainParams& params);

    int Height() const noexcept { return int(m_hashes.size()) - 1; }
    const BlockHash& Hash(int height) const { return m_hashes.at(std::size_t(height)); }
    const BlockHeader& Header(int height) const { return m_headers.at(std::size_t(height)); }
    const BlockHash& Tip() const noexcept { return m_hashes.back(); }
    std::optional<int> HeightOf(const BlockHash& hash) const;
    std::span<const BlockHash> Hashes() const noexcept { return m_hashes; }

    /// Appends a header that must extend the tip and meet its nBits; returns why not otherwise.
    std::optional<std::string> Append(const BlockHeader& header);
    /// Drops every header above `height` (≥ 0).
    void Truncate(int height);
    /// Locator from the tip (newest first, genesis last).
    std::vector<BlockHash> Locator() const { return MakeLocator(m_hashes); }
    /// Median time past of the block at `height` (its own and up to 10 earlier timestamps).
    int64_t MedianTimePast(int height) const;

    /// Loads a headers file, keeping the valid prefix (a bad or partial tail is dropped and the
    /// file truncated to match). Returns the number of headers loaded.
    Result<int> Load(const std::filesystem::path& file);
    /// Appends headers [from, Height()] to the file (rewriting it from `from` on).
    std::optional<std::string> Persist(const std::filesystem::path& file, int from) const;

private:
    const ChainParams& m_params;
    std::vector<BlockHeader> m_headers;
    std::vector<BlockHash> m_hashes;
    std::vector<uint32_t> m_times;
    std::unordered_map<BlockHash, int, Uint256Hasher> m_height_of;
};

struct SyncProgress {
    int height{0};          ///< connected tip
    int target_height{0};   ///< best header height, or the peer's announced height
    int header_height{0};
    uint64_t blocks{0}, txs{0}, bytes{0};
    double elapsed_s{0};
    std::size_t cache_bytes{0}, cache_budget{0};
    std::size_t in_flight{0};
    bool headers_phase{false};
};

struct SyncOptions {
    std::string host{"127.0.0.1"};
    uint16_t port{0};
    ChainType chain{ChainType::REGTEST};
    std::filesystem::path chainstate;   ///< empty: a temporary directory, removed afterwards
    std::size_t dbcache_mib{450};
    PolicyId policy{PolicyId::Hardened};
    /// A peer that sends nothing we asked for during this long has stalled (also the connect and
    /// handshake limit).
    std::chrono::milliseconds timeout{std::chrono::seconds(30)};
    /// How long to wait for an answer to the first getheaders before falling back to getblocks.
    std::chrono::milliseconds headers_wait{std::chrono::seconds(3)};
    /// Force the getblocks/inv protocol (tests; peers without headers support).
    bool force_getblocks{false};
    std::size_t window{16};             ///< blocks in flight
    std::optional<int> stop_height;
    std::function<void(const SyncProgress&)> on_progress; ///< about 4 times a second
    const std::atomic<bool>* interrupt{nullptr};
    std::function<void(int)> after_block;                 ///< test hook: after each connected block
    /// Test hook: a connected socket to use instead of connecting to host:port.
    std::function<NetResult<Socket>()> connect;
};

/// Counters (blocks, txs, inputs, outputs, bytes, flushes, recovered_blocks) come from the connector.
struct SyncResult : ConnectorCounters {
    ChainType chain{ChainType::REGTEST};
    std::string mode;            ///< "headers" or "getblocks"
    std::string peer_user_agent;
    int32_t peer_version{0};
    int peer_height{0};          ///< start height in the peer's version message
    uint64_t peer_services{0};
    int start_height{0};         ///< first height connected by this run
    int height{-1};              ///< chainstate tip height at the end
    BlockHash tip;
    int header_height{0};
    uint64_t headers_received{0};
    uint64_t messages{0}, dropped_messages{0}, bytes_received{0}, bytes_sent{0};
    double handshake_seconds{0};
    double headers_seconds{0};
    double seconds{0};           ///< block download + connect wall time
    double total_seconds{0};
    bool interrupted{false};
    std::optional<NetError> failure;          ///< the peer failed us (stall, misbehaviour, closed)
    std::optional<std::string> reject_reason; ///< a block failed its checks
    int reject_height{-1};
    std::vector<std::string> peer_rejects;    ///< reject messages the peer sent
    std::optional<UtxoStats> utxo;
};

/// Runs a sync. Environment failures (chainstate cannot be opened, headers file unwritable, a
/// chainstate whose best block the peer does not know) are errors; peer failures and invalid
/// blocks are reported in the result after a clean flush.
Result<SyncResult> Sync(const SyncOptions& opts);

} // namespace ibdkit

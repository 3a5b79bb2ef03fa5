// SwiftSync from P2P peers, then the classic sync to their tip (include/ibdkit/run/swiftsync_sync.h).
#include <ibdkit/blockfile/locate.h>
#include <ibdkit/run/swiftsync_sync.h>
#include <ibdkit/run/sync_peers.h>

#include "blockfile/datadir_writer.h"
#include "common/write_guard_internal.h"
#include "engine/header_file.h"
#include "run/scratch_dir.h"
#include "swiftsync/check_peers.h"
#include "wire/peer.h"

#include <algorithm>

namespace ibdkit::run {

namespace {

/// The classic sync from the chainstate SwiftSync wrote at n to the peers' tip: from every peer
/// given that was not dropped (those without BIP 455 too) when there are several, else from the
/// first peer that still serves.
Result<SyncResult> Continue(const SwiftSyncPeersOptions& o, const SwiftSyncPeersResult& r)
{
    SyncOptions so = *o.continuation;
    std::vector<std::string> live;
    for (const std::string& c : o.connect) {
        auto it = std::find_if(r.peers.begin(), r.peers.end(), [&](const PeerSummary& p) { return p.address == c; });
        if (it == r.peers.end() || it->dropped.empty()) live.push_back(c);
    }
    const std::string* peer = nullptr;
    for (const PeerSummary& p : r.peers) {
        if (p.dropped.empty()) {
            peer = &p.address;
            break;
        }
    }
    if (!peer) return Error{Errc::NotFound, "no peer is left to continue from height " + std::to_string(r.swiftsync.height)};
    auto hp = SplitHostPort(*peer, GetChainParams(o.chain).default_port);
    so.host = hp->first;
    so.port = hp->second;
    so.chain = o.chain;
    so.chainstate = o.swiftsync.chainstate;
    so.Settings() = o.swiftsync;
    so.statistics = o.statistics;
    so.datadir_out = o.datadir;
    if (!so.interrupt) so.interrupt = o.interrupt;
    if (live.size() < 2 || so.force_getblocks) return Sync(so);
    auto several = SyncFromPeers(so, live);
    if (!several) return several.error();
    return std::move(several->sync);
}

/// Whether `dir` holds what an earlier sync left: a chainstate not marked unfinished (SwiftSync
/// keeps one only once it accepted blocks 1..n), with the peers' headers beside it. A SwiftSync
/// sync killed in its classic rest leaves one, as a classic sync does; the next run resumes it.
bool SwiftSyncDone(const std::filesystem::path& dir)
{
    std::error_code ec;
    return !dir.empty() && std::filesystem::exists(dir / HEADERS_FILE, ec) &&
           !std::filesystem::exists(dir / UNFINISHED_CHAINSTATE_MARKER, ec);
}

} // namespace

Result<SwiftSyncPeersResult> SyncSwiftSync(SwiftSyncPeersOptions options)
{
    swiftsync::SwiftSyncOptions& o = options.swiftsync;
    std::optional<ScratchDir> temporary;
    if (!options.datadir.empty()) {
        // Refused before anything is written; with no chainstate named, bitcoind's place for it.
        auto in_datadir = DatadirChainstate(options.datadir, options.chain);
        if (!in_datadir) return in_datadir.error();
        if (o.chainstate.empty()) o.chainstate = *in_datadir;
    }
    if (o.chainstate.empty()) {
        auto made = ScratchDir::Make("sync");
        if (!made) return made.error();
        o.chainstate = temporary.emplace(std::move(*made)).Path();
    }
    if (SwiftSyncDone(o.chainstate) && options.continuation) {
        // The chainstate's blocks were accepted by an earlier run: the classic sync resumes from
        // its tip.
        SwiftSyncPeersResult out;
        out.resumed = true;
        out.swiftsync.chain = options.chain;
        for (const std::string& c : options.connect) out.peers.push_back(PeerSummary{c, {}, 0, 0, 0, {}});
        auto c = Continue(options, out);
        if (!c) return c.error();
        out.continuation = std::move(*c);
        out.swiftsync.verdict.ok = true;
        const SyncResult& cr = *out.continuation;
        out.swiftsync.height = uint32_t(std::max(0, cr.blocks ? cr.start_height - 1 : cr.height));
        out.swiftsync.tip = out.continuation->tip;
        out.header_height = out.continuation->header_height;
        if (out.continuation->utxo) out.utxo = out.continuation->utxo;
        out.peak_rss_bytes = PeakRssBytes();
        return out;
    }
    swiftsync::PeersRun peers;
    peers.connect = options.connect;
    peers.chain = options.chain;
    peers.mode = o.mode;
    peers.fetch.timeout = options.timeout;
    peers.fetch.window = options.window;
    peers.fetch.recent_blocks = options.keep_recent;
    peers.fetch.interrupt = options.interrupt;
    StartedDatadir started(options.datadir, options.chain);
    std::unique_ptr<DatadirWriter> datadir;
    if (!options.datadir.empty()) {
        auto w = DatadirWriter::Open(NetworkDataDir(options.datadir, options.chain), GetChainParams(options.chain));
        if (!w) return Error{w.error().code, "--datadir " + options.datadir.string() + ": " + w.error().message};
        datadir = std::move(*w);
        peers.datadir = datadir.get();
    }
    // The header chain beside the coins, written before the chainstate counts as finished: what a
    // resumed classic sync starts from (SwiftSyncDone).
    peers.before_keep = [&](const HeaderChain& headers) -> std::optional<Error> {
        if (auto e = engine::PersistHeaders(headers, o.chainstate / HEADERS_FILE, 1)) {
            return Error{Errc::Io, "writing the headers beside the chainstate: " + *e};
        }
        return std::nullopt;
    };
    auto r = swiftsync::SwiftSyncFromPeers(o, peers);
    datadir.reset(); // the continuation opens the folder again, at the blocks the index names
    if (!r) return r.error();
    SwiftSyncPeersResult out;
    out.swiftsync = std::move(r->run);
    out.peers = std::move(r->peers);
    out.unreachable = std::move(r->unreachable);
    out.notes = std::move(r->notes);
    out.spent_bytes = r->spent_bytes;
    out.spent_bytes_saved = r->spent_bytes_saved;
    out.header_height = r->headers ? r->headers->Height() : 0;
    if (out.swiftsync.verdict.ok) {
        started.Keep();
        if (options.continuation) {
            auto c = Continue(options, out);
            if (!c) return c.error();
            out.continuation = std::move(*c);
            if (out.continuation->height < 0) {
                // Interrupted before it opened the chainstate: that holds SwiftSync's n.
                out.continuation->height = int(out.swiftsync.height);
                out.continuation->tip = out.swiftsync.tip;
            }
            if (out.continuation->utxo) out.utxo = out.continuation->utxo;
        } else if (options.statistics) {
            auto s = StatsOf(o.chainstate);
            if (!s) return s.error();
            out.utxo = *s;
        }
    }
    out.peak_rss_bytes = PeakRssBytes();
    return out;
}

} // namespace ibdkit::run

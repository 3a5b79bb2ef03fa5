// `ibdkit serve`: the listening loop, a thread per connection (include/ibdkit/serve/serve.h).
#include <ibdkit/serve/serve.h>

#include <ibdkit/blockfile/locate.h>
#include <ibdkit/chain/params.h>

#include "serve/listener.h"
#include "serve/session.h"

#include <list>
#include <optional>
#include <memory>
#include <system_error>
#include <thread>
#include <unistd.h>

namespace ibdkit {
namespace {

/// How often the accept loop looks at the interrupt flag and reaps finished connections.
constexpr std::chrono::milliseconds ACCEPT_POLL{200};

struct Connection {
    std::thread thread;
    std::shared_ptr<std::atomic<bool>> done = std::make_shared<std::atomic<bool>>(false);
};

/// The chain served; refused when no block connects to the network's genesis (a peer would see a
/// node of that network holding nothing): with a network given, the files' own network is named.
Result<LocatedChain> LocateServed(const ServeOptions& o)
{
    if (!o.source.NamesOne()) return Error{Errc::InvalidValue, "give a datadir or a blocks directory (exactly one)"};
    auto chain = LocateBlocks(o.source);
    if (!chain || !chain->order.blocks.empty()) return chain;
    const std::string where = (o.source.datadir.empty() ? o.source.blocks_dir : chain->blocks_dir).string();
    const std::string given(ChainTypeName(chain->chain));
    std::string fix = "serve a folder of " + given + " blocks";
    if (o.source.chain) {
        BlockFileSource own = o.source;
        own.chain.reset();
        if (auto found = LocateBlocks(own); found && !found->order.blocks.empty() && found->chain != chain->chain) {
            fix = "they are " + std::string(ChainTypeName(found->chain)) + " blocks: give --network " + std::string(ChainTypeName(found->chain));
        }
    }
    return Error{Errc::InvalidValue, "no block in " + where + " connects to the " + given + " genesis block: " + fix};
}

/// Joins the connections that ended; with `all`, every connection (after the interrupt).
void Reap(std::list<Connection>& live, bool all)
{
    for (auto it = live.begin(); it != live.end();) {
        if (all || it->done->load()) {
            it->thread.join();
            it = live.erase(it);
        } else {
            ++it;
        }
    }
}

} // namespace

Result<ServeStats> Serve(const ServeOptions& o)
{
    if (o.max_peers < 1 || o.max_peers > 1024) return Error{Errc::InvalidValue, "max_peers must be in 1..1024"};
    if (o.peer_timeout.count() < 1) return Error{Errc::InvalidValue, "peer_timeout must be positive"};
    auto chain = LocateServed(o);
    if (!chain) return chain.error();
    const ChainParams& params = GetChainParams(chain->chain);
    auto listener = Listener::Bind(o.listen_host, o.port.value_or(params.default_port));
    if (!listener) return listener.error();
    if (o.on_listening) o.on_listening(o.listen_host, listener->port());
    if (chain->live && o.on_event) o.on_event(LiveDatadirMessage(chain->TipHeight(), chain->headers.Hash(chain->TipHeight())));

    // BIP 455's spent coins come from the datadir's rev files: without them the feature is not offered.
    std::optional<DatadirUndo> undo;
    if (!o.source.datadir.empty()) {
        if (auto u = LocateUndoInDatadir(o.source.datadir, chain->chain); u && !u->blocks.empty()) undo = std::move(*u);
    }
    ServeShared shared(*chain, params, o, undo ? &*undo : nullptr);
    ServeStats stats;
    stats.spent_coins = undo.has_value();
    stats.height = chain->TipHeight();
    std::list<Connection> live;
    while (!(o.interrupt && o.interrupt->load())) {
        auto accepted = listener->Accept(ACCEPT_POLL, o.interrupt);
        Reap(live, false);
        if (!accepted) continue;
        if (live.size() >= o.max_peers) {
            ::close(accepted->first);
            ++stats.refused;
            shared.Event("peer " + accepted->second + " refused: " + std::to_string(o.max_peers) + " peers are served already");
            continue;
        }
        Connection& c = live.emplace_back();
        try {
            c.thread = std::thread([fd = accepted->first, address = accepted->second, &shared, done = c.done] {
                ServeConnection(fd, address, shared);
                done->store(true);
            });
        } catch (const std::system_error& e) {
            // No thread for it (the system's limit): this peer is refused, the server goes on.
            live.pop_back();
            ::close(accepted->first);
            ++stats.refused;
            shared.Event("peer " + accepted->second + " refused: no thread for it (" + e.what() + ")");
        }
    }
    Reap(live, true);
    stats.connections = shared.connections.load();
    stats.dropped = shared.dropped.load();
    stats.blocks_sent = shared.blocks_sent.load();
    stats.headers_sent = shared.headers_sent.load();
    stats.bspent_sent = shared.bspent_sent.load();
    stats.bytes_sent = shared.bytes_sent.load();
    stats.bytes_received = shared.bytes_received.load();
    stats.max_upload_rate = o.max_upload_rate;
    if (shared.upload_limit) stats.upload_wait_seconds = std::chrono::duration<double>(shared.upload_limit->waited()).count();
    return stats;
}

} // namespace ibdkit

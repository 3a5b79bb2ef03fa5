// One inbound peer of `ibdkit serve` (src/serve/session.h).
#include "serve/session.h"

#include <ibdkit/blockfile/blockfile.h>
#include <ibdkit/primitives/block.h>

#include <ibdkit/blockfile/checked_read.h>
#include "blockfile/undo_file.h"
#include "swiftsync/spent_coins.h"
#include "wire/peer.h"
#include "wire/protocol.h"

#include <algorithm>
#include <chrono>
#include <optional>
#include <random>
#include <vector>

namespace ibdkit {

void ServeShared::Event(const std::string& line)
{
    if (!options.on_event) return;
    std::lock_guard lock(event_mutex);
    options.on_event(line);
}

namespace {

/// Core's answer to one getblocks: at most this many block hashes.
constexpr std::size_t GETBLOCKS_LIMIT = MAX_BLOCKS_PER_GETBLOCKS;

class Session {
public:
    Session(int fd, ServeShared& shared)
        : m_s(shared), m_peer(Socket(fd), shared.params, PolicyId::Hardened, shared.options.interrupt),
          m_reader(shared.chain.files, shared.chain.key)
    {
        // One blk file (and one rev file) open per connection: a peer downloads in height order,
        // file after file but where a node stored blocks out of order, and the server's descriptors
        // stay a few per peer however many files the chain has (thousands on mainnet).
        m_reader.KeepOpenAtMost(1);
        if (shared.undo) {
            m_undo.emplace(shared.undo->blocks_dir, shared.undo->key, shared.params.message_start);
            m_undo->KeepOpenAtMost(1);
        }
        if (shared.upload_limit) m_peer.LimitSendRate(shared.upload_limit.get());
    }

    /// Serves until the peer leaves (nullopt) or fails (why).
    std::optional<NetError> Run()
    {
        if (auto e = Handshake()) return e;
        m_s.connections.fetch_add(1);
        m_s.Event("peer " + m_address + " connected: " + SanitizePeerText(m_version.user_agent) + ", protocol " + std::to_string(m_version.version) +
                  ", height " + std::to_string(m_version.start_height) + (m_spent_coins ? ", spent coins offered" : ""));
        for (;;) {
            auto m = m_peer.Receive(NetClock::now() + m_s.options.peer_timeout);
            if (!m) return m.error();
            std::optional<NetError> e;
            if (m->command == "getheaders") e = OnLocator(Peer::Bytes(*m), true);
            else if (m->command == "getblocks") e = OnLocator(Peer::Bytes(*m), false);
            else if (m->command == "getdata") e = OnGetData(Peer::Bytes(*m));
            else if (m->command == "getbspent" && m_spent_coins) e = OnGetBspent(Peer::Bytes(*m));
            else if (m->command == "version") e = NetError{NetErrc::Misbehaving, "a second version message"};
            // Everything else (verack, addr, inv, sendheaders, feefilter, sendcmpct, ...) is read and ignored.
            if (e) return e;
        }
    }

    void SetAddress(std::string a) { m_address = std::move(a); }
    const std::string& address() const noexcept { return m_address; }
    const Peer& peer() const noexcept { return m_peer; }

private:
    std::chrono::milliseconds Timeout() const { return m_s.options.peer_timeout; }

    /// Inbound order: the peer's version first, then ours and our verack, then its verack.
    std::optional<NetError> Handshake()
    {
        const auto deadline = NetClock::now() + Timeout();
        bool version = false, verack = false;
        while (!version || !verack) {
            auto m = m_peer.Receive(deadline);
            if (!m) return m.error();
            if (m->command == "version") {
                if (version) return NetError{NetErrc::Misbehaving, "a second version message"};
                auto v = DecodeVersion(Peer::Bytes(*m));
                if (!v) return NetError{NetErrc::Misbehaving, "a malformed version message: " + v.error().message};
                if (v->version < MIN_PEER_PROTO_VERSION) {
                    return NetError{NetErrc::Misbehaving, "protocol version " + std::to_string(v->version) + " is too old"};
                }
                m_version = *v;
                version = true;
                if (auto e = SendVersion()) return e;
                // BIP 434: features between version and verack, to a peer that negotiates them.
                m_spent_coins = m_s.undo && v->version >= FEATURE_NEGOTIATION_VERSION;
                if (m_spent_coins) {
                    const FeatureMessage f{std::string(FEATURE_BLOCK_SPENT_COINS_V1), {0x00}};
                    if (auto e = m_peer.Send("feature", EncodeFeature(f), Timeout())) return e;
                }
                if (auto e = m_peer.Send("verack", {}, Timeout())) return e;
            } else if (m->command == "verack") {
                if (!version) return NetError{NetErrc::Misbehaving, "verack before version"};
                verack = true;
            }
        }
        return std::nullopt;
    }

    std::optional<NetError> SendVersion()
    {
        VersionMessage v;
        v.version = m_s.undo ? FEATURE_NEGOTIATION_VERSION : PROTOCOL_VERSION;
        v.services = NODE_NETWORK | NODE_WITNESS;
        v.time = std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch()).count();
        v.addr_recv = m_version.addr_from;
        v.addr_from = VersionAddress::FromIPv4({0, 0, 0, 0}, 0, v.services);
        v.nonce = std::random_device{}() | uint64_t(std::random_device{}()) << 32;
        v.start_height = m_s.chain.TipHeight();
        v.relay = false;
        return m_peer.Send("version", EncodeVersion(v), Timeout());
    }

    /// The height a locator forks from our chain at: its first hash we hold, else the genesis (Core's
    /// FindForkInGlobalIndex).
    int ForkHeight(const std::vector<BlockHash>& locator) const
    {
        for (const BlockHash& h : locator) {
            if (auto height = HeightOf(h)) return *height;
        }
        return 0;
    }

    std::optional<int> HeightOf(const BlockHash& hash) const
    {
        auto h = m_s.chain.headers.HeightOf(hash);
        if (!h || *h > m_s.chain.TipHeight()) return std::nullopt;
        return h;
    }

    /// The block bytes (with witness) at height h of the served chain. A record whose header is
    /// not the block the chain names there is an error, as Core's ReadBlock refuses it: never sent
    /// under that block's hash.
    Result<std::vector<uint8_t>> BlockAt(int h)
    {
        const int i = h - m_s.chain.base_height;
        if (i < 0) return EncodeBlock(m_s.params.genesis);
        auto bytes = m_reader.Read(m_s.chain.order.blocks[std::size_t(i)]);
        if (!bytes) return bytes.error();
        if (auto e = CheckRecordIsBlock(std::as_bytes(std::span(*bytes)), h, m_s.chain.headers.Hash(h))) return *e;
        return bytes;
    }

    Result<BlockHeader> HeaderAt(int h)
    {
        const int i = h - m_s.chain.base_height;
        if (i < 0) return BlockHeader(m_s.params.genesis.header());
        const BlockRecordPos& pos = m_s.chain.order.blocks[std::size_t(i)];
        std::array<uint8_t, 80> bytes{};
        auto r = m_reader.ReadInto(pos.file, pos.offset, std::as_writable_bytes(std::span(bytes)));
        if (!r) return r.error();
        if (auto e = CheckRecordIsBlock(std::as_bytes(std::span(bytes)), h, m_s.chain.headers.Hash(h))) return *e;
        return HeaderFromBytes(bytes);
    }

    /// getheaders → headers (up to 2000, through hash_stop); getblocks → inv (up to 500). An empty
    /// locator asks for hash_stop's header alone (Core's getheaders).
    std::optional<NetError> OnLocator(std::span<const uint8_t> payload, bool headers)
    {
        auto msg = DecodeLocator(payload);
        if (!msg) return NetError{NetErrc::Misbehaving, std::string("a malformed ") + (headers ? "getheaders" : "getblocks") + ": " + msg.error().message};
        const int tip = m_s.chain.TipHeight();
        int first = ForkHeight(msg->locator) + 1;
        int last = std::min(tip, first + int(headers ? MAX_HEADERS_RESULTS : GETBLOCKS_LIMIT) - 1);
        if (msg->locator.empty()) {
            if (!headers) return std::nullopt;
            auto stop = HeightOf(msg->hash_stop);
            if (!stop) return m_peer.Send("headers", EncodeHeaders({}), Timeout());
            first = last = *stop;
        } else if (auto stop = HeightOf(msg->hash_stop); stop && *stop >= first) {
            last = std::min(last, *stop);
        }
        if (headers) {
            std::vector<BlockHeader> out;
            for (int h = first; h <= last; ++h) {
                auto hd = HeaderAt(h);
                if (!hd) return NetError{NetErrc::Io, "cannot read the header at height " + std::to_string(h) + ": " + hd.error().message};
                out.push_back(*hd);
            }
            m_s.headers_sent.fetch_add(out.size());
            return m_peer.Send("headers", EncodeHeaders(out), Timeout());
        }
        std::vector<Inv> invs;
        for (int h = first; h <= last; ++h) invs.push_back(Inv{MSG_BLOCK, m_s.chain.headers.Hash(h).ToUint256()});
        // A full batch: when the peer asks for its last block, tell it our tip (Core's hashContinue),
        // so that it asks for more.
        m_continue = invs.size() == GETBLOCKS_LIMIT ? std::optional(invs.back().hash) : std::nullopt;
        if (invs.empty()) return std::nullopt;
        return m_peer.Send("inv", EncodeInv(invs), Timeout());
    }

    std::optional<NetError> OnGetData(std::span<const uint8_t> payload)
    {
        auto invs = DecodeInv(payload);
        if (!invs) return NetError{NetErrc::Misbehaving, "a malformed getdata: " + invs.error().message};
        std::vector<Inv> missing;
        for (const Inv& inv : *invs) {
            if (m_s.options.interrupt && m_s.options.interrupt->load()) return NetError{NetErrc::Interrupted, "the server stops"};
            const auto h = inv.IsBlock() ? HeightOf(BlockHash(inv.hash)) : std::nullopt;
            if (!h) {
                missing.push_back(inv);
                continue;
            }
            if (auto e = SendBlock(*h, inv.type == MSG_WITNESS_BLOCK)) return e;
            if (m_continue && inv.hash == *m_continue) {
                m_continue.reset();
                const std::vector<Inv> tip{Inv{MSG_BLOCK, m_s.chain.headers.Hash(m_s.chain.TipHeight()).ToUint256()}};
                if (auto e = m_peer.Send("inv", EncodeInv(tip), Timeout())) return e;
            }
        }
        if (missing.empty()) return std::nullopt;
        return m_peer.Send("notfound", EncodeInv(missing), Timeout());
    }

    /// BIP 455: the block's spent coins from its rev record, those below the cutoff when it is set.
    /// A block not on our chain, or without undo data, gets no answer.
    std::optional<NetError> OnGetBspent(std::span<const uint8_t> payload)
    {
        auto request = DecodeGetBspent(payload);
        if (!request) return NetError{NetErrc::Misbehaving, "a malformed getbspent: " + request.error().message};
        const auto h = HeightOf(request->block_hash);
        const auto& blocks = m_s.undo->blocks;
        const auto it = std::lower_bound(blocks.begin(), blocks.end(), h.value_or(-1),
                                         [](const DatadirUndo::Block& b, int height) { return b.height < height; });
        if (!h || it == blocks.end() || it->height != *h || it->hash != request->block_hash) return std::nullopt;
        auto undo = m_undo->Read(it->file, it->undo_pos, it->prev);
        if (!undo) return NetError{NetErrc::Io, "cannot read the undo data of height " + std::to_string(*h) + ": " + undo.error().message};
        auto bytes = swiftsync::BspentPayload(*request, *undo);
        if (!bytes) return std::nullopt; // above Core's message limit: BIP 455 cannot carry it
        m_s.bspent_sent.fetch_add(1);
        return m_peer.Send("bspent", *bytes, Timeout());
    }

    std::optional<NetError> SendBlock(int h, bool witness)
    {
        auto bytes = BlockAt(h);
        if (!bytes) return NetError{NetErrc::Io, "cannot read the block at height " + std::to_string(h) + ": " + bytes.error().message};
        if (!witness) {
            // A peer without witness support gets the block as Core sends it then: witness stripped.
            auto block = DecodeBlock(*bytes);
            if (!block) return NetError{NetErrc::Io, "the block at height " + std::to_string(h) + " does not decode: " + block.error().message};
            *bytes = EncodeBlock(*block, TX_NO_WITNESS);
        }
        m_s.blocks_sent.fetch_add(1);
        return m_peer.Send("block", *bytes, Timeout());
    }

    ServeShared& m_s;
    Peer m_peer;
    BlockFileReader m_reader;
    std::optional<UndoFileReader> m_undo;
    bool m_spent_coins{false}; ///< the feature was announced to this peer
    VersionMessage m_version;
    std::optional<uint256> m_continue;
    std::string m_address;
};

} // namespace

void ServeConnection(int fd, const std::string& address, ServeShared& shared)
{
    Session s(fd, shared);
    s.SetAddress(address);
    const auto why = s.Run();
    shared.bytes_sent.fetch_add(s.peer().bytes_sent());
    shared.bytes_received.fetch_add(s.peer().stats().bytes);
    if (!why || why->code == NetErrc::Closed) {
        shared.Event("peer " + address + " left");
    } else if (why->code == NetErrc::Interrupted) {
        shared.Event("peer " + address + " disconnected: the server stops");
    } else {
        // A peer of another network is dropped as Core drops one (its first message's magic).
        if (why->code == NetErrc::Misbehaving || why->code == NetErrc::Timeout || why->code == NetErrc::WrongNetwork) {
            shared.dropped.fetch_add(1);
        }
        shared.Event("peer " + address + " dropped: " + why->message);
    }
}

} // namespace ibdkit

// The fetcher of blocks from several peers (swiftsync/peer_fetch.h) against in-process peers on
// socketpairs: Core's block-stalling rule. A peer that holds the block the run waits for while the
// blocks ahead of it fill the room is dropped after Core's 2 s window, long before the --timeout,
// and the other peer serves its heights.
#include "swiftsync/peer_fetch.h"

#include "gen/chain_gen.h"
#include "wire/protocol.h"

#include <gtest/gtest.h>

#include <sys/socket.h>

#include <thread>

using namespace ibdkit;
using namespace ibdkit::swiftsync;

namespace {

const ChainParams& Regtest() { return GetChainParams(ChainType::REGTEST); }

/// A generated regtest chain of `blocks` blocks (blocks[0]: the genesis) and its header chain.
struct Chain {
    std::vector<Block> blocks;
    HeaderChain headers{Regtest()};
};

const Chain& TheChain()
{
    static const Chain c = [] {
        ChainGenOptions o = TinyChainGenOptions();
        o.blocks = 200;
        o.seed = 11;
        o.start_time = DefaultStartTime(o.blocks, 1'700'000'000);
        Chain ch;
        ChainGenerator gen(o);
        ch.blocks.push_back(gen.Genesis());
        while (!gen.Done()) {
            ch.blocks.push_back(gen.Next());
            if (auto why = ch.headers.Append(ch.blocks.back().header())) throw std::runtime_error(*why);
        }
        return ch;
    }();
    return c;
}

/// A peer on one end of a socketpair answering getdata with the chain's blocks, except those at
/// `withhold_from` or above, of which it says nothing while it stays connected.
class BlockServer {
public:
    explicit BlockServer(int withhold_from) : m_withhold_from(withhold_from) {}
    ~BlockServer()
    {
        if (m_thread.joinable()) m_thread.join();
    }

    ConnectedPeer Connect(std::string address)
    {
        int fds[2];
        if (::socketpair(AF_UNIX, SOCK_STREAM, 0, fds) != 0) throw std::runtime_error("socketpair");
        m_thread = std::thread([this, fd = fds[1]] { Serve(Socket(fd)); });
        return ConnectedPeer{std::move(address), std::make_unique<Peer>(Socket(fds[0]), Regtest(), PolicyId::Plain)};
    }

private:
    void Serve(Socket s)
    {
        const Chain& chain = TheChain();
        Peer p(std::move(s), Regtest(), PolicyId::Plain);
        for (;;) {
            auto m = p.Receive(NetClock::now() + std::chrono::seconds(60));
            if (!m) return; // the fetcher closed the connection
            if (m->command != "getdata") continue;
            auto invs = DecodeInv(Peer::Bytes(*m));
            if (!invs) return;
            for (const Inv& inv : *invs) {
                auto h = chain.headers.HeightOf(BlockHash(inv.hash));
                if (!h || *h >= m_withhold_from) continue;
                if (p.Send("block", EncodeBlock(chain.blocks[std::size_t(*h)]))) return;
            }
        }
    }

    int m_withhold_from;
    std::thread m_thread;
};

// Peer 0 withholds every height from 61 on; the run waits on one of them while peer 1 fills the
// room (2 kB: about ten of this chain's blocks there, of ~200 bytes). With a timeout of 120 s, only Core's window rule
// can drop peer 0 before the run is done; its message says which rule did.
TEST(BlockFetcher, APeerHoldingTheWaitedBlockWhileTheRoomFillsIsDroppedByCoresRule)
{
    const Chain& chain = TheChain();
    BlockServer withholding(61), honest(1 << 30);
    std::vector<ConnectedPeer> peers;
    peers.push_back(withholding.Connect("withholding"));
    peers.push_back(honest.Connect("honest"));
    FetchOptions o;
    o.timeout = std::chrono::seconds(120);
    o.window = 4;
    o.max_ahead_bytes = 2'000;
    o.spent_coins = false;
    BlockFetcher fetcher(std::move(peers), chain.headers, 1, 200, o);
    for (uint32_t h = 1; h <= 200; ++h) {
        auto b = fetcher.Take(h);
        ASSERT_TRUE(b) << "height " << h << ": " << b.error().message;
        ASSERT_EQ(HeaderFromBytes(b->block.uchars().first<80>()).GetHash(), chain.headers.Hash(int(h))) << h;
    }
    const auto reports = fetcher.Reports();
    ASSERT_EQ(reports.size(), 2u);
    EXPECT_NE(reports[0].dropped.find("stalling block download: height "), std::string::npos) << reports[0].dropped;
    EXPECT_NE(reports[0].dropped.find("held while the blocks ahead of it filled their room for 2 s"), std::string::npos)
        << reports[0].dropped;
    EXPECT_EQ(reports[1].dropped, "");
    EXPECT_EQ(reports[0].blocks + reports[1].blocks, 200u);
    EXPECT_LE(reports[0].blocks, 60u);
}

} // namespace

// The fetcher of blocks from several peers (swiftsync/peer_fetch.h) against in-process peers on
// socketpairs: Core's block-stalling rule. A peer that holds the block the run waits for while the
// blocks ahead of it fill the room is dropped after Core's 2 s window, long before the --timeout,
// and the other peer serves its heights.
#include "swiftsync/peer_fetch.h"

#include "gen/chain_gen.h"
#include "wire/protocol.h"

#include <ibdkit/consensus/pow.h>

#include <gtest/gtest.h>

#include <sys/socket.h>

#include <atomic>
#include <map>
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

/// A regtest header chain of `height` headers alone (no blocks), mined on the genesis.
const HeaderChain& LongHeaders(int height)
{
    static std::map<int, HeaderChain> made;
    auto it = made.find(height);
    if (it != made.end()) return it->second;
    HeaderChain c(Regtest());
    for (int k = 1; k <= height; ++k) {
        BlockHeader h;
        h.version = 0x20000000;
        h.hash_prev_block = c.Tip();
        h.time = Regtest().genesis.time + uint32_t(k) * 600;
        h.bits = Regtest().genesis.bits;
        while (!CheckProofOfWork(h.GetHash().ToUint256(), h.bits, Regtest().consensus)) ++h.nonce;
        if (auto why = c.Append(h)) throw std::runtime_error(*why);
    }
    return made.emplace(height, std::move(c)).first->second;
}

/// A peer on one end of a socketpair whose chain is `headers` up to `tip`: it answers getheaders
/// as Core does (from the first locator entry on its chain, at most 2,000) and getdata with the
/// chain's `blocks`, except those at `withhold_from` or above, of which it says nothing while it
/// stays connected.
class BlockServer {
public:
    explicit BlockServer(int withhold_from, int tip = 200, const HeaderChain& headers = TheChain().headers,
                         const std::vector<Block>& blocks = TheChain().blocks)
        : m_withhold_from(withhold_from), m_tip(tip), m_headers(headers), m_blocks(blocks)
    {
    }
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

    /// getheaders answered so far.
    int HeadersAnswered() const { return m_answered.load(); }
    /// The highest height a getdata asked this peer for (0: none yet), withheld or not.
    int HighestAsked() const { return m_highest_asked.load(); }
    /// Sends no block above `height` until `other` was asked for one at `other_height` or above (or
    /// 30 s passed; call before Connect): what another peer's thread does first then happens
    /// before this peer is done, however the threads are scheduled.
    void HoldAboveUntilAsked(int height, const BlockServer& other, int other_height)
    {
        m_hold_above = height;
        m_hold_for = &other;
        m_hold_until = other_height;
    }

private:
    void Serve(Socket s)
    {
        Peer p(std::move(s), Regtest(), PolicyId::Plain);
        for (;;) {
            auto m = p.Receive(NetClock::now() + std::chrono::seconds(60));
            if (!m) return; // the fetcher closed the connection
            if (m->command == "getheaders") {
                auto loc = DecodeLocator(Peer::Bytes(*m));
                if (!loc) return;
                int fork = 0;
                for (const BlockHash& l : loc->locator) {
                    if (auto k = m_headers.HeightOf(l); k && *k <= m_tip) {
                        fork = *k;
                        break;
                    }
                }
                std::vector<BlockHeader> hs;
                for (int k = fork + 1; k <= m_tip && hs.size() < MAX_HEADERS_RESULTS; ++k) hs.push_back(m_headers.Header(k));
                ++m_answered;
                if (p.Send("headers", EncodeHeaders(hs))) return;
                continue;
            }
            if (m->command != "getdata") continue;
            auto invs = DecodeInv(Peer::Bytes(*m));
            if (!invs) return;
            for (const Inv& inv : *invs) {
                auto h = m_headers.HeightOf(BlockHash(inv.hash));
                if (h && *h > m_highest_asked) m_highest_asked = *h;
                if (!h || *h >= m_withhold_from || *h > m_tip) continue;
                if (m_hold_for && *h > m_hold_above) {
                    const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(30);
                    while (m_hold_for->HighestAsked() < m_hold_until && std::chrono::steady_clock::now() < until) {
                        std::this_thread::sleep_for(std::chrono::milliseconds(1));
                    }
                }
                if (p.Send("block", EncodeBlock(m_blocks[std::size_t(*h)]))) return;
            }
        }
    }

    int m_withhold_from, m_tip;
    const HeaderChain& m_headers;
    const std::vector<Block>& m_blocks;
    std::atomic<int> m_answered{0};
    std::atomic<int> m_highest_asked{0};
    int m_hold_above{0}, m_hold_until{0};
    const BlockServer* m_hold_for{nullptr};
    std::thread m_thread;
};

// Peer 0 withholds every height from 61 on; the run waits on one of them while peer 1 fills the
// room (2 kB: about ten of this chain's blocks there, of ~200 bytes). With a timeout of 120 s, only
// Core's window rule can drop peer 0 before the run is done; its message says which rule did. Peer
// 1 sends nothing above 100 until peer 0 was asked for a withheld block: were peer 0's thread
// starved until peer 1 had claimed the last height, no room would fill (as in Core at a chain's end).
TEST(BlockFetcher, APeerHoldingTheWaitedBlockWhileTheRoomFillsIsDroppedByCoresRule)
{
    const Chain& chain = TheChain();
    BlockServer withholding(61), honest(1 << 30);
    honest.HoldAboveUntilAsked(100, withholding, 61);
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

namespace {

/// `behind` and `honest`, connected (in that order), and the header chain downloaded from them,
/// which must come with no note.
std::pair<std::vector<ConnectedPeer>, HeaderChain> BehindAndHonest(BlockServer& behind, BlockServer& honest)
{
    std::vector<ConnectedPeer> peers;
    peers.push_back(behind.Connect("behind"));
    peers.push_back(honest.Connect("honest"));
    std::vector<std::string> notes;
    auto headers = DownloadHeaders(peers, Regtest(), Regtest().consensus.minimum_chain_work, std::chrono::seconds(10), notes);
    if (!headers) throw std::runtime_error(headers.error().message);
    if (!notes.empty()) throw std::runtime_error(notes.front());
    return {std::move(peers), std::move(*headers)};
}

// A peer whose chain ends at 60 beside one at the tip: the headers show where each ends, as Core
// learns its peers' best blocks, and the fetcher asks the shorter one only for heights it holds:
// it serves some of them and is not dropped for a notfound or a stall on the heights it lacks.
TEST(BlockFetcher, APeerBehindIsAskedOnlyForTheBlocksItsHeadersShowed)
{
    const Chain& chain = TheChain();
    BlockServer behind(1 << 30, 60), honest(1 << 30);
    honest.HoldAboveUntilAsked(0, behind, 1); // so that the behind peer has asked before the honest one is done
    auto [peers, headers] = BehindAndHonest(behind, honest);
    ASSERT_EQ(headers.Tip(), chain.headers.Tip());
    EXPECT_EQ(peers[0].best_height, 60u);
    EXPECT_EQ(peers[1].best_height, 200u);
    FetchOptions o;
    o.timeout = std::chrono::seconds(120);
    o.window = 4;
    o.spent_coins = false;
    BlockFetcher fetcher(std::move(peers), headers, 1, 200, o);
    for (uint32_t h = 1; h <= 200; ++h) {
        auto b = fetcher.Take(h);
        ASSERT_TRUE(b) << "height " << h << ": " << b.error().message;
        ASSERT_EQ(HeaderFromBytes(b->block.uchars().first<80>()).GetHash(), chain.headers.Hash(int(h))) << h;
        ASSERT_TRUE(b->peer == 1 || h <= 60) << "height " << h << " came from the peer whose chain ends at 60";
    }
    const auto reports = fetcher.Reports();
    EXPECT_EQ(reports[0].dropped, "");
    EXPECT_EQ(reports[1].dropped, "");
    EXPECT_GT(reports[0].blocks, 0u);
    EXPECT_EQ(reports[0].synced_headers, 60);
    EXPECT_EQ(reports[1].synced_headers, 200);
}

// With only the shorter peer left for a height above its chain, Take says so at once, naming where
// its headers end, rather than asking it for a block it never showed.
TEST(BlockFetcher, NoPeerHoldingAHeightIsSaidAtOnce)
{
    BlockServer behind(1 << 30, 60), honest(1 << 30);
    auto [peers, headers] = BehindAndHonest(behind, honest);
    FetchOptions o;
    o.spent_coins = false;
    BlockFetcher fetcher(std::move(peers), headers, 1, 200, o);
    fetcher.Drop(1, "gone");
    auto b = fetcher.Take(100);
    ASSERT_FALSE(b);
    EXPECT_EQ(b.error().code, Errc::NotFound);
    EXPECT_NE(b.error().message.find("behind: its headers end at height 60; honest: gone"), std::string::npos) << b.error().message;
}

// A peer far behind answers a locator from the entry below its tip, which may lie more than 2,000
// headers down: its full answer is all headers held. Asked on from the last of them (as Core asks
// on from the last header of a full answer), it shows its tip; asked again with the same locator,
// the download would go round forever.
TEST(DownloadHeaders, APeerFarBehindIsAskedOnUntilItsTip)
{
    const HeaderChain& long_chain = LongHeaders(8300);
    const std::vector<Block> none;
    BlockServer ahead(0, 8300, long_chain, none), behind(0, 4000, long_chain, none);
    std::vector<ConnectedPeer> peers;
    peers.push_back(ahead.Connect("ahead"));
    peers.push_back(behind.Connect("behind"));
    std::vector<std::string> notes;
    auto headers = DownloadHeaders(peers, Regtest(), Regtest().consensus.minimum_chain_work, std::chrono::seconds(10), notes);
    ASSERT_TRUE(headers) << headers.error().message;
    EXPECT_EQ(headers->Height(), 8300);
    EXPECT_TRUE(notes.empty()) << notes.front();
    EXPECT_EQ(peers[0].best_height, 8300u);
    EXPECT_EQ(peers[1].best_height, 4000u);
    EXPECT_LE(behind.HeadersAnswered(), 3);
}

} // namespace

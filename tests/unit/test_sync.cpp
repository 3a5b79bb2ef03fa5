// `Sync` against an in-process fake peer on a socketpair: the honest paths (headers-first,
// getblocks with btcd's continue-inv, interrupt + resume, recovery of an interrupted flush) must
// give exactly `Replay`'s UTXO set for the same chain; hostile peers (wrong magic, oversize
// length, stall, garbage, a chain that does not link) must end with a clear message, never a hang.
#include "engine/header_file.h"
#include "test_util.h"

#include <ibdkit/blockfile/locate.h>
#include <ibdkit/coins/coins_db.h>
#include <ibdkit/engine/replay.h>
#include <ibdkit/engine/sync.h>

#include "blockfile/block_index.h"
#include "engine/connector.h"
#include "gen/chain_gen.h"
#include "wire/peer.h"

#include <ibdkit/consensus/header_chain.h>
#include <ibdkit/consensus/pow.h>

#include "common/test_hooks.h"
#include "consensus/merkle.h"
#include "coins/coins_db_internal.h"

#include <gtest/gtest.h>

#include <sys/socket.h>
#include <unistd.h>

#include <ctime>
#include <fstream>
#include <memory>
#include <thread>

using namespace ibdkit;
namespace fs = std::filesystem;

namespace {

using TempDir = ibdkit::test::TempDir;

const ChainParams& Regtest() { return GetChainParams(ChainType::REGTEST); }

// One generated chain for every test (blocks[0] = genesis), written to blk files for Replay.
struct Chain {
    std::vector<Block> blocks;
    std::vector<BlockHash> hashes;
    TempDir dir;
    UtxoStats replayed;
    int height{0};
};

// A generated chain (blocks and their hashes, also written as blk files) from `o`. The tests keep
// it in a static, so its directory is removed when the process exits.
std::unique_ptr<Chain> MakeChain(const ChainGenOptions& o)
{
    auto ch = std::make_unique<Chain>();
    ChainGenerator gen(o);
    ch->blocks.push_back(gen.Genesis());
    while (!gen.Done()) ch->blocks.push_back(gen.Next());
    for (const auto& b : ch->blocks) ch->hashes.push_back(b.GetHash());
    ch->height = o.blocks;
    auto w = WriteGeneratedChain(ch->dir.path, o, {});
    if (!w) throw std::runtime_error(w.error().message);
    return ch;
}

ChainGenOptions ChainOptions(int blocks, uint64_t target_bytes, uint64_t seed)
{
    ChainGenOptions o = TinyChainGenOptions();
    o.blocks = blocks;
    o.target_bytes = target_bytes;
    o.seed = seed;
    o.start_time = DefaultStartTime(o.blocks, 1'700'000'000);
    return o;
}

const Chain& TheChain()
{
    static const std::unique_ptr<Chain> c = [] {
        auto ch = MakeChain(ChainOptions(620, 3'000'000, 5)); // more than one getblocks batch of 500
        ReplayOptions ro;
        ro.source.blocks_dir = ch->dir.path / "blocks";
        ro.policy = PolicyId::Plain;
        auto r = Replay(ro);
        if (!r || !r->utxo) throw std::runtime_error("replay of the generated chain failed");
        ch->replayed = *r->utxo;
        return ch;
    }();
    return *c;
}

// Another chain from the same genesis (another seed): a competing branch forking at height 0.
const Chain& OtherChain()
{
    static const std::unique_ptr<Chain> c = MakeChain(ChainOptions(380, 2'000'000, 77));
    return *c;
}

// The UTXO hash of a replay of `chain`'s blocks up to `height`.
std::string ReplayedHash(const Chain& chain, int height)
{
    ReplayOptions ro;
    ro.source.blocks_dir = chain.dir.path / "blocks";
    ro.stop_height = height;
    auto r = Replay(ro);
    if (!r || !r->utxo || r->height != height) return "replay failed";
    return r->utxo->hash_serialized.ToHex();
}

enum class Mode { Honest, NoHeaders, BadMagic, Oversize, Stall, Garbage, WrongBlock, BadHeaderChain, CloseAfterHandshake };

// A fake node serving TheChain() (up to `tip`) on one end of a socketpair.
class FakeNode {
public:
    FakeNode(Mode mode, int tip = -1) : m_mode(mode), m_tip(tip < 0 ? TheChain().height : tip) {}
    /// Serves `chain` up to `tip`, and also, on getdata only, the blocks of `stale` (a branch it left,
    /// whose blocks Core still serves).
    FakeNode(const Chain& chain, int tip, const Chain* stale) : m_mode(Mode::Honest), m_tip(tip), m_chain(&chain), m_stale(stale) {}
    ~FakeNode()
    {
        if (m_thread.joinable()) m_thread.join();
    }

    // The SyncOptions::connect hook: a socketpair, our end served by a thread.
    /// One end of a socket pair for the sync, the other served by this node (-1 if none).
    std::function<int()> Connector()
    {
        return [this]() -> int {
            int fds[2];
            if (::socketpair(AF_UNIX, SOCK_STREAM, 0, fds) != 0) return -1;
            m_thread = std::thread([this, fd = fds[1]] { Serve(Socket(fd)); });
            return fds[0];
        };
    }

    int getdata_count{0};
    int getheaders_count{0};
    int getblocks_count{0};

private:
    int Locate(const LocatorMessage& m) const
    {
        for (const auto& h : m.locator) {
            for (int i = 0; i <= m_tip; ++i) {
                if (m_chain->hashes[std::size_t(i)] == h) return i;
            }
        }
        return 0;
    }

    void Serve(Socket s)
    {
        const auto& chain = *m_chain;
        Peer p(std::move(s), Regtest(), PolicyId::Plain);
        auto raw = [&](const std::vector<uint8_t>& bytes) { (void)p.socket().SendAll(bytes, NetClock::now() + std::chrono::seconds(5)); };
        bool continue_pending = false;
        BlockHash continue_hash;
        for (;;) {
            auto m = p.Receive(NetClock::now() + std::chrono::seconds(30));
            if (!m) return; // the client closed (or went silent)
            const auto payload = Peer::Bytes(*m);
            if (m->command == "version") {
                VersionMessage v;
                v.services = NODE_NETWORK | NODE_WITNESS;
                v.user_agent = "/fake:1.0/";
                v.start_height = m_tip;
                v.nonce = 42;
                (void)p.Send("version", EncodeVersion(v));
                (void)p.Send("wtxidrelay");
                (void)p.Send("sendaddrv2");
                (void)p.Send("verack");
                (void)p.Send("ping", EncodePing(7)); // must be answered, not returned
                if (m_mode == Mode::CloseAfterHandshake) return;
            } else if (m->command == "getheaders") {
                ++getheaders_count;
                if (m_mode == Mode::NoHeaders) continue;
                const int from = Locate(*DecodeLocator(payload)) + 1;
                std::vector<BlockHeader> hs;
                for (int h = from; h <= m_tip && hs.size() < MAX_HEADERS_RESULTS; ++h) hs.push_back(chain.blocks[std::size_t(h)].header());
                if (m_mode == Mode::BadHeaderChain && hs.size() > 3) std::swap(hs[1], hs[2]);
                (void)p.Send("headers", EncodeHeaders(hs));
            } else if (m->command == "getblocks") {
                ++getblocks_count;
                const int from = Locate(*DecodeLocator(payload)) + 1;
                std::vector<Inv> inv;
                for (int h = from; h <= m_tip && inv.size() < MAX_BLOCKS_PER_GETBLOCKS; ++h) {
                    inv.push_back({MSG_BLOCK, chain.hashes[std::size_t(h)].ToUint256()});
                }
                if (inv.size() == MAX_BLOCKS_PER_GETBLOCKS) {
                    continue_pending = true;
                    continue_hash = BlockHash(inv.back().hash);
                }
                if (!inv.empty()) (void)p.Send("inv", EncodeInv(inv));
            } else if (m->command == "getdata") {
                ++getdata_count;
                auto invs = DecodeInv(payload);
                if (!invs) return;
                if (m_mode == Mode::Stall && getdata_count > 1) continue;
                if (m_mode == Mode::BadMagic && getdata_count > 1) {
                    raw(MakeMessage({0xf9, 0xbe, 0xb4, 0xd9}, "block", EncodeBlock(chain.blocks[1])));
                    continue;
                }
                if (m_mode == Mode::Oversize && getdata_count > 1) {
                    auto msg = MakeMessage(Regtest().message_start, "block", {});
                    msg[16] = 0x40, msg[17] = 0x4b, msg[18] = 0x4c; // length 5,000,000
                    raw(msg);
                    continue;
                }
                if (m_mode == Mode::Garbage && getdata_count > 1) {
                    raw(MakeMessage(Regtest().message_start, "block", std::vector<uint8_t>(1000, 0xee)));
                    continue;
                }
                for (const auto& i : *invs) {
                    int h = 0;
                    while (h <= m_tip && chain.hashes[std::size_t(h)].ToUint256() != i.hash) ++h;
                    if (h > m_tip && m_stale) {
                        for (std::size_t k = 0; k < m_stale->hashes.size(); ++k) {
                            if (m_stale->hashes[k].ToUint256() == i.hash) (void)p.Send("block", EncodeBlock(m_stale->blocks[k]));
                        }
                        continue;
                    }
                    if (h > m_tip) continue;
                    if (m_mode == Mode::WrongBlock && getdata_count > 1) h = std::max(1, h - 1);
                    // Block messages with a bad checksum in between: dropped by the client, counted.
                    if (h == 30) {
                        auto bad = MakeMessage(Regtest().message_start, "block", EncodeBlock(chain.blocks[5]));
                        bad[20] ^= 1;
                        raw(bad);
                    }
                    (void)p.Send("block", EncodeBlock(chain.blocks[std::size_t(h)]));
                    if (continue_pending && BlockHash(i.hash) == continue_hash) {
                        const Inv tip[] = {{MSG_BLOCK, chain.hashes[std::size_t(m_tip)].ToUint256()}};
                        (void)p.Send("inv", EncodeInv(tip)); // btcd's and Core's continuation hint
                        continue_pending = false;
                    }
                }
            }
        }
    }

    Mode m_mode;
    int m_tip;
    const Chain* m_chain{&TheChain()};
    const Chain* m_stale{nullptr};
    std::thread m_thread;
};

SyncOptions Options(FakeNode& node, const fs::path& cs = {})
{
    SyncOptions o;
    o.chain = ChainType::REGTEST;
    o.chainstate = cs;
    o.dbcache_mib = 4;
    o.policy = PolicyId::Hardened;
    o.test_hooks = TestHooks::Connect(node.Connector());
    o.timeout = std::chrono::seconds(20);
    o.headers_wait = std::chrono::milliseconds(500);
    return o;
}

void ExpectReplayed(const SyncResult& r)
{
    const auto& c = TheChain();
    ASSERT_FALSE(r.failure) << r.failure->message;
    ASSERT_FALSE(r.reject_reason) << *r.reject_reason;
    EXPECT_EQ(r.height, c.height);
    EXPECT_EQ(r.tip, c.hashes.back());
    ASSERT_TRUE(r.utxo);
    EXPECT_EQ(r.utxo->hash_serialized, c.replayed.hash_serialized);
    EXPECT_EQ(r.utxo->txouts, c.replayed.txouts);
    EXPECT_EQ(r.utxo->total_amount, c.replayed.total_amount);
}

} // namespace

TEST(Sync, HeadersFirstMatchesReplay)
{
    FakeNode node(Mode::Honest);
    auto r = Sync(Options(node));
    ASSERT_TRUE(r.ok()) << r.error().message;
    EXPECT_EQ(r->mode, "headers");
    EXPECT_EQ(r->peer_user_agent, "/fake:1.0/");
    EXPECT_EQ(r->header_height, TheChain().height);
    EXPECT_EQ(r->blocks, uint64_t(TheChain().height));
    EXPECT_EQ(r->dropped_messages, 1u); // the bad-checksum message before block 30
    ExpectReplayed(*r);
}

TEST(Sync, WritesTheSameUndoDataAsReplay)
{
    TempDir t;
    FakeNode node(Mode::Honest);
    auto o = Options(node);
    o.undo_dir = t.path / "sync-undo";
    auto r = Sync(o);
    ASSERT_TRUE(r.ok()) << r.error().message;
    ExpectReplayed(*r);
    EXPECT_EQ(r->undo_records, uint64_t(TheChain().height));
    ReplayOptions ro;
    ro.source.blocks_dir = TheChain().dir.path / "blocks";
    ro.undo_dir = t.path / "replay-undo";
    auto rr = Replay(ro);
    ASSERT_TRUE(rr.ok()) << rr.error().message;
    EXPECT_EQ(rr->undo_records, r->undo_records);
    EXPECT_EQ(rr->undo_bytes, r->undo_bytes);
    for (const char* name : {"rev00000.dat", "revindex.dat"}) {
        const auto a = test::ReadFile(o.undo_dir / name);
        EXPECT_FALSE(a.empty()) << name;
        EXPECT_TRUE(a == test::ReadFile(ro.undo_dir / name)) << name << " differs between sync and replay";
    }
}

TEST(Sync, ReorganisesBelowItsTipWhenThePeerSwitchesToABranchWithMoreWork)
{
    // Run 1: the peer's chain up to 300 (blocks above 100 spend coins), with undo data.
    TempDir t;
    const fs::path cs = t.path / "chainstate", undo = t.path / "undo";
    {
        FakeNode node(Mode::Honest, 300);
        auto o = Options(node, cs);
        o.undo_dir = undo;
        auto r = Sync(o);
        ASSERT_TRUE(r.ok()) << r.error().message;
        ASSERT_FALSE(r->failure) << r->failure->message;
        ASSERT_EQ(r->height, 300);
    }
    // Run 2: the peer now follows a branch of 380 blocks from the genesis (more work), and still
    // serves the blocks of the one it left. Sync disconnects 300 blocks with its undo data, then
    // connects the new branch: the UTXO set of a plain replay of that branch.
    const auto& other = OtherChain();
    FakeNode node(other, other.height, &TheChain());
    auto o = Options(node, cs);
    o.undo_dir = undo;
    auto r = Sync(o);
    ASSERT_TRUE(r.ok()) << r.error().message;
    ASSERT_FALSE(r->failure) << r->failure->message;
    ASSERT_FALSE(r->reject_reason) << *r->reject_reason;
    EXPECT_EQ(r->competing_branches, 1u);
    EXPECT_EQ(r->blocks_disconnected, 300u);
    EXPECT_EQ(r->reorg_fork_height, 0);
    EXPECT_EQ(r->height, other.height);
    EXPECT_EQ(r->tip, other.hashes.back());
    EXPECT_EQ(r->header_height, other.height);
    ASSERT_TRUE(r->utxo);
    EXPECT_EQ(r->utxo->hash_serialized.ToHex(), ReplayedHash(other, other.height));

    // Run 3: back to the first chain, now longer (620 blocks): the other way round.
    FakeNode back(TheChain(), TheChain().height, &other);
    auto ob = Options(back, cs);
    ob.undo_dir = undo;
    auto rb = Sync(ob);
    ASSERT_TRUE(rb.ok()) << rb.error().message;
    ASSERT_FALSE(rb->failure) << rb->failure->message;
    EXPECT_EQ(rb->blocks_disconnected, uint64_t(other.height));
    ExpectReplayed(*rb);
}

TEST(Sync, ADatadirFollowsAReorganisationAsCoreKeepsOne)
{
    // As above, into a data directory: after each run the best chain of its block index (the one
    // every reader of Core's datadirs takes) is the sync's, and the branch it left stays stored.
    TempDir t;
    const fs::path node_dir = t.path / "node", undo = t.path / "undo";
    const auto run = [&](FakeNode& node) {
        auto o = Options(node, node_dir / "regtest" / "chainstate");
        o.undo_dir = undo;
        o.datadir_out = node_dir;
        auto r = Sync(o);
        EXPECT_TRUE(r.ok()) << r.error().message;
        return r;
    };
    const auto expect_index_at = [&](const Chain& chain) {
        auto located = LocateFromDatadir(node_dir, ChainType::REGTEST);
        ASSERT_TRUE(located.ok()) << located.error().message;
        ASSERT_EQ(located->TipHeight(), chain.height);
        EXPECT_EQ(located->headers.Hash(chain.height), chain.hashes.back());
        auto undo_data = LocateUndoInDatadir(node_dir, ChainType::REGTEST);
        ASSERT_TRUE(undo_data.ok());
        EXPECT_EQ(undo_data->blocks.size(), std::size_t(chain.height));
    };
    {
        FakeNode node(Mode::Honest, 300);
        auto r = run(node);
        ASSERT_TRUE(r.ok());
        ASSERT_EQ(r->height, 300);
    }
    const auto& other = OtherChain();
    {
        FakeNode node(other, other.height, &TheChain());
        auto r = run(node);
        ASSERT_TRUE(r.ok());
        ASSERT_FALSE(r->failure) << r->failure->message;
        EXPECT_EQ(r->blocks_disconnected, 300u);
        EXPECT_EQ(r->tip, other.hashes.back());
    }
    expect_index_at(other);
    FakeNode back(TheChain(), TheChain().height, &other);
    auto rb = run(back);
    ASSERT_TRUE(rb.ok());
    ExpectReplayed(*rb);
    expect_index_at(TheChain());
    auto index = ReadBlockIndex(node_dir / "regtest" / "blocks" / "index");
    ASSERT_TRUE(index.ok());
    EXPECT_EQ(index->entries.size(), std::size_t(TheChain().height + other.height + 1)) << "both branches stay stored";
}

TEST(Sync, KeepsItsChainAgainstABranchWithLessWorkAndRefusesAReorgWithoutUndo)
{
    TempDir t;
    const fs::path cs = t.path / "chainstate";
    {
        FakeNode node(Mode::Honest, 400);
        auto r = Sync(Options(node, cs));
        ASSERT_TRUE(r.ok()) << r.error().message;
        ASSERT_EQ(r->height, 400);
    }
    const auto& other = OtherChain();
    {
        // 380 blocks < 400 at equal difficulty: less work, not followed.
        FakeNode node(other, other.height, &TheChain());
        auto r = Sync(Options(node, cs));
        ASSERT_TRUE(r.ok()) << r.error().message;
        ASSERT_FALSE(r->failure) << r->failure->message;
        EXPECT_EQ(r->competing_branches, 1u);
        EXPECT_EQ(r->blocks_disconnected, 0u);
        EXPECT_EQ(r->height, 400);
        EXPECT_EQ(r->tip, TheChain().hashes[400]);
        EXPECT_EQ(r->header_height, 400) << "the stored headers are kept";
    }
    // A chainstate at height 100 of the other branch, built without undo data; then a peer whose
    // chain (the first one, to 300) has more work forks below that tip.
    const fs::path cs2 = t.path / "chainstate2";
    {
        FakeNode first(other, 100, nullptr);
        auto r = Sync(Options(first, cs2));
        ASSERT_TRUE(r.ok()) << r.error().message;
        ASSERT_EQ(r->height, 100);
    }
    {
        // No --undo: the peer's branch is refused with a message saying what is needed.
        FakeNode longer(Mode::Honest, 300);
        auto r = Sync(Options(longer, cs2));
        ASSERT_TRUE(r.ok()) << r.error().message;
        ASSERT_TRUE(r->failure);
        EXPECT_NE(r->failure->message.find("sync with --undo"), std::string::npos) << r->failure->message;
        EXPECT_EQ(r->height, 100);
        EXPECT_EQ(r->blocks_disconnected, 0u);
    }
    {
        // An undo directory without those blocks' records: an error naming the block.
        FakeNode longer(TheChain(), 300, &other);
        auto o = Options(longer, cs2);
        o.undo_dir = t.path / "empty-undo";
        auto r = Sync(o);
        ASSERT_FALSE(r.ok());
        EXPECT_NE(r.error().message.find("no undo data for block " + other.hashes[100].ToHex()), std::string::npos) << r.error().message;
    }
    {
        // Nothing was lost: the chainstate and its stored headers still agree on the old tip.
        FakeNode same(other, 100, nullptr);
        auto r = Sync(Options(same, cs2));
        ASSERT_TRUE(r.ok()) << r.error().message;
        ASSERT_FALSE(r->failure) << r->failure->message;
        EXPECT_EQ(r->height, 100);
        EXPECT_EQ(r->tip, other.hashes[100]);
    }
}

TEST(Sync, RefusesAHeaderChainBelowTheMinimumChainWork)
{
    // Regtest blocks carry about 2 units of work each: 620 blocks and the genesis are ~1242.
    // The headers go through the presync (HeaderWalk): none of them is stored.
    FakeNode node(Mode::Honest);
    TempDir t;
    const fs::path cs = t.path / "chainstate";
    auto o = Options(node, cs);
    o.minimum_chain_work = ArithToUint256(arith_uint256(5000));
    auto r = Sync(o);
    ASSERT_TRUE(r.ok()) << r.error().message;
    ASSERT_TRUE(r->failure);
    EXPECT_NE(r->failure->message.find("less work than the minimum chain work 0000000000000000000000000000000000000000000000000000000000001388"),
              std::string::npos)
        << r->failure->message;
    EXPECT_EQ(r->blocks, 0u) << "no block is downloaded";
    std::error_code ec;
    EXPECT_EQ(fs::exists(cs / HEADERS_FILE) ? fs::file_size(cs / HEADERS_FILE, ec) : 0u, 0u) << "no header stored";
    FakeNode enough(Mode::Honest);
    auto o2 = Options(enough);
    o2.minimum_chain_work = ArithToUint256(arith_uint256(1000));
    auto r2 = Sync(o2);
    ASSERT_TRUE(r2.ok()) << r2.error().message;
    ExpectReplayed(*r2);
    // Core's values.
    EXPECT_EQ(GetChainParams(ChainType::MAIN).consensus.minimum_chain_work.ToHex(),
              "0000000000000000000000000000000000000000dee8e2a309ad8a9820433c68");
    EXPECT_TRUE(GetChainParams(ChainType::REGTEST).consensus.minimum_chain_work.IsNull());
}

// The assumevalid rule over the header chain: regtest has no default, so every script runs; an
// assumevalid block less than two weeks of work below the best header skips none either.
TEST(Sync, VerifiesScriptsWhereCoreWould)
{
    ReplayOptions ro;
    ro.source.blocks_dir = TheChain().dir.path / "blocks";
    ro.assumevalid = BlockHash{};
    auto replayed = Replay(ro);
    ASSERT_TRUE(replayed.ok()) << replayed.error().message;
    ASSERT_GT(replayed->script_checked_inputs, 0u);
    FakeNode node(Mode::Honest);
    auto r = Sync(Options(node));
    ASSERT_TRUE(r.ok()) << r.error().message;
    ExpectReplayed(*r);
    EXPECT_EQ(r->script_checks_from_height, 1);
    EXPECT_EQ(r->script_check_reason, "assumevalid=0 (always verify)");
    EXPECT_EQ(r->script_checked_inputs, replayed->script_checked_inputs);
    FakeNode again(Mode::Honest);
    auto o = Options(again);
    o.assumevalid = TheChain().hashes[100];
    auto r2 = Sync(o);
    ASSERT_TRUE(r2.ok()) << r2.error().message;
    ExpectReplayed(*r2);
    EXPECT_EQ(r2->script_check_reason, "block too recent relative to best header");
    EXPECT_EQ(r2->script_checked_inputs, replayed->script_checked_inputs);
    // The engine derives every source's block contexts, so a sync trusts scripts where a replay
    // does: with skip_scripts, none is verified.
    FakeNode trusting(Mode::Honest);
    auto o3 = Options(trusting);
    o3.skip_scripts = true;
    auto r3 = Sync(o3);
    ASSERT_TRUE(r3.ok()) << r3.error().message;
    ExpectReplayed(*r3);
    EXPECT_EQ(r3->script_checked_inputs, 0u);
    EXPECT_FALSE(r3->script_checks_from_height);
}

// Core's -minimumchainwork is the engine's, for either source: a replay whose best header has less
// work than it skips no script below an assumevalid block, with Core's reason.
TEST(Replay, TheMinimumChainWorkAppliesToTheAssumeValidRule)
{
    ReplayOptions ro;
    ro.source.blocks_dir = TheChain().dir.path / "blocks";
    ro.assumevalid = TheChain().hashes[100];
    auto plain = Replay(ro);
    ASSERT_TRUE(plain.ok()) << plain.error().message;
    EXPECT_EQ(plain->script_check_reason, "block too recent relative to best header");
    ro.minimum_chain_work = uint256::FromHex(std::string(64, 'f'));
    auto demanding = Replay(ro);
    ASSERT_TRUE(demanding.ok()) << demanding.error().message;
    EXPECT_EQ(demanding->script_check_reason, "best header chainwork below minimumchainwork");
    EXPECT_EQ(demanding->utxo->hash_serialized, plain->utxo->hash_serialized);
}

TEST(Replay, AChainstateOfAnotherChainIsRefusedWithItsBestBlock)
{
    auto core = ibdkit::test::TestData("regtest/core_kernel_blocks_1-206.blk");
    ASSERT_TRUE(core) << "tests/data/regtest is missing";
    TempDir cs;
    ReplayOptions ro;
    ro.source.blocks_dir = *core;
    ro.chainstate = cs.path;
    ro.stop_height = 20;
    auto first = Replay(ro);
    ASSERT_TRUE(first.ok()) << first.error().message;
    ro.source.blocks_dir = TheChain().dir.path / "blocks";
    ro.stop_height.reset();
    auto other = Replay(ro);
    ASSERT_FALSE(other.ok());
    EXPECT_EQ(other.error().message, "the chainstate's best block " + first->tip.ToHex() +
                                         " is not on the chain in these block files (use another --chainstate or the "
                                         "matching blocks)");
    // A peer on that other chain: the words name the peer.
    FakeNode node(Mode::Honest);
    auto o = Options(node, cs.path);
    auto r = Sync(o);
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.error().message, "the chainstate's best block " + first->tip.ToHex() +
                                     " is not on the peer's chain: use another --chainstate or a peer on the same chain");
}

TEST(Sync, ADatadirKeepsTheChainstateWhereCoreLooksAndIsCheckedBeforeAnythingIsWritten)
{
    // A library caller giving only datadir_out gets the chainstate bitcoind starts on, as the CLI's
    // `sync --datadir` and Python's `sync(datadir=...)` do: not a temporary one, gone after the run.
    TempDir t;
    {
        FakeNode node(Mode::Honest, 50);
        auto o = Options(node);
        o.datadir_out = t.path / "node";
        auto r = Sync(o);
        ASSERT_TRUE(r.ok()) << r.error().message;
        ASSERT_EQ(r->kept_height, 50);
        auto kept = CoinsDB::Open(t.path / "node" / "regtest" / "chainstate", CoinsDBOptions{});
        ASSERT_TRUE(kept.ok()) << kept.error().message;
        EXPECT_EQ((*kept)->GetBestBlock().value(), r->tip);
        EXPECT_EQ(DatadirNetworkRecord(t.path / "node"), ChainType::REGTEST) << "a rerun needs no network";
    }
    // A folder of other files is refused before the chainstate (or anything else) is made in it.
    const fs::path notes = t.path / "notes";
    fs::create_directories(notes);
    std::ofstream(notes / "todo.txt") << "mine";
    FakeNode node(Mode::Honest, 5);
    auto o = Options(node);
    o.datadir_out = notes;
    auto r = Sync(o);
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.error().code, Errc::Refused) << r.error().message;
    EXPECT_FALSE(fs::exists(notes / "regtest")) << r.error().message;
    EXPECT_EQ(DatadirNetworkRecord(notes), std::nullopt);
}

TEST(Sync, GetblocksFallbackWithContinueInvMatchesReplay)
{
    FakeNode node(Mode::NoHeaders);
    auto r = Sync(Options(node));
    ASSERT_TRUE(r.ok()) << r.error().message;
    EXPECT_EQ(r->mode, "getblocks");
    EXPECT_GE(node.getblocks_count, 2);
    ExpectReplayed(*r);
}

TEST(Sync, EveryPolicyAndWindowGivesTheSameSet)
{
    for (PolicyId id : ALL_POLICIES) {
        FakeNode node(Mode::Honest);
        auto o = Options(node);
        o.policy = id;
        o.window = id == PolicyId::Plain ? 1 : 64;
        auto r = Sync(o);
        ASSERT_TRUE(r.ok()) << r.error().message;
        ExpectReplayed(*r);
    }
}

TEST(Sync, InterruptThenResume)
{
    TempDir cs;
    std::atomic<bool> stop{false};
    {
        FakeNode node(Mode::Honest);
        auto o = Options(node, cs.path);
        o.dbcache_mib = 0; // flush after every block
        o.interrupt = &stop;
        TestHooks hooks = *o.test_hooks; // the fake node's connect, and a stop at 200
        hooks.after_block = [&](int h) {
            if (h == 200) stop = true;
        };
        o.test_hooks = std::make_shared<const TestHooks>(std::move(hooks));
        auto r = Sync(o);
        ASSERT_TRUE(r.ok()) << r.error().message;
        EXPECT_TRUE(r->interrupted);
        EXPECT_FALSE(r->failure);
        EXPECT_EQ(r->height, 200);
    }
    // Resume with getblocks (headers come from the headers file): starts right after 200.
    FakeNode node(Mode::NoHeaders);
    auto r = Sync(Options(node, cs.path));
    ASSERT_TRUE(r.ok()) << r.error().message;
    EXPECT_EQ(r->start_height, 201);
    ExpectReplayed(*r);
    // And once more: nothing to do.
    FakeNode again(Mode::Honest);
    auto r3 = Sync(Options(again, cs.path));
    ASSERT_TRUE(r3.ok());
    EXPECT_EQ(r3->blocks, 0u);
    ExpectReplayed(*r3);
}

// A block the peer sends that breaks a rule (its coinbase claims one satoshi too much) ends the
// sync with every block before it flushed; an honest peer then continues from there.
TEST(Sync, ARejectedBlockKeepsEveryBlockBeforeIt)
{
    constexpr int AT = 300;
    Chain bad;
    bad.blocks.assign(TheChain().blocks.begin(), TheChain().blocks.begin() + AT + 1);
    Block& b = bad.blocks.back();
    MutableTransaction cb = b.vtx[0].ToMutable();
    cb.vout[0].value += 1;
    b.vtx[0] = Transaction(std::move(cb));
    b.hash_merkle_root = BlockMerkleRoot(b);
    while (!CheckProofOfWork(b.GetHash().ToUint256(), b.bits, Regtest().consensus)) ++b.nonce;
    for (const auto& block : bad.blocks) bad.hashes.push_back(block.GetHash());
    bad.height = AT;
    TempDir cs;
    {
        FakeNode node(bad, AT, nullptr);
        auto r = Sync(Options(node, cs.path / "cs"));
        ASSERT_TRUE(r.ok()) << r.error().message;
        ASSERT_TRUE(r->reject_reason);
        EXPECT_EQ(*r->reject_reason, "bad-cb-amount");
        EXPECT_EQ(r->reject_height, AT);
        EXPECT_EQ(r->height, AT - 1);
        EXPECT_EQ(r->kept_height, AT - 1);
    }
    FakeNode node(Mode::Honest);
    auto r = Sync(Options(node, cs.path / "cs"));
    ASSERT_TRUE(r.ok()) << r.error().message;
    EXPECT_EQ(r->start_height, AT);
    ExpectReplayed(*r);
}

TEST(Sync, RecoversAChainstateInterruptedMidFlush)
{
    TempDir cs;
    {
        FakeNode node(Mode::Honest);
        auto o = Options(node, cs.path);
        o.stop_height = 300;
        auto r = Sync(o);
        ASSERT_TRUE(r.ok()) << r.error().message;
        ASSERT_EQ(r->height, 300);
    }
    // Connect 301..400 ourselves and crash in the middle of the flush: the chainstate holds H.
    {
        CoinsDBOptions dbo;
        dbo.batch_write_bytes = 4096;
        int batches = 0;
        dbo.test_hooks = TestHooks::AfterPartialBatch([&] {
            if (++batches == 3) throw std::runtime_error("simulated crash");
        });
        StoreStatus st;
        auto db = OpenCoinsDB(cs.path, dbo, &st);
        ASSERT_TRUE(db) << st.message;
        BlockConnector conn(*db, Regtest(), CacheBudget(1ull << 30));
        const auto& c = TheChain();
        std::vector<HeaderInfo> ancestry;
        for (const auto& b : c.blocks) ancestry.push_back(HeaderInfo{b.time, b.bits});
        for (int h = 301; h <= 400; ++h) {
            ConnectContext ctx;
            ctx.height = h;
            ctx.prev = HeaderAncestry{0, std::span<const HeaderInfo>(ancestry).first(std::size_t(h))};
            ctx.bip34_ancestor = c.hashes[std::size_t(Regtest().consensus.bip34_height)];
            Block b = c.blocks[std::size_t(h)];
            ASSERT_FALSE(conn.Connect(std::move(b), ctx, 0));
        }
        EXPECT_THROW((void)conn.Flush(), std::runtime_error);
        ASSERT_TRUE(db->NeedsReplay()->has_value());
    }
    FakeNode node(Mode::Honest);
    auto r = Sync(Options(node, cs.path));
    ASSERT_TRUE(r.ok()) << r.error().message;
    EXPECT_EQ(r->recovered_blocks, 100u);
    EXPECT_EQ(r->start_height, 401);
    ExpectReplayed(*r);
}

TEST(Sync, BadMagicDisconnectsWithAMessage)
{
    FakeNode node(Mode::BadMagic);
    auto r = Sync(Options(node));
    ASSERT_TRUE(r.ok()) << r.error().message;
    ASSERT_TRUE(r->failure);
    EXPECT_EQ(r->failure->code, NetErrc::Misbehaving);
    EXPECT_NE(r->failure->message.find("wrong network magic"), std::string::npos) << r->failure->message;
    EXPECT_GT(r->height, 0); // the first window was connected and flushed
    ASSERT_TRUE(r->utxo);
}

TEST(Sync, OversizeLengthDisconnects)
{
    FakeNode node(Mode::Oversize);
    auto r = Sync(Options(node));
    ASSERT_TRUE(r.ok());
    ASSERT_TRUE(r->failure);
    EXPECT_EQ(r->failure->code, NetErrc::Misbehaving);
    EXPECT_NE(r->failure->message.find("exceeds the limit"), std::string::npos) << r->failure->message;
}

TEST(Sync, StallEndsWithATimeoutMessage)
{
    FakeNode node(Mode::Stall);
    auto o = Options(node);
    o.timeout = std::chrono::milliseconds(700);
    auto r = Sync(o);
    ASSERT_TRUE(r.ok());
    ASSERT_TRUE(r->failure);
    EXPECT_EQ(r->failure->code, NetErrc::Timeout);
    EXPECT_NE(r->failure->message.find("peer stalled: no block for 0.7 s"), std::string::npos) << r->failure->message;
}

TEST(Sync, GarbageBlockIsMisbehaviour)
{
    FakeNode node(Mode::Garbage);
    auto r = Sync(Options(node));
    ASSERT_TRUE(r.ok());
    ASSERT_TRUE(r->failure);
    EXPECT_NE(r->failure->message.find("does not decode"), std::string::npos) << r->failure->message;
}

TEST(Sync, UnaskedBlocksAreIgnoredThenStall)
{
    FakeNode node(Mode::WrongBlock);
    auto o = Options(node);
    o.timeout = std::chrono::milliseconds(700);
    auto r = Sync(o);
    ASSERT_TRUE(r.ok());
    ASSERT_TRUE(r->failure);
    EXPECT_EQ(r->failure->code, NetErrc::Timeout);
}

TEST(Sync, HeadersThatDoNotLinkAreRefused)
{
    FakeNode node(Mode::BadHeaderChain);
    auto r = Sync(Options(node));
    ASSERT_TRUE(r.ok());
    ASSERT_TRUE(r->failure);
    EXPECT_EQ(r->failure->code, NetErrc::Misbehaving);
    EXPECT_NE(r->failure->message.find("does not extend our best header"), std::string::npos) << r->failure->message;
}

TEST(Sync, PeerClosingIsReported)
{
    FakeNode node(Mode::CloseAfterHandshake);
    auto r = Sync(Options(node));
    ASSERT_TRUE(r.ok());
    ASSERT_TRUE(r->failure);
    EXPECT_EQ(r->failure->code, NetErrc::Closed);
}

TEST(Sync, NothingListeningIsAConnectError)
{
    SyncOptions o;
    o.host = "127.0.0.1";
    o.port = 1; // privileged, nothing listens
    o.timeout = std::chrono::seconds(3);
    auto r = Sync(o);
    ASSERT_TRUE(r.ok());
    ASSERT_TRUE(r->failure);
    EXPECT_EQ(r->failure->code, NetErrc::Connect);
    EXPECT_NE(r->failure->message.find("cannot connect to 127.0.0.1:1"), std::string::npos) << r->failure->message;
}

// Sync checks every header before it asks for its block: Core's proof of work and contextual header
// rules, with Core's reasons (a regtest chain: headers are cheap to grind).
TEST(HeaderChain, AppendRunsCoresHeaderChecks)
{
    const ChainParams& p = GetChainParams(ChainType::REGTEST);
    HeaderChain chain(p);
    auto next = [&](uint32_t time, uint32_t bits, int32_t version = 4) {
        BlockHeader h;
        h.version = version;
        h.hash_prev_block = chain.Tip();
        h.time = time;
        h.bits = bits;
        while (!CheckProofOfWork(h.GetHash().ToUint256(), h.bits, p.consensus)) ++h.nonce;
        return h;
    };
    uint32_t t = p.genesis.time;
    for (int i = 0; i < 12; ++i) ASSERT_FALSE(chain.Append(next(t += 600, p.genesis.bits)));
    auto reason = [](const std::optional<std::string>& why) { return why ? *why : std::string("accepted"); };
    EXPECT_NE(reason(chain.Append(next(t + 600, 0x207ffffe))).find("bad-diffbits"), std::string::npos);
    EXPECT_NE(reason(chain.Append(next(uint32_t(chain.MedianTimePast(chain.Height())), p.genesis.bits))).find("time-too-old"),
              std::string::npos);
    EXPECT_NE(reason(chain.Append(next(uint32_t(std::time(nullptr) + 3 * 3600), p.genesis.bits))).find("time-too-new"),
              std::string::npos);
    EXPECT_NE(reason(chain.Append(next(t + 600, p.genesis.bits, 1))).find("bad-version(0x00000001)"), std::string::npos);
    EXPECT_EQ(chain.Height(), 12) << "no rejected header was stored";
    EXPECT_FALSE(chain.Append(next(t + 600, p.genesis.bits)));
}

TEST(HeaderFile, LoadKeepsTheValidPrefix)
{
    TempDir d;
    const auto& c = TheChain();
    HeaderChain chain(Regtest());
    for (int h = 1; h <= 50; ++h) ASSERT_FALSE(chain.Append(c.blocks[std::size_t(h)].header()));
    EXPECT_TRUE(chain.Append(c.blocks[52].header())); // does not link
    const auto file = d.path / HEADERS_FILE;
    ASSERT_FALSE(engine::PersistHeaders(chain, file, 1));
    {
        std::ofstream f(file, std::ios::binary | std::ios::app);
        f << "partial";
    }
    HeaderChain loaded(Regtest());
    auto n = engine::LoadHeaders(loaded, file);
    ASSERT_TRUE(n.ok());
    EXPECT_EQ(*n, 50);
    EXPECT_EQ(loaded.Tip(), c.hashes[50]);
    EXPECT_EQ(fs::file_size(file), 50u * 80);
    EXPECT_EQ(*loaded.HeightOf(c.hashes[17]), 17);
    loaded.Truncate(10);
    EXPECT_EQ(loaded.Height(), 10);
    EXPECT_FALSE(loaded.HeightOf(c.hashes[17]));
}

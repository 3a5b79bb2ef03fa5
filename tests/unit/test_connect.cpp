// ConnectBlock's reject rules, one test each, with Core's exact reason: missing and spent inputs,
// coinbase maturity, BIP30 (and its historical exceptions, and BIP34 turning it off), input value
// ranges, inputs below outputs, the accumulated fee range, the coinbase claim, the sigop-cost
// limit with P2SH and witness sigops from the spent outputs, and BIP68 relative lock-times.
#include "test_util.h"

#include "common/task_pool.h"

#include <ibdkit/coins/coins_db.h>
#include <ibdkit/consensus/check.h>
#include <ibdkit/primitives/consensus_constants.h>

#include "coins/coins_cache.h"
#include "connect/connect.h"
#include "consensus/merkle.h"
#include "coins/coins_db_internal.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <set>
#include <optional>
#include <stdexcept>

namespace ibdkit {
namespace {

constexpr uint32_t T0 = 1'600'000'000;
constexpr uint32_t SPACING = 600;
constexpr uint32_t TYPE_FLAG = 1u << 22; // BIP68: time-based lock

Script S(std::vector<uint8_t> b) { return Script(std::span<const uint8_t>(b)); }

const Script& OpTrue()
{
    static const Script s = S({0x51});
    return s;
}

// CScript() << height, then one byte so the scriptSig is at least 2 bytes.
Script CoinbaseScript(int height)
{
    std::vector<uint8_t> num;
    for (int64_t v = height; v != 0; v >>= 8) num.push_back(uint8_t(v & 0xff));
    if (!num.empty() && (num.back() & 0x80)) num.push_back(0);
    std::vector<uint8_t> s;
    if (height >= 1 && height <= 16) {
        s.push_back(uint8_t(0x50 + height));
    } else {
        s.push_back(uint8_t(num.size()));
        s.insert(s.end(), num.begin(), num.end());
    }
    s.push_back(0x00);
    return S(s);
}

Transaction Coinbase(int height, Amount value)
{
    MutableTransaction m;
    m.version = 1;
    m.vin.resize(1);
    m.vin[0].script_sig = CoinbaseScript(height);
    m.vout.resize(1);
    m.vout[0].value = value;
    m.vout[0].script_pubkey = OpTrue();
    return Transaction(std::move(m));
}

OutPoint Prevout(uint8_t tag, uint32_t n = 0)
{
    OutPoint op;
    op.hash.AsUint256().data()[0] = uint8_t(tag * 0x25); // spread over the cache's shards (first byte)
    op.hash.AsUint256().data()[1] = 0xc0;
    op.n = n;
    return op;
}

struct In {
    OutPoint prevout;
    uint32_t sequence{TxIn::SEQUENCE_FINAL};
    std::vector<uint8_t> script_sig{};
    std::vector<std::vector<uint8_t>> witness{};
};

Transaction Spend(std::vector<In> ins, Amount value, uint32_t version = 2)
{
    MutableTransaction m;
    m.version = version;
    for (auto& i : ins) {
        TxIn in;
        in.prevout = i.prevout;
        in.sequence = i.sequence;
        in.script_sig = S(i.script_sig);
        in.witness.stack = std::move(i.witness);
        m.vin.push_back(std::move(in));
    }
    m.vout.resize(1);
    m.vout[0].value = value;
    m.vout[0].script_pubkey = OpTrue();
    return Transaction(std::move(m));
}

/// Whether the test's ConnectBlock calls spread the cache's side over a TaskPool (see ConnectBlockTest).
bool g_with_tasks = false;

/// A UTXO set in a temporary chainstate, the chain's headers below `height`, and ConnectBlock
/// (with a pool of two helper threads under ConnectBlockTest/Tasks).
class Fixture {
public:
    explicit Fixture(ChainType chain, int height) : m_params(GetChainParams(chain).consensus), m_height(height)
    {
        StoreStatus st;
        m_db = OpenCoinsDB(m_dir.path, {}, &st);
        if (!m_db) throw std::runtime_error(st.message);
        m_cache = std::make_unique<CoinsCache>(*m_db, 1u << 24);
        for (int h = 0; h < height; ++h) m_headers.push_back(HeaderInfo{T0 + uint32_t(h) * SPACING, 0x207fffff});
    }

    void AddCoin(const OutPoint& op, Amount value, int height, bool coinbase = false, Script spk = OpTrue())
    {
        TxOut out;
        out.value = value;
        out.script_pubkey = std::move(spk);
        m_cache->AddCoin(op, Coin(std::move(out), uint32_t(height), coinbase), false);
    }

    /// Connects a block of a coinbase paying `cb_value` (the subsidy when negative) and `txs`;
    /// returns "" or Core's reason.
    std::string Connect(std::vector<Transaction> txs, Amount cb_value = -1, std::optional<BlockHash> bip34_ancestor = {})
    {
        Block b;
        b.version = 4;
        b.bits = 0x207fffff;
        b.time = T0 + uint32_t(m_height) * SPACING;
        b.vtx.push_back(Coinbase(m_height, cb_value < 0 ? GetBlockSubsidy(m_height, m_params) : cb_value));
        bool witness = false;
        for (auto& tx : txs) {
            witness = witness || tx.HasWitness();
            b.vtx.push_back(std::move(tx));
        }
        if (witness) { // BIP141's commitment in the coinbase (its own wtxid counts as zero)
            const uint256 root = BlockWitnessMerkleRoot(b);
            std::vector<uint8_t> buf(root.data(), root.data() + 32);
            buf.resize(64, 0);
            const uint256 commitment = HashSha256d(std::span<const uint8_t>(buf));
            std::vector<uint8_t> spk(38);
            const uint8_t head[6] = {0x6a, 0x24, 0xaa, 0x21, 0xa9, 0xed};
            std::copy(head, head + 6, spk.begin());
            std::copy(commitment.data(), commitment.data() + 32, spk.begin() + 6);
            MutableTransaction cb = b.vtx[0].ToMutable();
            cb.vin[0].witness.stack = {std::vector<uint8_t>(32, 0)};
            cb.vout.push_back(TxOut{0, S(spk)});
            b.vtx[0] = Transaction(std::move(cb));
        }
        b.hash_merkle_root = BlockMerkleRoot(b);
        BlockValidationState state;
        auto checked = CheckBlock(std::move(b), state, m_params, CheckBlockOptions{.check_pow = false});
        if (!checked) return "CheckBlock: " + state.GetRejectReason();
        ConnectContext ctx;
        ctx.height = m_height;
        ctx.prev = HeaderAncestry{0, m_headers};
        ctx.bip34_ancestor = bip34_ancestor;
        ctx.check_scripts = check_scripts;
        // With helpers, the block is planned beforehand, as the engine's pipeline does.
        std::optional<ConnectPlan> plan;
        if (m_pool) plan.emplace(checked->block());
        std::optional<BlockUndo> spent = SpentCoins(checked->block());
        const auto before = SeenTouched(checked->block());
        ConnectStats stats;
        BlockUndo undo;
        std::string reason;
        if (ConnectBlock(*checked, ctx, *m_cache, m_params, state,
                         {.stats = &stats, .undo = with_undo ? &undo : nullptr, .runner = m_pool ? &m_runner : nullptr,
                          .plan = plan ? &*plan : nullptr})) {
            script_checked_inputs += stats.script_checked_inputs;
        } else {
            EXPECT_TRUE(state.IsInvalid());
            EXPECT_EQ(state.GetResult(), BlockValidationResult::BLOCK_CONSENSUS);
            reason = state.GetRejectReason();
            // A failed block takes its changes back: every coin it touched is as it was.
            EXPECT_TRUE(SeenTouched(checked->block()) == before) << "the failed block (" << reason << ") left changes in the cache";
        }
        // The same block with its spent coins given, as SwiftSync's coins mode checks it: the same
        // verdict and reason, except for what only the UTXO set can tell (BIP30, a coin spent twice).
        if (spent && reason != "bad-txns-BIP30") {
            BlockValidationState spends_state;
            ConnectStats spends_stats;
            const bool ok = CheckBlockSpends(*checked, ctx, *spent, m_params, spends_state, &spends_stats, m_pool ? &m_runner : nullptr);
            EXPECT_EQ(ok ? std::string() : spends_state.GetRejectReason(), reason) << "CheckBlockSpends differs from ConnectBlock";
            if (ok) {
                EXPECT_EQ(spends_stats.fees, stats.fees);
                EXPECT_EQ(spends_stats.script_checked_inputs, stats.script_checked_inputs);
            }
        }
        return reason;
    }

    /// The coins `block`'s inputs spend, as its undo data would list them, from the cache before
    /// the block or from the block's own transactions; nullopt where an input spends a coin that
    /// neither holds, or two inputs one coin (what only the UTXO set tells).
    std::optional<BlockUndo> SpentCoins(const Block& block)
    {
        BlockUndo undo;
        std::set<OutPoint> seen;
        for (std::size_t t = 1; t < block.vtx.size(); ++t) {
            auto& coins = undo.vtxundo.emplace_back().prevout;
            for (const TxIn& in : block.vtx[t].vin()) {
                if (!seen.insert(in.prevout).second) return std::nullopt;
                if (auto coin = m_cache->GetCoin(in.prevout)) {
                    coins.push_back(std::move(*coin));
                    continue;
                }
                auto maker = std::find_if(block.vtx.begin(), block.vtx.end(), [&](const Transaction& tx) { return tx.GetHash() == in.prevout.hash; });
                if (maker == block.vtx.end() || in.prevout.n >= maker->vout().size()) return std::nullopt;
                coins.emplace_back(maker->vout()[in.prevout.n], uint32_t(m_height), maker == block.vtx.begin());
            }
        }
        return undo;
    }

    /// What the cache says of `op` (its entry's coin, or a spent entry's nullopt), else what the
    /// chainstate holds, without reading anything into the cache.
    std::optional<Coin> Seen(const OutPoint& op)
    {
        if (m_cache->HasEntry(op)) return m_cache->HaveCoinInCache(op) ? std::optional<Coin>(m_cache->AccessCoin(op)) : std::nullopt;
        auto r = ReadCoin(*m_db, op);
        EXPECT_TRUE(r.ok());
        return r.ok() ? *r : std::nullopt;
    }
    /// Seen() of every outpoint `block` spends or makes.
    std::map<OutPoint, std::optional<Coin>> SeenTouched(const Block& block)
    {
        std::map<OutPoint, std::optional<Coin>> seen;
        for (const Transaction& tx : block.vtx) {
            if (!tx.IsCoinBase()) {
                for (const TxIn& in : tx.vin()) seen.emplace(in.prevout, Seen(in.prevout));
            }
            for (uint32_t o = 0; o < tx.vout().size(); ++o) seen.emplace(OutPoint{tx.GetHash(), o}, Seen(OutPoint{tx.GetHash(), o}));
        }
        return seen;
    }

    /// Writes the cache's coins to the chainstate and empties it.
    void Flush()
    {
        BlockHash best;
        best.AsUint256().data()[0] = 1;
        m_cache->SetBestBlock(best);
        ASSERT_TRUE(m_cache->Flush().ok());
    }

    CoinsCache& cache() { return *m_cache; }
    int height() const { return m_height; }
    bool check_scripts{false};             ///< ConnectContext::check_scripts for the next blocks
    bool with_undo{false};                 ///< ConnectBlock fills undo data (which takes the spent coins)
    uint64_t script_checked_inputs{0};     ///< summed over the blocks connected
    const ConsensusParams& params() const { return m_params; }

private:
    test::TempDir m_dir;
    const ConsensusParams& m_params;
    int m_height;
    std::unique_ptr<CoinsDB> m_db;
    std::unique_ptr<CoinsCache> m_cache;
    std::vector<HeaderInfo> m_headers;
    std::unique_ptr<TaskPool> m_pool{g_with_tasks ? std::make_unique<TaskPool>(2) : nullptr};
    TaskRunner m_runner{[this](std::size_t n, const TaskPool::Task& task) { m_pool->Run(n, task); }};
};

// Every rule, connected on the calling thread alone and with the cache's side spread over helper
// threads one shard at a time (from a ConnectPlan made beforehand): the same verdicts and reasons.
class ConnectBlockTest : public ::testing::TestWithParam<bool> {
protected:
    void SetUp() override { g_with_tasks = GetParam(); }
    void TearDown() override { g_with_tasks = false; }
};
INSTANTIATE_TEST_SUITE_P(ConnectBlock, ConnectBlockTest, ::testing::Values(false, true),
                         [](const ::testing::TestParamInfo<bool>& i) { return i.param ? "Tasks" : "OneThread"; });

constexpr int H = 500;

// The plan lists every input after the coinbase and every transaction with outputs exactly once,
// under the shard of the outpoint it touches, in block order within each shard.
TEST(ConnectPlan, GroupsTheBlockByShardInBlockOrder)
{
    Block b;
    b.vtx.push_back(Coinbase(7, 50));
    for (uint8_t t = 0; t < 40; ++t) {
        MutableTransaction tx;
        for (uint8_t i = 0; i < t % 4 + 1; ++i) { // prevout hashes spread over all shards
            Txid prev;
            prev.AsUint256().data()[0] = uint8_t(t * 37 + i * 101);
            tx.vin.push_back(TxIn{OutPoint{prev, i}, TxIn::SEQUENCE_FINAL, Script(), {}});
        }
        if (t % 5 != 4) tx.vout.push_back(TxOut{1, OpTrue()});
        b.vtx.emplace_back(std::move(tx));
    }
    const ConnectPlan plan(b);
    ASSERT_EQ(plan.Transactions(), b.vtx.size());
    std::size_t inputs = 0;
    for (std::size_t t = 0; t < b.vtx.size(); ++t) {
        EXPECT_EQ(plan.FirstInput()[t], inputs) << t;
        if (t > 0) inputs += b.vtx[t].vin().size();
    }
    EXPECT_EQ(plan.Inputs(), inputs);
    std::map<std::pair<uint32_t, uint32_t>, int> seen;
    std::size_t shards_used = 0;
    for (std::size_t s = 0; s < CoinsCache::SHARDS; ++s) {
        shards_used += !plan.Shard(s).empty();
        // A transaction's inputs come before its outputs (Core spends, then adds).
        auto order = [](const ConnectPlan::Op& op) { return std::make_pair(op.tx, uint64_t(op.input) + 1); };
        std::pair<uint32_t, uint64_t> last{0, 0};
        for (const ConnectPlan::Op& op : plan.Shard(s)) {
            const Transaction& tx = b.vtx[op.tx];
            const OutPoint touched = op.input == ConnectPlan::Op::OUTPUTS ? OutPoint{tx.GetHash(), 0} : tx.vin()[op.input].prevout;
            EXPECT_EQ(CoinsCache::ShardOf(touched), s);
            EXPECT_GT(order(op), last) << "block order within shard " << s;
            last = order(op);
            ++seen[{op.tx, op.input}];
        }
    }
    EXPECT_GT(shards_used, 1u);
    std::size_t expected = 0;
    for (std::size_t t = 0; t < b.vtx.size(); ++t) {
        const Transaction& tx = b.vtx[t];
        if (!tx.IsCoinBase()) {
            for (uint32_t i = 0; i < tx.vin().size(); ++i) EXPECT_EQ((seen[{uint32_t(t), i}]), 1);
            expected += tx.vin().size();
        }
        if (!tx.vout().empty()) {
            EXPECT_EQ((seen[{uint32_t(t), ConnectPlan::Op::OUTPUTS}]), 1);
            ++expected;
        }
    }
    EXPECT_EQ(seen.size(), expected);
    // Reused for another block: nothing of the first is left.
    Block one;
    one.vtx.push_back(Coinbase(8, 50));
    ConnectPlan again(b);
    again.Assign(one);
    EXPECT_EQ(again.Transactions(), 1u);
    EXPECT_EQ(again.Inputs(), 0u);
    std::size_t ops = 0;
    for (std::size_t s = 0; s < CoinsCache::SHARDS; ++s) ops += again.Shard(s).size();
    EXPECT_EQ(ops, 1u);
    EXPECT_TRUE(again.IsPlanOf(one));
    EXPECT_FALSE(again.IsPlanOf(b));
    Block moved = std::move(one); // the transactions stay where they are
    EXPECT_TRUE(again.IsPlanOf(moved));
}

// A plan made for another block stops the process (a caller's bug), never followed out of the
// block's bounds; the block's own plan connects it.
TEST(ConnectPlanDeathTest, ConnectBlockStopsOnAPlanOfAnotherBlock)
{
    Fixture f(ChainType::REGTEST, H);
    Block b;
    b.version = 4;
    b.bits = 0x207fffff;
    b.time = T0 + uint32_t(H) * SPACING;
    b.vtx.push_back(Coinbase(H, GetBlockSubsidy(H, f.params())));
    b.hash_merkle_root = BlockMerkleRoot(b);
    BlockValidationState state;
    auto checked = CheckBlock(Block(b), state, f.params(), CheckBlockOptions{.check_pow = false});
    ASSERT_TRUE(checked) << state.GetRejectReason();
    const ConnectPlan other(b); // the copy's transactions, not the checked block's
    ConnectContext ctx;
    ctx.height = H;
    std::vector<HeaderInfo> headers(H, HeaderInfo{T0, 0x207fffff});
    ctx.prev = HeaderAncestry{0, headers};
    EXPECT_DEATH(ConnectBlock(*checked, ctx, f.cache(), f.params(), state, {.plan = &other}),
                 "ConnectBlock: the ConnectPlan given was made for this block");
    BlockUndo one_too_many;
    one_too_many.vtxundo.emplace_back(); // spent coins for a transaction the block does not have
    EXPECT_DEATH(CheckBlockSpends(*checked, ctx, one_too_many, f.params(), state),
                 "CheckBlockSpends: the spent coins are one list per transaction after the coinbase");
    const ConnectPlan own(checked->block());
    EXPECT_TRUE(ConnectBlock(*checked, ctx, f.cache(), f.params(), state, {.plan = &own})) << state.GetRejectReason();
}

TEST_P(ConnectBlockTest, ValidSpendConnects)
{
    Fixture f(ChainType::REGTEST, H);
    f.AddCoin(Prevout(1), 10'000, 10);
    EXPECT_EQ(f.Connect({Spend({{Prevout(1)}}, 9'000)}), "");
    EXPECT_FALSE(f.cache().HaveCoin(Prevout(1)));
}

TEST_P(ConnectBlockTest, MissingInput)
{
    Fixture f(ChainType::REGTEST, H);
    EXPECT_EQ(f.Connect({Spend({{Prevout(1)}}, 1)}), "bad-txns-inputs-missingorspent");
}

TEST_P(ConnectBlockTest, InputSpentEarlierInTheBlock)
{
    Fixture f(ChainType::REGTEST, H);
    f.AddCoin(Prevout(1), 10'000, 10);
    f.AddCoin(Prevout(2), 10'000, 10);
    EXPECT_EQ(f.Connect({Spend({{Prevout(1)}}, 1), Spend({{Prevout(2)}, {Prevout(1)}}, 1)}), "bad-txns-inputs-missingorspent");
}

// Inside a block, an output exists for the transactions after the one that makes it: for
// CheckBlockSpends too, whose coins for it say "this height" (the fixture compares the two).
TEST_P(ConnectBlockTest, SpendsInsideTheBlockFollowBlockOrder)
{
    Fixture f(ChainType::REGTEST, H);
    f.AddCoin(Prevout(1), 10'000, 10);
    const Transaction parent = Spend({{Prevout(1)}}, 9'000);
    const Transaction child = Spend({{OutPoint{parent.GetHash(), 0}}}, 8'000);
    EXPECT_EQ(f.Connect({child, parent}), "bad-txns-inputs-missingorspent");
    Fixture g(ChainType::REGTEST, H);
    g.AddCoin(Prevout(1), 10'000, 10);
    EXPECT_EQ(g.Connect({parent, child}), "");
}

TEST_P(ConnectBlockTest, CoinbaseMaturity)
{
    Fixture f(ChainType::REGTEST, H);
    f.AddCoin(Prevout(1), 10'000, H - COINBASE_MATURITY + 1, /*coinbase=*/true);
    EXPECT_EQ(f.Connect({Spend({{Prevout(1)}}, 1)}), "bad-txns-premature-spend-of-coinbase");
    Fixture g(ChainType::REGTEST, H);
    g.AddCoin(Prevout(1), 10'000, H - COINBASE_MATURITY, /*coinbase=*/true);
    EXPECT_EQ(g.Connect({Spend({{Prevout(1)}}, 1)}), ""); // exactly 100 deep
}

TEST_P(ConnectBlockTest, Bip30RejectsAnOverwriteAndBip34TurnsItOff)
{
    // Mainnet above its BIP34 height: BIP30 is off only when this chain's block at the BIP34
    // height is the one in the params; below BIP34_IMPLIES_BIP30_LIMIT.
    constexpr int at = 300'000;
    const auto& main = GetChainParams(ChainType::MAIN).consensus;
    const Transaction cb = Coinbase(at, GetBlockSubsidy(at, main));
    {
        Fixture f(ChainType::MAIN, at);
        f.AddCoin(OutPoint{cb.GetHash(), 0}, 1, 100, true); // an earlier coinbase with the same txid
        EXPECT_EQ(f.Connect({}), "bad-txns-BIP30");
    }
    {
        Fixture f(ChainType::MAIN, at);
        f.AddCoin(OutPoint{cb.GetHash(), 0}, 1, 100, true);
        BlockHash other = main.bip34_hash;
        other.AsUint256().data()[0] ^= 1;
        EXPECT_EQ(f.Connect({}, -1, other), "bad-txns-BIP30"); // another chain's BIP34 block
    }
    {
        Fixture f(ChainType::MAIN, at);
        f.AddCoin(OutPoint{cb.GetHash(), 0}, 1, 100, true);
        EXPECT_EQ(f.Connect({}, -1, main.bip34_hash), "");
    }
}

TEST_P(ConnectBlockTest, Bip30WhereBip34HoldsFromHeightOne)
{
    // Regtest: a block that would overwrite an unspent coin fails with bad-txns-BIP30 whether the
    // coin is in the cache or only on disk (there its lookup waits for the block's failure, which
    // its repeated transaction's spent inputs make certain on a real chain; here the input is missing).
    const Transaction dup = Spend({{Prevout(1)}}, 1);
    const OutPoint existing{dup.GetHash(), 0};
    {
        Fixture f(ChainType::REGTEST, H);
        f.AddCoin(existing, 100, 10);
        EXPECT_EQ(f.Connect({dup}), "bad-txns-BIP30"); // in the cache
    }
    {
        Fixture f(ChainType::REGTEST, H);
        f.AddCoin(existing, 100, 10);
        f.Flush();
        ASSERT_FALSE(f.cache().HasEntry(existing));
        EXPECT_EQ(f.Connect({dup}), "bad-txns-BIP30"); // on disk only
    }
    {
        // Spent in the cache, not yet on disk: the cache's entry wins, as in Core.
        Fixture f(ChainType::REGTEST, H);
        f.AddCoin(existing, 100, 10);
        f.Flush();
        ASSERT_TRUE(f.cache().SpendCoin(existing));
        EXPECT_EQ(f.Connect({dup}), "bad-txns-inputs-missingorspent");
    }
    {
        // A block that connects never looks its outputs up on disk: a coin there with its
        // coinbase's txid (which a chain enforcing BIP34 from height 1 cannot hold) goes unseen.
        Fixture f(ChainType::REGTEST, H);
        const Transaction cb = Coinbase(H, GetBlockSubsidy(H, f.params()));
        f.AddCoin(OutPoint{cb.GetHash(), 0}, 1, 1, true);
        f.Flush();
        const uint64_t reads = f.cache().CoinsReadFromDisk();
        EXPECT_EQ(f.Connect({}), "");
        EXPECT_EQ(f.cache().CoinsReadFromDisk(), reads);
    }
}

TEST_P(ConnectBlockTest, Bip30HistoricalExceptions)
{
    // Core's two blocks that repeat an earlier coinbase: exempt at their height and hash only.
    const auto h91842 = *BlockHash::FromHex("00000000000a4d0a398161ffc163c503763b1f4360639393e0e4c8e300e0caec");
    const auto h91880 = *BlockHash::FromHex("00000000000743f190a18c5577a3c2d2a1f610ae9601ac046a38084ccb7cd721");
    EXPECT_TRUE(IsBIP30Repeat(91842, h91842));
    EXPECT_TRUE(IsBIP30Repeat(91880, h91880));
    EXPECT_FALSE(IsBIP30Repeat(91880, h91842));
    EXPECT_FALSE(IsBIP30Repeat(91843, h91842));
    EXPECT_FALSE(IsBIP30Repeat(91842, BlockHash{}));
}

// A block that fails takes back what it did to the cache, whatever it touched: coins on disk
// only, clean and dirty coins in the cache, coins it made and spent itself, a transaction it
// repeats; with its undo data kept (which takes the spent coins) or not; failing after every
// transaction was applied (the coinbase claim) or part way (an input below its outputs). Flushed,
// the chainstate is the one the blocks before it made.
TEST_P(ConnectBlockTest, AFailedBlockLeavesTheCacheAsItWas)
{
    const Transaction a = Spend({{Prevout(1)}}, 9'000);
    const Transaction b = Spend({{OutPoint{a.GetHash(), 0}}, {Prevout(2)}}, 18'000);
    const Transaction c = Spend({{Prevout(3)}, {Prevout(4)}}, 19'000);
    const Transaction below = Spend({{Prevout(5)}}, 20'000); // spends 10,000: bad-txns-in-belowout
    struct Case {
        std::vector<Transaction> txs;
        Amount cb_value;
        const char* reason;
    };
    const std::vector<Case> cases = {
        {{a, b, c}, 1'000'000'000'000, "bad-cb-amount"},
        {{a, b, below, c}, -1, "bad-txns-in-belowout"},
        {{a, c, b, a}, -1, "bad-txns-inputs-missingorspent"}, // a repeated: its input is spent
    };
    for (const bool undo : {false, true}) {
        for (const Case& k : cases) {
            SCOPED_TRACE(std::string(k.reason) + (undo ? " with undo data" : ""));
            auto state = [](Fixture& f) {
                f.AddCoin(Prevout(1), 10'000, 10);
                f.AddCoin(Prevout(3), 10'000, 10);
                f.AddCoin(Prevout(5), 10'000, 10);
                f.Flush(); // on disk only
                f.AddCoin(Prevout(2), 10'000, 20); // fresh in the cache
                f.AddCoin(Prevout(4), 10'000, 20);
                ASSERT_TRUE(f.cache().SpendCoin(Prevout(5))); // spent in the cache, unspent on disk
                f.AddCoin(Prevout(5), 10'000, 30);             // and made again
                ASSERT_TRUE(f.cache().HaveCoin(Prevout(3)));   // read back: clean in the cache
            };
            Fixture failed(ChainType::REGTEST, H);
            failed.with_undo = undo;
            state(failed);
            Block block;
            for (const auto& tx : k.txs) block.vtx.push_back(tx);
            const auto before = failed.SeenTouched(block);
            EXPECT_EQ(failed.Connect(k.txs, k.cb_value), k.reason);
            failed.Flush();
            Fixture never(ChainType::REGTEST, H);
            state(never);
            never.Flush();
            EXPECT_TRUE(failed.SeenTouched(block) == never.SeenTouched(block));
            EXPECT_TRUE(failed.SeenTouched(block) == before);
        }
    }
}

// Mainnet with BIP30 checked before the block: the shard of the repeated coinbase is left alone,
// the other shards (a spend here) may have been applied, and are taken back.
TEST_P(ConnectBlockTest, ABip30FailureTakesBackTheOtherShards)
{
    constexpr int at = 300'000;
    const auto& main = GetChainParams(ChainType::MAIN).consensus;
    const Transaction cb = Coinbase(at, GetBlockSubsidy(at, main) + 1'000);
    Fixture f(ChainType::MAIN, at);
    f.AddCoin(OutPoint{cb.GetHash(), 0}, 1, 100, true);
    f.AddCoin(Prevout(1), 10'000, 10);
    f.AddCoin(Prevout(2), 10'000, 10);
    f.Flush();
    f.AddCoin(Prevout(3), 10'000, 10);
    std::vector<Transaction> txs;
    for (uint8_t t = 1; t <= 3; ++t) txs.push_back(Spend({{Prevout(t)}}, 9'000));
    EXPECT_EQ(f.Connect(txs, GetBlockSubsidy(at, main) + 1'000), "bad-txns-BIP30");
    for (uint8_t t = 1; t <= 3; ++t) EXPECT_TRUE(f.cache().HaveCoin(Prevout(t)));
}

TEST_P(ConnectBlockTest, InputValuesOutOfRange)
{
    Fixture f(ChainType::REGTEST, H);
    f.AddCoin(Prevout(1), MAX_MONEY + 1, 10);
    EXPECT_EQ(f.Connect({Spend({{Prevout(1)}}, 1)}), "bad-txns-inputvalues-outofrange");
    Fixture g(ChainType::REGTEST, H); // each in range, the sum not
    g.AddCoin(Prevout(1), MAX_MONEY, 10);
    g.AddCoin(Prevout(2), 1, 10);
    EXPECT_EQ(g.Connect({Spend({{Prevout(1)}, {Prevout(2)}}, 1)}), "bad-txns-inputvalues-outofrange");
}

TEST_P(ConnectBlockTest, InputsBelowOutputs)
{
    Fixture f(ChainType::REGTEST, H);
    f.AddCoin(Prevout(1), 1000, 10);
    EXPECT_EQ(f.Connect({Spend({{Prevout(1)}}, 1001)}), "bad-txns-in-belowout");
}

TEST_P(ConnectBlockTest, FeesOutOfRange)
{
    // One transaction's fee cannot leave the range once its inputs and outputs are in it
    // (bad-txns-fee-outofrange is unreachable after CheckTransaction, as in Core); two fees of
    // MAX_MONEY each overflow the block's total.
    Fixture f(ChainType::REGTEST, H);
    f.AddCoin(Prevout(1), MAX_MONEY, 10);
    f.AddCoin(Prevout(2), MAX_MONEY, 10);
    EXPECT_EQ(f.Connect({Spend({{Prevout(1)}}, 0), Spend({{Prevout(2)}}, 0)}), "bad-txns-accumulated-fee-outofrange");
}

TEST_P(ConnectBlockTest, CoinbaseClaimsTooMuch)
{
    Fixture f(ChainType::REGTEST, H);
    f.AddCoin(Prevout(1), 10'000, 10);
    const Amount subsidy = GetBlockSubsidy(H, f.params());
    EXPECT_EQ(f.Connect({Spend({{Prevout(1)}}, 9'000)}, subsidy + 1000), "");
    Fixture g(ChainType::REGTEST, H);
    g.AddCoin(Prevout(1), 10'000, 10);
    EXPECT_EQ(g.Connect({Spend({{Prevout(1)}}, 9'000)}, subsidy + 1001), "bad-cb-amount");
}

// A P2SH output whose redeem script is 500 OP_CHECKMULTISIG (20 sigops each, × 4: 40,000 cost):
// CheckBlock's legacy count sees none of it.
std::vector<uint8_t> HeavyRedeem() { return std::vector<uint8_t>(500, 0xae); }

TEST_P(ConnectBlockTest, SigOpCostFromP2SHSpends)
{
    const auto redeem = HeavyRedeem();
    std::vector<uint8_t> spk = {0xa9, 0x14};
    spk.resize(22, 0x33); // the hash is not checked without scripts
    spk.push_back(0x87);
    std::vector<uint8_t> script_sig(3 + redeem.size()); // OP_PUSHDATA2 <redeem>
    script_sig[0] = 0x4d;
    script_sig[1] = uint8_t(redeem.size() & 0xff);
    script_sig[2] = uint8_t(redeem.size() >> 8);
    std::copy(redeem.begin(), redeem.end(), script_sig.begin() + 3);
    // Two inputs: 80,000, at the limit; three: over it.
    Fixture f(ChainType::REGTEST, H);
    for (uint8_t i = 1; i <= 3; ++i) f.AddCoin(Prevout(i), 1000, 10, false, S(spk));
    // The coinbase's output has no sigop: 2 × 40,000 exactly is allowed.
    EXPECT_EQ(f.Connect({Spend({{Prevout(1), TxIn::SEQUENCE_FINAL, script_sig}, {Prevout(2), TxIn::SEQUENCE_FINAL, script_sig}}, 1)}),
              "");
    Fixture g(ChainType::REGTEST, H);
    for (uint8_t i = 1; i <= 3; ++i) g.AddCoin(Prevout(i), 1000, 10, false, S(spk));
    EXPECT_EQ(g.Connect({Spend({{Prevout(1), TxIn::SEQUENCE_FINAL, script_sig}, {Prevout(2), TxIn::SEQUENCE_FINAL, script_sig}}, 1),
                         Spend({{Prevout(3), TxIn::SEQUENCE_FINAL, script_sig}}, 1)}),
              "bad-blk-sigops");
}

TEST_P(ConnectBlockTest, SigOpCostFromWitnessSpends)
{
    // P2WSH: the witness script's sigops count once each (not × 4): a witness script of 80,000
    // OP_CHECKSIG is at the limit, one more is over it (its size is policy's concern, not
    // consensus's when the script is not run).
    std::vector<uint8_t> spk = {0x00, 0x20};
    spk.resize(34, 0x44);
    Fixture f(ChainType::REGTEST, H);
    f.AddCoin(Prevout(1), 1000, 10, false, S(spk));
    EXPECT_EQ(f.Connect({Spend({{Prevout(1), TxIn::SEQUENCE_FINAL, {}, {std::vector<uint8_t>(80'000, 0xac)}}}, 1)}), "");
    Fixture g(ChainType::REGTEST, H);
    g.AddCoin(Prevout(1), 1000, 10, false, S(spk));
    EXPECT_EQ(g.Connect({Spend({{Prevout(1), TxIn::SEQUENCE_FINAL, {}, {std::vector<uint8_t>(80'001, 0xac)}}}, 1)}),
              "bad-blk-sigops");
}

TEST_P(ConnectBlockTest, Bip68HeightLocks)
{
    // A relative lock of 10 blocks: the coin must be at least 10 blocks below the spending block.
    for (int age : {9, 10}) {
        Fixture f(ChainType::REGTEST, H);
        f.AddCoin(Prevout(1), 1000, H - age);
        EXPECT_EQ(f.Connect({Spend({{Prevout(1), 10}}, 1)}), age < 10 ? "bad-txns-nonfinal" : "") << age;
    }
    // Version 1 transactions, and inputs with the disable flag, have no relative lock.
    Fixture f(ChainType::REGTEST, H);
    f.AddCoin(Prevout(1), 1000, H - 1);
    f.AddCoin(Prevout(2), 1000, H - 1);
    EXPECT_EQ(f.Connect({Spend({{Prevout(1), 10}}, 1, /*version=*/1), Spend({{Prevout(2), (1u << 31) | 10}}, 1)}), "");
}

TEST_P(ConnectBlockTest, Bip68TimeLocks)
{
    // Blocks are 600 s apart, so each median time past is 600 s after the previous one. A lock
    // of 2 × 512 s on a coin one block below: MTP(H-2) + 1023 ≥ MTP(H-1) — not final. On a coin
    // five blocks below: MTP(H-6) + 1023 < MTP(H-1) — final.
    for (int age : {1, 5}) {
        Fixture f(ChainType::REGTEST, H);
        f.AddCoin(Prevout(1), 1000, H - age);
        EXPECT_EQ(f.Connect({Spend({{Prevout(1), TYPE_FLAG | 2}}, 1)}), age == 1 ? "bad-txns-nonfinal" : "") << age;
    }
}

} // namespace
} // namespace ibdkit

namespace ibdkit {
namespace {

const std::string EVAL_FALSE = "block-script-verify-flag-failed (Script evaluated without error but finished with a false/empty top stack element)";
const std::string OP_VERIFY_FAILED = "block-script-verify-flag-failed (Script failed an OP_VERIFY operation)";

TEST_P(ConnectBlockTest, ScriptsRunOnlyWhenAsked)
{
    Fixture f(ChainType::REGTEST, H);
    f.AddCoin(Prevout(1), 10'000, 10, false, S({0x00})); // OP_0: nothing spends it
    EXPECT_EQ(f.Connect({Spend({{Prevout(1)}}, 9'000)}), ""); // assumevalid skipped the scripts
    EXPECT_EQ(f.script_checked_inputs, 0u);
    Fixture g(ChainType::REGTEST, H);
    g.check_scripts = true;
    g.AddCoin(Prevout(1), 10'000, 10, false, S({0x00}));
    EXPECT_EQ(g.Connect({Spend({{Prevout(1)}}, 9'000)}), EVAL_FALSE);
    Fixture ok(ChainType::REGTEST, H);
    ok.check_scripts = true;
    ok.AddCoin(Prevout(1), 10'000, 10);
    ok.AddCoin(Prevout(2), 10'000, 10);
    EXPECT_EQ(ok.Connect({Spend({{Prevout(1)}, {Prevout(2)}}, 9'000)}), "");
    EXPECT_EQ(ok.script_checked_inputs, 2u);
}

// Many chunks of inputs over the pool: of two failing inputs, the first in block order gives the
// reason, whichever chunk a thread finishes first.
TEST_P(ConnectBlockTest, TheFirstFailingInputInBlockOrderGivesTheReason)
{
    constexpr int N = 100;
    for (int first_bad : {3, 37, 99}) {
        Fixture f(ChainType::REGTEST, H);
        f.check_scripts = true;
        std::vector<Transaction> txs;
        for (int i = 0; i < N; ++i) {
            const OutPoint a = Prevout(uint8_t(i), 0), b = Prevout(uint8_t(i), 1);
            Script spk = OpTrue();
            if (i == first_bad) spk = S({0x00, 0x69});              // OP_0 OP_VERIFY
            if (i == std::min(first_bad + 20, N - 1) && i != first_bad) spk = S({0x00}); // later: EVAL_FALSE
            f.AddCoin(a, 10'000, 10);
            f.AddCoin(b, 10'000, 10, false, std::move(spk));
            txs.push_back(Spend({{a}, {b}}, 9'000));
        }
        EXPECT_EQ(f.Connect(std::move(txs)), OP_VERIFY_FAILED) << first_bad;
    }
    Fixture g(ChainType::REGTEST, H);
    g.check_scripts = true;
    std::vector<Transaction> txs;
    for (int i = 0; i < N; ++i) {
        g.AddCoin(Prevout(uint8_t(i)), 10'000, 10);
        txs.push_back(Spend({{Prevout(uint8_t(i))}}, 9'000));
    }
    EXPECT_EQ(g.Connect(std::move(txs)), "");
    EXPECT_EQ(g.script_checked_inputs, uint64_t(N));
}

// Core completes its script checks after the block's other rules (the coinbase claim included).
TEST_P(ConnectBlockTest, ScriptsAreCheckedAfterTheOtherRules)
{
    Fixture f(ChainType::REGTEST, H);
    f.check_scripts = true;
    f.AddCoin(Prevout(1), 10'000, 10, false, S({0x00}));
    EXPECT_EQ(f.Connect({Spend({{Prevout(1)}}, 9'000)}, GetBlockSubsidy(H, f.params()) + 1001), "bad-cb-amount");
}

} // namespace
} // namespace ibdkit

// src/gen/chain_gen.cpp — the chain generator block by block: options, the size plan, each block's
// transactions, coinbase and header, the checks every block passes, and writing the chain to blk files.
#include "gen/generator.h"

#include "blockfile/block_file_writer.h"

#include <ibdkit/blockfile/blockfile.h>
#include <ibdkit/common/write_guard.h>
#include <ibdkit/consensus/check.h>
#include <ibdkit/consensus/pow.h>
#include <ibdkit/crypto/sha256.h>
#include <ibdkit/stream/obfuscation.h>

#include "consensus/merkle.h"
#include "stream/streams.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <stdexcept>
#include <string>
#include <string_view>

namespace ibdkit {

using namespace gen_detail;
using gen::Rng;

// ---- options ------------------------------------------------------------------------------------

ChainGenOptions DefaultChainOptions(int blocks)
{
    ChainGenOptions o = MainnetChainGenOptions(blocks);
    o.seed = 1;
    o.start_time = REGTEST_GENESIS_TIME + GEN_BLOCK_SPACING;
    o.target_bytes = uint64_t(blocks) * 333'000;
    return o;
}

ChainGenOptions GenChainPresetOptions()
{
    return ChainGenOptions{};
}

ChainGenOptions TinyChainGenOptions()
{
    ChainGenOptions o;
    o.blocks = 150;
    o.target_bytes = 2'000'000;
    return o;
}

ChainGenOptions MainnetChainGenOptions(int blocks)
{
    ChainGenOptions o;
    o.profile = ChainProfile::Mainnet;
    o.blocks = blocks > 0 ? blocks : 2000;
    o.target_bytes = uint64_t(o.blocks) * 800'000;
    return o;
}

int64_t DefaultStartTime(int blocks, int64_t now) noexcept
{
    return std::max<int64_t>(now - int64_t(std::max(blocks, 1) - 1) * GEN_BLOCK_SPACING, REGTEST_GENESIS_TIME + 1);
}

std::array<std::byte, 8> GeneratedXorKey(uint64_t seed) noexcept
{
    Rng rng(seed ^ 0x786f722e646174ULL /* "xor.dat" */);
    std::array<std::byte, 8> key{};
    do {
        const uint64_t v = rng.Next();
        std::memcpy(key.data(), &v, 8);
    } while (std::all_of(key.begin(), key.end(), [](std::byte b) { return b == std::byte{0}; }));
    return key;
}

// ---- the generator ------------------------------------------------------------------------------

ChainGenerator::Impl::Impl(const ChainGenOptions& o)
    : opts(o), params(GetChainParams(ChainType::REGTEST)), rng(o.seed), keys(gen_detail::MakeKeyPool(o.seed, KEY_POOL_SIZE))
{
    if (o.blocks < 1) throw std::invalid_argument("gen-chain: the chain needs at least one block");
    if (o.start_time <= REGTEST_GENESIS_TIME) {
        throw std::invalid_argument("gen-chain: the start time must be later than the regtest genesis (" +
                                    std::to_string(REGTEST_GENESIS_TIME) + ")");
    }
    if (o.start_time > int64_t(0xffffffff) - int64_t(o.blocks + 1) * GEN_BLOCK_SPACING) {
        throw std::invalid_argument("gen-chain: the start time leaves no room for 32-bit block times");
    }
    for (std::size_t i = 0; i < TAPROOT_VARIANTS; ++i) {
        const auto leaf = TrueScript(o.seed * 0x100000001B3ULL + i);
        taproot.push_back(gen_detail::MakeTaprootScriptOutput(o.seed, i, leaf));
    }
    if (o.signed_spends) {
        signer = std::make_unique<gen_detail::Signer>(o.seed, TAPROOT_VARIANTS);
        w_in_max = W_IN_MAX_SIGNED;
    }
    if (o.profile == ChainProfile::Mainnet) due.resize(std::size_t(o.blocks) + 2);
    prev = params.genesis.GetHash();
    stats.tip = prev;
    times.push_back(HeaderInfo{params.genesis.time, params.genesis.bits});
    MakePlan();
}

// Block weights ramp as WEIGHT_CAP·((h - first + 1) / span)^k from the first block that can
// spend a coinbase to the last; k is chosen so that the planned total matches the target.
void ChainGenerator::Impl::MakePlan()
{
    const int n = opts.blocks;
    plan.assign(std::size_t(n) + 2, 0.0);
    plan_suffix.assign(std::size_t(n) + 2, 0.0);
    const int first = COINBASE_MATURITY + 1;
    if (n < first) return;
    const int span = n - first + 1;
    const double cap = double(WEIGHT_CAP);
    const double want = std::max(0.0, double(opts.target_bytes) - double(n) * COINBASE_ONLY_BYTES) / BYTES_PER_WU;
    auto total = [&](double k) {
        double s = 0;
        for (int i = 1; i <= span; ++i) s += cap * std::pow(double(i) / span, k);
        return s;
    };
    if (opts.profile == ChainProfile::Mainnet) {
        MakeMainnetPlan(span, first, cap, want);
        return;
    }
    double k = 0;
    if (total(0) > want) {
        double lo = 0, hi = 1;
        while (total(hi) > want && hi < 1e6) hi *= 2;
        for (int it = 0; it < 60; ++it) {
            const double mid = (lo + hi) / 2;
            (total(mid) > want ? lo : hi) = mid;
        }
        k = hi;
    }
    for (int i = 1; i <= span; ++i) plan[std::size_t(first + i - 1)] = cap * std::pow(double(i) / span, k);
    for (int h = n; h >= 1; --h) plan_suffix[std::size_t(h)] = plan_suffix[std::size_t(h) + 1] + plan[std::size_t(h)];
}

uint64_t ChainGenerator::Impl::TargetWeight(int h) const
{
    if (plan[std::size_t(h)] <= 0) return 0;
    // Correct for what earlier blocks really came to, so the total lands near the target.
    const double left = double(opts.target_bytes) - double(stats.block_bytes) - double(opts.blocks - h + 1) * COINBASE_ONLY_BYTES;
    const double ratio = spend_weight > 0 ? spend_bytes / spend_weight : BYTES_PER_WU;
    double corr = plan_suffix[std::size_t(h)] > 0 ? left / ratio / plan_suffix[std::size_t(h)] : 1.0;
    corr = std::clamp(corr, 0.25, 4.0);
    return uint64_t(std::clamp(plan[std::size_t(h)] * corr, 4000.0, double(WEIGHT_CAP)));
}

Block ChainGenerator::Impl::MakeBlock()
{
    const int h = stats.height + 1;
    while (!immature.empty() && immature.front().first + COINBASE_MATURITY <= h) {
        pool.push_back(immature.front().second);
        immature.pop_front();
    }

    Block block;
    block.vtx.emplace_back(); // the coinbase, filled in last
    block_sigops = 2 * WITNESS_SCALE_FACTOR;
    block_fee_rate = uint64_t(rng.Range(1, 12));
    const uint64_t target = TargetWeight(h);
    uint64_t weight = W_HEADER + W_COINBASE_RESERVE;
    Amount fees = 0;
    bool has_witness = false;
    MutableTransaction mtx;
    std::vector<PlannedOut> planned;
    const bool mainnet = opts.profile == ChainProfile::Mainnet;
    if (mainnet) BeginMainnetBlock(h);
    while (target > 0 && weight + 1200 < target && (mainnet || !pool.empty())) {
        Amount fee = 0;
        tx_spent.clear();
        tx_signing.clear();
        if (!(mainnet ? BuildMainnetTx(h, target - weight, mtx, planned, fee) : BuildTx(h, target - weight, mtx, planned, fee))) {
            break;
        }
        if (signer) signer->SignInputs(mtx, tx_spent, tx_signing);
        Transaction tx(std::move(mtx));
        weight += GetTransactionWeight(tx);
        fees += fee;
        has_witness |= tx.HasWitness();
        stats.witness_txs += tx.HasWitness() ? 1 : 0;
        stats.inputs += tx.vin().size();
        for (uint32_t i = 0; i < tx.vout().size(); ++i) {
            const PlannedOut& po = planned[i];
            CountOutput(po.kind);
            if (mainnet) {
                if (spend_at[i] >= 0) Schedule(DueCoin{tx.GetHash(), tx.vout()[i].value, h, uint16_t(i), po.kind, 0}, spend_at[i]);
            } else if (IsSpendable(po.kind)) {
                pool.push_back(PoolCoin{OutPoint{tx.GetHash(), i}, tx.vout()[i].value, po.tag, po.kind, po.variant, false, h});
            }
        }
        stats.utxos -= tx.vin().size();
        block.vtx.push_back(std::move(tx));
        mtx = MutableTransaction{};
    }

    AddCoinbase(block, h, fees, has_witness);
    FinishBlock(block, h, has_witness);
    return block;
}

/// The coinbase, last: BIP34 height, an extra nonce and a tag; the reward to spendable outputs; the
/// witness commitment when a transaction has a witness.
void ChainGenerator::Impl::AddCoinbase(Block& block, int h, Amount fees, bool has_witness)
{
    const bool mainnet = opts.profile == ChainProfile::Mainnet;
    MutableTransaction cb;
    cb.version = 2;
    TxIn cin;
    cin.script_sig = ScriptForHeight(h);
    uint8_t extra[4 + 1 + 12];
    extra[0] = 4;
    rng.Fill(extra + 1, 4);
    extra[5] = 11;
    std::memcpy(extra + 6, "/ibdkit-gen", 11);
    cin.script_sig.append(std::span<const uint8_t>(extra, sizeof(extra)));
    if (has_witness) cin.witness.stack.emplace_back(32, uint8_t{0}); // the witness reserved value
    cb.vin.push_back(std::move(cin));
    const Amount reward = GetBlockSubsidy(h, params.consensus) + fees;
    std::vector<PlannedOut> cb_planned;
    auto cb_out = [&](OutKind kind, Amount value) {
        PlannedOut po{kind};
        const uint64_t tag = CoinTag(h, uint32_t(cb.vout.size()), value);
        Script s = MakeScript(kind, po, mainnet ? &tag : nullptr);
        cb.vout.push_back(TxOut{value, std::move(s)});
        cb_planned.push_back(po);
    };
    if (mainnet) {
        // Pool payouts: one output, sometimes a second to another party (never spent).
        const Era era = EraAt(h);
        if (reward > 100'000 && rng.Chance(300)) {
            const Amount side = reward / Amount(rng.Range(20, 200));
            cb_out(KeylessKind(era), reward - side);
            cb_out(era == Era::LEGACY ? OutKind::P2PKH : OutKind::P2WPKH, side);
        } else {
            cb_out(KeylessKind(era), reward);
        }
    } else if (reward > 100'000 && rng.Chance(300)) {
        const Amount side = reward / Amount(rng.Range(20, 200));
        cb_out(PickSpendableKind(), reward - side);
        cb_out(rng.Chance(500) ? OutKind::P2PKH : OutKind::P2WPKH, side);
    } else {
        cb_out(PickSpendableKind(), reward);
    }
    if (has_witness) {
        const uint256 wroot = BlockWitnessMerkleRoot(block);
        uint8_t buf[64];
        std::memcpy(buf, wroot.data(), 32);
        std::memset(buf + 32, 0, 32);
        const uint256 commitment = HashSha256d(std::span<const uint8_t>(buf, 64));
        uint8_t spk[38] = {OP_RETURN, 0x24, 0xaa, 0x21, 0xa9, 0xed};
        std::memcpy(spk + 6, commitment.data(), 32);
        cb.vout.push_back(TxOut{0, Script(spk, sizeof(spk))});
        cb_planned.push_back(PlannedOut{OutKind::OP_RETURN_DATA});
    }
    block.vtx[0] = Transaction(std::move(cb));
    const Transaction& coinbase = block.vtx[0];
    for (uint32_t i = 0; i < coinbase.vout().size(); ++i) {
        CountOutput(cb_planned[i].kind);
        if (mainnet) {
            if (IsSpendable(cb_planned[i].kind)) {
                Schedule(DueCoin{coinbase.GetHash(), coinbase.vout()[i].value, h, uint16_t(i), cb_planned[i].kind, 1},
                         h + COINBASE_MATURITY + DrawSpendDelay());
            }
        } else if (IsSpendable(cb_planned[i].kind)) {
            immature.emplace_back(h, PoolCoin{OutPoint{coinbase.GetHash(), i}, coinbase.vout()[i].value, cb_planned[i].tag,
                                              cb_planned[i].kind, cb_planned[i].variant, true, h});
        }
    }
}

/// The header (time above the median of the last 11, then the nonce ground: regtest takes ~2 tries),
/// the checks, and the block counted into the stats.
void ChainGenerator::Impl::FinishBlock(Block& block, int h, bool has_witness)
{
    block.version = 0x20000000;
    block.hash_prev_block = prev;
    block.hash_merkle_root = BlockMerkleRoot(block);
    block.bits = 0x207fffff;
    int64_t t = opts.start_time + int64_t(h - 1) * GEN_BLOCK_SPACING + (h > 1 ? rng.Range(-240, 240) : 0);
    t = std::max(t, MedianTimePast() + 1);
    block.time = uint32_t(t);
    block.nonce = 0;
    while (!CheckProofOfWork(block.GetHash().ToUint256(), block.bits, params.consensus)) ++block.nonce;

    Verify(block, h);

    const std::size_t total = GetBlockTotalSize(block);
    const std::size_t bweight = GetBlockWeight(block);
    stats.height = h;
    stats.tip = block.GetHash();
    stats.tip_time = t;
    stats.txs += block.vtx.size();
    stats.block_bytes += total;
    stats.block_weight += bweight;
    stats.max_block_weight = std::max<uint64_t>(stats.max_block_weight, bweight);
    stats.witness_blocks += has_witness ? 1 : 0;
    if (block.vtx.size() > 1) {
        spend_bytes += double(total);
        spend_weight += double(bweight);
    }
    prev = stats.tip;
    times.push_back(HeaderInfo{block.time, block.bits});
}

void ChainGenerator::Impl::CountOutput(OutKind k)
{
    ++stats.outputs;
    if (k != OutKind::OP_RETURN_DATA) ++stats.utxos;
    if (!IsSpendable(k) && k != OutKind::OP_RETURN_DATA) ++stats.never_spent_outputs;
    switch (k) {
    case OutKind::P2SH_TRUE:
    case OutKind::P2SH_OTHER: ++stats.out_p2sh; break;
    case OutKind::P2WSH_TRUE:
    case OutKind::P2WSH_OTHER: ++stats.out_p2wsh; break;
    case OutKind::P2TR_TRUE:
    case OutKind::P2TR_KEY:
    case OutKind::P2TR_KEY_SIG:
    case OutKind::TAPSCRIPT_SIG: ++stats.out_p2tr; break;
    case OutKind::P2PKH:
    case OutKind::P2PKH_SIG: ++stats.out_p2pkh; break;
    case OutKind::P2WPKH:
    case OutKind::P2WPKH_SIG: ++stats.out_p2wpkh; break;
    case OutKind::P2SH_MULTISIG_SIG: ++stats.out_p2sh; break;
    case OutKind::P2WSH_MULTISIG_SIG: ++stats.out_p2wsh; break;
    case OutKind::P2PK_COMPRESSED:
    case OutKind::P2PK_UNCOMPRESSED: ++stats.out_p2pk; break;
    case OutKind::MULTISIG: ++stats.out_multisig; break;
    case OutKind::OP_RETURN_DATA: ++stats.out_op_return; break;
    }
}

int64_t ChainGenerator::Impl::MedianTimePast() const
{
    return GetMedianTimePast(HeaderAncestry{0, times});
}

/// The rules Core applies without the UTXO set; a failure is a bug in the generator.
void ChainGenerator::Impl::Verify(const Block& block, int h) const
{
    BlockValidationState state;
    const bool ok = CheckBlockRules(block, state, params.consensus) && CheckWitnessMalleation(block, true, state) &&
                    CheckBlockWeight(block, state) && CheckCoinbaseHeight(block, h, state);
    if (!ok) {
        throw std::logic_error("gen-chain: generated block " + std::to_string(h) + " fails " + state.ToString());
    }
}
ChainGenerator::ChainGenerator(const ChainGenOptions& opts) : m_impl(std::make_unique<Impl>(opts)) {}
ChainGenerator::~ChainGenerator() = default;

const Block& ChainGenerator::Genesis() const
{
    return m_impl->params.genesis;
}

bool ChainGenerator::Done() const noexcept
{
    return m_impl->stats.height >= m_impl->opts.blocks;
}

Block ChainGenerator::Next()
{
    if (Done()) throw std::logic_error("gen-chain: Next() after the last block");
    return m_impl->MakeBlock();
}

const ChainGenStats& ChainGenerator::Stats() const noexcept
{
    return m_impl->stats;
}

// ---- block files --------------------------------------------------------------------------------

namespace {

/// Appends to a byte vector that keeps its capacity from block to block (VectorWriter zero-fills
/// on every field it appends).
class AppendWriter {
public:
    explicit AppendWriter(std::vector<uint8_t>& v) : m_v(v) {}
    void write(std::span<const std::byte> src)
    {
        const auto* p = reinterpret_cast<const uint8_t*>(src.data());
        m_v.insert(m_v.end(), p, p + src.size());
    }
    template <typename T>
    AppendWriter& operator<<(const T& obj)
    {
        Serialize(*this, obj);
        return *this;
    }

private:
    std::vector<uint8_t>& m_v;
};

/// fsync of a directory, so that a file created or removed in it stays so after a crash.
bool SyncDirectory(const std::filesystem::path& dir)
{
    const int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0) return false;
    const bool ok = ::fsync(fd) == 0 || errno == EINVAL;
    ::close(fd);
    return ok;
}

/// Creates the incomplete-chain marker durably: its text says what it means.
bool WriteMarker(const std::filesystem::path& marker)
{
    static constexpr std::string_view TEXT =
        "ibdkit gen-chain is writing the blk files of this directory, or was interrupted doing so:\n"
        "the chain here is incomplete. Rerun `ibdkit gen-chain` with the same options.\n";
    const int fd = ::open(marker.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) return false;
    const bool ok = ::write(fd, TEXT.data(), TEXT.size()) == ssize_t(TEXT.size()) && ::fsync(fd) == 0;
    return ::close(fd) == 0 && ok && SyncDirectory(marker.parent_path());
}

} // namespace

std::optional<Error> CheckChainOutWritable(const std::filesystem::path& out_dir, const ChainWriteOptions& wopts, std::string_view what)
{
    return CheckOwnFolderWritable(out_dir, what, [&](const std::filesystem::path& rel) {
        const std::string first = rel.begin()->string();
        const auto depth = std::distance(rel.begin(), rel.end());
        // A caller's file may be left as NAME.partial-PID (an AtomicFile killed before its commit).
        const auto own = [&](const std::string& f) { return first == f || first.starts_with(f + ".partial-"); };
        if (depth == 1) return first == "blocks" || std::ranges::any_of(wopts.own_files, own);
        if (depth != 2 || first != "blocks") return false;
        const std::string n = rel.filename().string();
        const bool blk = n.size() == 12 && n.starts_with("blk") && n.ends_with(".dat") &&
                         std::all_of(n.begin() + 3, n.begin() + 8, [](char c) { return c >= '0' && c <= '9'; });
        return blk || n == "xor.dat" || n == INCOMPLETE_BLOCKS_MARKER;
    });
}

Result<ChainWriteResult> WriteGeneratedChain(const std::filesystem::path& out_dir, const ChainGenOptions& opts,
                                             const ChainWriteOptions& wopts,
                                             const std::function<void(const ChainGenStats&)>& progress)
{
    // Before anything is made: the chain replaces only a chain, never a user's files.
    if (auto refused = CheckChainOutWritable(out_dir, wopts)) return *refused;
    std::unique_ptr<ChainGenerator> gen;
    try {
        gen = std::make_unique<ChainGenerator>(opts);
    } catch (const std::invalid_argument& e) {
        return Error{Errc::InvalidValue, e.what()};
    }
    namespace fs = std::filesystem;
    const fs::path dir = out_dir / "blocks";
    std::error_code ec;
    fs::create_directories(dir, ec);
    if (ec) return Error{Errc::Corrupt, dir.string() + ": " + ec.message()};
    // Until the last block file is durable the directory is marked incomplete, and readers refuse
    // it: an interrupted run must not pass for a shorter chain.
    const fs::path marker = dir / INCOMPLETE_BLOCKS_MARKER;
    if (!WriteMarker(marker)) return Error{Errc::Corrupt, marker.string() + ": cannot write: " + std::strerror(errno)};
    // Replace a previous chain: stale blk files after the new last one would be read as more blocks.
    auto stale = ListBlockFiles(dir);
    if (!stale) return stale.error();
    for (const fs::path& p : *stale) fs::remove(p, ec);
    fs::remove(dir / "xor.dat", ec);

    ObfuscationKey key;
    if (wopts.xor_files) {
        key.bytes = GeneratedXorKey(opts.seed);
        std::FILE* f = std::fopen((dir / "xor.dat").c_str(), "wb");
        if (!f || std::fwrite(key.bytes.data(), 1, 8, f) != 8 || std::fflush(f) != 0 || ::fsync(fileno(f)) != 0 ||
            std::fclose(f) != 0) {
            return Error{Errc::Corrupt, (dir / "xor.dat").string() + ": cannot write"};
        }
    }

    BlockFileWriter writer(dir, GetChainParams(ChainType::REGTEST).message_start, key, wopts.max_file_size);
    std::string err;
    if (wopts.include_genesis && !writer.Write(EncodeBlock(gen->Genesis()), &err)) return Error{Errc::Corrupt, err};
    std::vector<uint8_t> bytes;
    while (!gen->Done()) {
        const Block block = gen->Next();
        bytes.assign(8, 0); // room for the record's magic and size
        AppendWriter w(bytes);
        Serialize(w, block);
        if (!writer.WriteFramed(bytes, &err)) return Error{Errc::Corrupt, err};
        if (progress) progress(gen->Stats());
    }
    if (!writer.Close(&err)) return Error{Errc::Corrupt, err};
    if (!fs::remove(marker, ec) || !SyncDirectory(dir)) {
        return Error{Errc::Corrupt, marker.string() + ": cannot remove: " + (ec ? ec.message() : std::strerror(errno))};
    }
    ChainWriteResult res;
    res.stats = gen->Stats();
    res.file_bytes = writer.total();
    res.files = writer.files();
    return res;
}

} // namespace ibdkit

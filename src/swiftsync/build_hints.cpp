// Making a hintsfile from a UTXO set and the blocks that made it (swiftsync/build_hints.h): the
// salted key array of the set, then one walk over the blocks.
#include <ibdkit/common/write_guard.h>
#include <ibdkit/swiftsync/build_hints.h>

#include <ibdkit/blockfile/locate.h>
#include <ibdkit/coins/coins_db.h>
#include <ibdkit/consensus/check.h>
#include <ibdkit/consensus/validation.h>
#include <ibdkit/encoding/endian.h>
#include <ibdkit/swiftsync/aggregate.h>
#include <ibdkit/swiftsync/hints.h>
#include <ibdkit/utxo/snapshot.h>

#include <ibdkit/blockfile/checked_read.h>
#include "common/task_pool.h"
#include "swiftsync/block_walk.h"
#include "coins/coins_db_internal.h"

#include <algorithm>
#include <bit>
#include <cassert>
#include <limits>
#include <cstring>
#include <string>

namespace ibdkit::swiftsync {

namespace fs = std::filesystem;

namespace {

// The salted 64-bit key of an output: the first 8 bytes of SHA-256(salt ‖ txid ‖ LE32 vout ‖ LE32 height).
uint64_t KeyOf(const SaltedHasher& hasher, const OutPoint& op, uint32_t height) noexcept
{
    uint8_t e[40];
    std::memcpy(e, op.hash.data(), 32);
    WriteLE32(e + 32, op.n);
    WriteLE32(e + 36, height);
    const auto d = hasher.Hash(e);
    return ReadLE64(d.data());
}

// A sorted array of keys with a table of where each run of top bits starts, so that a lookup
// searches a handful of entries (the keys are uniform: the salt sees to that). The keys are
// gathered in chunks and moved into one array of exactly their number as each chunk is freed, so
// the set costs ~8.25 bytes a key at its peak: a growing vector would hold up to twice its keys
// while it doubles, and mainnet's set is near 200 M of them.
class KeySet {
public:
    void Add(uint64_t k)
    {
        if (m_chunks.empty() || m_chunks.back().size() == CHUNK) m_chunks.emplace_back().reserve(CHUNK);
        m_chunks.back().push_back(k);
        ++m_size;
    }
    void Seal()
    {
        assert(m_size <= std::numeric_limits<uint32_t>::max()); // the start table holds 32-bit positions
        m_keys.reserve(m_size);
        for (auto& chunk : m_chunks) {
            m_keys.insert(m_keys.end(), chunk.begin(), chunk.end());
            std::vector<uint64_t>().swap(chunk);
        }
        m_chunks.clear();
        std::sort(m_keys.begin(), m_keys.end());
        m_bits = m_keys.size() < KEYS_PER_BUCKET ? 1 : unsigned(std::bit_width(m_keys.size() / KEYS_PER_BUCKET));
        m_start.assign((std::size_t(1) << m_bits) + 1, 0);
        std::size_t i = 0;
        for (std::size_t b = 0; b < (std::size_t(1) << m_bits); ++b) {
            m_start[b] = uint32_t(i);
            while (i < m_keys.size() && Bucket(m_keys[i]) == b) ++i;
        }
        m_start.back() = uint32_t(m_keys.size());
    }
    bool Contains(uint64_t k) const noexcept
    {
        const std::size_t b = Bucket(k);
        return std::binary_search(m_keys.begin() + long(m_start[b]), m_keys.begin() + long(m_start[b + 1]), k);
    }
    std::size_t size() const noexcept { return m_size; }
    std::size_t Bytes() const noexcept { return m_keys.capacity() * sizeof(uint64_t) + m_start.capacity() * sizeof(uint32_t); }

private:
    static constexpr std::size_t CHUNK = std::size_t(1) << 20;  ///< keys a chunk holds (8 MiB)
    static constexpr std::size_t KEYS_PER_BUCKET = 16;          ///< on average, at least 8
    std::size_t Bucket(uint64_t k) const noexcept { return std::size_t(k >> (64 - m_bits)); }
    std::vector<std::vector<uint64_t>> m_chunks;
    std::size_t m_size{0};
    std::vector<uint64_t> m_keys;
    std::vector<uint32_t> m_start;
    unsigned m_bits{1};
};

// Core's layout: DATADIR/chainstate (main) or DATADIR/<network>/chainstate; a chainstate itself.
Result<fs::path> ResolveChainstate(const fs::path& dir, std::optional<ChainType> chain)
{
    std::error_code ec;
    if (fs::exists(dir / "CURRENT", ec)) return dir;
    if (fs::exists(dir / "chainstate" / "CURRENT", ec)) return dir / "chainstate";
    auto layout = ResolveDatadir(dir, chain);
    if (layout && fs::exists(layout->blocks_dir.parent_path() / "chainstate" / "CURRENT", ec)) {
        return layout->blocks_dir.parent_path() / "chainstate";
    }
    return Error{Errc::InvalidValue, "no chainstate (a LevelDB directory) at " + dir.string()};
}

// The UTXO set's block and its keys.
struct KeyedSet {
    BlockHash tip;
    KeySet keys;
    uint32_t max_height{0};
};

Result<KeyedSet> KeysOfChainstate(const fs::path& dir, const SaltedHasher& hasher)
{
    CoinsDBOptions opt;
    opt.read_only = true;
    StoreStatus st;
    auto db = OpenCoinsDB(dir, opt, &st);
    if (!db) return Error{Errc::Corrupt, "cannot open the chainstate " + dir.string() + ": " + st.message};
    auto replay = db->NeedsReplay();
    if (!replay) return replay.error();
    if (*replay) return Error{Errc::InvalidValue, "the chainstate " + dir.string() + " holds an interrupted flush: replay it first"};
    auto best = db->GetBestBlock();
    if (!best) return best.error();
    KeyedSet s;
    s.tip = *best;
    auto walked = db->ForEachCoin([&](const OutPoint& op, const Coin& coin) {
        s.keys.Add(KeyOf(hasher, op, coin.height));
        s.max_height = std::max(s.max_height, coin.height);
        return true;
    });
    if (!walked) return walked.error();
    return s;
}

Result<KeyedSet> KeysOfSnapshot(const fs::path& file, ChainType chain, const SaltedHasher& hasher)
{
    auto reader = SnapshotReader::Open(file, GetChainParams(chain).message_start);
    if (!reader) return reader.error();
    KeyedSet s;
    s.tip = (*reader)->metadata().base_blockhash;
    OutPoint op;
    Coin coin;
    while (true) {
        auto next = (*reader)->Next(op, coin);
        if (!next) return next.error();
        if (!*next) break;
        s.keys.Add(KeyOf(hasher, op, coin.height));
        s.max_height = std::max(s.max_height, coin.height);
    }
    return s;
}

// What the walk makes of one block: its hints, or the rule it breaks.
struct BlockHints {
    std::vector<uint8_t> encoded;
    uint64_t outputs{0}, unspent{0};
    std::optional<std::string> broken_rule;
};

// One build with one salt; `collision` is set when more outputs hit the set than it holds coins.
Result<BuildHintsResult> BuildOnce(const BuildHintsOptions& o, const LocatedChain& loc, const fs::path& chainstate,
                                   bool& collision)
{
    const Salt salt = Salt::Random();
    const SaltedHasher hasher(salt);
    auto keyed = o.snapshot.empty() ? KeysOfChainstate(chainstate, hasher) : KeysOfSnapshot(o.snapshot, loc.chain, hasher);
    if (!keyed) return keyed.error();
    keyed->keys.Seal();
    BuildHintsResult r;
    r.chain = loc.chain;
    r.tip = keyed->tip;
    r.coins = keyed->keys.size();
    r.key_bytes = keyed->keys.Bytes();
    auto height = HeightInChain(loc, keyed->tip);
    if (!height) return height.error();
    r.height = *height;
    if (keyed->max_height > r.height) {
        return Error{Errc::InvalidValue, "the UTXO set holds a coin of height " + std::to_string(keyed->max_height) +
                                             " above its block's height " + std::to_string(r.height)};
    }
    auto writer = HintsWriter::Create(o.out, r.height);
    if (!writer) return writer.error();
    const ConsensusParams& params = GetChainParams(loc.chain).consensus;
    uint64_t hinted = 0;
    auto walked = WalkBlocks<BlockHints>(
        loc, 1, r.height, o.threads, o.on_progress,
        [&](const Block& block, uint32_t h, const BlockHash& hash) {
            BlockHints out;
            // A damaged transaction has another txid: checked as every reader checks a block, it is
            // named as the block it is, not as coins the blocks never create.
            BlockValidationState state;
            if (!CheckBlockRules(block, state, params)) {
                out.broken_rule = state.GetRejectReason();
                return out;
            }
            std::vector<uint32_t> unspent;
            ForEachSpendableOutput(block, IsBip30Unspendable(loc.chain, int(h), hash), [&](std::size_t t, uint32_t vout, uint32_t index) {
                ++out.outputs;
                if (keyed->keys.Contains(KeyOf(hasher, OutPoint{block.vtx[t].GetHash(), vout}, h))) unspent.push_back(index);
            });
            out.unspent = unspent.size();
            AppendEliasFano(out.encoded, unspent);
            return out;
        },
        [&](uint32_t h, BlockHints& b) -> std::optional<Error> {
            if (b.broken_rule) return InvalidBlockError(int(h), *b.broken_rule);
            r.outputs += b.outputs;
            hinted += b.unspent;
            return (*writer)->AppendEncoded(b.encoded);
        },
        {}, o.policy);
    if (!walked) return walked.error();
    if (hinted > r.coins) {
        collision = true;
        return r;
    }
    if (hinted < r.coins) {
        return Error{Errc::InvalidValue, "the UTXO set holds " + std::to_string(r.coins - hinted) +
                                             " coins that blocks 1.." + std::to_string(r.height) + " never create"};
    }
    auto bytes = (*writer)->Finish();
    if (!bytes) return bytes.error();
    r.bytes = *bytes;
    return r;
}

} // namespace

Result<BuildHintsResult> BuildHints(const BuildHintsOptions& o)
{
    if (!o.chainstate.empty() && !o.snapshot.empty()) return Error{Errc::InvalidValue, "a chainstate or a snapshot, not both"};
    if (!o.source.NamesOne()) return Error{Errc::InvalidValue, "a data directory or a blocks directory (exactly one)"};
    if (o.chainstate.empty() && o.snapshot.empty() && o.source.datadir.empty()) {
        return Error{Errc::InvalidValue, "no UTXO set: name a chainstate, a snapshot or a data directory"};
    }
    if (auto refused = CheckOutputFile(o.out)) return *refused; // before any block is read
    auto loc = LocateBlocks(o.source);
    if (!loc) return loc.error();
    fs::path chainstate;
    if (o.snapshot.empty()) {
        auto cs = ResolveChainstate(o.chainstate.empty() ? o.source.datadir : o.chainstate, loc->chain);
        if (!cs) return cs.error();
        chainstate = *cs;
    }
    constexpr unsigned MAX_ATTEMPTS = 4;
    for (unsigned attempt = 1;; ++attempt) {
        bool collision = false;
        auto r = BuildOnce(o, *loc, chainstate, collision);
        if (!r || !collision) {
            if (r) r->attempts = attempt;
            return r;
        }
        if (attempt == MAX_ATTEMPTS) {
            return Error{Errc::InvalidValue, "more outputs matched the UTXO set than it holds coins, with " +
                                                 std::to_string(MAX_ATTEMPTS) + " salts: the set and the blocks disagree"};
        }
    }
}

} // namespace ibdkit::swiftsync

// A whole chain checked with SwiftSync and its UTXO set written (swiftsync/replay.h).
#include <ibdkit/swiftsync/replay.h>

#include <ibdkit/blockfile/locate.h>
#include <ibdkit/coins/coins_db.h>
#include <ibdkit/common/write_guard.h>
#include <ibdkit/consensus/assumevalid.h>
#include <ibdkit/crypto/sha256.h>
#include <ibdkit/swiftsync/hints.h>

#include "common/handoff.h"

#include <algorithm>
#include <chrono>
#include <memory>
#include <string>

namespace ibdkit::swiftsync {

namespace {

namespace fs = std::filesystem;

/// Bytes one coin takes while it waits in the loader's map (entry, node, script), for the batch size.
constexpr std::size_t LOADER_BYTES_PER_COIN = 160;
/// Coins handed to the writing thread at a time.
constexpr std::size_t HANDOFF_COINS = 1 << 16;
using CoinBatch = std::vector<std::pair<OutPoint, Coin>>;

/// A new chainstate being filled: removed again unless Keep() is called.
class NewChainstate {
public:
    static Result<std::unique_ptr<NewChainstate>> Create(const fs::path& dir, ChainType chain, unsigned threads)
    {
        if (auto refused = CheckChainstateWritable(dir)) return *refused;
        std::error_code ec;
        const bool existed = fs::exists(dir, ec);
        if (existed && !fs::is_empty(dir, ec)) {
            return Error{Errc::Refused, "the chainstate " + dir.string() +
                                            " is not empty: SwiftSync writes a new chainstate; give a new or empty folder"};
        }
        auto cs = std::unique_ptr<NewChainstate>(new NewChainstate(dir, existed));
        CoinsDBOptions o;
        o.cache_bytes = 16 << 20;
        o.flush_threads = threads;
        StoreStatus st;
        cs->m_db = CoinsDB::Open(dir, o, &st);
        if (!cs->m_db) return Error{Errc::Corrupt, "cannot create the chainstate " + dir.string() + ": " + st.message};
        (void)RecordChainstateNetwork(dir, ChainTypeName(chain)); // a hint for later readers only
        return cs;
    }
    ~NewChainstate()
    {
        m_db.reset();
        if (m_keep) return;
        std::error_code ec;
        if (!m_existed) {
            fs::remove_all(m_dir, ec);
            return;
        }
        for (fs::directory_iterator it(m_dir, ec), end; !ec && it != end; it.increment(ec)) fs::remove_all(it->path(), ec);
    }
    CoinsDB& db() { return *m_db; }
    void Keep() { m_keep = true; }

private:
    NewChainstate(fs::path dir, bool existed) : m_dir(std::move(dir)), m_existed(existed) {}
    fs::path m_dir;
    bool m_existed;
    bool m_keep{false};
    std::unique_ptr<CoinsDB> m_db;
};

/// The best block a chainstate is written under until the history is accepted: a hash that names
/// no block, so that a chainstate left by a killed run never looks complete.
BlockHash IncompleteTip()
{
    static constexpr char TAG[] = "ibdkit swiftsync incomplete";
    uint8_t h[32];
    Sha256().Write(reinterpret_cast<const uint8_t*>(TAG), sizeof(TAG) - 1).Finalize(h);
    return BlockHash{uint256(std::span<const uint8_t, 32>(h))};
}

} // namespace

Result<SwiftSyncResult> SwiftSyncReplay(const SwiftSyncOptions& o)
{
    const auto t0 = std::chrono::steady_clock::now();
    if (o.datadir.empty() == o.blocks_dir.empty()) return Error{Errc::InvalidValue, "give a data directory or a blocks directory (exactly one)"};
    if (o.mode == AggregateMode::Coins && o.datadir.empty()) {
        return Error{Errc::InvalidValue, "coins mode reads the spent coins from a Bitcoin Core data directory's rev files: give one, "
                                         "or choose outpoints mode for bare block files (it checks much less)"};
    }
    if (o.threads < 1 || o.dbcache_mib < 1) return Error{Errc::InvalidValue, "threads and dbcache must be at least 1"};
    auto hints = Hints::Read(o.hints);
    if (!hints) return hints.error();
    auto loc = o.datadir.empty() ? LocateFromBlocksDir(o.blocks_dir, o.chain) : LocateFromDatadir(o.datadir, o.chain);
    if (!loc) return loc.error();
    SwiftSyncResult res;
    res.chain = loc->chain;
    res.mode = o.mode;
    res.height = hints->height();
    if (res.height < 1 || int64_t(res.height) > int64_t(loc->TipHeight()) || loc->base_height > 1) {
        return Error{Errc::InvalidValue, "the hintsfile is for height " + std::to_string(res.height) + ", the blocks hold heights " +
                                             std::to_string(loc->base_height) + ".." + std::to_string(loc->TipHeight())};
    }
    res.tip = loc->order.hashes[std::size_t(int(res.height) - loc->base_height)];
    std::optional<DatadirUndo> undo;
    if (o.mode == AggregateMode::Coins) {
        auto u = LocateUndoInDatadir(o.datadir, o.chain ? o.chain : std::optional<ChainType>(loc->chain));
        if (!u) return u.error();
        undo = std::move(*u);
        if (!o.skip_scripts) {
            const AssumeValidRule rule(loc->base_height, loc->order.hashes, loc->bits, !loc->genesis_is_record, o.assumevalid,
                                       GetChainParams(loc->chain).consensus);
            for (uint32_t h = 1; h <= res.height; ++h) {
                if (auto why = rule.Reason(int(h))) {
                    res.scripts_from_height = h;
                    res.script_check_reason = std::string(*why);
                    break;
                }
            }
        }
    }

    // The coins go to the chainstate on a thread of their own (a Handoff), while blocks are checked.
    std::unique_ptr<NewChainstate> cs;
    std::unique_ptr<CoinsLoader> loader;
    std::unique_ptr<Handoff<CoinBatch>> writer;
    std::optional<Error> write_error;
    if (!o.chainstate.empty()) {
        auto c = NewChainstate::Create(o.chainstate, loc->chain, o.threads);
        if (!c) return c.error();
        cs = std::move(*c);
        const std::size_t batch = std::max<std::size_t>(10'000, (o.dbcache_mib << 20) / LOADER_BYTES_PER_COIN);
        loader = std::make_unique<CoinsLoader>(cs->db(), batch, IncompleteTip());
        writer = std::make_unique<Handoff<CoinBatch>>(
            2,
            [&](CoinBatch& coins) {
                for (const auto& [op, coin] : coins) {
                    if (StoreStatus st = loader->Add(op, coin); !st.ok()) {
                        write_error = Error{Errc::Corrupt, "writing the chainstate: " + st.message};
                        return false;
                    }
                }
                res.coins_written += coins.size();
                coins.clear();
                return true;
            },
            o.threads > 1);
    }

    const Salt salt = Salt::Random();
    CheckRangeOptions ro;
    ro.threads = o.threads;
    ro.collect_unspent = false;
    ro.progress = o.progress;
    if (writer) {
        ro.on_unspent = [&](std::span<const std::pair<OutPoint, Coin>> coins) -> std::optional<Error> {
            CoinBatch& batch = writer->Current();
            batch.insert(batch.end(), coins.begin(), coins.end());
            if (batch.size() >= HANDOFF_COINS && !writer->Hand()) return write_error;
            return std::nullopt;
        };
    }
    CoinsModeOptions co;
    co.undo = undo ? &*undo : nullptr;
    co.assumevalid = o.assumevalid;
    co.skip_scripts = o.skip_scripts;
    auto partial = o.mode == AggregateMode::Coins ? CheckRangeCoins(*loc, *hints, salt, 1, res.height, ro, co)
                                                  : CheckRange(*loc, *hints, salt, 1, res.height, ro);
    if (writer) {
        const bool written = writer->Hand() && writer->Finish();
        writer.reset();
        if (!written && write_error) return *write_error;
    }
    if (!partial) return partial.error();
    res.script_checked_inputs = partial->script_checked_inputs;
    res.verdict = Combine(std::span<const Partial>(&*partial, 1), res.height, loc->chain);
    if (res.verdict.ok && loader) {
        if (StoreStatus st = loader->Finish(res.tip); !st.ok()) return Error{Errc::Corrupt, "writing the chainstate: " + st.message};
        loader.reset();
        cs->Keep();
    }
    if (!res.verdict.ok) res.coins_written = 0;
    res.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    return res;
}

} // namespace ibdkit::swiftsync

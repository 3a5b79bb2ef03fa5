// A whole chain checked with SwiftSync and its UTXO set written (swiftsync/replay.h).
#include <ibdkit/swiftsync/replay.h>

#include <ibdkit/blockfile/locate.h>
#include <ibdkit/coins/coins_db.h>
#include <ibdkit/primitives/consensus_constants.h>
#include <ibdkit/swiftsync/hints.h>
#include <ibdkit/swiftsync/partial.h>
#include <ibdkit/threads.h>

#include "coins/coins_db_internal.h"
#include "common/write_guard_internal.h"
#include "consensus/assumevalid.h"
#include "memory/cleanse.h"
#include "stream/streams.h"

#include "common/external_sort.h"
#include "common/handoff.h"
#include "common/throughput.h"
#include "common/task_pool.h"
#include "swiftsync/range_internal.h"
#include "swiftsync/replay_internal.h"

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <system_error>
#include <thread>

namespace ibdkit::swiftsync {

namespace {

namespace fs = std::filesystem;

/// The most a part of the sort holds before it spills a run (see PartedSort).
constexpr std::size_t MAX_SPILL_BYTES = 64 << 20;
/// Coins handed to the sorting thread at a time.
constexpr std::size_t HANDOFF_COINS = 1 << 16;
using CoinBatch = std::vector<std::pair<OutPoint, Coin>>;

/// A coin as the sort's record: its key's length (a byte), Core's chainstate key, Core's value.
constexpr std::size_t MAX_RECORD = 1 + 38 + MAX_SCRIPT_SIZE + 64;

std::span<const uint8_t> RecordKey(std::span<const uint8_t> rec) noexcept { return rec.subspan(1, rec[0]); }

/// Records in chainstate key order (LevelDB's bytewise order of the keys).
struct KeyOrder {
    bool operator()(std::span<const uint8_t> a, std::span<const uint8_t> b) const noexcept
    {
        const auto ka = RecordKey(a), kb = RecordKey(b);
        return std::lexicographical_compare(ka.begin(), ka.end(), kb.begin(), kb.end());
    }
    /// The key's first eight bytes, big-endian, zero-padded: the same order (ExternalSorter).
    uint64_t Prefix(std::span<const uint8_t> rec) const noexcept
    {
        const auto k = RecordKey(rec);
        uint64_t p = 0;
        for (std::size_t i = 0; i < 8; ++i) p = p << 8 | (i < k.size() ? k[i] : 0);
        return p;
    }
};
using CoinSorter = ExternalSorter<KeyOrder>;

/// The coins sorted in parts by the first byte of their txid (key ranges of the chainstate), each
/// within its share of the memory: the parts are merged and written on a thread each at the end.
class PartedSort {
public:
    PartedSort(const fs::path& tmp_dir, std::size_t memory_bytes, std::size_t parts)
    {
        ExternalSortOptions so;
        so.tmp_dir = tmp_dir;
        // A part's buffer is spilled whole, on the thread that feeds the sort: buffers of at most
        // MAX_SPILL_BYTES spread that work over the run, keeping the check's pace even.
        so.memory_bytes = std::clamp<std::size_t>(memory_bytes / parts, 1 << 20, MAX_SPILL_BYTES);
        for (std::size_t p = 0; p < parts; ++p) m_parts.push_back(std::make_unique<CoinSorter>(so, MAX_RECORD));
    }
    std::size_t parts() const noexcept { return m_parts.size(); }
    CoinSorter& part(std::size_t p) { return *m_parts[p]; }
    /// The coins added so far.
    uint64_t added() const noexcept { return m_added; }

    /// Appends `coin` at `op` to its part as one record.
    std::optional<Error> Add(const OutPoint& op, const Coin& coin)
    {
        m_rec.assign(1, 0);
        VectorWriter w(m_rec, 1);
        w << CoinKey{op};
        m_rec[0] = uint8_t(m_rec.size() - 1);
        w << coin;
        ++m_added;
        return m_parts[std::size_t(op.hash.data()[0]) * m_parts.size() / 256]->Add(m_rec);
    }

private:
    std::vector<std::unique_ptr<CoinSorter>> m_parts;
    std::vector<uint8_t> m_rec;
    uint64_t m_added{0};
};

/// A new chainstate being filled: removed again unless Keep() is called. Marked unfinished from
/// before its first file until Keep() (UNFINISHED_CHAINSTATE_MARKER): a run killed before its
/// destructor could clean up leaves a skeleton that claims no block, which the next run clears.
class NewChainstate {
public:
    static Result<std::unique_ptr<NewChainstate>> Create(const fs::path& dir, ChainType chain)
    {
        if (auto cleared = ClearUnfinishedChainstate(dir); !cleared) return cleared.error();
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
        o.unfinished = true;
        StoreStatus st;
        cs->m_db = OpenCoinsDB(dir, o, &st);
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
    /// The load is committed: the chainstate stays, no longer marked unfinished.
    std::optional<Error> Keep()
    {
        m_keep = true;
        return FinishChainstate(m_dir);
    }

private:
    NewChainstate(fs::path dir, bool existed) : m_dir(std::move(dir)), m_existed(existed) {}
    fs::path m_dir;
    bool m_existed;
    bool m_keep{false};
    std::unique_ptr<CoinsDB> m_db;
};

bool Interrupted(const std::atomic<bool>* interrupt) noexcept { return interrupt && interrupt->load(std::memory_order_relaxed); }

/// The sorted coins into the empty chainstate `db`, with `tip` as its best block, each part merged
/// and written on a thread of its own; counts them. Stops "interrupted" at `interrupt`. The calling
/// thread only watches: it calls `on_written` with the coins written so far at the start and about
/// every WRITE_PROGRESS_EVERY (a progress callback may set `interrupt`: Python's Ctrl-C).
std::optional<Error> WriteSorted(PartedSort& sort, CoinsDB& db, const BlockHash& tip, uint64_t& written, const std::atomic<bool>* interrupt,
                                 const std::function<void(uint64_t)>& on_written)
{
    constexpr auto WRITE_PROGRESS_EVERY = std::chrono::milliseconds(250);
    const std::size_t parts = sort.parts();
    auto load = SortedCoinsLoader::Begin(db, tip, parts);
    if (!load) return Error{Errc::Corrupt, "the new chainstate is not empty"};
    std::vector<std::optional<Error>> errors(parts);
    std::vector<std::atomic<uint64_t>> counts(parts);
    auto sum = [&] {
        uint64_t n = 0;
        for (const auto& c : counts) n += c.load(std::memory_order_relaxed);
        return n;
    };
    if (on_written) on_written(0);
    std::atomic<bool> callback_threw{false};
    auto stopped = [&] { return Interrupted(interrupt) || callback_threw.load(std::memory_order_relaxed); };
    std::mutex mu;
    std::condition_variable cv;
    bool done = false;
    std::exception_ptr thrown, callback_error;
    try {
        TaskPool pool(unsigned(parts - 1));
        std::thread runner([&] {
            try {
                pool.Run(parts, [&](std::size_t p) {
                    StoreStatus st;
                    errors[p] = sort.part(p).Finish([&](std::span<const uint8_t> rec) {
                        const auto key = RecordKey(rec);
                        st = load->Add(p, key, rec.subspan(1 + key.size()));
                        counts[p].fetch_add(1, std::memory_order_relaxed);
                        return st.ok() && !stopped();
                    });
                    if (!errors[p] && !st.ok()) errors[p] = Error{Errc::Corrupt, "writing the chainstate: " + st.message};
                    if (!errors[p] && stopped()) errors[p] = Error{Errc::Io, "interrupted"};
                });
            } catch (...) {
                thrown = std::current_exception();
            }
            std::lock_guard lk(mu);
            done = true;
            cv.notify_all();
        });
        std::unique_lock lk(mu);
        while (!cv.wait_for(lk, WRITE_PROGRESS_EVERY, [&] { return done; })) {
            if (!on_written || callback_error) continue;
            lk.unlock();
            try {
                on_written(sum());
            } catch (...) {
                callback_error = std::current_exception(); // the writers stop; rethrown once they have
                callback_threw = true;
            }
            lk.lock();
        }
        lk.unlock();
        runner.join();
    } catch (const std::system_error& e) {
        return Error{Errc::Io, std::string("writing the chainstate: cannot start a thread: ") + e.what()};
    }
    if (thrown) std::rethrow_exception(thrown);
    if (callback_error) std::rethrow_exception(callback_error);
    for (std::size_t p = 0; p < parts; ++p) {
        if (errors[p]) return errors[p];
    }
    written += sum();
    if (StoreStatus st = load->Commit(); !st.ok()) return Error{Errc::Corrupt, "writing the chainstate: " + st.message};
    if (on_written) on_written(written);
    return std::nullopt;
}

} // namespace

Result<SwiftSyncResult> CheckAndWrite(const SwiftSyncOptions& o, const ChainRun& run)
{
    const auto t0 = std::chrono::steady_clock::now();
    const uint64_t cleansed_before = CleansedBytes();
    const HeaderChain& headers = *run.headers;
    SwiftSyncResult res;
    res.chain = run.chain;
    res.mode = o.mode;
    res.height = run.hints->height();
    res.tip = headers.Hash(int(res.height));
    if (o.mode == AggregateMode::Coins && !o.skip_scripts) {
        const ConsensusParams& params = GetChainParams(run.chain).consensus;
        const AssumeValidRule rule(headers, o.assumevalid, params, o.MinimumChainWork(params.minimum_chain_work));
        for (uint32_t h = 1; h <= res.height; ++h) {
            if (auto why = rule.Reason(int(h))) {
                res.script_checks_from_height = int(h);
                res.script_check_reason = std::string(*why);
                break;
            }
        }
    }

    // The hinted-unspent coins are sorted into chainstate key order within the sort's share of
    // --dbcache (the caller's SwiftSyncShares), on a thread of their own (a Handoff) while blocks
    // are checked; runs beyond it spill to unlinked files in the chainstate's folder. Only an
    // accepted history is written, in one bulk load.
    std::unique_ptr<NewChainstate> cs;
    std::unique_ptr<PartedSort> sorter;
    std::unique_ptr<Handoff<CoinBatch>> writer;
    std::optional<Error> write_error;
    if (!o.chainstate.empty()) {
        auto c = NewChainstate::Create(o.chainstate, run.chain);
        if (!c) return c.error();
        cs = std::move(*c);
        sorter = std::make_unique<PartedSort>(o.chainstate, run.sort_bytes, std::clamp<std::size_t>(o.threads, 1, 16));
        writer = std::make_unique<Handoff<CoinBatch>>(
            2,
            [&](CoinBatch& coins) {
                for (const auto& [op, coin] : coins) {
                    if (auto e = sorter->Add(op, coin)) {
                        write_error = std::move(e);
                        return false;
                    }
                }
                coins.clear();
                return true;
            },
            o.threads > 1);
    }

    const Salt salt = Salt::Random();
    CheckRangeOptions ro;
    ro.threads = o.threads;
    ro.policy = o.policy;
    ro.collect_unspent = false;
    ro.interrupt = run.interrupt;
    ThroughputLog tlog;
    tlog.Start(0);
    uint64_t bytes_checked = 0;
    const auto check_start = std::chrono::steady_clock::now();
    ro.on_progress = [&](uint32_t h, uint32_t n) {
        bytes_checked = run.bytes_through(h);
        const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - check_start).count();
        tlog.Add(int(h), bytes_checked, elapsed);
        if (o.on_progress) o.on_progress(SwiftSyncProgress{h, n, bytes_checked, elapsed, run.peers_alive ? run.peers_alive() : 0});
    };
    if (writer) {
        ro.on_unspent = [&](std::span<const std::pair<OutPoint, Coin>> coins) -> std::optional<Error> {
            CoinBatch& batch = writer->Current();
            batch.insert(batch.end(), coins.begin(), coins.end());
            if (batch.size() >= HANDOFF_COINS && !writer->Hand()) return write_error;
            return std::nullopt;
        };
    }
    CoinsModeOptions co;
    co.assumevalid = o.assumevalid;
    co.minimum_chain_work = o.minimum_chain_work;
    co.skip_scripts = o.skip_scripts;
    auto partial = run.check(salt, ro, co);
    res.check_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - check_start).count();
    // A refused block stops the check before its batch reports progress: its bytes were read too.
    if (partial) bytes_checked = std::max(bytes_checked, run.bytes_through(uint32_t(partial->counts.blocks) + (partial->failure ? 1 : 0)));
    res.block_bytes = bytes_checked;
    res.throughput_by_decile = tlog.Deciles();
    if (writer) {
        const bool written = writer->Hand() && writer->Finish();
        writer.reset();
        if (!written && write_error) return *write_error;
    }
    if (!partial) return partial.error();
    res.script_checked_inputs = partial->script_checked_inputs;
    res.verdict = Combine(std::span<const Partial>(&*partial, 1), res.height, run.chain);
    if (Interrupted(run.interrupt)) return Error{Errc::Io, "interrupted"};
    if (res.verdict.ok && run.before_write) {
        if (auto e = run.before_write()) return *e;
    }
    if (res.verdict.ok && sorter) {
        const uint64_t to_write = sorter->added();
        auto on_written = [&](uint64_t w) {
            if (!o.on_progress) return;
            SwiftSyncProgress p{res.height, res.height, bytes_checked, res.check_seconds, run.peers_alive ? run.peers_alive() : 0};
            p.writing = true;
            p.coins_written = w;
            p.coins_to_write = to_write;
            o.on_progress(p);
        };
        if (auto e = WriteSorted(*sorter, cs->db(), res.tip, res.coins_written, run.interrupt, on_written)) return *e;
        if (Interrupted(run.interrupt)) return Error{Errc::Io, "interrupted"};
        if (run.before_keep) {
            if (auto e = run.before_keep()) return *e;
        }
        if (auto e = cs->Keep()) return *e;
    }
    if (!res.verdict.ok) res.coins_written = 0;
    res.bytes_cleansed = CleansedBytes() - cleansed_before;
    res.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    return res;
}

Result<SwiftSyncResult> SwiftSyncReplay(const SwiftSyncOptions& options)
{
    if (auto bad = CheckRunSettings(options)) return *bad;
    SwiftSyncOptions o = options;
    o.threads = ResolveThreads(o.threads);
    const auto t0 = std::chrono::steady_clock::now();
    auto loc = LocateForMode(o.source, o.mode);
    if (!loc) return loc.error();
    auto hints = Hints::Read(o.hints);
    if (!hints) return Error{hints.error().code, o.hints.string() + ": " + hints.error().message + " (a hintsfile comes from `ibdkit hints`)"};
    const uint32_t n = hints->height();
    if (n < 1 || int64_t(n) > int64_t(loc->TipHeight()) || loc->base_height > 1) {
        return Error{Errc::InvalidValue, "the hintsfile is for height " + std::to_string(n) + ", the blocks hold heights " +
                                             std::to_string(loc->base_height) + ".." + std::to_string(loc->TipHeight())};
    }
    ChainRun run;
    run.chain = loc->chain;
    run.headers = &loc->headers;
    run.hints = &*hints;
    run.sort_bytes = CacheBudget::FromMiB(o.dbcache_mib).SwiftSyncFromFiles().sort;
    run.interrupt = o.interrupt;
    run.check = [&](const Salt& salt, const CheckRangeOptions& ro, const CoinsModeOptions& co) {
        return CheckFromGenesis(*loc, o.source.datadir, *hints, salt, n, o.mode, ro, co);
    };
    uint64_t bytes = 0;
    uint32_t through = 0;
    run.bytes_through = [&](uint32_t h) {
        for (; through < h; ++through) bytes += loc->order.blocks[std::size_t(int(through) + 1 - loc->base_height)].size;
        return bytes;
    };
    auto res = CheckAndWrite(o, run);
    if (res) res->seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    return res;
}

Result<uint64_t> WriteUnspentRuns(std::span<const std::span<const uint8_t>> runs, const std::filesystem::path& dir, ChainType chain,
                                  const BlockHash& tip)
{
    auto merger = UnspentRunMerger::Open(runs);
    if (!merger) return merger.error();
    auto cs = NewChainstate::Create(dir, chain);
    if (!cs) return cs.error();
    auto load = SortedCoinsLoader::Begin((*cs)->db(), tip);
    if (!load) return Error{Errc::Corrupt, "the new chainstate is not empty"};
    std::vector<uint8_t> key, value;
    OutPoint op;
    Coin coin;
    uint64_t written = 0;
    for (;;) {
        auto more = (*merger)->Next(op, coin);
        if (!more) return more.error();
        if (!*more) break;
        key.clear();
        value.clear();
        VectorWriter(key, 0) << CoinKey{op};
        VectorWriter(value, 0) << coin;
        if (StoreStatus st = load->Add(0, key, value); !st.ok()) return Error{Errc::Corrupt, "writing the chainstate: " + st.message};
        ++written;
    }
    if (StoreStatus st = load->Commit(); !st.ok()) return Error{Errc::Corrupt, "writing the chainstate: " + st.message};
    if (auto e = (*cs)->Keep()) return *e;
    return written;
}

} // namespace ibdkit::swiftsync

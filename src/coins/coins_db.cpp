// CoinsDB: opening a chainstate and reading it (the flush that writes it: batch_write.cpp).
#include <ibdkit/coins/coins_db.h>

#include "coins/budget.h"
#include "coins/coins_db_internal.h"
#include "coins/markers.h"
#include "common/write_guard_internal.h"
#include "kv/store.h"
#include "stream/streams.h"

#include <array>

namespace ibdkit {

namespace {

Error WrapError(const Error& e, const std::string& what)
{
    return Error{e.code, what + ": " + e.message};
}

/// `read()`, a failure of LevelDB under it returned as its error, named by `what`.
template <typename F>
auto Guarded(const char* what, const F& read) -> decltype(read())
{
    try {
        return read();
    } catch (const StoreError& e) {
        return WrapError(ErrorOf(e.status()), what);
    }
}

std::string CoinName(const OutPoint& outpoint) { return "coin " + outpoint.hash.ToHex() + ":" + std::to_string(outpoint.n); }

/// The coins in key order, one per Next (ForEachCoin's walk and the public Cursor's). A malformed
/// record is its decoder's Errc (EndOfData as Corrupt), LevelDB's failure Errc::Corrupt; a
/// StoreError passes through.
template <typename P>
class CoinWalk {
public:
    explicit CoinWalk(const Store& store) : m_it(store.NewIterator()) { m_it->Seek(std::span<const std::byte>(&PREFIX, 1)); }

    /// The next coin; false at the end or on a failure (into `failure`), and ever after.
    bool Next(OutPoint& op, Coin& coin, std::optional<Error>& failure)
    {
        if (m_done) return false;
        if (m_started) m_it->Next();
        m_started = true;
        const auto key = m_it->Valid() ? m_it->Key() : std::span<const std::byte>{};
        if (key.empty() || key[0] != PREFIX) {
            m_done = true;
            if (const StoreStatus st = m_it->status(); !st.ok()) failure = Error{Errc::Corrupt, st.message};
            return false;
        }
        try {
            SpanReader kr(key.subspan(1));
            kr >> op.hash;
            op.n = ReadVarInt<uint32_t>(kr);
            if (!kr.empty()) throw DecodeError(Errc::TrailingData, "trailing bytes after coin key");
            m_value.clear();
            m_it->ValueInto(m_value);
            m_value >> coin;
            if (!m_value.empty()) throw DecodeError(Errc::TrailingData, "trailing bytes after coin value");
        } catch (const DecodeError& e) {
            m_done = true;
            failure = Error{e.code() == Errc::EndOfData ? Errc::Corrupt : e.code(), "coin record #" + std::to_string(m_n) + ": " + e.what()};
            return false;
        }
        ++m_n;
        return true;
    }
    /// The coins given so far.
    uint64_t Count() const noexcept { return m_n; }

private:
    static constexpr std::byte PREFIX{DB_COIN};
    std::unique_ptr<StoreIterator> m_it;
    DataStream<P> m_value;
    uint64_t m_n{0};
    bool m_started{false}, m_done{false};
};

template <typename P>
Result<uint64_t> ForEachCoinImpl(const Store& store, const std::function<bool(const OutPoint&, const Coin&)>& fn)
{
    CoinWalk<P> walk(store);
    OutPoint op;
    Coin coin;
    std::optional<Error> failure;
    while (walk.Next(op, coin, failure)) {
        if (!fn(op, coin)) break;
    }
    if (failure) return *failure;
    return walk.Count();
}

template <typename P>
class CursorImpl final : public CoinsDB::Cursor {
public:
    explicit CursorImpl(const Store& store) : m_walk(store) {}
    bool Next(OutPoint& outpoint, Coin& coin) override
    {
        try {
            return m_walk.Next(outpoint, coin, m_failure);
        } catch (const StoreError& e) {
            m_failure = WrapError(ErrorOf(e.status()), "coin records");
            return false;
        }
    }

private:
    CoinWalk<P> m_walk;
};

} // namespace

Result<OutPoint> DecodeCoinKey(std::span<const std::byte> key)
{
    return CatchDecode([&] {
        SpanReader r(key);
        CoinKey k;
        r >> k;
        if (!r.empty()) throw DecodeError(Errc::TrailingData, "trailing bytes after coin key");
        return k.outpoint;
    });
}

Result<Coin> DecodeCoinValue(std::span<const std::byte> value) { return DecodeExact<Coin>(value); }

CoinsDBOptions CoinsDBOptions::ForReading(std::size_t dbcache_mib, PolicyId policy)
{
    CoinsDBOptions o;
    o.read_only = true;
    o.policy = policy;
    o.cache_bytes = CacheBudget::FromMiB(dbcache_mib).DbCacheBytes();
    return o;
}

CoinsDB::CoinsDB() = default;
CoinsDB::~CoinsDB() = default;

bool CoinsDB::FromSnapshot() const noexcept { return m_store->FromSnapshot(); }

Result<std::unique_ptr<CoinsDB>> CoinsDB::Open(const std::filesystem::path& path, const CoinsDBOptions& options)
{
    StoreOptions so;
    so.cache_bytes = options.cache_bytes;
    so.read_only = options.read_only;
    so.wipe = options.wipe;
    so.obfuscate = options.obfuscate;
    so.create_if_missing = !options.read_only;
    // Core's chainstate lies in its network's datadir, whose `.lock` bitcoind holds while it runs.
    so.snapshot = options.read_only && IsFileLocked(path.parent_path() / ".lock");
    // A chainstate is written only where ibdkit made one, never into what a user keeps.
    // The mark comes before LevelDB's first file, so that a run killed at any moment leaves a
    // folder the next run recognises as its own and resumes.
    // An unfinished one (a bulk writer's, killed before its load was committed) holds no UTXO set.
    if (!options.read_only) {
        // Unfinished first: a writer killed between its two marks left a folder that holds only
        // IBDKIT_UNFINISHED, which is named as such rather than as a folder of other files.
        auto refused = options.unfinished ? std::nullopt : CheckChainstateFinished(path);
        if (!refused) refused = CheckChainstateWritable(path);
        if (!refused) {
            std::error_code ec;
            std::filesystem::create_directories(path, ec);
            if (options.unfinished) refused = MarkUnfinishedChainstate(path);
            if (!refused) refused = MarkChainstate(path);
        }
        if (refused) return Error{Errc::Refused, refused->message};
    } else if (auto unfinished = CheckChainstateFinished(path)) {
        return *unfinished;
    }
    StoreStatus status;
    auto store = Store::Open(path, so, &status);
    // Whose the chainstate is decides who holds it: ibdkit marks every one it makes.
    const bool ibdkits = HoldsChainstateMarker(path);
    if (!store && status.code == StoreStatus::Code::Locked && !options.read_only) {
        return Error{Errc::Locked, (ibdkits ? "another ibdkit is writing the chainstate " : "another process (bitcoind?) holds the chainstate ") +
                                       path.string() + " (its LOCK is held): wait for it to finish, or give another folder"};
    }
    if (!store) return ErrorOf(status);
    std::unique_ptr<CoinsDB> db(new CoinsDB);
    db->m_store = std::move(store);
    db->m_options = options;
    if (db->m_store->FromSnapshot()) {
        // The writer is between the first batch of a flush (H) and its last (B): what the
        // snapshot holds is part old state, part new.
        auto heads = db->GetHeadBlocks();
        if (!heads || !heads->empty()) {
            return Error{Errc::Locked, heads ? (ibdkits ? IBDKIT_CHAINSTATE_FLUSHING : CHAINSTATE_FLUSHING)
                                             : "chainstate " + path.string() + ": " + heads.error().message};
        }
    }
    return db;
}

Error ErrorOf(const StoreStatus& status)
{
    switch (status.code) {
    case StoreStatus::Code::Ok: return Error{Errc::Ok, status.message};
    case StoreStatus::Code::NotFound: return Error{Errc::NotFound, status.message};
    case StoreStatus::Code::IoError: return Error{Errc::Io, status.message};
    case StoreStatus::Code::Corruption: return Error{Errc::Corrupt, status.message};
    case StoreStatus::Code::Locked: return Error{Errc::Locked, status.message};
    case StoreStatus::Code::InvalidArgument: return Error{Errc::InvalidValue, status.message};
    case StoreStatus::Code::Refused: return Error{Errc::Refused, status.message};
    }
    return Error{Errc::Io, status.message};
}

StoreStatus StatusOf(const Error& e)
{
    switch (e.code) {
    case Errc::Ok: return StoreStatus::Error(StoreStatus::Code::Ok, e.message);
    case Errc::NotFound: return StoreStatus::Error(StoreStatus::Code::NotFound, e.message);
    case Errc::Corrupt: return StoreStatus::Error(StoreStatus::Code::Corruption, e.message);
    case Errc::Locked: return StoreStatus::Error(StoreStatus::Code::Locked, e.message);
    case Errc::InvalidValue: return StoreStatus::Error(StoreStatus::Code::InvalidArgument, e.message);
    case Errc::Refused: return StoreStatus::Error(StoreStatus::Code::Refused, e.message);
    default: return StoreStatus::Error(StoreStatus::Code::IoError, e.message);
    }
}

std::unique_ptr<CoinsDB> OpenCoinsDB(const std::filesystem::path& path, const CoinsDBOptions& options, StoreStatus* status)
{
    auto db = CoinsDB::Open(path, options);
    if (!db) {
        if (status) *status = StatusOf(db.error());
        return nullptr;
    }
    return std::move(*db);
}

Result<std::optional<Coin>> ReadCoin(const CoinsDB& db, const OutPoint& outpoint)
{
    // A new chainstate before its first flush: every coin is absent (on regtest, where BIP30 is
    // checked at every height, that is every new output's lookup).
    if (db.store().HoldsNoRecords()) return std::optional<Coin>{};
    return VisitPolicy(db.policy(), [&]<typename P>(P) -> Result<std::optional<Coin>> {
        auto r = ReadValue<P, Coin>(db.store(), CoinKey{outpoint});
        if (!r) {
            const Errc c = r.error().code == Errc::EndOfData ? Errc::Corrupt : r.error().code;
            return WrapError(Error{c, r.error().message}, CoinName(outpoint));
        }
        return std::move(*r);
    });
}

Result<std::optional<Coin>> CoinsDB::GetCoin(const OutPoint& outpoint) const
{
    try {
        return ReadCoin(*this, outpoint);
    } catch (const StoreError& e) {
        return WrapError(ErrorOf(e.status()), CoinName(outpoint));
    }
}

Result<bool> CoinsDB::HaveCoin(const OutPoint& outpoint) const
{
    if (m_store->HoldsNoRecords()) return false;
    try {
        return VisitPolicy(m_options.policy, [&]<typename P>(P) {
            DataStream<P> ks;
            ks.reserve(DBWRAPPER_PREALLOC_KEY_SIZE);
            ks << CoinKey{outpoint};
            return m_store->Exists(ks.span());
        });
    } catch (const StoreError& e) {
        return WrapError(ErrorOf(e.status()), CoinName(outpoint));
    }
}

Result<BlockHash> CoinsDB::GetBestBlock() const
{
    return Guarded("best block record", [&] {
        return VisitPolicy(m_options.policy, [&]<typename P>(P) -> Result<BlockHash> {
            auto r = ReadValue<P, HashValue>(*m_store, MarkerKey{DB_BEST_BLOCK});
            if (!r) return WrapError(r.error(), "best block record");
            if (!*r) return BlockHash{};
            return BlockHash((*r)->h);
        });
    });
}

Result<std::vector<BlockHash>> CoinsDB::GetHeadBlocks() const
{
    return Guarded("head blocks record", [&] {
        return VisitPolicy(m_options.policy, [&]<typename P>(P) -> Result<std::vector<BlockHash>> {
            auto r = ReadValue<P, HeadsValue>(*m_store, MarkerKey{DB_HEAD_BLOCKS});
            if (!r) return WrapError(r.error(), "head blocks record");
            std::vector<BlockHash> out;
            if (*r) {
                for (const auto& h : (*r)->heads) out.emplace_back(h);
            }
            return out;
        });
    });
}

Result<std::optional<ReplayRange>> CoinsDB::NeedsReplay() const
{
    auto heads = GetHeadBlocks();
    if (!heads) return heads.error();
    if (heads->empty()) return std::optional<ReplayRange>{};
    if (heads->size() != 2) {
        return Error{Errc::Corrupt, "head blocks record has " + std::to_string(heads->size()) + " entries, expected 2"};
    }
    return std::optional<ReplayRange>(ReplayRange{(*heads)[0], (*heads)[1]});
}

Result<uint64_t> CoinsDB::ForEachCoin(const std::function<bool(const OutPoint&, const Coin&)>& fn) const
{
    return Guarded("coin records", [&] {
        return VisitPolicy(m_options.policy, [&]<typename P>(P) { return ForEachCoinImpl<P>(*m_store, fn); });
    });
}

std::unique_ptr<CoinsDB::Cursor> CoinsDB::NewCursor() const
{
    return VisitPolicy(m_options.policy, [&]<typename P>(P) -> std::unique_ptr<Cursor> { return std::make_unique<CursorImpl<P>>(*m_store); });
}

uint64_t CoinsDB::EstimateSize() const
{
    const std::array<std::byte, 1> b{std::byte{DB_COIN}}, e{std::byte{DB_COIN + 1}};
    return m_store->EstimateSize(b, e);
}

} // namespace ibdkit

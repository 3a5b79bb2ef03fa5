// UtxoDump: `utxo dump` over a chainstate of 1,000,000 coins with a generated chain's script mix
// (P2PKH, P2WPKH, P2TR, P2SH, P2WSH, P2PK, bare multisig; 1-3 outputs per txid). Unit: coin.
// One op = the whole export: LevelDB walk + decode + classify + address + format + write, then the
// re-read check (parse every row, recompute hash_serialized_3) — what the user waits for.
// Variants: csv, sqlite. The chainstate is built once, untimed.
#include "bench_case.h"

#include <ibdkit/coins/coins_db.h>
#include <ibdkit/utxo/export.h>

#include "coins/coins_cache.h"
#include "kv/store.h"
#include "coins/coins_db_internal.h"

#include <unistd.h>

#include <filesystem>
#include <memory>
#include <random>

namespace ibdkit::bench {
namespace {

namespace fs = std::filesystem;

constexpr std::size_t DUMP_COINS = 1'000'000;

struct DumpDir {
    fs::path path;
    DumpDir()
    {
        std::string t = (fs::temp_directory_path() / "ibdkit-bench-dump-XXXXXX").string();
        if (::mkdtemp(t.data())) path = t;
    }
    ~DumpDir()
    {
        std::error_code ec;
        if (!path.empty()) fs::remove_all(path, ec);
    }
};

Script MixScript(std::mt19937_64& rng)
{
    uint8_t b[71];
    for (auto& x : b) x = uint8_t(rng());
    const unsigned k = unsigned(rng() % 100);
    auto make = [&](std::initializer_list<uint8_t> head, std::size_t body, std::initializer_list<uint8_t> tail) {
        std::vector<uint8_t> s(head);
        s.insert(s.end(), b, b + body);
        s.insert(s.end(), tail);
        return Script(s.data(), s.size());
    };
    if (k < 30) return make({0x76, 0xa9, 20}, 20, {0x88, 0xac});        // P2PKH
    if (k < 55) return make({0x00, 20}, 20, {});                         // P2WPKH
    if (k < 75) return make({0x51, 32}, 32, {});                         // P2TR
    if (k < 87) return make({0xa9, 20}, 20, {0x87});                     // P2SH
    if (k < 95) return make({0x00, 32}, 32, {});                         // P2WSH
    if (k < 98) return make({33, 0x02}, 32, {0xac});                     // P2PK (compressed)
    return make({0x51, 33, 0x03}, 32, {0x51, 0xae});                     // 1-of-1 bare multisig
}

Case DumpCase(const char* variant, ExportFormat format)
{
    return {"UtxoDump", variant, "coin", double(DUMP_COINS),
            [format](std::string* why) -> Op {
                auto tmp = std::make_shared<DumpDir>();
                if (tmp->path.empty()) {
                    *why = "cannot create a temporary directory";
                    return {};
                }
                {
                    StoreStatus st;
                    auto db = OpenCoinsDB(tmp->path / "cs", {}, &st);
                    if (!db) std::abort();
                    CoinsCache cache(*db, std::size_t(1) << 40);
                    std::mt19937_64 rng(44);
                    std::size_t made = 0;
                    while (made < DUMP_COINS) {
                        std::array<uint8_t, 32> t;
                        for (auto& x : t) x = uint8_t(rng());
                        const uint32_t outs = uint32_t(1 + rng() % 3);
                        for (uint32_t n = 0; n < outs && made < DUMP_COINS; ++n, ++made) {
                            cache.AddCoin(OutPoint{Txid(uint256(t)), n},
                                          Coin(TxOut{Amount(rng() % (50 * COIN)), MixScript(rng)}, uint32_t(rng() % 2500),
                                               n == 0 && rng() % 8 == 0),
                                          false);
                        }
                    }
                    std::array<uint8_t, 32> tip{};
                    tip[0] = 1;
                    cache.SetBestBlock(BlockHash(uint256(tip)));
                    if (!cache.Flush().ok()) std::abort();
                    db->store().CompactAll();
                }
                auto db = std::shared_ptr<CoinsDB>([&] {
                    CoinsDBOptions o;
                    o.read_only = true;
                    o.cache_bytes = 64 << 20;
                    StoreStatus st;
                    return OpenCoinsDB(tmp->path / "cs", o, &st).release();
                }());
                if (!db) {
                    *why = "cannot reopen read-only";
                    return {};
                }
                return [db, tmp, format] {
                    auto r = ExportUtxoSet(*db, format, tmp->path / "dump", AddressNetwork::Main);
                    if (!r || r->file_stats.txouts != DUMP_COINS) std::abort();
                    DoNotOptimize(r->file_stats.hash_serialized);
                };
            },
            /*smoke_ok=*/false};
}

const Registrar csv_case{DumpCase("csv", ExportFormat::Csv)};
const Registrar sqlite_case{DumpCase("sqlite", ExportFormat::Sqlite)};

} // namespace
} // namespace ibdkit::bench

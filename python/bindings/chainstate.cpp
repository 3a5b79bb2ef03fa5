// The chainstate in the Python module: Chainstate (read-only CoinsDB), its statistics, coins one
// by one (Coin) and the Arrow column batches of to_arrow.
#include "bindings.h"
#include "coin_cursor.h"

#include <ibdkit/blockfile/locate.h>
#include <ibdkit/coins/coins_db.h>
#include <ibdkit/encoding/hex.h>
#include <ibdkit/primitives/script_ops.h>
#include <ibdkit/run/result_fields.h>
#include <ibdkit/spent/tables.h>
#include <ibdkit/utxo/address.h>
#include <ibdkit/utxo/balances.h>
#include <ibdkit/utxo/stats.h>


#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>

namespace nb = nanobind;
using namespace nb::literals;

namespace ibdkit::py {
namespace {

namespace fs = std::filesystem;

struct PyCoin {
    std::string txid;
    uint32_t vout;
    uint32_t height;
    bool coinbase;
    Amount value;
    nb::bytes script_pubkey;
    std::string script_type;
    std::optional<std::string> address;
};

PyCoin MakeCoin(const OutPoint& op, const Coin& c, AddressNetwork net)
{
    const Script& s = c.out.script_pubkey;
    return PyCoin{op.hash.ToHex(),
                  op.n,
                  c.height,
                  c.coinbase,
                  c.out.value,
                  Bytes(s.span()),
                  std::string(GetTxnOutputType(Solver(s.span()))),
                  EncodeAddress(s, net)};
}

class Chainstate {
public:
    Chainstate(const std::string& path, const std::string& policy, std::size_t dbcache, const std::string& network)
    {
        // The chainstate `path` names (a datadir's, for its network), and the network of its
        // addresses: given, else what ibdkit recorded or the datadir's layout says, else main.
        auto loc = LocateChainstate(path, network.empty() ? std::nullopt : std::optional<ChainType>(ParseNetwork(network)));
        if (!loc) Throw(loc.error());
        const fs::path dir = loc->dir;
        m_net = AddressNetworkOf(loc->chain.value_or(ChainType::MAIN));
        auto db = CoinsDB::Open(dir, CoinsDBOptions::ForReading(dbcache, ParsePolicyName(policy)));
        if (!db) Throw(db.error());
        m_db = std::move(*db);
    }

    nb::dict Stats(const std::string& hash_type, std::optional<uint32_t> height, nb::object progress)
    {
        if (hash_type == "none") {
            UtxoStats s;
            std::unique_ptr<CoinCursor> cur;
            {
                nb::gil_scoped_release nogil;
                cur = CoinCursor::Make(*m_db);
                CountCoins(*cur, s);
                auto best = m_db->GetBestBlock();
                if (best) s.best_block = *best;
            }
            nb::dict d;
            d["height"] = height ? *height : s.height;
            d["bestblock"] = s.best_block.ToHex();
            d["txouts"] = s.txouts;
            d["transactions"] = s.transactions;
            d["bogosize"] = s.bogosize;
            d["total_amount"] = FormatMoney(s.total_amount);
            d["total_amount_sat"] = s.total_amount;
            d["height_source"] = height ? "argument" : "max-coin-height";
            return d;
        }
        if (hash_type != "hash_serialized_3") {
            throw PyError{"InvalidArgument", "hash_type must be 'hash_serialized_3' or 'none'"};
        }
        ProgressBridge bridge(progress);
        Result<UtxoStats> r = Error{};
        {
            nb::gil_scoped_release nogil;
            auto last = std::chrono::steady_clock::now();
            r = ComputeUtxoStats(*m_db, height, [&](uint64_t coins, double fraction) {
                const auto now = std::chrono::steady_clock::now();
                if (now - last < std::chrono::milliseconds(250)) return;
                last = now;
                bridge.Call([&](nb::dict& d) {
                    d["coins"] = coins;
                    d["fraction"] = fraction;
                });
            });
        }
        bridge.Rethrow();
        if (!r) Throw(r.error());
        return FieldsDict(UtxoStatsFields(*r));
    }

    std::optional<PyCoin> Get(const std::string& txid, uint32_t vout) const
    {
        auto h = Txid::FromHex(txid);
        if (!h) throw PyError{"InvalidArgument", "txid must be 64 hex digits"};
        const OutPoint op{*h, vout};
        auto c = m_db->GetCoin(op);
        if (!c) Throw(c.error());
        if (!*c) return std::nullopt;
        return MakeCoin(op, **c, m_net);
    }

    /// Balances per script: written to `out` (a summary dict back) or, without `out`, the rows as dicts.
    nb::object Balances(std::optional<std::string> out, const std::string& format, std::optional<uint64_t> top,
                        std::size_t memory_mib, std::optional<std::string> tmpdir, nb::object progress)
    {
        BalancesOptions opt;
        if (memory_mib == 0 || memory_mib > (1u << 20)) throw PyError{"InvalidArgument", "memory must be in 1..1048576 MiB"};
        opt.memory_bytes = memory_mib << 20;
        opt.top = top;
        std::optional<TableFormat> fmt;
        if (out) {
            fmt = ParseTableFormat(format);
            if (!fmt) throw PyError{"InvalidArgument", "format must be 'csv', 'jsonl' or 'sqlite'"};
        }
        if (tmpdir) opt.tmp_dir = *tmpdir;
        else if (out) opt.tmp_dir = fs::absolute(*out).parent_path();
        ProgressBridge bridge(progress);
        auto last = std::chrono::steady_clock::now();
        const BalancesProgress report = [&](std::string_view phase, uint64_t done, double fraction) {
            const auto now = std::chrono::steady_clock::now();
            if (now - last < std::chrono::milliseconds(250) && fraction < 1.0) return;
            last = now;
            bridge.Call([&](nb::dict& d) {
                d["phase"] = std::string(phase);
                d["done"] = done;
                d["fraction"] = fraction < 0 ? 0.0 : fraction;
            });
        };
        struct Row {
            std::vector<uint8_t> script;
            uint64_t coins;
            Amount value;
        };
        std::vector<Row> rows;
        Result<BalancesResult> r = Error{};
        {
            nb::gil_scoped_release nogil;
            if (out) {
                r = WriteBalances(*m_db, *fmt, *out, m_net, opt, report);
            } else {
                r = ComputeBalances(*m_db, opt, [&](const BalanceRow& b) {
                    rows.push_back({std::vector<uint8_t>(b.script.begin(), b.script.end()), b.coins, b.value});
                    return true;
                }, report);
            }
        }
        bridge.Rethrow();
        if (!r) Throw(r.error());
        if (out) {
            nb::dict d;
            d["rows"] = r->rows;
            d["scripts"] = r->scripts;
            d["coins"] = r->coins;
            d["value"] = r->value;
            d["txouts"] = r->stats.txouts;
            d["total_amount_sat"] = r->stats.total_amount;
            d["runs"] = r->runs;
            return d;
        }
        nb::list list;
        char addr[MAX_ADDRESS_LENGTH];
        for (const Row& row : rows) {
            const Script script(row.script.data(), row.script.size());
            const TxoutType type = Solver(row.script);
            const std::size_t n = EncodeAddressInto(script, type, m_net, addr);
            nb::dict d;
            d["script_pubkey"] = HexStr(row.script);
            d["address"] = n ? nb::object(nb::str(addr, n)) : nb::none();
            d["script_type"] = std::string(GetTxnOutputType(type));
            d["coins"] = row.coins;
            d["value"] = row.value;
            list.append(d);
        }
        return list;
    }

    std::optional<std::string> BestBlock() const
    {
        auto b = m_db->GetBestBlock();
        if (!b) Throw(b.error());
        if (b->IsNull()) return std::nullopt;
        return b->ToHex();
    }

    CoinsDB& db() { return *m_db; }
    AddressNetwork net() const noexcept { return m_net; }

private:
    std::unique_ptr<CoinsDB> m_db;
    AddressNetwork m_net{AddressNetwork::Main};
};

/// Python iterator over the coins (one PyCoin per coin: for convenience, not for speed).
struct CoinIter {
    nb::object owner; // the Chainstate, kept alive
    std::unique_ptr<CoinCursor> cur;
    AddressNetwork net;

    PyCoin Next()
    {
        OutPoint op;
        Coin c;
        if (!cur->Next(op, c)) {
            cur->ThrowIfFailed();
            throw nb::stop_iteration();
        }
        return MakeCoin(op, c, net);
    }
};

/// Yields the column buffers of coin batches (python/ibdkit/_arrow.py assembles RecordBatches).
struct BatchIter {
    nb::object owner;
    std::unique_ptr<CoinCursor> cur;
    AddressNetwork net;
    std::size_t batch_size;
    bool script_hex;

    nb::object Next()
    {
        ArrowColumns cols;
        {
            nb::gil_scoped_release nogil;
            FillBatch(*cur, net, batch_size, script_hex, cols);
        }
        if (cols.rows == 0) {
            cur->ThrowIfFailed();
            throw nb::stop_iteration();
        }
        return ColumnsToPython(cols);
    }

    /// Hands a buffer to Python without copying: (address, size, owner); the owner (a capsule)
    /// frees it. _arrow.py wraps it with pyarrow.foreign_buffer(address, size, base=owner).
    static nb::object B(ColumnBuffer& v)
    {
        const std::size_t size = v.size();
        if (!v.data()) v.Reserve(1); // Python always gets a real allocation
        char* owned = v.Release();
        nb::capsule owner(owned, [](void* p) noexcept { std::free(p); });
        return nb::make_tuple(reinterpret_cast<uintptr_t>(owned), size, owner);
    }
    static nb::object ColumnsToPython(ArrowColumns& c)
    {
        nb::dict d;
        d["rows"] = c.rows;
        d["txid"] = nb::make_tuple(B(c.txid_offsets), B(c.txid_data));
        d["vout"] = B(c.vout);
        d["height"] = B(c.height);
        d["coinbase"] = B(c.coinbase_bits);
        d["value"] = B(c.value);
        d["script_type"] = nb::make_tuple(B(c.type_offsets), B(c.type_data));
        d["address"] = nb::make_tuple(B(c.addr_valid), B(c.addr_offsets), B(c.addr_data), c.addr_nulls);
        d["script_pubkey"] = nb::make_tuple(B(c.script_offsets), B(c.script_data));
        return d;
    }
};

} // namespace

nb::object CoinIterator(nb::object owner, std::unique_ptr<CoinCursor> cur, AddressNetwork net)
{
    return nb::cast(CoinIter{std::move(owner), std::move(cur), net});
}

nb::object BatchIterator(nb::object owner, std::unique_ptr<CoinCursor> cur, AddressNetwork net, std::size_t batch_size, bool script_hex)
{
    return nb::cast(BatchIter{std::move(owner), std::move(cur), net, batch_size, script_hex});
}

void BindChainstate(nb::module_& m)
{
    nb::class_<PyCoin>(m, "Coin", "An unspent output as stored in the chainstate.")
        .def_ro("txid", &PyCoin::txid)
        .def_ro("vout", &PyCoin::vout)
        .def_ro("height", &PyCoin::height)
        .def_ro("coinbase", &PyCoin::coinbase)
        .def_ro("value", &PyCoin::value, "Satoshis.")
        .def_ro("script_pubkey", &PyCoin::script_pubkey)
        .def_ro("script_type", &PyCoin::script_type)
        .def_ro("address", &PyCoin::address)
        .def_prop_ro("amount", [](const PyCoin& c) {
            WarnRenamed("Coin.amount", "Coin.value");
            return c.value; }, "Deprecated spelling of Coin.value.")
        .def("__repr__", [](const PyCoin& c) {
            return "<Coin " + c.txid + ":" + std::to_string(c.vout) + " " + std::to_string(c.value) + " sat>";
        });

    nb::class_<CoinIter>(m, "_CoinIter")
        .def("__iter__", [](nb::handle self) { return self; })
        .def("__next__", &CoinIter::Next);
    nb::class_<BatchIter>(m, "_BatchIter")
        .def("__iter__", [](nb::handle self) { return self; })
        .def("__next__", &BatchIter::Next);

    nb::class_<Chainstate>(m, "_Chainstate")
        .def(nb::init<const std::string&, const std::string&, std::size_t, const std::string&>(), "path"_a,
             "policy"_a = "hardened", "dbcache"_a = 64, "network"_a = "")
        .def("_stats", &Chainstate::Stats, "hash_type"_a, "height"_a, "progress"_a.none())
        .def("_balances", &Chainstate::Balances, "out"_a.none(), "format"_a, "top"_a.none(), "memory"_a, "tmpdir"_a.none(),
             "progress"_a.none())
        .def("get", &Chainstate::Get, "txid"_a, "vout"_a,
             "The unspent coin at txid:vout (txid in hex, display order), or None.")
        .def_prop_ro("best_block", &Chainstate::BestBlock, "Hash of the chainstate's best block, or None.")
        .def("__iter__", [](nb::handle self) {
            Chainstate& cs = nb::cast<Chainstate&>(self);
            return CoinIter{nb::borrow(self), CoinCursor::Make(cs.db()), cs.net()};
        })
        .def("_batches", [](nb::handle self, std::size_t batch_size, bool script_hex) {
            Chainstate& cs = nb::cast<Chainstate&>(self);
            if (batch_size == 0 || batch_size > (1u << 24)) throw PyError{"InvalidArgument", "batch_size must be in 1..16777216"};
            return BatchIter{nb::borrow(self), CoinCursor::Make(cs.db()), cs.net(), batch_size, script_hex};
        }, "batch_size"_a, "script_hex"_a);
}

} // namespace ibdkit::py

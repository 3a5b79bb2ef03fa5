// The `ibdkit._ibdkit` extension module (nanobind): a thin layer over the public C++ API
// (include/ibdkit). The Python package (python/ibdkit/__init__.py) re-exports it and adds the
// pure-Python parts (progress bars, pyarrow assembly). Design notes: docs/python.md.
//
// Rules kept here: bytes from Python are copied once into storage owned by the block object (a
// caller may mutate a bytearray later); views (transactions, inputs, outputs) point into that
// storage and keep it alive; every failure of the library becomes ibdkit.Error(kind, message);
// long calls (replay, sync, stats, batches) run without the GIL.
#include "coin_cursor.h"
#include "errors.h"
#include "script.h"

#include <ibdkit/blockfile/blockfile.h>
#include <ibdkit/blockfile/locate.h>
#include <ibdkit/chain/params.h>
#include <ibdkit/coins/coins_db.h>
#include <ibdkit/consensus/check.h>
#include <ibdkit/consensus/validation.h>
#include <ibdkit/encoding/hex.h>
#include <ibdkit/engine/replay.h>
#include <ibdkit/engine/result_fields.h>
#include <ibdkit/engine/sync.h>
#include <ibdkit/memory/policy.h>
#include <ibdkit/primitives/block.h>
#include <ibdkit/primitives/block_view.h>
#include <ibdkit/primitives/script_ops.h>
#include <ibdkit/utxo/address.h>
#include <ibdkit/utxo/stats.h>
#include <ibdkit/wire/peer.h>

#include <nanobind/nanobind.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <type_traits>
#include <variant>
#include <vector>

namespace nb = nanobind;
using namespace nb::literals;

namespace ibdkit::py {
namespace {

namespace fs = std::filesystem;
using Storage = std::shared_ptr<const std::vector<uint8_t>>;

nb::bytes Bytes(ByteSpan s) { return nb::bytes(reinterpret_cast<const char*>(s.data()), s.size()); }

ChainType ParseNetwork(const std::string& name)
{
    auto t = ParseChainType(name);
    if (!t) throw PyError{"InvalidArgument", "unknown network '" + name + "' (main, test, testnet4, signet, regtest)"};
    return *t;
}

PolicyId ParsePolicyName(const std::string& name)
{
    auto p = ParsePolicy(name);
    if (!p) {
        throw PyError{"InvalidArgument",
                      "unknown policy '" + name + "' (plain, zero-after-free, barrier-only, secure, hardened)"};
    }
    return *p;
}

AddressNetwork AddressNet(ChainType t)
{
    switch (t) {
    case ChainType::MAIN: return AddressNetwork::Main;
    case ChainType::SIGNET: return AddressNetwork::Signet;
    case ChainType::REGTEST: return AddressNetwork::Regtest;
    case ChainType::TESTNET:
    case ChainType::TESTNET4: break;
    }
    return AddressNetwork::Test;
}

// ---- blocks and transactions (lazy views) ---------------------------------------------------

struct PyOutput {
    Amount value;
    nb::bytes script_pubkey;
    ChainType chain;

    std::string Type() const
    {
        const Script s(reinterpret_cast<const uint8_t*>(script_pubkey.c_str()), script_pubkey.size());
        return std::string(GetTxnOutputType(Solver(s.span())));
    }
    std::optional<std::string> Address(std::optional<std::string> network) const
    {
        const Script s(reinterpret_cast<const uint8_t*>(script_pubkey.c_str()), script_pubkey.size());
        return EncodeAddress(s, AddressNet(network ? ParseNetwork(*network) : chain));
    }
};

struct PyInput {
    std::string prevout_txid;
    uint32_t prevout_vout;
    nb::bytes script_sig;
    uint32_t sequence;
    nb::list witness;
};

struct PyTx {
    Storage storage; // keeps the block's bytes alive
    TxLayout layout;
    ChainType chain;

    TxView View() const noexcept { return TxView(layout); }
    nb::list Inputs() const
    {
        nb::list out;
        const TxView tx = View(); // the ranges point at the view's layout: keep it alive
        for (InputView in : tx.inputs()) {
            nb::list wit;
            for (ByteSpan item : in.witness) wit.append(Bytes(item));
            out.append(PyInput{in.prevout_hash().ToHex(), in.prevout_n(), Bytes(in.script_sig), in.sequence, wit});
        }
        return out;
    }
    nb::list Outputs() const
    {
        nb::list out;
        const TxView tx = View();
        for (OutputView o : tx.outputs()) out.append(PyOutput{o.value, Bytes(o.script_pubkey), chain});
        return out;
    }
};

struct PyBlock {
    Storage storage;
    BlockView view;
    ChainType chain{ChainType::MAIN};
    std::optional<int> height; ///< known when read in chain order

    static PyBlock FromBytes(std::vector<uint8_t>&& bytes, ChainType chain, std::optional<int> height)
    {
        auto st = std::make_shared<const std::vector<uint8_t>>(std::move(bytes));
        auto v = BlockView::Parse(ByteSpan(st->data(), st->size()));
        if (!v) Throw(v.error());
        return PyBlock{std::move(st), *v, chain, height};
    }

    nb::list Transactions() const
    {
        nb::list out;
        for (TxView tx : view.txs()) out.append(PyTx{storage, tx.layout(), chain});
        return out;
    }
    std::vector<std::string> Txids() const
    {
        std::vector<std::string> out;
        out.reserve(view.tx_count());
        {
            nb::gil_scoped_release nogil;
            for (TxView tx : view.txs()) out.push_back(tx.ComputeTxid().ToHex());
        }
        return out;
    }
    std::size_t StrippedSize() const
    {
        std::size_t n = 80;
        // CompactSize of the transaction count.
        const std::size_t c = view.tx_count();
        n += c < 253 ? 1 : c <= 0xffff ? 3 : c <= 0xffffffffu ? 5 : 9;
        for (TxView tx : view.txs()) n += tx.GetStrippedSize();
        return n;
    }
    std::optional<std::string> Check(std::optional<std::string> network, bool pow, bool merkle) const
    {
        const ChainParams& params = GetChainParams(network ? ParseNetwork(*network) : chain);
        auto block = DecodeBlock(view.bytes());
        if (!block) Throw(block.error()); // cannot happen: the view parsed the same bytes
        BlockValidationState state;
        bool ok;
        {
            nb::gil_scoped_release nogil;
            ok = CheckBlockRules(*block, state, params.consensus, {pow, merkle});
        }
        if (ok) return std::nullopt;
        return state.GetRejectReason();
    }
};

/// Blocks of a blk directory or a Core datadir in chain order (read_blocks).
class BlockReader {
public:
    BlockReader(const std::string& path, std::optional<std::string> network)
    {
        const fs::path dir = path;
        const std::optional<ChainType> chain = network ? std::optional<ChainType>(ParseNetwork(*network)) : std::nullopt;
        // A Core data directory (its block index, or a network's subdirectory) is read through the
        // index; a blocks directory or blk file by following prev-hashes through every record.
        bool datadir = fs::is_directory(dir / "blocks" / "index");
        for (const char* net : {"regtest", "testnet3", "testnet4", "signet"}) datadir = datadir || fs::is_directory(dir / net / "blocks");
        Result<LocatedChain> located = Error{};
        {
            nb::gil_scoped_release nogil;
            located = datadir ? LocateFromDatadir(dir, chain)
                              : LocateFromBlocksDir(fs::is_directory(dir / "blocks") ? dir / "blocks" : dir, chain);
        }
        if (!located) Throw(located.error());
        m_chain = std::move(*located);
        m_reader = std::make_unique<BlockFileReader>(m_chain.files, m_chain.key);
    }

    std::size_t Size() const noexcept { return m_chain.order.blocks.size(); }
    PyBlock Next()
    {
        if (m_next >= m_chain.order.blocks.size()) throw nb::stop_iteration();
        const BlockRecordPos& pos = m_chain.order.blocks[m_next];
        Result<std::vector<uint8_t>> bytes = Error{};
        {
            nb::gil_scoped_release nogil;
            bytes = m_reader->Read(pos);
        }
        if (!bytes) Throw(bytes.error());
        const int height = m_chain.base_height + int(m_next++);
        return PyBlock::FromBytes(std::move(*bytes), m_chain.chain, height);
    }
    ChainType chain() const noexcept { return m_chain.chain; }
    nb::dict Stats() const
    {
        nb::dict d;
        d["blocks"] = m_chain.order.blocks.size();
        d["records"] = m_chain.scan.records;
        d["bytes"] = m_chain.scan.bytes;
        d["orphans"] = m_chain.order.orphans;
        d["stale"] = m_chain.order.stale;
        d["duplicates"] = m_chain.order.duplicates;
        d["skipped_bytes"] = m_chain.scan.skipped_bytes;
        d["truncated_records"] = m_chain.scan.truncated;
        d["from_index"] = m_chain.from_index;
        return d;
    }

private:
    LocatedChain m_chain;
    std::unique_ptr<BlockFileReader> m_reader;
    std::size_t m_next{0};
};

// ---- replay / sync ---------------------------------------------------------------------------

nb::dict FieldsDict(const ResultFields& fields);

/// A result value (engine/result_fields.h) as the Python object of its type.
nb::object FieldValue(const ResultValue& v)
{
    return std::visit(
        [](const auto& x) -> nb::object {
            using T = std::decay_t<decltype(x)>;
            if constexpr (std::is_same_v<T, std::nullptr_t>) {
                return nb::none();
            } else if constexpr (std::is_same_v<T, ResultValue::List>) {
                nb::list out;
                for (const auto& item : x) out.append(FieldValue(item));
                return out;
            } else if constexpr (std::is_same_v<T, ResultValue::Object>) {
                return FieldsDict(x);
            } else if constexpr (std::is_same_v<T, std::string>) {
                return nb::str(x.c_str(), x.size());
            } else {
                return nb::cast(x);
            }
        },
        v.value);
}

/// A result's fields as a dict, in their order: the CLI's --json names and types.
nb::dict FieldsDict(const ResultFields& fields)
{
    nb::dict d;
    for (const auto& f : fields) d[f.key.c_str()] = FieldValue(f.value);
    return d;
}

/// EngineOptions::assumevalid from Python: None, the network's default; "0", verify every script;
/// a block hash in hex.
std::optional<BlockHash> ParseAssumeValid(const std::optional<std::string>& value)
{
    if (!value) return std::nullopt;
    if (*value == "0") return BlockHash{};
    auto h = BlockHash::FromHex(*value);
    if (!h) throw PyError{"InvalidArgument", "assumevalid must be a block hash (64 hex digits) or \"0\", got '" + *value + "'"};
    return *h;
}

/// The engine's progress as a dict (replay's and sync's callbacks).
void ProgressInto(nb::dict& d, const EngineProgress& p)
{
    d["height"] = p.height;
    d["tip_height"] = p.tip_height;
    d["blocks"] = p.blocks;
    d["txs"] = p.txs;
    d["bytes"] = p.bytes;
    d["elapsed_s"] = p.elapsed_s;
    d["cache_bytes"] = p.cache_bytes;
    d["cache_budget"] = p.cache_budget;
    d["flushes"] = p.flushes;
    d["flushing"] = p.flushing;
}

/// Calls a Python progress callback from the library's thread, turns Ctrl-C into a clean stop and
/// keeps an exception raised by the callback for after the run.
class ProgressBridge {
public:
    explicit ProgressBridge(nb::object cb) : m_cb(std::move(cb)) {}
    template <typename Fill>
    void Call(Fill&& fill)
    {
        nb::gil_scoped_acquire gil;
        if (PyErr_CheckSignals() != 0) {
            m_error = std::make_unique<nb::python_error>();
            m_stop = true;
            return;
        }
        if (m_cb.is_none() || m_error) return;
        try {
            nb::dict d;
            fill(d);
            m_cb(d);
        } catch (nb::python_error& e) {
            m_error = std::make_unique<nb::python_error>(std::move(e));
            m_stop = true;
        }
    }
    const std::atomic<bool>* flag() const noexcept { return &m_stop; }
    /// Re-raises what the callback or a signal raised (after the run flushed cleanly).
    void Rethrow()
    {
        if (m_error) {
            auto e = std::move(m_error);
            e->restore();
            throw nb::python_error();
        }
    }

private:
    nb::object m_cb;
    std::atomic<bool> m_stop{false};
    std::unique_ptr<nb::python_error> m_error;
};

nb::dict Replay_(const std::string& blocks, std::optional<std::string> network, std::optional<std::string> chainstate,
                 std::size_t dbcache, const std::string& policy, std::optional<int> stop_height, bool via_p2p,
                 unsigned threads, bool statistics, std::optional<std::string> assumevalid, nb::object progress)
{
    ReplayOptions o;
    o.statistics = statistics;
    o.assumevalid = ParseAssumeValid(assumevalid);
    const fs::path dir = blocks;
    // A Core data directory (its block index, or a network's subdirectory) is read through the index.
    bool datadir = fs::is_directory(dir / "blocks" / "index");
    for (const char* net : {"regtest", "testnet3", "testnet4", "signet"}) datadir = datadir || fs::is_directory(dir / net / "blocks");
    if (datadir) {
        o.datadir = dir;
    } else {
        o.blocks_dir = fs::is_directory(dir / "blocks") ? dir / "blocks" : dir;
    }
    o.threads = threads;
    if (network) o.chain = ParseNetwork(*network);
    if (chainstate) o.chainstate = *chainstate;
    o.dbcache_mib = dbcache;
    o.policy = ParsePolicyName(policy);
    o.stop_height = stop_height;
    o.via_p2p = via_p2p;
    ProgressBridge bridge(progress);
    o.interrupt = bridge.flag();
    o.on_progress = [&](const ReplayProgress& p) { bridge.Call([&](nb::dict& d) { ProgressInto(d, p); }); };
    Result<ReplayResult> r = Error{};
    {
        nb::gil_scoped_release nogil;
        r = Replay(o);
    }
    bridge.Rethrow();
    if (!r) Throw(r.error());
    return FieldsDict(ReplayResultFields(*r, o.policy));
}

nb::dict Sync_(const std::string& connect, const std::string& network, std::optional<std::string> chainstate,
               std::size_t dbcache, const std::string& policy, double timeout, double headers_wait, std::size_t window,
               std::optional<int> stop_height, bool getblocks, unsigned threads, bool statistics,
               std::optional<std::string> assumevalid, nb::object progress)
{
    SyncOptions o;
    o.statistics = statistics;
    o.assumevalid = ParseAssumeValid(assumevalid);
    o.threads = threads;
    o.chain = ParseNetwork(network);
    auto hp = SplitHostPort(connect, GetChainParams(o.chain).default_port);
    if (!hp) throw PyError{"InvalidArgument", "cannot parse '" + connect + "' as HOST:PORT"};
    o.host = hp->first;
    o.port = hp->second;
    if (chainstate) o.chainstate = *chainstate;
    o.dbcache_mib = dbcache;
    o.policy = ParsePolicyName(policy);
    o.timeout = std::chrono::milliseconds(int64_t(timeout * 1000));
    o.headers_wait = std::chrono::milliseconds(int64_t(headers_wait * 1000));
    if (window < 1 || window > 1024) throw PyError{"InvalidArgument", "window must be in 1..1024"};
    o.window = window;
    o.stop_height = stop_height;
    o.force_getblocks = getblocks;
    ProgressBridge bridge(progress);
    o.interrupt = bridge.flag();
    o.on_sync_progress = [&](const SyncProgress& p) {
        bridge.Call([&](nb::dict& d) {
            ProgressInto(d, p);
            d["header_height"] = p.header_height;
            d["in_flight"] = p.in_flight;
            d["headers_phase"] = p.headers_phase;
        });
    };
    Result<SyncResult> r = Error{};
    {
        nb::gil_scoped_release nogil;
        r = Sync(o);
    }
    bridge.Rethrow();
    if (!r) Throw(r.error());
    return FieldsDict(SyncResultFields(*r, o.policy));
}

// ---- chainstate ------------------------------------------------------------------------------

struct PyCoin {
    std::string txid;
    uint32_t vout;
    uint32_t height;
    bool coinbase;
    Amount amount;
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
        fs::path dir = path;
        if (!fs::exists(dir / "CURRENT") && fs::exists(dir / "chainstate" / "CURRENT")) dir /= "chainstate";
        auto net = ParseAddressNetwork(network);
        if (!net) throw PyError{"InvalidArgument", "unknown network '" + network + "'"};
        m_net = *net;
        CoinsDBOptions opt;
        opt.read_only = true;
        opt.policy = ParsePolicyName(policy);
        opt.cache_bytes = dbcache << 20;
        StoreStatus st;
        m_db = CoinsDB::Open(dir, opt, &st);
        if (!m_db) throw PyError{StoreCodeName(st.code), st.message};
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
        d["amount"] = B(c.amount);
        d["script_type"] = nb::make_tuple(B(c.type_offsets), B(c.type_data));
        d["address"] = nb::make_tuple(B(c.addr_valid), B(c.addr_offsets), B(c.addr_data), c.addr_nulls);
        d["script"] = nb::make_tuple(B(c.script_offsets), B(c.script_data));
        return d;
    }
};

} // namespace
} // namespace ibdkit::py

NB_MODULE(_ibdkit, m)
{
    using namespace ibdkit;
    using namespace ibdkit::py;
    m.doc() = "Native core of the ibdkit package (use the `ibdkit` package, not this module).";

    RegisterErrors(m);

    nb::class_<PyOutput>(m, "Output", "A transaction output.")
        .def_ro("value", &PyOutput::value, "Amount in satoshis.")
        .def_ro("script_pubkey", &PyOutput::script_pubkey, "The output script (bytes).")
        .def_prop_ro("script_type", &PyOutput::Type, "Core's TxoutType name ('witness_v0_keyhash', ...).")
        .def("address", &PyOutput::Address, "network"_a = nb::none(),
             "The address of a standard script on `network` (default: the block's network), else None.")
        .def("__repr__", [](const PyOutput& o) {
            return "<Output " + std::to_string(o.value) + " sat " + o.Type() + ">";
        });

    nb::class_<PyInput>(m, "Input", "A transaction input.")
        .def_ro("prevout_txid", &PyInput::prevout_txid, "Txid of the spent output (hex, display order).")
        .def_ro("prevout_vout", &PyInput::prevout_vout, "Index of the spent output.")
        .def_ro("script_sig", &PyInput::script_sig, "scriptSig (bytes).")
        .def_ro("sequence", &PyInput::sequence, "nSequence.")
        .def_ro("witness", &PyInput::witness, "Witness stack items (list of bytes).")
        .def("__repr__", [](const PyInput& i) {
            return "<Input " + i.prevout_txid + ":" + std::to_string(i.prevout_vout) + ">";
        });

    nb::class_<PyTx>(m, "Transaction", "A transaction: a view into its block's bytes (nothing is copied until asked).")
        .def_prop_ro("txid", [](const PyTx& t) { return t.View().ComputeTxid().ToHex(); }, "Txid (hex, display order).")
        .def_prop_ro("wtxid", [](const PyTx& t) { return t.View().ComputeWtxid().ToHex(); }, "Wtxid (hex, display order).")
        .def_prop_ro("version", [](const PyTx& t) { return int32_t(t.View().version()); })
        .def_prop_ro("lock_time", [](const PyTx& t) { return t.View().lock_time(); })
        .def_prop_ro("has_witness", [](const PyTx& t) { return t.View().HasWitness(); })
        .def_prop_ro("is_coinbase", [](const PyTx& t) { return t.View().IsCoinBase(); })
        .def_prop_ro("size", [](const PyTx& t) { return t.View().GetTotalSize(); }, "Serialized size with witness.")
        .def_prop_ro("stripped_size", [](const PyTx& t) { return t.View().GetStrippedSize(); }, "Size without witness.")
        .def_prop_ro("weight", [](const PyTx& t) { return t.View().GetStrippedSize() * 3 + t.View().GetTotalSize(); },
                     "BIP141 weight.")
        .def_prop_ro("vsize", [](const PyTx& t) {
            return (t.View().GetStrippedSize() * 3 + t.View().GetTotalSize() + 3) / 4; }, "Virtual size (weight / 4, rounded up).")
        .def_prop_ro("input_count", [](const PyTx& t) { return t.layout.n_in; })
        .def_prop_ro("output_count", [](const PyTx& t) { return t.layout.n_out; })
        .def_prop_ro("inputs", &PyTx::Inputs, "The inputs (list of Input, built on access).")
        .def_prop_ro("outputs", &PyTx::Outputs, "The outputs (list of Output, built on access).")
        .def_prop_ro("raw", [](const PyTx& t) { return Bytes(t.View().bytes()); }, "Serialized bytes (a copy).")
        .def("__repr__", [](const PyTx& t) { return "<Transaction " + t.View().ComputeTxid().ToHex() + ">"; });

    nb::class_<PyBlock>(m, "Block", "A block: a view over its serialized bytes (held once, shared by its transactions).")
        .def_prop_ro("hash", [](const PyBlock& b) { return b.view.ComputeHash().ToHex(); }, "Block hash (hex, display order).")
        .def_prop_ro("height", [](const PyBlock& b) { return b.height; }, "Height when read in chain order, else None.")
        .def_prop_ro("network", [](const PyBlock& b) { return std::string(ChainTypeName(b.chain)); })
        .def_prop_ro("version", [](const PyBlock& b) { return b.view.header().version; })
        .def_prop_ro("prev_hash", [](const PyBlock& b) { return b.view.header().hash_prev_block.ToHex(); })
        .def_prop_ro("merkle_root", [](const PyBlock& b) { return b.view.header().hash_merkle_root.ToHex(); })
        .def_prop_ro("time", [](const PyBlock& b) { return b.view.header().time; })
        .def_prop_ro("bits", [](const PyBlock& b) { return b.view.header().bits; })
        .def_prop_ro("nonce", [](const PyBlock& b) { return b.view.header().nonce; })
        .def_prop_ro("size", [](const PyBlock& b) { return b.view.GetTotalSize(); }, "Serialized size with witness.")
        .def_prop_ro("stripped_size", &PyBlock::StrippedSize, "Serialized size without witness.")
        .def_prop_ro("weight", [](const PyBlock& b) { return b.StrippedSize() * 3 + b.view.GetTotalSize(); }, "BIP141 weight.")
        .def_prop_ro("tx_count", [](const PyBlock& b) { return b.view.tx_count(); })
        .def_prop_ro("transactions", &PyBlock::Transactions, "The transactions (list of views into this block).")
        .def("txids", &PyBlock::Txids, "Every txid (hex, display order), computed without building transactions.")
        .def_prop_ro("raw", [](const PyBlock& b) { return Bytes(b.view.bytes()); }, "Serialized bytes (a copy).")
        .def("check", &PyBlock::Check, "network"_a = nb::none(), "pow"_a = true, "merkle"_a = true,
             "Core's CheckBlock: None when every context-free rule holds, else Core's reject reason "
             "('bad-txnmrklroot', 'high-hash', ...). network: default the block's network.")
        .def("__len__", [](const PyBlock& b) { return b.view.tx_count(); })
        .def("__iter__", [](const PyBlock& b) { return nb::iter(b.Transactions()); })
        .def("__repr__", [](const PyBlock& b) {
            return "<Block " + b.view.ComputeHash().ToHex() + (b.height ? " height " + std::to_string(*b.height) : "") + ">";
        });

    m.def(
        "decode_block",
        [](nb::bytes data, const std::string& network) {
            std::vector<uint8_t> copy(reinterpret_cast<const uint8_t*>(data.c_str()),
                                      reinterpret_cast<const uint8_t*>(data.c_str()) + data.size());
            return PyBlock::FromBytes(std::move(copy), ParseNetwork(network), std::nullopt);
        },
        "data"_a, "network"_a = "main");

    nb::class_<BlockReader>(m, "BlockReader", "Blocks of a blk directory in chain order.")
        .def(nb::init<const std::string&, std::optional<std::string>>(), "path"_a, "network"_a = nb::none())
        .def("__len__", &BlockReader::Size)
        .def("__iter__", [](nb::handle self) { return self; })
        .def("__next__", &BlockReader::Next)
        .def_prop_ro("network", [](const BlockReader& r) { return std::string(ChainTypeName(r.chain())); })
        .def_prop_ro("scan", &BlockReader::Stats, "What the scan of the files found (records, orphans, ...).");

    m.def("_replay", &Replay_, "blocks"_a, "network"_a, "chainstate"_a, "dbcache"_a, "policy"_a, "stop_height"_a,
          "via_p2p"_a, "threads"_a, "statistics"_a, "assumevalid"_a.none(), "progress"_a.none());
    m.def("_sync", &Sync_, "connect"_a, "network"_a, "chainstate"_a, "dbcache"_a, "policy"_a, "timeout"_a,
          "headers_wait"_a, "window"_a, "stop_height"_a, "getblocks"_a, "threads"_a, "statistics"_a, "assumevalid"_a.none(),
          "progress"_a.none());

    nb::class_<PyCoin>(m, "Coin", "An unspent output as stored in the chainstate.")
        .def_ro("txid", &PyCoin::txid)
        .def_ro("vout", &PyCoin::vout)
        .def_ro("height", &PyCoin::height)
        .def_ro("coinbase", &PyCoin::coinbase)
        .def_ro("amount", &PyCoin::amount, "Satoshis.")
        .def_ro("script_pubkey", &PyCoin::script_pubkey)
        .def_ro("script_type", &PyCoin::script_type)
        .def_ro("address", &PyCoin::address)
        .def("__repr__", [](const PyCoin& c) {
            return "<Coin " + c.txid + ":" + std::to_string(c.vout) + " " + std::to_string(c.amount) + " sat>";
        });

    nb::class_<CoinIter>(m, "_CoinIter")
        .def("__iter__", [](nb::handle self) { return self; })
        .def("__next__", &CoinIter::Next);
    nb::class_<BatchIter>(m, "_BatchIter")
        .def("__iter__", [](nb::handle self) { return self; })
        .def("__next__", &BatchIter::Next);

    nb::class_<Chainstate>(m, "_Chainstate")
        .def(nb::init<const std::string&, const std::string&, std::size_t, const std::string&>(), "path"_a,
             "policy"_a = "zero-after-free", "dbcache"_a = 64, "network"_a = "main")
        .def("_stats", &Chainstate::Stats, "hash_type"_a, "height"_a, "progress"_a.none())
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

    m.def("policies", [] {
        std::vector<std::string> out;
        for (PolicyId id : ALL_POLICIES) out.emplace_back(PolicyName(id));
        return out;
    }, "The buffer policy names accepted wherever a policy is asked for.");
    BindScript(m); // python/bindings/script.cpp: verify_input, Block.verify_scripts
    m.attr("__version__") = IBDKIT_VERSION;
}

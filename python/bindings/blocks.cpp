// Blocks and transactions in the Python module: lazy views over a block's bytes (Block,
// Transaction, Input, Output), decode_block, and BlockReader (read_blocks: chain order).
#include "bindings.h"
#include "script.h"
#include "spent.h"

#include <ibdkit/blockfile/checked_read.h>

#include <ibdkit/blockfile/blockfile.h>
#include <ibdkit/blockfile/locate.h>
#include <ibdkit/chain/params.h>
#include <ibdkit/consensus/check.h>
#include <ibdkit/consensus/validation.h>
#include <ibdkit/primitives/block.h>
#include <ibdkit/primitives/block_view.h>
#include <ibdkit/primitives/script_ops.h>
#include <ibdkit/spent/tables.h>
#include <ibdkit/utxo/address.h>

#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <algorithm>
#include <climits>
#include <filesystem>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace nb = nanobind;
using namespace nb::literals;

namespace ibdkit::py {
namespace {

namespace fs = std::filesystem;
using Storage = std::shared_ptr<const void>; // whatever owns the block's bytes
using Spent = std::shared_ptr<const SpentBlock>;

AddressNetwork AddressNet(ChainType t) { return AddressNetworkOf(t); }

[[noreturn]] void NoSpentOutputs(const char* what)
{
    throw PyError{"NoSpentOutputs", std::string(what) + " needs the spent outputs: read the blocks with "
                                                        "read_blocks(..., spent_outputs=True), or attach them with "
                                                        "block.with_spent_outputs([...])"};
}

struct PyOutput {
    Amount value;
    nb::bytes script_pubkey;
    ChainType chain;

    std::string Type() const
    {
        const Script s(reinterpret_cast<const uint8_t*>(script_pubkey.c_str()), script_pubkey.size());
        return std::string(GetTxnOutputType(Solver(s.span())));
    }
    std::optional<std::string> Address() const
    {
        const Script s(reinterpret_cast<const uint8_t*>(script_pubkey.c_str()), script_pubkey.size());
        return EncodeAddress(s, AddressNet(chain));
    }
};

struct PyInput {
    std::string prevout_txid;
    uint32_t prevout_vout;
    nb::bytes script_sig;
    uint32_t sequence;
    nb::list witness;
    ChainType chain{ChainType::MAIN};
    bool has_spent{false};        ///< the block carries spent outputs
    std::optional<Coin> coin;     ///< the coin it spends (none for the coinbase's input)

    const Coin* SpentCoin(const char* what) const
    {
        if (!has_spent) NoSpentOutputs(what);
        return coin ? &*coin : nullptr;
    }
};

struct PyTx {
    Storage storage; // keeps the block's bytes alive
    TxLayout layout;
    ChainType chain;
    Spent spent;         ///< the block's spent outputs, if it has them
    std::size_t index{0}; ///< position in the block

    std::optional<Amount> Fee() const
    {
        if (!spent) NoSpentOutputs("Transaction.fee");
        if (index == 0) return std::nullopt;
        return spent->Fee(index);
    }
    std::optional<double> Feerate() const
    {
        const auto fee = Fee();
        if (!fee) return std::nullopt;
        return double(*fee) / double(VirtualSize(TxWeight(layout)));
    }

    TxView View() const noexcept { return TxView(layout); }
    nb::list Inputs() const
    {
        nb::list out;
        const TxView tx = View(); // the ranges point at the view's layout: keep it alive
        const std::span<const Coin> coins = spent ? spent->SpentBy(index) : std::span<const Coin>{};
        std::size_t i = 0;
        for (InputView in : tx.inputs()) {
            nb::list wit;
            for (ByteSpan item : in.witness) wit.append(Bytes(item));
            std::optional<Coin> coin;
            if (i < coins.size()) coin = coins[i];
            out.append(PyInput{in.prevout_hash().ToHex(), in.prevout_n(), Bytes(in.script_sig), in.sequence, wit, chain,
                               spent != nullptr, std::move(coin)});
            ++i;
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
    Spent spent;               ///< the spent outputs, when read or attached with them

    static PyBlock FromSpent(Spent b)
    {
        const BlockView v = b->view();
        const ChainType c = b->chain();
        const int h = b->height();
        Storage st = b;
        return PyBlock{std::move(st), v, c, h, std::move(b)};
    }
    const SpentBlock& Need(const char* what) const
    {
        if (!spent) NoSpentOutputs(what);
        return *spent;
    }
    /// A copy of this block with `outputs` as its spent outputs (one per input after the coinbase).
    PyBlock WithSpentOutputs(nb::handle outputs, std::optional<int> at, std::optional<std::string> network) const
    {
        std::vector<Coin> coins;
        std::size_t i = 0;
        for (nb::handle h : outputs) coins.push_back(SpentCoinFrom(h, i++));
        std::optional<int> h = at ? at : height;
        if (!h) {
            // BIP34: a version-2 block's coinbase starts with its height.
            const TxView cb = *view.txs().begin();
            if (const auto bip34 = DecodeCoinbaseHeight((*cb.inputs().begin()).script_sig); bip34 && *bip34 >= 0 && *bip34 <= INT32_MAX) {
                h = int(*bip34);
            }
        }
        if (!h) throw PyError{"InvalidArgument", "the block's height is unknown (no BIP34 height in its coinbase): pass height="};
        const ChainType c = network ? ParseNetwork(*network) : chain;
        std::vector<uint8_t> copy(view.bytes().begin(), view.bytes().end());
        auto b = SpentBlock::FromCoins(std::move(copy), *h, coins, c);
        if (!b) Throw(b.error());
        return FromSpent(std::make_shared<const SpentBlock>(std::move(*b)));
    }

    static PyBlock FromBytes(std::vector<uint8_t>&& bytes, ChainType chain, std::optional<int> height)
    {
        auto st = std::make_shared<const std::vector<uint8_t>>(std::move(bytes));
        auto v = BlockView::Parse(ByteSpan(st->data(), st->size()));
        if (!v) Throw(v.error());
        return PyBlock{st, *v, chain, height, nullptr};
    }

    nb::list Transactions() const
    {
        nb::list out;
        std::size_t i = 0;
        for (TxView tx : view.txs()) out.append(PyTx{storage, tx.layout(), chain, spent, i++});
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
    BlockReader(const std::string& path, std::optional<std::string> network, std::optional<int> from_height,
                std::optional<int> to_height)
    {
        // A Core data directory (its block index, or a network's subdirectory) is read through the
        // index; a blocks directory or blk file by following prev-hashes through every record.
        const BlockFileSource source = SourceOf(path, network);
        Result<LocatedChain> located = Error{};
        {
            nb::gil_scoped_release nogil;
            located = LocateBlocks(source);
        }
        if (!located) Throw(located.error());
        m_chain = std::move(*located);
        m_reader = std::make_unique<BlockFileReader>(m_chain.files, m_chain.key);
        // The range is a seek through the chain's positions: no block below it is read.
        m_next = std::max(from_height.value_or(0), m_chain.base_height);
        m_last = std::min(to_height.value_or(INT_MAX), m_chain.TipHeight());
    }

    /// The blocks left to read in the range.
    std::size_t Size() const noexcept { return m_next > m_last ? 0 : std::size_t(m_last - m_next + 1); }
    PyBlock Next()
    {
        if (m_next > m_last) throw nb::stop_iteration();
        const int height = m_next;
        Result<std::vector<uint8_t>> bytes = Error{};
        {
            nb::gil_scoped_release nogil;
            bytes = ReadCheckedBlock(*m_reader, m_chain, height);
        }
        if (!bytes) Throw(bytes.error());
        ++m_next;
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
        d["block_bytes_read"] = m_reader->bytes_read(); // the blocks read so far, not the scan's headers
        // A running node's datadir: read through a snapshot of its block index, consistent up to here.
        d["live_snapshot_height"] = m_chain.live ? nb::object(nb::int_(m_chain.TipHeight())) : nb::none();
        return d;
    }

private:
    LocatedChain m_chain;
    std::unique_ptr<BlockFileReader> m_reader;
    int m_next{0};
    int m_last{-1};
};

} // namespace

SpentReader::SpentReader(const std::string& path, std::optional<std::string> network, std::optional<int> from_height,
                         std::optional<int> to_height)
{
    SpentReaderOptions o;
    o.source = SourceOf(path, network);
    o.from_height = from_height.value_or(0);
    o.to_height = to_height;
    Result<std::unique_ptr<SpentBlockReader>> r = Error{};
    {
        nb::gil_scoped_release nogil;
        r = SpentBlockReader::Open(o);
    }
    if (!r) Throw(r.error());
    m_reader = std::move(*r);
}

std::shared_ptr<const SpentBlock> SpentReader::NextSpent()
{
    Result<std::optional<SpentBlock>> b = Error{};
    {
        nb::gil_scoped_release nogil;
        b = m_reader->Next();
    }
    if (!b) Throw(b.error());
    if (!*b) return nullptr;
    return std::make_shared<const SpentBlock>(std::move(**b));
}

std::shared_ptr<const SpentBlock> SpentOf(nb::handle block)
{
    if (!nb::isinstance<PyBlock>(block)) return nullptr;
    return nb::cast<const PyBlock&>(block).spent;
}

namespace {

/// Output, Input and Transaction: the views a Block hands out.
void BindTransactionViews(nb::module_& m)
{
    nb::class_<PyOutput>(m, "Output", "A transaction output.")
        .def_ro("value", &PyOutput::value, "Amount in satoshis.")
        .def_ro("script_pubkey", &PyOutput::script_pubkey, "The output script (bytes).")
        .def_prop_ro("script_type", &PyOutput::Type, "Core's TxoutType name ('witness_v0_keyhash', ...).")
        .def_prop_ro("address", &PyOutput::Address,
                     "Address of the script on the block's network, None if it has none (P2PK, OP_RETURN, ...).")
        .def("__repr__", [](const PyOutput& o) {
            return "<Output " + std::to_string(o.value) + " sat " + o.Type() + ">";
        });

    nb::class_<PyInput>(m, "Input", "A transaction input.")
        .def_ro("prevout_txid", &PyInput::prevout_txid, "Txid of the spent output (hex, display order).")
        .def_ro("prevout_vout", &PyInput::prevout_vout, "Index of the spent output.")
        .def_ro("script_sig", &PyInput::script_sig, "scriptSig (bytes).")
        .def_ro("sequence", &PyInput::sequence, "nSequence.")
        .def_ro("witness", &PyInput::witness, "Witness stack items (list of bytes).")
        .def_prop_ro("value", [](const PyInput& i) -> std::optional<Amount> {
            const Coin* c = i.SpentCoin("Input.value");
            return c ? std::optional<Amount>(c->out.value) : std::nullopt; },
            "Value of the spent coin in satoshis (None for a coinbase input). Needs spent outputs.")
        .def_prop_ro("script_pubkey", [](const PyInput& i) -> std::optional<nb::bytes> {
            const Coin* c = i.SpentCoin("Input.script_pubkey");
            return c ? std::optional<nb::bytes>(Bytes(c->out.script_pubkey.span())) : std::nullopt; },
            "Output script of the spent coin (bytes; None for a coinbase input). Needs spent outputs.")
        .def_prop_ro("script_type", [](const PyInput& i) -> std::optional<std::string> {
            const Coin* c = i.SpentCoin("Input.script_type");
            return c ? std::optional<std::string>(GetTxnOutputType(Solver(c->out.script_pubkey.span()))) : std::nullopt; },
            "Core's TxoutType name of the spent coin's script. Needs spent outputs.")
        .def_prop_ro("address", [](const PyInput& i) -> std::optional<std::string> {
            const Coin* c = i.SpentCoin("Input.address");
            return c ? EncodeAddress(c->out.script_pubkey, AddressNet(i.chain)) : std::nullopt; },
            "Address of the spent coin's script on the block's network, None if it has none. Needs spent outputs.")
        .def_prop_ro("height", [](const PyInput& i) -> std::optional<uint32_t> {
            const Coin* c = i.SpentCoin("Input.height");
            return c ? std::optional<uint32_t>(c->height) : std::nullopt; },
            "Height of the block that created the spent coin. Needs spent outputs.")
        .def_prop_ro("coinbase", [](const PyInput& i) -> std::optional<bool> {
            const Coin* c = i.SpentCoin("Input.coinbase");
            return c ? std::optional<bool>(c->coinbase) : std::nullopt; },
            "Whether the spent coin is a coinbase output (Coin.coinbase). Needs spent outputs.")
        .def_prop_ro("is_coinbase", [](const PyInput& i) -> std::optional<bool> {
            WarnRenamed("Input.is_coinbase", "Input.coinbase");
            const Coin* c = i.SpentCoin("Input.is_coinbase");
            return c ? std::optional<bool>(c->coinbase) : std::nullopt; },
            "Deprecated spelling of Input.coinbase.")
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
        .def_prop_ro("fee", &PyTx::Fee, "Spent values minus output values in satoshis (None for the coinbase). Needs spent outputs.")
        .def_prop_ro("feerate", &PyTx::Feerate, "fee / vsize in sat/vB (None for the coinbase). Needs spent outputs.")
        .def_prop_ro("raw", [](const PyTx& t) { return Bytes(t.View().bytes()); }, "Serialized bytes (a copy).")
        .def("__repr__", [](const PyTx& t) { return "<Transaction " + t.View().ComputeTxid().ToHex() + ">"; });
}

} // namespace

void BindBlocks(nb::module_& m)
{
    BindTransactionViews(m);

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
        .def_prop_ro("has_spent_outputs", [](const PyBlock& b) { return b.spent != nullptr; },
                     "Whether the block carries the coins its inputs spend (fees, input values).")
        .def_prop_ro("fees", [](const PyBlock& b) { return b.Need("Block.fees").fees(); },
                     "Sum of the transactions' fees in satoshis. Needs spent outputs.")
        .def_prop_ro("subsidy", [](const PyBlock& b) { return b.Need("Block.subsidy").subsidy(); },
                     "Core's GetBlockSubsidy at the block's height on its network. Needs spent outputs.")
        .def_prop_ro("coinbase_value", [](const PyBlock& b) {
            if (b.spent) return b.spent->coinbase_value();
            const TxView coinbase = *b.view.txs().begin(); // the output range points into it: keep it alive
            Amount v = 0;
            for (OutputView o : coinbase.outputs()) v += o.value;
            return v; }, "Sum of the coinbase's outputs in satoshis.")
        .def("with_spent_outputs", &PyBlock::WithSpentOutputs, "spent_outputs"_a, "height"_a = nb::none(), "network"_a = nb::none(),
             "A copy of the block carrying `spent_outputs`: one per input after the coinbase, in block order, in any form "
             "verify_input takes (with 'creation_height'/'height' and 'is_coinbase' where known). Checked against the "
             "block: counts, Core's amount ranges, coinbase within subsidy + fees (ibdkit.Error otherwise). height: "
             "default the block's, else its BIP34 height.")
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

    nb::class_<SpentReader>(m, "SpentBlockReader", "Blocks with their spent outputs in height order (read_blocks(..., spent_outputs=True)).")
        .def(nb::init<const std::string&, std::optional<std::string>, std::optional<int>, std::optional<int>>(), "path"_a,
             "network"_a = nb::none(), "from_height"_a = nb::none(), "to_height"_a = nb::none())
        .def("__iter__", [](nb::handle self) { return self; })
        .def("__next__", [](SpentReader& r) {
            auto b = r.NextSpent();
            if (!b) throw nb::stop_iteration();
            return PyBlock::FromSpent(std::move(b));
        })
        .def_prop_ro("network", [](const SpentReader& r) { return std::string(ChainTypeName(r.chain())); })
        .def_prop_ro("first_height", &SpentReader::first_height)
        .def_prop_ro("last_height", &SpentReader::last_height, "The last height it will read, as far as known (-1: not yet).");

    nb::class_<BlockReader>(m, "BlockReader", "Blocks of a blk directory in chain order.")
        .def(nb::init<const std::string&, std::optional<std::string>, std::optional<int>, std::optional<int>>(), "path"_a,
             "network"_a = nb::none(), "from_height"_a = nb::none(), "to_height"_a = nb::none())
        .def("__len__", &BlockReader::Size)
        .def("__iter__", [](nb::handle self) { return self; })
        .def("__next__", &BlockReader::Next)
        .def_prop_ro("network", [](const BlockReader& r) { return std::string(ChainTypeName(r.chain())); })
        .def_prop_ro("scan", &BlockReader::Stats, "What the scan of the files found (records, orphans, ...).");
}

} // namespace ibdkit::py

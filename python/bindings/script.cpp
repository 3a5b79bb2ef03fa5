// Script verification for Python: one input (verify_input) or every input of a block
// (Block.verify_scripts), through the library's VerifyInput and GetBlockScriptFlags
// (include/ibdkit/script/verify.h, consensus/script_flags.h), with Core's error strings and reject reasons.
//
// Transactions and blocks come in as bytes or as the package's objects (their `raw` bytes, one
// copy); spent outputs as (value, script_pubkey) pairs, objects with .value/.script_pubkey
// (ibdkit.Output, ibdkit.Coin) or dicts in the shape of Core's spent-output JSON ({"value",
// "script_pubkey"}, optionally under "txout"; the script as bytes or hex).
#include "script.h"

#include "errors.h"

#include <ibdkit/chain/params.h>
#include <ibdkit/consensus/script_flags.h>
#include <ibdkit/encoding/hex.h>
#include <ibdkit/primitives/block.h>
#include <ibdkit/primitives/script_ops.h>
#include <ibdkit/primitives/transaction.h>
#include <ibdkit/script/script_error.h>
#include <ibdkit/script/verify.h>

#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <climits>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace nb = nanobind;
using namespace nb::literals;

namespace ibdkit::py {
namespace {

/// Every consensus flag a block carries today (GetBlockScriptFlags of a block above every
/// activation height): the default when neither flags nor a height are given.
constexpr ScriptFlags MODERN_BLOCK_FLAGS = SCRIPT_VERIFY_P2SH | SCRIPT_VERIFY_DERSIG | SCRIPT_VERIFY_NULLDUMMY |
                                           SCRIPT_VERIFY_CHECKLOCKTIMEVERIFY | SCRIPT_VERIFY_CHECKSEQUENCEVERIFY |
                                           SCRIPT_VERIFY_WITNESS | SCRIPT_VERIFY_TAPROOT;

/// The result of verify_input (and one failing input of Block.verify_scripts).
struct PyVerdict {
    ScriptError error{ScriptError::OK};
    ScriptFlags flags{SCRIPT_VERIFY_NONE};

    bool ok() const noexcept { return error == ScriptError::OK; }
    std::optional<std::string> Reason() const
    {
        if (ok()) return std::nullopt;
        return InputVerdict{error}.BlockRejectReason();
    }
};

ChainType Network(const std::string& name)
{
    auto t = ParseChainType(name);
    if (!t) throw PyError{"InvalidArgument", "unknown network '" + name + "' (main, test, testnet4, signet, regtest)"};
    return *t;
}

/// Bytes of a bytes-like object (bytes, bytearray, memoryview), or nullopt for anything else.
std::optional<std::vector<uint8_t>> BytesLike(nb::handle h)
{
    if (nb::isinstance<nb::bytes>(h)) {
        const auto b = nb::borrow<nb::bytes>(h);
        const auto* p = reinterpret_cast<const uint8_t*>(b.c_str());
        return std::vector<uint8_t>(p, p + b.size());
    }
    if (nb::isinstance<nb::bytearray>(h) || PyMemoryView_Check(h.ptr())) {
        PyObject* copy = PyBytes_FromObject(h.ptr());
        if (!copy) throw nb::python_error();
        return BytesLike(nb::steal<nb::bytes>(copy));
    }
    return std::nullopt;
}

Transaction TxFrom(nb::handle tx)
{
    std::optional<std::vector<uint8_t>> bytes = BytesLike(tx);
    if (!bytes && nb::hasattr(tx, "raw")) bytes = BytesLike(tx.attr("raw"));
    if (!bytes) throw PyError{"InvalidArgument", "tx must be bytes or an ibdkit.Transaction"};
    auto decoded = DecodeTransaction(*bytes);
    if (!decoded) Throw(decoded.error());
    return std::move(*decoded);
}

Script ScriptFrom(nb::handle h, std::size_t i)
{
    if (nb::isinstance<nb::str>(h)) {
        auto b = ParseHex(nb::cast<std::string>(h));
        if (!b) throw PyError{"InvalidArgument", "spent output " + std::to_string(i) + ": script_pubkey is not hex"};
        return Script(std::span<const uint8_t>(*b));
    }
    auto b = BytesLike(h);
    if (!b) throw PyError{"InvalidArgument", "spent output " + std::to_string(i) + ": script_pubkey must be bytes or hex"};
    return Script(std::span<const uint8_t>(*b));
}

Amount ValueFrom(nb::handle h, std::size_t i)
{
    if (!nb::isinstance<nb::int_>(h)) {
        throw PyError{"InvalidArgument", "spent output " + std::to_string(i) + ": value must be an int (satoshis)"};
    }
    return nb::cast<Amount>(h);
}

TxOut OutputFrom(nb::handle h, std::size_t i)
{
    TxOut o;
    if (nb::isinstance<nb::tuple>(h) || nb::isinstance<nb::list>(h)) {
        if (nb::len(h) != 2) {
            throw PyError{"InvalidArgument", "spent output " + std::to_string(i) + ": expected (value, script_pubkey)"};
        }
        o.value = ValueFrom(h[0], i);
        o.script_pubkey = ScriptFrom(h[1], i);
    } else if (nb::isinstance<nb::dict>(h)) {
        nb::dict d = nb::borrow<nb::dict>(h);
        if (d.contains("txout")) {
            nb::object inner = d["txout"];
            if (!nb::isinstance<nb::dict>(inner)) {
                throw PyError{"InvalidArgument", "spent output " + std::to_string(i) + ": \"txout\" is not a dict"};
            }
            d = nb::borrow<nb::dict>(inner);
        }
        if (!d.contains("value") || !d.contains("script_pubkey")) {
            throw PyError{"InvalidArgument", "spent output " + std::to_string(i) + ": dict without value and script_pubkey"};
        }
        o.value = ValueFrom(d["value"], i);
        o.script_pubkey = ScriptFrom(d["script_pubkey"], i);
    } else if (nb::hasattr(h, "value") && nb::hasattr(h, "script_pubkey")) {
        o.value = ValueFrom(h.attr("value"), i);
        o.script_pubkey = ScriptFrom(h.attr("script_pubkey"), i);
    } else {
        throw PyError{"InvalidArgument", "spent output " + std::to_string(i) +
                                             ": expected (value, script_pubkey), an object with .value and "
                                             ".script_pubkey, or a dict"};
    }
    return o;
}

/// An int field of a spent output given as a dict (directly or beside "txout") or an object.
std::optional<int64_t> IntField(nb::handle h, const char* name)
{
    nb::object v;
    if (nb::isinstance<nb::dict>(h)) {
        nb::dict d = nb::borrow<nb::dict>(h);
        if (!d.contains(name)) return std::nullopt;
        v = d[name];
    } else if (!nb::isinstance<nb::tuple>(h) && !nb::isinstance<nb::list>(h) && nb::hasattr(h, name)) {
        v = h.attr(name);
    } else {
        return std::nullopt;
    }
    if (v.is_none()) return std::nullopt;
    if (nb::isinstance<nb::bool_>(v)) return nb::cast<bool>(v) ? 1 : 0;
    if (!nb::isinstance<nb::int_>(v)) throw PyError{"InvalidArgument", std::string(name) + " must be an int"};
    return nb::cast<int64_t>(v);
}

std::vector<TxOut> OutputsFrom(nb::handle seq)
{
    std::vector<TxOut> out;
    std::size_t i = 0;
    for (nb::handle h : seq) out.push_back(OutputFrom(h, i++));
    return out;
}

/// The flags: given (Core's names or an int), else the block's (GetBlockScriptFlags of network,
/// height and hash), else those of a modern block.
ScriptFlags ResolveFlags(nb::handle flags, const std::string& network, std::optional<int> height,
                         std::optional<std::string> block_hash)
{
    if (!flags.is_none()) {
        if (nb::isinstance<nb::str>(flags)) {
            const auto s = nb::cast<std::string>(flags);
            auto f = ParseScriptFlags(s);
            if (!f) throw PyError{"InvalidArgument", "unknown script flag in '" + s + "' (Core's names: P2SH,WITNESS,...)"};
            return *f;
        }
        if (nb::isinstance<nb::int_>(flags)) {
            const auto v = nb::cast<int64_t>(flags);
            if (v < 0 || v >= int64_t(SCRIPT_VERIFY_END_MARKER)) {
                throw PyError{"InvalidArgument", "flags " + std::to_string(v) + " out of range"};
            }
            return ScriptFlags(v);
        }
        throw PyError{"InvalidArgument", "flags must be a string of Core's flag names, an int or None"};
    }
    const ChainParams& params = GetChainParams(Network(network));
    BlockHash hash;
    if (block_hash) {
        auto h = BlockHash::FromHex(*block_hash);
        if (!h) throw PyError{"InvalidArgument", "block_hash must be 64 hex digits"};
        hash = *h;
    }
    if (!height && !block_hash) return MODERN_BLOCK_FLAGS;
    // A hash alone: that block's flags above every activation height.
    return GetBlockScriptFlags(params.consensus, height ? *height : INT_MAX, hash);
}

PyVerdict VerifyOne(nb::handle tx_obj, uint32_t index, nb::handle spent_obj, nb::handle flags_obj, const std::string& network,
                    std::optional<int> height, std::optional<std::string> block_hash)
{
    const Transaction tx = TxFrom(tx_obj);
    const std::vector<TxOut> spent = OutputsFrom(spent_obj);
    const ScriptFlags flags = ResolveFlags(flags_obj, network, height, block_hash);
    if (index >= tx.vin().size()) {
        throw PyError{"InvalidArgument", "input " + std::to_string(index) + " of a transaction with " +
                                             std::to_string(tx.vin().size()) + " inputs"};
    }
    if (spent.size() != tx.vin().size()) {
        throw PyError{"InvalidArgument", std::to_string(spent.size()) + " spent outputs for a transaction with " +
                                             std::to_string(tx.vin().size()) + " inputs (one per input, in order)"};
    }
    InputVerdict v;
    {
        nb::gil_scoped_release nogil;
        v = VerifyInput(tx, index, spent, flags);
    }
    return PyVerdict{v.error, flags};
}

/// Block.verify_scripts: every non-coinbase input against `spent` (one per such input, in block
/// order, as `ibdkit block verify-scripts --spent` takes them); a list of dicts for failing inputs.
nb::list VerifyBlock(nb::handle self, nb::handle spent_obj, std::optional<std::string> network, std::optional<int> height,
                     nb::handle flags_obj)
{
    auto bytes = BytesLike(self.attr("raw"));
    if (!bytes) throw PyError{"InvalidArgument", "Block.raw is not bytes"};
    auto decoded = DecodeBlock(std::span<const uint8_t>(*bytes));
    if (!decoded) Throw(decoded.error());
    const Block& block = *decoded;
    const std::string net = network ? *network : nb::cast<std::string>(self.attr("network"));
    if (!height) {
        nb::object h = self.attr("height");
        if (!h.is_none()) height = nb::cast<int>(h);
    }
    if (!height && flags_obj.is_none()) {
        std::optional<int64_t> bip34;
        if (block.version >= 2 && !block.vtx.empty() && block.vtx[0].IsCoinBase()) {
            bip34 = DecodeCoinbaseHeight(block.vtx[0].vin()[0].script_sig.span());
        }
        if (!bip34 || *bip34 < 0 || *bip34 > INT_MAX) {
            throw PyError{"InvalidArgument", "the block's height is unknown (not read in chain order, no BIP34 height "
                                             "in its coinbase): pass height="};
        }
        height = int(*bip34);
    }
    const std::string hash_hex = block.GetHash().ToHex();
    const ScriptFlags flags = ResolveFlags(flags_obj, net, height, hash_hex);
    const std::vector<TxOut> spent = OutputsFrom(spent_obj);
    const std::size_t inputs = NonCoinbaseInputCount(block);
    if (spent.size() != inputs) {
        throw PyError{"InvalidArgument", std::to_string(spent.size()) + " spent outputs; the block has " +
                                             std::to_string(inputs) + " non-coinbase inputs (one per input, in block order)"};
    }
    std::vector<BlockInputFailure> failures;
    {
        nb::gil_scoped_release nogil;
        failures = VerifyBlockInputs(block, spent, flags);
    }
    nb::list out;
    for (const BlockInputFailure& f : failures) {
        const PyVerdict v{f.verdict.error, flags};
        nb::dict d;
        d["tx_index"] = f.tx_index;
        d["txid"] = block.vtx[f.tx_index].GetHash().ToHex();
        d["input"] = f.input;
        d["block_input"] = f.block_input;
        d["error"] = std::string(ScriptErrorString(f.verdict.error));
        d["error_name"] = std::string(ScriptErrorName(f.verdict.error));
        d["reason"] = *v.Reason();
        out.append(d);
    }
    return out;
}

} // namespace

Coin SpentCoinFrom(nb::handle h, std::size_t i)
{
    TxOut out = OutputFrom(h, i);
    std::optional<int64_t> height = IntField(h, "creation_height");
    if (!height) height = IntField(h, "height");
    if (height && (*height < 0 || *height > INT32_MAX)) {
        throw PyError{"InvalidArgument", "spent output " + std::to_string(i) + ": height out of range"};
    }
    const bool coinbase = IntField(h, "is_coinbase").value_or(IntField(h, "coinbase").value_or(0)) != 0;
    return Coin(std::move(out), uint32_t(height.value_or(0)), coinbase);
}

void BindScript(nb::module_& m)
{
    nb::class_<PyVerdict>(m, "InputVerdict", "The verdict on one input's scripts (ibdkit.verify_input).")
        .def_prop_ro("ok", &PyVerdict::ok, "True if the input's scripts pass.")
        .def_prop_ro("error", [](const PyVerdict& v) { return std::string(ScriptErrorString(v.error)); },
                     "Core's ScriptErrorString ('No error' when ok).")
        .def_prop_ro("error_name", [](const PyVerdict& v) { return std::string(ScriptErrorName(v.error)); },
                     "The error's name as Core's script test vectors write it ('OK', 'EVAL_FALSE', ...).")
        .def_prop_ro("reason", &PyVerdict::Reason,
                     "Core's reject reason of a block with this input "
                     "('block-script-verify-flag-failed (...)'), None when ok.")
        .def_prop_ro("flags", [](const PyVerdict& v) { return FormatScriptFlags(v.flags); },
                     "The flags the input was verified under (Core's names).")
        .def("__bool__", &PyVerdict::ok)
        .def("__repr__", [](const PyVerdict& v) {
            return "<InputVerdict " + std::string(ScriptErrorName(v.error)) + " flags=" + FormatScriptFlags(v.flags) + ">";
        });

    m.def("_verify_input", &VerifyOne, "tx"_a, "index"_a, "spent_outputs"_a, "flags"_a.none(), "network"_a,
          "height"_a.none(), "block_hash"_a.none());

    m.def(
        "parse_script_flags",
        [](const std::string& names) {
            auto f = ParseScriptFlags(names);
            if (!f) throw PyError{"InvalidArgument", "unknown script flag in '" + names + "'"};
            return uint32_t(*f);
        },
        "names"_a, "Core's flag names ('P2SH,WITNESS', 'NONE', '') as the int of its SCRIPT_VERIFY_* bits.");
    m.def(
        "format_script_flags",
        [](uint32_t flags) {
            if (flags >= uint32_t(SCRIPT_VERIFY_END_MARKER)) throw PyError{"InvalidArgument", "unknown script flag bits"};
            return FormatScriptFlags(ScriptFlags(flags));
        },
        "flags"_a, "Core's names of the SCRIPT_VERIFY_* bits of `flags` ('P2SH,WITNESS', '' for 0).");
    m.def(
        "block_script_flags",
        [](const std::string& network, int height, std::optional<std::string> block_hash) {
            return FormatScriptFlags(ResolveFlags(nb::none(), network, height, std::move(block_hash)));
        },
        "network"_a, "height"_a, "block_hash"_a = nb::none(),
        "Core's GetBlockScriptFlags for the block at `height` (and `block_hash`, for the networks' exception blocks).");

    // A method of Block (bound in module.cpp): the block's raw bytes are decoded once per call.
    nb::object block_type = m.attr("Block");
    block_type.attr("verify_scripts") = nb::cpp_function(
        &VerifyBlock, nb::is_method(), nb::scope(block_type), nb::name("verify_scripts"), "spent_outputs"_a,
        "network"_a = nb::none(), "height"_a = nb::none(), "flags"_a = nb::none(),
        "Verifies every non-coinbase input against spent_outputs (one per such input, in block order) under the "
        "block's flags (GetBlockScriptFlags at its height: chain order, height=, else its BIP34 height); returns the "
        "failing inputs as dicts (tx_index, txid, input, block_input, error, error_name, reason), [] if all pass.");
}

} // namespace ibdkit::py

// `ibdkit block check`, `ibdkit block decode` and `ibdkit block verify-scripts`: a raw block in,
// Core's verdict, Core's getblock (verbosity 2) JSON, or Core's script verdict per input out.
#include "commands.h"
#include "json_output.h"

#include <ibdkit/chain/params.h>
#include <ibdkit/consensus/check.h>
#include <ibdkit/consensus/pow.h>
#include <ibdkit/consensus/script_flags.h>
#include <ibdkit/encoding/hex.h>
#include <ibdkit/primitives/block.h>
#include <ibdkit/primitives/script_ops.h>
#include <ibdkit/script/verify.h>
#include <ibdkit/utxo/stats.h>

#include <nlohmann/json.hpp>

#include <chrono>
#include <cstdio>
#include <ctime>
#include <fstream>
#include <iostream>
#include <iterator>
#include <sstream>

namespace ibdkit::cli {
namespace {

using json = nlohmann::ordered_json;

/// Thrown for unusable input; main prints it and the command exits 2.
struct InputError : std::runtime_error {
    using std::runtime_error::runtime_error;
};

/// Reads FILE or stdin ("-"). Accepts raw bytes, or hex text (as `getblock HASH 0` prints).
std::vector<uint8_t> ReadInput(const std::string& path)
{
    std::vector<uint8_t> data;
    if (path == "-") {
        std::cin >> std::noskipws;
        std::freopen(nullptr, "rb", stdin);
        data.assign(std::istreambuf_iterator<char>(std::cin), std::istreambuf_iterator<char>());
    } else {
        std::ifstream f(path, std::ios::binary);
        if (!f) throw InputError("cannot open '" + path + "': check the path (use - to read standard input)");
        data.assign(std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>());
    }
    if (data.empty()) throw InputError("'" + path + "' is empty: expected a serialized block (raw bytes or hex)");
    // Hex text?
    std::size_t digits = 0;
    bool all_hex = true;
    for (uint8_t c : data) {
        if (std::isxdigit(c)) {
            ++digits;
        } else if (!std::isspace(c)) {
            all_hex = false;
            break;
        }
    }
    if (all_hex && digits >= 160 && digits % 2 == 0) {
        std::vector<uint8_t> out;
        out.reserve(digits / 2);
        int hi = -1;
        for (uint8_t c : data) {
            if (!std::isxdigit(c)) continue;
            const int v = HexDigit(char(c));
            if (hi < 0) {
                hi = v;
            } else {
                out.push_back(uint8_t(hi * 16 + v));
                hi = -1;
            }
        }
        return out;
    }
    return data;
}

Block DecodeOrExplain(const std::vector<uint8_t>& bytes, const std::string& path)
{
    auto block = DecodeBlock(bytes);
    if (!block) {
        std::string hint;
        if (bytes.size() >= 8 && ChainTypeFromMagic({bytes[0], bytes[1], bytes[2], bytes[3]})) {
            hint = " — it starts with a network magic: it looks like a blk*.dat record; strip the 8-byte "
                   "magic+size prefix";
        } else {
            hint = " — expected one serialized block (80-byte header, transaction count, transactions with witness)";
        }
        throw InputError("cannot decode '" + path + "' as a block: " + block.error().message + hint);
    }
    return std::move(*block);
}

ChainType ParseNetwork(const std::string& name)
{
    auto t = ParseChainType(name);
    if (!t) throw CLI::ValidationError("--network", "unknown network '" + name + "' (expected main, test, testnet4, signet or regtest)");
    return *t;
}

std::optional<int64_t> Bip34Height(const Block& b)
{
    if (b.version < 2 || b.vtx.empty() || !b.vtx[0].IsCoinBase()) return std::nullopt;
    return DecodeCoinbaseHeight(b.vtx[0].vin()[0].script_sig.span());
}

struct CheckArgs {
    std::string path;
    std::string network{"main"};
    bool as_json{false};
    bool no_pow{false};
    bool no_merkle{false};
    bool lines{false};
    bool allow_trailing{false};
};

/// Decodes a block; with allow_trailing, as Core's P2P code and C API do: the block is read from the
/// front and bytes after it are ignored (counted in *trailing).
Result<Block> DecodeForCheck(const std::vector<uint8_t>& bytes, bool allow_trailing, std::size_t* trailing)
{
    *trailing = 0;
    if (!allow_trailing) return DecodeBlock(bytes);
    return CatchDecode([&]() -> Block {
        std::size_t used = 0;
        Block b = UnserializeBlockFrom(bytes, &used);
        *trailing = bytes.size() - used;
        return b;
    });
}

/// One compact JSON line per hex block of the input (for differential tests: one process, many blocks).
int RunCheckLines(const CheckArgs& a)
{
    const ChainParams& params = GetChainParams(ParseNetwork(a.network));
    std::ifstream file;
    if (a.path != "-") {
        file.open(a.path);
        if (!file) throw InputError("cannot open '" + a.path + "': check the path (use - to read standard input)");
    }
    std::istream& in = a.path == "-" ? std::cin : file;
    std::string line;
    while (std::getline(in, line)) {
        if (line.empty()) continue;
        json j;
        while (!line.empty() && std::isspace(static_cast<unsigned char>(line.back()))) line.pop_back();
        auto parsed = ParseHex(line);
        if (!parsed) {
            j["decoded"] = false;
            j["error"] = "NotHex";
            std::printf("%s\n", j.dump().c_str());
            continue;
        }
        const std::vector<uint8_t>& bytes = *parsed;
        std::size_t trailing = 0;
        auto block = DecodeForCheck(bytes, a.allow_trailing, &trailing);
        if (trailing) j["trailing_bytes"] = trailing;
        if (!block) {
            j["decoded"] = false;
            j["error"] = ErrcName(block.error().code);
        } else {
            j["decoded"] = true;
            j["hash"] = block->GetHash().ToHex();
            BlockValidationState state;
            const bool valid = CheckBlockRules(*block, state, params.consensus, {!a.no_pow, !a.no_merkle});
            j["valid"] = valid;
            if (!valid) {
                j["reject_reason"] = state.GetRejectReason();
                j["result"] = BlockValidationResultName(state.GetResult());
            }
        }
        std::printf("%s\n", j.dump().c_str());
    }
    return 0;
}

int RunCheck(const CheckArgs& a)
{
    if (a.lines) return RunCheckLines(a);
    const std::string& path = a.path;
    const bool as_json = a.as_json;
    const ChainParams& params = GetChainParams(ParseNetwork(a.network));
    const auto bytes = ReadInput(path);
    Block block = DecodeOrExplain(bytes, path);
    const BlockHash hash = block.GetHash();
    const std::size_t size = bytes.size(), weight = GetBlockWeight(block), stripped = GetBlockStrippedSize(block);
    const std::size_t ntx = block.vtx.size();
    const auto height = Bip34Height(block);

    // Witness commitment (a contextual rule; reported, not part of the verdict).
    BlockValidationState wstate;
    const bool has_commitment = GetWitnessCommitmentIndex(block) != NO_WITNESS_COMMITMENT;
    const bool witness_ok = CheckWitnessMalleation(block, true, wstate);

    BlockValidationState state;
    const bool valid = CheckBlock(std::move(block), state, params.consensus, {!a.no_pow, !a.no_merkle}).has_value();

    if (as_json) {
        json j;
        j["hash"] = hash.ToHex();
        j["network"] = params.name;
        j["size"] = size;
        j["strippedsize"] = stripped;
        j["weight"] = weight;
        j["nTx"] = ntx;
        if (height) j["bip34_height"] = *height;
        j["valid"] = valid;
        if (!valid) {
            j["reject_reason"] = state.GetRejectReason();
            j["debug_message"] = state.GetDebugMessage();
            j["result"] = BlockValidationResultName(state.GetResult());
        }
        j["witness_commitment"] = !has_commitment ? (witness_ok ? "absent" : "absent, " + wstate.GetRejectReason())
                                                  : (witness_ok ? "valid" : wstate.GetRejectReason());
        PrintJsonResult(j);
    } else {
        std::printf("hash          %s\n", hash.ToHex().c_str());
        std::printf("network       %s\n", params.name.c_str());
        std::printf("size          %zu\n", size);
        std::printf("strippedsize  %zu\n", stripped);
        std::printf("weight        %zu\n", weight);
        std::printf("transactions  %zu\n", ntx);
        if (height) std::printf("bip34 height  %lld\n", static_cast<long long>(*height));
        std::printf("witness       %s\n", !has_commitment ? (witness_ok ? "no commitment, no witness data" : "no commitment, unexpected-witness")
                                                          : (witness_ok ? "commitment valid" : wstate.GetRejectReason().c_str()));
        if (valid) {
            std::printf("verdict       valid (CheckBlock)\n");
        } else {
            std::printf("verdict       invalid: %s (%s)\n", state.GetRejectReason().c_str(), state.GetDebugMessage().c_str());
        }
    }
    if (!valid) PrintError("block " + hash.ToHex() + " is invalid: " + state.GetRejectReason());
    return valid ? EXIT_OK : EXIT_INVALID_CHAIN;
}

// Amounts are printed as Core prints them (a JSON number with 8 decimals): nlohmann has no raw
// number token, so they go through a marked string that is unquoted after dumping.
constexpr std::string_view AMOUNT_MARK = "\x01" "amount:";

std::string AmountMarked(Amount v) { return std::string(AMOUNT_MARK) + FormatMoney(v); }

std::string Unmark(const std::string& dumped)
{
    const std::string mark = "\"\\u0001amount:";
    std::string out;
    out.reserve(dumped.size());
    std::size_t pos = 0;
    while (true) {
        const std::size_t at = dumped.find(mark, pos);
        if (at == std::string::npos) break;
        out.append(dumped, pos, at - pos);
        const std::size_t end = dumped.find('"', at + mark.size());
        out.append(dumped, at + mark.size(), end - at - mark.size());
        pos = end + 1;
    }
    out.append(dumped, pos, std::string::npos);
    return out;
}

json TxToJson(const Transaction& tx)
{
    json j;
    j["txid"] = tx.GetHash().ToHex();
    j["hash"] = tx.GetWitnessHash().ToHex();
    j["version"] = tx.version();
    j["size"] = tx.GetTotalSize();
    const std::size_t weight = GetTransactionWeight(tx);
    j["vsize"] = (weight + 3) / 4;
    j["weight"] = weight;
    j["locktime"] = tx.lock_time();
    json vin = json::array();
    for (const TxIn& in : tx.vin()) {
        json o;
        if (tx.IsCoinBase()) {
            o["coinbase"] = HexStr(in.script_sig.span());
        } else {
            o["txid"] = in.prevout.hash.ToHex();
            o["vout"] = in.prevout.n;
            o["scriptSig"] = json{{"asm", ScriptToAsmStr(in.script_sig.span())}, {"hex", HexStr(in.script_sig.span())}};
        }
        if (!in.witness.IsNull()) {
            json w = json::array();
            for (const auto& item : in.witness.stack) w.push_back(HexStr(item));
            o["txinwitness"] = std::move(w);
        }
        o["sequence"] = in.sequence;
        vin.push_back(std::move(o));
    }
    j["vin"] = std::move(vin);
    json vout = json::array();
    for (std::size_t n = 0; n < tx.vout().size(); ++n) {
        const TxOut& out = tx.vout()[n];
        json o;
        o["value"] = AmountMarked(out.value);
        o["n"] = n;
        o["scriptPubKey"] = json{{"asm", ScriptToAsmStr(out.script_pubkey.span())},
                                 {"hex", HexStr(out.script_pubkey.span())},
                                 {"type", GetTxnOutputType(Solver(out.script_pubkey.span()))}};
        vout.push_back(std::move(o));
    }
    j["vout"] = std::move(vout);
    j["hex"] = HexStr(EncodeTransaction(tx));
    return j;
}

int RunDecode(const std::string& path)
{
    const auto bytes = ReadInput(path);
    const Block block = DecodeOrExplain(bytes, path);
    json j;
    j["hash"] = block.GetHash().ToHex();
    j["version"] = block.version;
    char vhex[16];
    std::snprintf(vhex, sizeof(vhex), "%08x", uint32_t(block.version));
    j["versionHex"] = vhex;
    j["merkleroot"] = block.hash_merkle_root.ToHex();
    j["time"] = block.time;
    j["nonce"] = block.nonce;
    char bits[16];
    std::snprintf(bits, sizeof(bits), "%08x", block.bits);
    j["bits"] = bits;
    arith_uint256 target;
    target.SetCompact(block.bits);
    j["target"] = target.GetHex();
    j["difficulty"] = GetDifficulty(block.bits);
    j["nTx"] = block.vtx.size();
    if (!block.hash_prev_block.IsNull()) j["previousblockhash"] = block.hash_prev_block.ToHex();
    j["strippedsize"] = GetBlockStrippedSize(block);
    j["size"] = bytes.size();
    j["weight"] = GetBlockWeight(block);
    json txs = json::array();
    for (const Transaction& tx : block.vtx) txs.push_back(TxToJson(tx));
    j["tx"] = std::move(txs);
    std::printf("%s\n", Unmark(j.dump(2)).c_str());
    return 0;
}

struct VerifyScriptsArgs {
    std::string path;
    std::string spent_path;
    std::string network{"main"};
    int height{-1};
    bool as_json{false};
};

/// The spent outputs of a block's non-coinbase inputs, in block order, from a JSON array whose
/// entries are {"txout": {"value", "script_pubkey"}, …} (the shape of tests/data's
/// block_866342.spent_utxos.json) or plain {"value", "script_pubkey"}.
std::vector<TxOut> ReadSpentOutputs(const std::string& path)
{
    std::ifstream f(path);
    if (!f) throw InputError("cannot open '" + path + "' (--spent): expected a JSON array of spent outputs");
    nlohmann::json doc;
    try {
        doc = nlohmann::json::parse(f);
    } catch (const nlohmann::json::exception& e) {
        throw InputError("'" + path + "' is not JSON: " + e.what());
    }
    if (!doc.is_array()) throw InputError("'" + path + "' must hold a JSON array, one spent output per non-coinbase input");
    std::vector<TxOut> out;
    out.reserve(doc.size());
    for (std::size_t i = 0; i < doc.size(); ++i) {
        const auto& entry = doc[i].contains("txout") ? doc[i]["txout"] : doc[i];
        const auto bad = [&](const std::string& what) {
            return InputError("'" + path + "' entry " + std::to_string(i) + ": " + what +
                              " (expected {\"value\": satoshis, \"script_pubkey\": hex})");
        };
        if (!entry.contains("value") || !entry["value"].is_number_integer()) throw bad("no integer \"value\"");
        if (!entry.contains("script_pubkey") || !entry["script_pubkey"].is_string()) throw bad("no \"script_pubkey\" string");
        auto script = ParseHex(entry["script_pubkey"].get<std::string>());
        if (!script) throw bad("\"script_pubkey\" is not hex");
        TxOut o;
        o.value = entry["value"].get<Amount>();
        o.script_pubkey = Script(*script);
        out.push_back(std::move(o));
    }
    return out;
}

int RunVerifyScripts(const VerifyScriptsArgs& a)
{
    const ChainParams& params = GetChainParams(ParseNetwork(a.network));
    const auto bytes = ReadInput(a.path);
    const Block block = DecodeOrExplain(bytes, a.path);
    const BlockHash hash = block.GetHash();
    int height = a.height;
    if (height < 0) {
        const auto h = Bip34Height(block);
        if (!h) throw InputError("the block's coinbase states no height (BIP34): give it with --height");
        height = int(*h);
    }
    const std::vector<TxOut> spent = ReadSpentOutputs(a.spent_path);
    const std::size_t inputs = NonCoinbaseInputCount(block);
    if (spent.size() != inputs) {
        throw InputError("'" + a.spent_path + "' holds " + std::to_string(spent.size()) + " spent outputs; the block has " +
                         std::to_string(inputs) + " non-coinbase inputs");
    }
    const ScriptFlags flags = GetBlockScriptFlags(params.consensus, height, hash);

    const auto start = std::chrono::steady_clock::now();
    const std::clock_t cpu_start = std::clock();
    const std::vector<BlockInputFailure> failures = VerifyBlockInputs(block, spent, flags);
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    // CPU time too: on a shared machine the wall clock counts other processes' turns.
    const double cpu_seconds = double(std::clock() - cpu_start) / CLOCKS_PER_SEC;
    const double per_second = seconds > 0 ? double(inputs) / seconds : 0.0;
    const double per_cpu_second = cpu_seconds > 0 ? double(inputs) / cpu_seconds : 0.0;
    const bool valid = failures.empty();

    if (a.as_json) {
        json j;
        j["hash"] = hash.ToHex();
        j["network"] = params.name;
        j["height"] = height;
        j["flags"] = FormatScriptFlags(flags);
        j["inputs_checked"] = inputs;
        j["failure_count"] = failures.size();
        json list = json::array();
        for (const BlockInputFailure& f : failures) {
            list.push_back(json{{"txid", block.vtx[f.tx_index].GetHash().ToHex()},
                                {"input", f.input},
                                {"block_input", f.block_input},
                                {"error", ScriptErrorName(f.verdict.error)},
                                {"reject_reason", f.verdict.BlockRejectReason()}});
        }
        j["failures"] = std::move(list);
        j["valid"] = valid;
        if (!valid) j["reject_reason"] = failures.front().verdict.BlockRejectReason();
        j["seconds"] = seconds;
        j["inputs_per_second"] = per_second;
        j["cpu_seconds"] = cpu_seconds;
        j["inputs_per_cpu_second"] = per_cpu_second;
        PrintJsonResult(j);
    } else {
        for (const BlockInputFailure& f : failures) {
            std::printf("failed        tx %s input %u (spent entry %zu): %s\n", block.vtx[f.tx_index].GetHash().ToHex().c_str(), f.input, f.block_input,
                        f.verdict.BlockRejectReason().c_str());
        }
        std::printf("hash          %s\n", hash.ToHex().c_str());
        std::printf("network       %s\n", params.name.c_str());
        std::printf("height        %d\n", height);
        std::printf("flags         %s\n", FormatScriptFlags(flags).c_str());
        std::printf("inputs        %zu checked, %zu failed\n", inputs, failures.size());
        std::printf("time          %.3f s, %.3f s CPU (%.0f inputs/s, %.0f per CPU second; one thread)\n", seconds, cpu_seconds,
                    per_second, per_cpu_second);
        if (valid) {
            std::printf("verdict       valid (every input's scripts pass)\n");
        } else {
            std::printf("verdict       invalid: %s\n", failures.front().verdict.BlockRejectReason().c_str());
        }
    }
    if (!valid) PrintError("block " + hash.ToHex() + " is invalid: " + failures.front().verdict.BlockRejectReason());
    return valid ? EXIT_OK : EXIT_INVALID_CHAIN;
}

template <typename Fn>
void Guarded(Fn&& fn)
{
    try {
        ExitCode() = fn();
    } catch (const InputError& e) {
        PrintError(e.what());
        ExitCode() = EXIT_FAILED;
    }
}

const CommandRegistrar block_cmd([](CLI::App& app) {
    auto* cmd = app.add_subcommand("block", "Decode and check raw blocks (Core's CheckBlock, getblock JSON, script verification)");
    cmd->require_subcommand(1);

    auto* check = cmd->add_subcommand("check", "Decode a raw block and run Core's context-free checks; exit 0 valid, 2 invalid, 1 unreadable or undecodable");
    auto args = std::make_shared<CheckArgs>();
    check->add_option("FILE", args->path, "Raw block file (binary or hex), or - for standard input")->required();
    check->add_option("--network", args->network, "main, test, testnet4, signet or regtest")->capture_default_str();
    check->add_flag("--json", args->as_json, "Print the result as JSON");
    check->add_flag("--no-pow", args->no_pow, "Skip the proof-of-work check and, on signet, the block solution (Core's fCheckPOW=false)");
    check->add_flag("--no-merkle", args->no_merkle, "Skip the merkle root check (Core's fCheckMerkleRoot=false)");
    check->add_flag("--allow-trailing", args->allow_trailing,
                    "With --lines: ignore bytes after the block, as Core's P2P code and C API do (default: TrailingData error)");
    check->add_flag("--lines", args->lines, "FILE holds one hex block per line; print one JSON line per block");
    check->callback([args] { Guarded([&] { return RunCheck(*args); }); });

    auto* decode = cmd->add_subcommand("decode", "Print a raw block as JSON in the shape of Core's getblock (verbosity 2)");
    auto dpath = std::make_shared<std::string>();
    decode->add_option("FILE", *dpath, "Raw block file (binary or hex), or - for standard input")->required();
    decode->callback([dpath] { Guarded([&] { return RunDecode(*dpath); }); });

    auto* vs = cmd->add_subcommand(
        "verify-scripts",
        "Verify every input's scripts against the outputs it spends, under the block's script flags (Core's "
        "GetBlockScriptFlags and CScriptCheck); print each failing input and a summary. Exit 0 if all pass, 2 if an "
        "input fails (with Core's reject reason of the first), 1 on unusable input");
    auto vargs = std::make_shared<VerifyScriptsArgs>();
    vs->add_option("FILE", vargs->path, "Raw block file (binary or hex), or - for standard input")->required();
    vs->add_option("--spent", vargs->spent_path,
                   "JSON array of the outputs the block's non-coinbase inputs spend, in block order: entries "
                   "{\"txout\": {\"value\": sats, \"script_pubkey\": hex}} or {\"value\", \"script_pubkey\"}")
        ->required();
    vs->add_option("--network", vargs->network, "main, test, testnet4, signet or regtest")->capture_default_str();
    vs->add_option("--height", vargs->height, "The block's height (default: the BIP34 height in its coinbase)")->check(IntegerIn(0, MAX_HEIGHT));
    vs->add_flag("--json", vargs->as_json, "Print the result as JSON");
    vs->callback([vargs] { Guarded([&] { return RunVerifyScripts(*vargs); }); });
});

} // namespace
} // namespace ibdkit::cli

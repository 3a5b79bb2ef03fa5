// What the module's files share (bindings.h): argument parsing, bytes, result fields as dicts.
#include "bindings.h"

#include <ibdkit/blockfile/locate.h>
#include <ibdkit/threads.h>

#include <string>
#include <type_traits>
#include <variant>

namespace nb = nanobind;

namespace ibdkit::py {

std::vector<std::string> NetworkSubfolders()
{
    std::vector<std::string> out;
    for (int c = 0; c <= int(ChainType::REGTEST); ++c) { // ChainType's order, REGTEST last
        const std::filesystem::path sub = NetworkDataDir({}, ChainType(c));
        if (!sub.empty()) out.push_back(sub.string());
    }
    return out;
}

namespace {

bool LooksLikeDatadir(const std::filesystem::path& dir)
{
    bool datadir = std::filesystem::is_directory(dir / "blocks" / "index");
    for (const std::string& net : NetworkSubfolders()) datadir = datadir || std::filesystem::is_directory(dir / net / "blocks");
    return datadir;
}

} // namespace

BlockFileSource SourceOf(const std::filesystem::path& path, const std::optional<std::string>& network)
{
    BlockFileSource source;
    if (network) source.chain = ParseNetwork(*network); // a bad name is refused before the path is looked at
    if (LooksLikeDatadir(path)) {
        source.datadir = path;
    } else {
        source.blocks_dir = std::filesystem::is_directory(path / "blocks") ? path / "blocks" : path;
    }
    return source;
}

void WarnRenamed(const char* old_name, const char* new_name)
{
    const std::string msg = std::string(old_name) + " is deprecated: use " + new_name;
    if (PyErr_WarnEx(PyExc_DeprecationWarning, msg.c_str(), 1) != 0) throw nb::python_error();
}

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

std::optional<BlockHash> ParseAssumeValidArg(const std::optional<std::string>& value)
{
    if (!value) return std::nullopt;
    if (*value == "0") return BlockHash{};
    auto h = BlockHash::FromHex(*value);
    if (!h) throw PyError{"InvalidArgument", "assumevalid must be a block hash (64 hex digits) or \"0\", got '" + *value + "'"};
    return *h;
}

unsigned ThreadsArg(unsigned threads)
{
    if (threads > MAX_THREADS) {
        throw PyError{"InvalidArgument", "threads must be in 0.." + std::to_string(MAX_THREADS) + " (0: every core the process may run on)"};
    }
    return threads;
}

RunSettings SettingsOf(std::size_t dbcache, const std::string& policy, unsigned threads,
                       const std::optional<std::string>& assumevalid, bool skip_scripts,
                       const std::optional<std::string>& minimum_chain_work)
{
    RunSettings s;
    s.dbcache_mib = dbcache;
    s.policy = ParsePolicyName(policy);
    s.threads = ThreadsArg(threads);
    s.assumevalid = ParseAssumeValidArg(assumevalid);
    s.skip_scripts = skip_scripts;
    if (minimum_chain_work) {
        auto work = ParseMinimumChainWork(*minimum_chain_work);
        if (!work) throw PyError{"InvalidArgument", "minimum_chain_work: " + work.error().message};
        s.minimum_chain_work = *work;
    }
    if (auto bad = CheckRunSettings(s)) throw PyError{"InvalidArgument", bad->message};
    return s;
}

/// A result value (run/result_fields.h) as the Python object of its type.
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

} // namespace ibdkit::py

// What the files of the Python module share (python/bindings): argument parsing, the progress
// bridge, and one Bind function per area, called from NB_MODULE in module.cpp.
#pragma once

#include "errors.h"

#include <ibdkit/blockfile/source.h>
#include <ibdkit/chain/params.h>
#include <ibdkit/memory/policy_id.h>
#include <ibdkit/primitives/block_view.h>
#include <ibdkit/run/result_fields.h>
#include <ibdkit/settings/run_settings.h>

#include <nanobind/nanobind.h>

#include <atomic>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace ibdkit::py {

/// A copy of `s` as Python bytes.
nanobind::bytes Bytes(ByteSpan s);
/// The network of a name ("main", "test", "testnet4", "signet", "regtest"); InvalidArgument else.
ChainType ParseNetwork(const std::string& name);
/// The buffer policy of a name; InvalidArgument else.
PolicyId ParsePolicyName(const std::string& name);
/// An assumevalid argument: None, the network's default (nullopt); "0", verify every script (a
/// null hash); a block hash in hex. InvalidArgument else.
std::optional<BlockHash> ParseAssumeValidArg(const std::optional<std::string>& value);
/// A `threads` argument: 0..MAX_THREADS (0: every core the process may run on), InvalidArgument
/// else.
unsigned ThreadsArg(unsigned threads);
/// The run settings (settings/run_settings.h) from the keyword arguments every connecting or
/// checking function takes: `dbcache` (MiB), `policy` (a name), `threads` (as ThreadsArg),
/// `assumevalid` (as ParseAssumeValidArg), `skip_scripts` and `minimum_chain_work` (hex, as
/// ParseMinimumChainWork; None: the network's). InvalidArgument with the library's words if one is
/// not valid or they do not go together (CheckRunSettings), as the CLI refuses them.
/// `_ibdkit._run_settings`, which ibdkit.replay and ibdkit.sync call first.
RunSettings SettingsOf(std::size_t dbcache, const std::string& policy, unsigned threads,
                       const std::optional<std::string>& assumevalid, bool skip_scripts,
                       const std::optional<std::string>& minimum_chain_work = std::nullopt);
/// Core's network folders inside a data directory, main's (the directory itself) left out, from
/// the library's one table (NetworkDataDir): `_ibdkit.NETWORK_SUBFOLDERS`.
std::vector<std::string> NetworkSubfolders();
/// A path as every function taking "a datadir or a blocks directory" reads it: a Core data
/// directory (its block index, or a network's subdirectory) as the source's datadir, else blk files
/// (the path's `blocks` folder when it has one, else the path itself) as its blocks_dir; `network`
/// parsed (InvalidArgument if unknown), nullopt left to the blocks.
BlockFileSource SourceOf(const std::filesystem::path& path, const std::optional<std::string>& network);
/// Warns (DeprecationWarning, at the caller's line) that `old_name` is spelled `new_name` now;
/// raises if warnings are turned into errors. The old spellings stay readable, not silently.
void WarnRenamed(const char* old_name, const char* new_name);
/// A run's or a UTXO set's result fields as a dict, in their order: the CLI's --json names and types.
nanobind::dict FieldsDict(const ResultFields& fields);
/// One result value (run/result_fields.h) as the Python object of its type.
nanobind::object FieldValue(const ResultValue& value);

/// Calls a Python progress callback from the library's thread, turns Ctrl-C into a clean stop and
/// keeps an exception raised by the callback for after the run.
class ProgressBridge {
public:
    explicit ProgressBridge(nanobind::object cb) : m_cb(std::move(cb)) {}
    template <typename Fill>
    void Call(Fill&& fill)
    {
        nanobind::gil_scoped_acquire gil;
        if (PyErr_CheckSignals() != 0) {
            m_error = std::make_unique<nanobind::python_error>();
            m_stop = true;
            return;
        }
        if (m_cb.is_none() || m_error) return;
        try {
            nanobind::dict d;
            fill(d);
            m_cb(d);
        } catch (nanobind::python_error& e) {
            m_error = std::make_unique<nanobind::python_error>(std::move(e));
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
            throw nanobind::python_error();
        }
    }

private:
    nanobind::object m_cb;
    std::atomic<bool> m_stop{false};
    std::unique_ptr<nanobind::python_error> m_error;
};

/// Output, Input, Transaction, Block, decode_block and BlockReader (blocks.cpp).
void BindBlocks(nanobind::module_& m);
/// _replay, _sync and policies (engine.cpp).
void BindEngine(nanobind::module_& m);
/// Coin, _Chainstate and its iterators (chainstate.cpp).
void BindChainstate(nanobind::module_& m);
/// spent_tables.cpp: the block tables as Arrow batches (_TableBatches, _table_columns).
void BindSpentTables(nanobind::module_& m);
/// swiftsync.cpp: the salt, hintsfiles, the range check, partials and their unspent runs.
void BindSwiftSync(nanobind::module_& m);

} // namespace ibdkit::py

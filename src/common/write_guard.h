// src/common/write_guard.h — where ibdkit may write: never into what a user keeps.
//
// Every path ibdkit writes (a chainstate it builds, an export file, an undo directory) is checked
// here before anything is read or written, by the library itself, so that the CLI, the Python
// module and any other caller get the same refusals:
//  - nothing inside a Bitcoin Core data directory, recognised by its layout (CoreDataDirAround),
//    whichever directory the caller named as the data directory, if any;
//  - a chainstate only where ibdkit made one (CHAINSTATE_MARKER), or in a new or empty directory;
//    never into a LevelDB database that ibdkit did not create, nor a directory holding other files;
//  - an output file only in an existing directory, and never where a directory is; temporary
//    files only in an existing directory; a folder of ibdkit's own (a generated chain) only where
//    it holds nothing but what ibdkit writes there.
// Every refusal is Errc::Refused, with a message that names the path, the reason and what to do.
#pragma once

#include <ibdkit/error.h>

#include <cstddef>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <string_view>

namespace ibdkit {

/// The file ibdkit writes into every chainstate directory it creates. LevelDB ignores files it did
/// not name, and so does Bitcoin Core, so a marked chainstate stays a valid Core chainstate.
inline constexpr const char* CHAINSTATE_MARKER = "IBDKIT_CHAINSTATE";

/// The file a writer that fills a new chainstate in one go (SwiftSync's bulk load) puts into it
/// before anything else and removes once the load is committed (FinishChainstate). A folder
/// holding it is the skeleton of an interrupted run, which claims no block: that writer's rerun
/// clears it and starts over (ClearUnfinishedChainstate); every other writer and every reader
/// refuses it.
inline constexpr const char* UNFINISHED_CHAINSTATE_MARKER = "IBDKIT_UNFINISHED";

/// The file ibdkit writes into the blocks folder of every data directory it writes (`sync
/// --datadir`, blockfile/datadir_writer.h): that folder's index is not Core's to guard, and a
/// later sync may append to it. Core ignores the file.
inline constexpr const char* DATADIR_MARKER = "IBDKIT_DATADIR";

/// True when `path` is `dir` or lies under it (both made absolute, symbolic links resolved as far
/// as they exist): how a writer keeps one of its outputs out of another, or out of its input
/// (replay refuses an undo directory inside its datadir or blocks dir). Never throws.
bool IsSameOrInside(const std::filesystem::path& path, const std::filesystem::path& dir);

/// The Bitcoin Core data directory (or blocks directory) that `path` is, or lies inside, by its
/// layout: a directory holding `bitcoin.conf`, `peers.dat`, `blocks/index/` or a network's
/// `testnet3|testnet4|signet|regtest/blocks/index/`, or a blocks directory (`index/` beside
/// `blkNNNNN.dat` files). Looks at `path` (made absolute, symbolic links resolved where they exist)
/// and each of its parents; nullopt when none is one. Never throws.
std::optional<std::filesystem::path> CoreDataDirAround(const std::filesystem::path& path);

/// Whether ibdkit may create, resume or replace a chainstate at `dir`: nullopt when `dir` does not
/// exist, is an empty directory, or holds CHAINSTATE_MARKER (an unfinished one too: CoinsDB::Open
/// refuses that, unless its writer clears it first); otherwise Errc::Refused saying why (a
/// Core data directory around it, a file there, a LevelDB database ibdkit did not create, other
/// files) and what to do. A chainstate ibdkit wrote before it marked them is recognised by its
/// table block size (TABLE_BLOCK_BYTES, common/chainstate_format.h) where it has a table of several blocks; one
/// too small to tell is refused with the one command that marks it (docs/hostile-input.md).
std::optional<Error> CheckChainstateWritable(const std::filesystem::path& dir);

/// Whether `dir` holds CHAINSTATE_MARKER: a chainstate ibdkit made, so a process holding its LOCK
/// is another ibdkit, not bitcoind. Never throws.
bool HoldsChainstateMarker(const std::filesystem::path& dir);

/// Writes UNFINISHED_CHAINSTATE_MARKER into the new chainstate folder `dir` (durably: the folder
/// too is synced). Errc::Refused if it cannot be written.
std::optional<Error> MarkUnfinishedChainstate(const std::filesystem::path& dir);
/// Removes UNFINISHED_CHAINSTATE_MARKER from `dir` once its chainstate is complete (durably).
/// Errc::Io if it cannot be removed.
std::optional<Error> FinishChainstate(const std::filesystem::path& dir);
/// Errc::Refused, saying what to do, when `dir` holds UNFINISHED_CHAINSTATE_MARKER; nullopt
/// otherwise.
std::optional<Error> CheckChainstateFinished(const std::filesystem::path& dir);
/// When `dir` holds UNFINISHED_CHAINSTATE_MARKER: removes everything in it (the folder stays), so
/// that the writer that left it can start over. Returns whether it did; Errc::Io if something
/// could not be removed.
Result<bool> ClearUnfinishedChainstate(const std::filesystem::path& dir);

/// Writes CHAINSTATE_MARKER into `dir` (an ibdkit chainstate) if it is not there. Errc::Refused if
/// it cannot be written.
std::optional<Error> MarkChainstate(const std::filesystem::path& dir);
/// Records in the marker of the ibdkit chainstate `dir` the network its blocks are of (Core's name,
/// ChainTypeName), so that what reads it later knows without being told. Errc::Refused if `dir`
/// holds no marker or it cannot be written.
std::optional<Error> RecordChainstateNetwork(const std::filesystem::path& dir, std::string_view network);
/// The network recorded in `dir`'s marker (RecordChainstateNetwork); nullopt when none is.
std::optional<std::string> ChainstateNetworkRecord(const std::filesystem::path& dir);

/// Whether ibdkit may write (create or replace) the file `file`: nullopt when its directory exists
/// and lies in no Core data directory and `file` is not a directory; otherwise Errc::Refused.
std::optional<Error> CheckOutputFile(const std::filesystem::path& file);

/// Whether ibdkit may make its temporary files (an external sort's runs) in `dir`: nullopt when
/// `dir` is empty (the system's temporary folder) or an existing folder ibdkit may write into that
/// lies in no Core data directory; otherwise Errc::Refused. `what` names it in the message
/// ("--tmpdir", "tmpdir").
std::optional<Error> CheckTempDirWritable(const std::filesystem::path& dir, std::string_view what);

/// Whether ibdkit may write a folder of its own making at `dir` (a generated chain): nullopt when
/// `dir` lies in no Core data directory and does not exist, is an empty folder, or holds nothing
/// but entries `ours` accepts — the names ibdkit writes there, relative to `dir`, each folder's
/// entries asked about too; otherwise Errc::Refused naming the first other entry. `what` names
/// the folder in the message ("--out").
std::optional<Error> CheckOwnFolderWritable(const std::filesystem::path& dir, std::string_view what,
                                            const std::function<bool(const std::filesystem::path& relative)>& ours);

/// Whether ibdkit may write a Bitcoin Core data directory at `datadir` whose network folder is
/// `net_dir` (`datadir` itself for main): nullopt when `datadir` lies in no Core data directory and
/// is new, empty, or holds a network folder ibdkit wrote (DATADIR_MARKER in its blocks folder), or
/// an empty one; otherwise Errc::Refused.
std::optional<Error> CheckDatadirWritable(const std::filesystem::path& datadir, const std::filesystem::path& net_dir);

/// Whether ibdkit may write its undo data into `dir`: nullopt when `dir` lies in no Core data
/// directory and is new, empty, or already an ibdkit undo directory (it holds `revindex.dat`);
/// otherwise Errc::Refused.
std::optional<Error> CheckUndoDirWritable(const std::filesystem::path& dir);

} // namespace ibdkit

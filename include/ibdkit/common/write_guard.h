// ibdkit/common/write_guard.h — where ibdkit may write: never into what a user keeps.
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
// A caller that writes through the library need not call these (its entry points do, first); one
// that refuses before its own work starts, as the CLI does, gets the same words. They only read the
// file system (nothing is written) and keep no state: safe from any thread.
#pragma once

#include <ibdkit/error.h>

#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <string_view>

namespace ibdkit {

/// The file ibdkit writes into every chainstate directory it creates. LevelDB ignores files it did
/// not name, and so does Bitcoin Core, so a marked chainstate stays a valid Core chainstate.
inline constexpr const char* CHAINSTATE_MARKER = "IBDKIT_CHAINSTATE";

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
/// table block size (ibdkit's, not LevelDB's default) where it has a table of several blocks; one
/// too small to tell is refused with the one command that marks it (docs/hostile-input.md).
std::optional<Error> CheckChainstateWritable(const std::filesystem::path& dir);

/// Whether `dir` holds CHAINSTATE_MARKER: a chainstate ibdkit made, so a process holding its LOCK
/// is another ibdkit, not bitcoind. Never throws.
bool HoldsChainstateMarker(const std::filesystem::path& dir);

/// The network (Core's name: "main", "regtest", …) that the run which wrote the ibdkit chainstate
/// `dir` recorded in its marker; nullopt when none is. Never throws.
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
/// is new, empty, or holds a network folder ibdkit wrote (`IBDKIT_DATADIR` in its blocks folder), or
/// an empty one; otherwise Errc::Refused.
std::optional<Error> CheckDatadirWritable(const std::filesystem::path& datadir, const std::filesystem::path& net_dir);

/// Whether ibdkit may write its undo data into `dir`: nullopt when `dir` lies in no Core data
/// directory and is new, empty, or already an ibdkit undo directory (it holds `revindex.dat`);
/// otherwise Errc::Refused.
std::optional<Error> CheckUndoDirWritable(const std::filesystem::path& dir);

/// Whether a run may keep its chainstate at `chainstate` and write undo data into `undo_dir`:
/// nullopt when either is empty or neither is the other nor lies inside it (paths made absolute,
/// symbolic links resolved where they exist); otherwise Errc::Refused, since each would hold files
/// the other's check refuses (or a LevelDB folder a subfolder Core does not expect).
std::optional<Error> CheckUndoApartFromChainstate(const std::filesystem::path& undo_dir, const std::filesystem::path& chainstate);

} // namespace ibdkit

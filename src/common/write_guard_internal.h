// src/common/write_guard_internal.h — the markers ibdkit's writers put into what they write, and
// the path test they share. The checks every caller may make are public:
// include/ibdkit/common/write_guard.h.
#pragma once

#include <ibdkit/common/write_guard.h>

#include <filesystem>
#include <optional>
#include <string_view>

namespace ibdkit {

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

} // namespace ibdkit

// src/kv/snapshot.h — a private, consistent copy of a LevelDB directory that another process (a
// running bitcoind) holds open and keeps writing (private to src/kv/; Store::Open uses it).
//
// LevelDB's files: table files (*.ldb, *.sst) never change once written and are deleted by
// compactions; the log (*.log) is appended to; the MANIFEST is appended to at every change of the
// set of live tables (flush of the memtable, compaction) before any table it drops is deleted;
// CURRENT names the MANIFEST. A copy is consistent when the MANIFEST did not change while the other
// files were taken: every table it lists existed throughout, and every log it needs was present.
// The copy then takes:
//  - tables as hard links where the file system allows (same file system, permission), else copies;
//  - the MANIFEST, the logs and CURRENT as copies; the logs newest first, so that an older log is
//    complete when it is copied (LevelDB writes only its newest) and the whole is a prefix of the
//    writer's history; the newest log may end in a torn record (the reader drops it);
//  - nothing else (no LOCK, LOG, LOG.old, temporary files).
// A file that vanishes during the copy, or a MANIFEST or CURRENT that changed, means the writer
// compacted meanwhile: the attempt is discarded and the copy taken again.
// Nothing is written into, created in or locked in the source directory; hard links raise its
// tables' link counts while the copy exists.
#pragma once

#include "kv/store.h"

#include <filesystem>
#include <functional>
#include <string>

namespace ibdkit::kv {

/// Test hooks of a snapshot.
struct SnapshotHooks {
    /// Called before each file of an attempt is taken (attempt counts from 1; name is the file's).
    std::function<void(int attempt, const std::string& name)> before_file;
};

/// How a snapshot went.
struct SnapshotInfo {
    int attempts{0};        ///< attempts made (the last one succeeded, if the status is ok)
    uint64_t linked{0};     ///< tables hard-linked
    uint64_t copied{0};     ///< files copied (tables that could not be linked, logs, MANIFEST, CURRENT)
};

/// Attempts a snapshot of LevelDB directory `src` into `dst` (created if missing, emptied before
/// each attempt) up to `attempts` times. NotFound: `src` holds no database (missing CURRENT or the
/// MANIFEST it names); IoError: a copy failed, or the database changed during every attempt.
StoreStatus SnapshotDatabase(const std::filesystem::path& src, const std::filesystem::path& dst, int attempts,
                             SnapshotInfo* info = nullptr, const SnapshotHooks& hooks = {});

/// Attempts Store::Open makes: a snapshot, then LevelDB's open of it (a MANIFEST record torn by the
/// copy fails the open; the next attempt copies again).
inline constexpr int SNAPSHOT_ATTEMPTS = 5;

} // namespace ibdkit::kv

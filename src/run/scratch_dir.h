// src/run/scratch_dir.h (internal) — what the run drivers share: a temporary folder for a run that
// needs a chainstate the caller did not ask to keep (common/temp_dir.h's TempDir), and the
// statistics of a chainstate written.
#pragma once

#include <ibdkit/coins/coins_db.h>
#include <ibdkit/error.h>
#include <ibdkit/utxo/stats.h>

#include "common/temp_dir.h"

#include <filesystem>

namespace ibdkit::run {

using ScratchDir = TempDir;

/// The statistics of a chainstate a run wrote.
inline Result<UtxoStats> StatsOf(const std::filesystem::path& dir)
{
    CoinsDBOptions o;
    o.read_only = true;
    auto db = CoinsDB::Open(dir, o);
    if (!db) return Error{Errc::Corrupt, "cannot read the chainstate written: " + db.error().message};
    return ComputeUtxoStats(**db);
}

} // namespace ibdkit::run

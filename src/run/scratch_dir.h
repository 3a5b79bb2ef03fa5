// src/run/scratch_dir.h (internal) — what the run drivers share: a temporary folder for a run that
// needs a chainstate the caller did not ask to keep (common/temp_dir.h's TempDir), a data directory
// a run started and removes again when it fails before writing anything usable, and the statistics
// of a chainstate written.
#pragma once

#include <ibdkit/blockfile/locate.h>
#include <ibdkit/coins/coins_db.h>
#include <ibdkit/error.h>
#include <ibdkit/utxo/stats.h>

#include "common/temp_dir.h"

#include <filesystem>

namespace ibdkit::run {

using ScratchDir = TempDir;

/// A data directory a run starts (`sync --datadir`): what it made of it (the network's folder, the
/// folder itself; an empty folder's contents) is removed again unless Keep() is called. A run that
/// fails before it wrote anything a rerun can use (a classic sync before its first block, SwiftSync
/// before it accepted blocks 1..n: the blocks it appended are in no index) leaves the folder as it
/// found it, so that the corrected rerun, on this network or another, is not refused for ibdkit's
/// own files (CheckDatadirWritable). Nothing when `datadir` is empty.
class StartedDatadir {
public:
    StartedDatadir(const std::filesystem::path& datadir, ChainType chain)
    {
        if (datadir.empty()) return;
        std::error_code ec;
        const std::filesystem::path net = NetworkDataDir(datadir, chain);
        if (!std::filesystem::exists(datadir, ec)) {
            m_remove = datadir;
        } else if (!std::filesystem::exists(net, ec)) {
            m_remove = net;
        } else if (net == datadir && std::filesystem::is_empty(datadir, ec)) {
            m_empty = datadir;
        }
    }
    StartedDatadir(const StartedDatadir&) = delete;
    StartedDatadir& operator=(const StartedDatadir&) = delete;
    ~StartedDatadir()
    {
        std::error_code ec;
        if (!m_remove.empty()) std::filesystem::remove_all(m_remove, ec);
        if (m_empty.empty()) return;
        for (std::filesystem::directory_iterator it(m_empty, ec), end; !ec && it != end; it.increment(ec)) {
            std::filesystem::remove_all(it->path(), ec);
        }
    }
    void Keep() noexcept
    {
        m_remove.clear();
        m_empty.clear();
    }

private:
    std::filesystem::path m_remove, m_empty;
};

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

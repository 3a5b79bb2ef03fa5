// ibdkit/settings/run_settings.h — the settings every run that connects or checks blocks shares,
// described once: the classic engine's (EngineOptions, and so ReplayOptions and SyncOptions) and
// SwiftSync's (swiftsync::SwiftSyncOptions) options derive from RunSettings, so `o.threads` reads
// the same everywhere and one run hands its settings to the next in one assignment
// (`next.Settings() = first;`: `replay --swiftsync`'s fallback, `sync --swiftsync`'s classic rest).
// The CLI's `--threads`, `--dbcache`, `--policy`, `--assumevalid` and `--skip-scripts`, and
// Python's `threads=`, `dbcache=`, `policy=`, `assumevalid=` and `skip_scripts=` fill them.
#pragma once

#include <ibdkit/memory/policy_id.h>
#include <ibdkit/primitives/hash.h>

#include <cstddef>
#include <optional>

namespace ibdkit {

struct RunSettings {
    /// The run's memory budget in MiB (Core's -dbcache; its default): the classic engine's UTXO
    /// cache, flushed when reached, or SwiftSync's coins held while they are sorted. Made bytes in
    /// one place only, CacheBudget::FromMiB (src/coins/budget.h), which splits it. 0 makes the
    /// classic engine flush after every block; SwiftSync needs at least 1 (Errc::InvalidValue).
    std::size_t dbcache_mib{450};
    /// The buffer policy (memory/policy_id.h) of the blocks' bytes, and in the classic engine of the
    /// chainstate's streams too (SwiftSync's only streams are its blocks').
    PolicyId policy{PolicyId::Hardened};
    /// 0: every core; N: N threads, the calling one among them (at most MAX_THREADS). Resolved
    /// once, by ResolveThreads (ibdkit/threads.h), where the run starts.
    unsigned threads{0};
    /// Core's -assumevalid: nullopt, the network's default (ConsensusParams::default_assume_valid;
    /// none on regtest); a null hash, verify every block's scripts; otherwise the hash of a block
    /// below which scripts are skipped where Core's conditions hold (consensus/assumevalid.h).
    /// SwiftSync applies it in coins mode (outpoints mode checks no script).
    std::optional<BlockHash> assumevalid;
    /// Trust every block's scripts, whatever assumevalid says: for measuring the rest of the
    /// pipeline (as a node below its assumevalid block runs it) on chains too short for Core's rule
    /// to skip anything. Not a Core mode; `--skip-scripts`, `ibdkit run` by default.
    bool skip_scripts{false};

    /// These settings alone, for copying them between runs' options: `next.Settings() = first;`.
    RunSettings& Settings() noexcept { return *this; }
    const RunSettings& Settings() const noexcept { return *this; }
};

} // namespace ibdkit

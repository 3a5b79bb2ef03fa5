// ibdkit/settings/run_settings.h — the settings every run that connects or checks blocks shares,
// described once: the classic engine's (EngineOptions, and so ReplayOptions and SyncOptions) and
// SwiftSync's (swiftsync::SwiftSyncOptions) options derive from RunSettings, so `o.threads` reads
// the same everywhere and one run hands its settings to the next in one assignment
// (`next.Settings() = first;`: `replay --swiftsync`'s fallback, `sync --swiftsync`'s classic rest).
// The CLI's `--threads`, `--dbcache`, `--policy`, `--assumevalid`, `--skip-scripts` and
// `--minimum-chain-work`, and Python's keywords of the same names, fill them; their rules are
// checked here once (CheckRunSettings, ParseMinimumChainWork), so every front end refuses a bad
// value in the same words.
#pragma once

#include <ibdkit/error.h>
#include <ibdkit/memory/policy_id.h>
#include <ibdkit/primitives/hash.h>

#include <cstddef>
#include <optional>
#include <string_view>

namespace ibdkit {

/// The largest `dbcache_mib` a run takes: 1 TiB.
inline constexpr std::size_t MAX_DBCACHE_MIB = std::size_t(1) << 20;

struct RunSettings {
    /// The run's memory budget in MiB (Core's -dbcache; its default): the classic engine's UTXO
    /// cache, flushed when reached, or SwiftSync's coins held while they are sorted. Made bytes in
    /// one place only, CacheBudget::FromMiB (src/coins/budget.h), which splits it. 0 is the least
    /// on every path: the classic engine flushes after every block, SwiftSync sorts in its
    /// smallest runs (CacheBudget::MIN_SORT_BYTES). At most MAX_DBCACHE_MIB.
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
    /// Core's -minimumchainwork: nullopt, the network's (ConsensusParams::minimum_chain_work). A
    /// peer's header chain with less work is not downloaded, whatever the number of peers, and
    /// Core's assumevalid rule skips no script while the best header chain has less.
    std::optional<uint256> minimum_chain_work;

    /// The minimum chain work of this run: `minimum_chain_work`, else `network`'s.
    const uint256& MinimumChainWork(const uint256& network) const noexcept
    {
        return minimum_chain_work ? *minimum_chain_work : network;
    }

    /// These settings alone, for copying them between runs' options: `next.Settings() = first;`.
    RunSettings& Settings() noexcept { return *this; }
    const RunSettings& Settings() const noexcept { return *this; }
};

/// Whether a run takes `settings`: threads at most MAX_THREADS, dbcache_mib at most
/// MAX_DBCACHE_MIB, and not skip_scripts beside an assumevalid hash (skip_scripts trusts every
/// script; assumevalid would say which). nullopt when it does; otherwise Errc::InvalidValue with a
/// message naming the setting and its fix. Every run checks its settings with it before it reads a
/// block, and the CLI and Python call it for the same words. Pure; thread-safe.
std::optional<Error> CheckRunSettings(const RunSettings& settings);

/// A minimum chain work as Core's -minimumchainwork takes it: hex digits, at most 64, with or
/// without a leading 0x (a number, most significant digit first). Errc::InvalidValue otherwise,
/// with a message saying what was expected. Pure; thread-safe.
Result<uint256> ParseMinimumChainWork(std::string_view hex);

} // namespace ibdkit

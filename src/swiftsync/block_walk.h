// src/swiftsync/block_walk.h (internal) — reading a located chain's blocks in height order, in
// batches: the calling thread reads each batch's bytes from the blk files (sequential I/O), the
// pool's threads and the caller decode and work on its blocks in any order, then the caller hands
// the results on in height order. What the hints builder and the range check share.
#pragma once

#include <ibdkit/threads.h>

#include <ibdkit/blockfile/blockfile.h>
#include <ibdkit/blockfile/locate.h>
#include <ibdkit/error.h>
#include <ibdkit/primitives/block.h>

#include "memory/policy.h"

#include "blockfile/read_owned.h"
#include "coins/budget.h"
#include "common/task_pool.h"

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <system_error>
#include <vector>

namespace ibdkit::swiftsync {

/// Height of `hash` in the located chain's best chain; an error if it is not there.
inline Result<uint32_t> HeightInChain(const LocatedChain& loc, const BlockHash& hash)
{
    // A genesis that is no record (base_height 1) is not among the blocks.
    if (auto h = loc.headers.HeightOf(hash); h && *h >= loc.base_height) return uint32_t(*h);
    return Error{Errc::InvalidValue, "block " + hash.ToHex() + " is not in the best chain of the blocks (tip height " +
                                         std::to_string(loc.TipHeight()) + ")"};
}

/// A batch stops growing at this many bytes of blocks (or BATCH_BLOCKS blocks): the budget's
/// batch for a walk of block files (CacheBudget::SwiftSyncFromFiles), whatever the budget.
inline constexpr std::size_t BATCH_BYTES = CacheBudget::MAX_BATCH_BYTES;
inline constexpr std::size_t BATCH_BLOCKS = 256;

/// Reads blocks `from`..`to` of `loc`; for each, `work(block, height, hash)` returns an R (on any
/// thread, blocks of a batch in any order; the block is the work's to move), then `sink(height, R&)` runs on the calling thread in
/// height order and may stop the walk: with an error, or with an Error of code Errc::Ok, which
/// makes the walk return false (a refused block is not an error). A block that is not on disk, does not decode
/// or whose hash is not the chain's is an error. `also_read(height, slot)`, if given, runs on the
/// calling thread after each block of a batch is read (slot: its place in the batch, from 0), for
/// what the work needs read beside it in the same pass (undo data); its error ends the walk. Each
/// block's bytes are read into a buffer of `policy` (ReadOwned: one allocation per block, freed
/// with the policy's release once the batch is done), as the classic replay reads them.
template <typename R, typename Work, typename Sink>
Result<bool> WalkBlocks(const LocatedChain& loc, uint32_t from, uint32_t to, unsigned threads,
                        const std::function<void(uint32_t, uint32_t)>& progress, Work&& work, Sink&& sink,
                        const std::function<std::optional<Error>(uint32_t height, std::size_t slot)>& also_read = {},
                        PolicyId policy = PolicyId::Hardened)
{
    if (from < uint32_t(std::max(loc.base_height, 0)) || (to >= from && int64_t(to) > int64_t(loc.TipHeight()))) {
        return Error{Errc::InvalidValue, "blocks " + std::to_string(from) + ".." + std::to_string(to) +
                                             " are not all in the blocks' best chain (heights " + std::to_string(loc.base_height) +
                                             ".." + std::to_string(loc.TipHeight()) + ")"};
    }
    threads = ResolveThreads(threads);
    if (threads > MAX_THREADS) return Error{Errc::InvalidValue, "threads must be 0 (every core) to " + std::to_string(MAX_THREADS)};
    std::optional<TaskPool> pool;
    try {
        pool.emplace(threads > 1 ? threads - 1 : 0);
    } catch (const std::system_error& e) {
        return Error{Errc::Io, "cannot start " + std::to_string(threads) + " threads (" + e.what() +
                                             "): the system allows fewer; ask for fewer threads"};
    }
    BlockFileReader reader(loc.files, loc.key);
    const ReadOwnedFn read = VisitPolicy(policy, []<typename P>(P) -> ReadOwnedFn { return &ReadOwned<P>; });
    std::vector<OwnedBytes> raw;
    std::vector<R> results;
    std::vector<std::optional<Error>> errors;
    for (uint64_t h = from; h <= to;) {
        std::size_t n = 0, bytes = 0;
        while (h + n <= to && n < BATCH_BLOCKS && bytes < BATCH_BYTES) {
            const auto& pos = loc.order.blocks[std::size_t(h + n - uint64_t(loc.base_height))];
            if (raw.size() <= n) raw.emplace_back();
            auto got = read(reader, pos, raw[n]);
            if (!got) return Error{got.error().code, "block at height " + std::to_string(h + n) + ": " + got.error().message};
            bytes += *got;
            if (also_read) {
                if (auto e = also_read(uint32_t(h + n), n)) return *e;
            }
            ++n;
        }
        results.assign(n, R{});
        errors.assign(n, std::nullopt);
        pool->Run(n, [&](std::size_t i) {
            const uint32_t height = uint32_t(h + i);
            const BlockHash& hash = loc.headers.Hash(int(height));
            auto block = DecodeBlock(raw[i].uchars());
            if (!block) {
                errors[i] = Error{block.error().code, "block at height " + std::to_string(height) + ": " + block.error().message};
                return;
            }
            if (block->GetHash() != hash) {
                errors[i] = Error{Errc::Corrupt, "block at height " + std::to_string(height) + " is not " + hash.ToHex()};
                return;
            }
            results[i] = work(*block, height, hash);
        });
        for (std::size_t i = 0; i < n; ++i) {
            if (errors[i]) return *errors[i];
            if (auto e = sink(uint32_t(h + i), results[i])) {
                if (e->code == Errc::Ok) return false;
                return *e;
            }
        }
        h += n;
        if (progress) progress(uint32_t(h - 1), to);
    }
    return true;
}

} // namespace ibdkit::swiftsync

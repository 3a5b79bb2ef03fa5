// src/engine/block_source.h — what feeds the engine: a block source delivering raw blocks in height
// order (private to the engine; Replay and Sync are its sources, docs/engine.md).
#pragma once

#include <ibdkit/chain/params.h>
#include <ibdkit/consensus/header_chain.h>
#include <ibdkit/engine/engine.h>
#include <ibdkit/error.h>
#include <ibdkit/primitives/hash.h>

#include "connect/connect.h"
#include "consensus/assumevalid.h"
#include "stream/owned_bytes.h"

#include <chrono>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace ibdkit::engine {

using Clock = std::chrono::steady_clock;

inline Error EnvError(std::string msg) { return Error{Errc::Corrupt, std::move(msg)}; }

/// A block as a source delivers it: its place in the chain and its bytes, still in the buffer of
/// the source's policy (as a node holds a received message) and freed by its release once the
/// block is decoded. The engine fills `ctx` from the source's header chain (BlockContexts).
struct RawBlock {
    int height{0};
    BlockHash hash;
    ConnectContext ctx;
    OwnedBytes bytes;
    /// A P2P `block` message: bytes after the block are ignored, as Core's handler does (a block
    /// file's record must be exactly one block).
    bool message{false};
};

/// Feeds the engine blocks in height order. The engine calls one method at a time; Produce may run
/// on a thread of its own, and nothing else is called while it runs except TipHeight().
class BlockSource {
public:
    /// Takes the next block; returns false when the engine wants no more (stop producing).
    using Emit = std::function<bool(RawBlock&&)>;

    virtual ~BlockSource() = default;
    /// A branch the source left in Prepare for one with more work: the chainstate's blocks above the
    /// fork, tip first, to be disconnected with their undo data before the new branch is connected.
    struct StaleBranch {
        std::vector<BlockHash> hashes; ///< tip first
        int tip_height{0};             ///< height of hashes.front(); the fork is tip_height - hashes.size()
    };
    /// What Prepare found.
    struct Prepared {
        /// The source failed (a misbehaving peer): the run ends with a clean flush, and the
        /// source's result says why.
        bool failed{false};
        /// How errors name the source's chain: "the chainstate's best block H is not on
        /// <chain><chain_advice>" for a chainstate whose best block is off it, and `recovery`
        /// whole for one left mid-flush between blocks the source does not have.
        std::string chain, chain_advice, recovery;
        /// The branch left for one with more work (a peer's reorganisation), if any.
        std::optional<StaleBranch> stale;
    };
    /// Called first, with the chainstate's best block (null for a new chainstate): a peer makes
    /// its handshake and syncs headers here. An environment failure is an error; a failure of the
    /// source itself is recorded by the source and reported as `failed`.
    virtual Result<Prepared> Prepare(const BlockHash& best) = 0;
    /// The source's best header chain, from the genesis: the engine finds the chainstate's blocks
    /// on it, checks each block's header against its ancestors and derives every block's context
    /// (ConnectContext) from it. Not called while Produce runs except from inside its emit, when
    /// it holds every block emitted.
    virtual const HeaderChain& Headers() const = 0;
    /// The highest height the run is expected to reach, as far as the source knows now (progress
    /// only; a peer may deliver beyond it). Safe to call while Produce runs.
    virtual int TipHeight() const = 0;
    /// Delivers heights [from, to] in order through `emit` until emit returns false, the source
    /// has nothing more, or it fails (recorded as for Prepare). Returns an environment error.
    virtual std::optional<Error> Produce(int from, int to, const Emit& emit) = 0;
    /// A delivered block's bytes did not decode: an environment error (block files) or, recorded
    /// as a source failure, nullopt (a peer sent garbage).
    virtual std::optional<Error> Undecodable(int height, const Error& e) = 0;

    /// Delivers Prepared::stale's blocks, tip first, through `emit` (heights and hashes set) until
    /// emit returns false or the source fails (recorded as for Produce).
    virtual std::optional<Error> ProduceStale(const StaleBranch&, const Emit&) { return EnvError("this source has no stale blocks"); }
};

/// What ConnectBlock needs to know of each block beside its ancestors' times and bits (which the
/// connect loop adds, ctx.prev): its height, the BIP34 block's hash (BIP30) and whether its scripts
/// run, by Core's assumevalid rule over the source's header chain unless the run skips scripts.
class BlockContexts {
public:
    BlockContexts(const EngineOptions& o, const ChainParams& params, const HeaderChain& headers);
    /// The context of the block at `height` of the header chain.
    ConnectContext At(int height) const;

private:
    const EngineOptions& m_o;
    const HeaderChain& m_headers;
    int m_bip34_height;
    AssumeValidRule m_assumevalid;
};

} // namespace ibdkit::engine

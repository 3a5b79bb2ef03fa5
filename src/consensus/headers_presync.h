// src/consensus/headers_presync.h — a peer's header chain below the minimum chain work, downloaded
// twice before any of it is stored (Core's HeadersSyncState, headerssync.cpp), without the network.
//
// Headers that pass Core's per-header checks cost nothing to make on a low-difficulty chain forking
// from the genesis, so a peer could fill memory and disk with them. In the first download
// (presync) only the running work, the last header and a salted 1-bit commitment every
// `commitment_period` headers are kept, at most MaxCommitments() of them: memory per peer is
// bounded whatever the peer sends. Once the work reaches the minimum, the chain is asked again from
// its start (redownload); each redownloaded header at a commitment's height must match it, and a
// header is released for storing only with `redownload_buffer_size` headers (about two dozen
// commitments) checked on top of it, or once the redownloaded chain itself has the minimum work.
// A peer that changes its chain between the two downloads is caught, with probability 1/2 per
// commitment, before the changed headers are released. The parameters are the network's
// (ChainParams::headers_sync); the salt is random and private to the process: never printed,
// logged or written.
#pragma once

#include <ibdkit/chain/params.h>
#include <ibdkit/consensus/header_chain.h>
#include <ibdkit/consensus/pow.h>
#include <ibdkit/error.h>
#include <ibdkit/primitives/block.h>
#include <ibdkit/primitives/hash.h>

#include <cstddef>
#include <cstdint>
#include <deque>
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace ibdkit {

/// Core's MAX_HEADERS_RESULTS (wire/protocol.h): an answer this long says the peer has more.
inline constexpr std::size_t HEADERS_PER_ANSWER = 2000;

/// What the next getheaders asks: a locator made from `chain`, hashes by height from the genesis
/// (MakeLocator(chain, first), wire/protocol.h), led by `first` when set.
struct HeadersAsk {
    std::span<const BlockHash> chain;
    std::optional<BlockHash> first;
};

/// How a peer's answer broke presync's rules, in the order Core checks them: every header's proof
/// of work, the answer's continuity, then header by header what its phase checks.
enum class PresyncErrc {
    HighHash,             ///< a header does not meet its own nBits (Core: "header with invalid proof of work")
    NotContinuous,        ///< a header does not extend the one before it in the answer (Core: "non-continuous headers sequence")
    DoesNotConnect,       ///< the answer does not extend the last header received (or, redownloading, the last buffered)
    DifficultyTransition, ///< nBits change as no retarget may (PermittedDifficultyTransition)
    TooManyCommitments,   ///< the chain is longer than any valid chain can be by now (MaxCommitments())
    CommitmentMismatch,   ///< a redownloaded header is not the one presynced at its height
    CommitmentOverrun,    ///< the redownload went past the chain presynced without the minimum work
};

/// The offence and the height of the header that committed it.
struct PresyncFailure {
    PresyncErrc code;
    int64_t height;
};

/// The offence in words, for "peer sent " to open (Core's term in parentheses).
std::string Describe(const PresyncFailure& failure);

/// One peer's presync and redownload from the header at height `start` of a HeaderChain (the fork
/// its headers leave the chain at). Holds the chain by reference: it must outlive the object, and
/// its headers up to `start` must not change (headers above may: released ones are appended there).
/// Memory: the commitments, MaxCommitments() bits at most, and the redownload's buffer,
/// redownload_buffer_size headers of 48 bytes (Core's CompressedHeader) at most.
class HeadersPresync {
public:
    /// With a random salt (and commitment offset) and the local clock.
    HeadersPresync(const HeaderChain& chain, int start, const arith_uint256& minimum_work);
    /// With the given salt, which also places the commitments (tests replay a peer's luck with it),
    /// and `now` (seconds since the epoch) as the clock MaxCommitments() is measured by.
    HeadersPresync(const HeaderChain& chain, int start, const arith_uint256& minimum_work, const uint256& salt, int64_t now);

    enum class Phase {
        Presync,    ///< the peer has not shown the minimum work yet: commitments only
        Redownload, ///< the peer showed it: its chain is asked again and checked against them
        Final,      ///< ended (a Step other than More, or a failure): nothing more is asked
    };
    Phase CurrentPhase() const noexcept { return m_phase; }

    /// The next getheaders: from the last header received (presync) or buffered (redownload), then
    /// the chain from `start` down. Precondition: not Final.
    HeadersAsk Next() const;

    enum class Step {
        More,      ///< ask Next() (a full answer, or the redownload starting)
        LowWork,   ///< presync: the peer's chain ended (a short answer) below the minimum work
        Complete,  ///< the redownloaded chain has the minimum work, and all of it was released
        Abandoned, ///< redownload: a short answer before the minimum work (the peer stopped serving its chain)
    };
    struct Taken {
        Step step{Step::More};
        /// Headers the caller may now check fully and store, each the parent of the next, the
        /// first on the last one released before (at first: on the chain's header at `start`).
        std::vector<BlockHeader> released;
    };
    /// Takes the peer's answer to Next(). A failure (or a Step other than More) ends it (Final),
    /// its memory freed. Precondition: not Final.
    Result<Taken, PresyncFailure> Take(std::span<const BlockHeader> headers);

    /// The height and chain work of the last header presynced (the start's while none is).
    int64_t Height() const noexcept { return m_height; }
    const arith_uint256& Work() const noexcept { return m_work; }
    /// Commitments held (made in presync, not yet checked by the redownload), and their bound: 6
    /// headers a second (the fastest the median-time-past rule allows) from the start's median
    /// time past until two hours after `now`, one commitment per commitment_period.
    uint64_t Commitments() const noexcept { return m_commitments_made - m_commitments_checked; }
    uint64_t MaxCommitments() const noexcept { return m_max_commitments; }
    /// Headers redownloaded and not yet released.
    std::size_t Buffered() const noexcept { return m_buffer.size(); }

private:
    /// A buffered header without its parent's hash (the previous one's, or the first's parent).
    struct Compressed {
        int32_t version;
        uint256 merkle_root;
        uint32_t time;
        uint32_t bits;
        uint32_t nonce;
    };
    static_assert(sizeof(Compressed) == 48, "Core's memory analysis of the buffer assumes 48 bytes a header");

    std::optional<PresyncFailure> CheckAnswer(std::span<const BlockHeader> headers, int64_t after) const;
    Result<Taken, PresyncFailure> TakePresync(std::span<const BlockHeader> headers);
    Result<Taken, PresyncFailure> TakeRedownload(std::span<const BlockHeader> headers);
    std::optional<PresyncFailure> Presynced(const BlockHeader& header);
    std::optional<PresyncFailure> Redownloaded(const BlockHeader& header);
    std::vector<BlockHeader> Release();
    bool CommitmentBit(const BlockHash& hash) const;
    bool AtCommitment(int64_t height) const noexcept;
    Result<Taken, PresyncFailure> Fail(PresyncErrc code, int64_t height);
    void Finalize();

    const HeaderChain& m_chain;
    const int m_start;
    const HeadersSyncParams m_params;
    const arith_uint256 m_minimum;
    const uint256 m_salt; ///< private: never printed, logged or written
    const uint64_t m_offset;
    uint64_t m_max_commitments{0};
    Phase m_phase{Phase::Presync};

    // Presync: the peer's chain so far, its last header, and the commitments as bits in words.
    arith_uint256 m_work;
    int64_t m_height;
    BlockHash m_last_hash;
    uint32_t m_last_bits;
    std::vector<uint64_t> m_commitments;
    uint64_t m_commitments_made{0};
    uint64_t m_commitments_checked{0};

    // Redownload: the buffer, from the parent of its first header to its last.
    std::deque<Compressed> m_buffer;
    BlockHash m_buffer_first_parent;
    BlockHash m_buffer_last_hash;
    uint32_t m_buffer_last_bits{0};
    int64_t m_buffer_last_height{0};
    arith_uint256 m_redownload_work;
    bool m_release_all{false};
};

} // namespace ibdkit

// src/consensus/headers_presync.cpp — a low-work header chain downloaded twice (headers_presync.h).
#include "consensus/headers_presync.h"

#include <ibdkit/consensus/header_check.h>
#include <ibdkit/crypto/sha256.h>

#include <algorithm>
#include <ctime>
#include <random>

namespace ibdkit {

namespace {

uint256 RandomSalt()
{
    std::random_device rd;
    uint256 salt;
    for (std::size_t i = 0; i < uint256::size(); i += 4) {
        const uint32_t word = rd();
        std::copy_n(reinterpret_cast<const uint8_t*>(&word), 4, salt.data() + i);
    }
    return salt;
}

} // namespace

std::string Describe(const PresyncFailure& failure)
{
    const std::string at = " at height " + std::to_string(failure.height);
    switch (failure.code) {
    case PresyncErrc::HighHash: return "a header" + at + " that does not meet its own nBits (high-hash)";
    case PresyncErrc::NotContinuous: return "a header" + at + " that does not extend the one before it (non-continuous headers sequence)";
    case PresyncErrc::DoesNotConnect: return "headers" + at + " that do not continue the ones it sent before (non-continuous headers)";
    case PresyncErrc::DifficultyTransition: return "a header" + at + " whose nBits change as no retarget may (invalid difficulty transition)";
    case PresyncErrc::TooManyCommitments:
        return "a low-work header chain longer than any valid chain can be by now" + at + " (exceeded max commitments)";
    case PresyncErrc::CommitmentMismatch:
        return "a redownloaded header" + at + " that is not the one it sent below the minimum chain work (commitment mismatch)";
    case PresyncErrc::CommitmentOverrun:
        return "a redownloaded chain" + at + " past the one it sent, without the minimum chain work (commitment overrun)";
    }
    return "a header" + at + " that breaks presync's rules";
}

HeadersPresync::HeadersPresync(const HeaderChain& chain, int start, const arith_uint256& minimum_work)
    : HeadersPresync(chain, start, minimum_work, RandomSalt(), int64_t(std::time(nullptr)))
{
}

HeadersPresync::HeadersPresync(const HeaderChain& chain, int start, const arith_uint256& minimum_work, const uint256& salt,
                               int64_t now)
    : m_chain(chain), m_start(start), m_params(chain.Params().headers_sync), m_minimum(minimum_work), m_salt(salt),
      m_offset((IBDKIT_EXPECTS(m_params.commitment_period > 0, "HeadersPresync needs the network's commitment period"),
                salt.GetUint64(0) % m_params.commitment_period)),
      m_work(chain.ChainWork()[std::size_t(start)]), m_height(start), m_last_hash(chain.Hash(start)),
      m_last_bits(chain.Info(start).bits)
{
    IBDKIT_EXPECTS(start >= 0 && start <= chain.Height(), "HeadersPresync starts on a header of the chain");
    // No valid chain can hold more headers by now than 6 a second (the fastest the median time
    // past lets timestamps grow) since the start, until the furthest a header may be ahead of the
    // clock: a peer claiming more is abandoned, which bounds the commitments held for it.
    const int64_t seconds = std::max<int64_t>(0, now - chain.MedianTimePast(start) + MAX_FUTURE_BLOCK_TIME);
    m_max_commitments = 6 * uint64_t(seconds) / m_params.commitment_period;
}

HeadersAsk HeadersPresync::Next() const
{
    IBDKIT_EXPECTS(m_phase != Phase::Final, "HeadersPresync::Next after the end");
    const auto below = m_chain.Hashes().first(std::size_t(m_start) + 1);
    return {below, m_phase == Phase::Presync ? m_last_hash : m_buffer_last_hash};
}

bool HeadersPresync::AtCommitment(int64_t height) const noexcept
{
    return uint64_t(height) % m_params.commitment_period == m_offset;
}

bool HeadersPresync::CommitmentBit(const BlockHash& hash) const
{
    uint8_t out[Sha256::OUTPUT_SIZE];
    Sha256().Write(m_salt.begin(), uint256::size()).Write(hash.data(), uint256::size()).Finalize(out);
    return (out[0] & 1) != 0;
}

Result<HeadersPresync::Taken, PresyncFailure> HeadersPresync::Fail(PresyncErrc code, int64_t height)
{
    Finalize();
    return PresyncFailure{code, height};
}

void HeadersPresync::Finalize()
{
    m_commitments.clear();
    m_commitments.shrink_to_fit();
    m_commitments_made = m_commitments_checked = 0;
    m_buffer.clear();
    m_buffer.shrink_to_fit();
    m_release_all = false;
    m_phase = Phase::Final;
}

// Core's checks of every answer before a sync looks at it (CheckHeadersPoW): each header's proof
// of work against its own nBits, then that each extends the one before. `after` is the height
// the answer's first header would follow.
std::optional<PresyncFailure> HeadersPresync::CheckAnswer(std::span<const BlockHeader> headers, int64_t after) const
{
    const ConsensusParams& consensus = m_chain.Params().consensus;
    for (std::size_t i = 0; i < headers.size(); ++i) {
        if (!CheckProofOfWork(headers[i].GetHash().ToUint256(), headers[i].bits, consensus)) {
            return PresyncFailure{PresyncErrc::HighHash, after + 1 + int64_t(i)};
        }
    }
    for (std::size_t i = 1; i < headers.size(); ++i) {
        if (headers[i].hash_prev_block != headers[i - 1].GetHash()) return PresyncFailure{PresyncErrc::NotContinuous, after + 1 + int64_t(i)};
    }
    return std::nullopt;
}

Result<HeadersPresync::Taken, PresyncFailure> HeadersPresync::Take(std::span<const BlockHeader> headers)
{
    IBDKIT_EXPECTS(m_phase != Phase::Final, "HeadersPresync::Take after the end");
    // An empty answer: the peer has nothing more of the chain it was sending (Core drops the sync).
    if (headers.empty()) {
        const Step step = m_phase == Phase::Presync ? Step::LowWork : Step::Abandoned;
        Finalize();
        return Taken{step, {}};
    }
    if (auto bad = CheckAnswer(headers, m_phase == Phase::Presync ? m_height : m_buffer_last_height)) return Fail(bad->code, bad->height);
    return m_phase == Phase::Presync ? TakePresync(headers) : TakeRedownload(headers);
}

Result<HeadersPresync::Taken, PresyncFailure> HeadersPresync::TakePresync(std::span<const BlockHeader> headers)
{
    if (headers.front().hash_prev_block != m_last_hash) return Fail(PresyncErrc::DoesNotConnect, m_height + 1);
    for (const BlockHeader& header : headers) {
        if (auto bad = Presynced(header)) return Fail(bad->code, bad->height);
    }
    if (m_work >= m_minimum) {
        // The peer showed the minimum work: its chain is asked again from the start.
        m_phase = Phase::Redownload;
        m_buffer_first_parent = m_buffer_last_hash = m_chain.Hash(m_start);
        m_buffer_last_bits = m_chain.Info(m_start).bits;
        m_buffer_last_height = m_start;
        m_redownload_work = m_chain.ChainWork()[std::size_t(m_start)];
        return Taken{Step::More, {}};
    }
    if (headers.size() == HEADERS_PER_ANSWER) return Taken{Step::More, {}};
    Finalize();
    return Taken{Step::LowWork, {}};
}

// Core's presync of one header (ValidateAndProcessSingleHeader): its difficulty transition, then
// its commitment when at one's height, within the bound.
std::optional<PresyncFailure> HeadersPresync::Presynced(const BlockHeader& header)
{
    const int64_t height = m_height + 1;
    if (!PermittedDifficultyTransition(m_chain.Params().consensus, height, m_last_bits, header.bits)) {
        return PresyncFailure{PresyncErrc::DifficultyTransition, height};
    }
    const BlockHash hash = header.GetHash();
    if (AtCommitment(height)) {
        const uint64_t k = m_commitments_made++;
        if (k / 64 >= m_commitments.size()) m_commitments.push_back(0);
        m_commitments[k / 64] |= uint64_t(CommitmentBit(hash)) << (k % 64);
        if (Commitments() > m_max_commitments) return PresyncFailure{PresyncErrc::TooManyCommitments, height};
    }
    m_work += GetBlockProof(header.bits);
    m_last_hash = hash;
    m_last_bits = header.bits;
    m_height = height;
    return std::nullopt;
}

Result<HeadersPresync::Taken, PresyncFailure> HeadersPresync::TakeRedownload(std::span<const BlockHeader> headers)
{
    for (const BlockHeader& header : headers) {
        if (auto bad = Redownloaded(header)) return Fail(bad->code, bad->height);
    }
    Taken taken{Step::More, Release()};
    if (m_buffer.empty() && m_release_all) {
        taken.step = Step::Complete;
        Finalize();
    } else if (headers.size() != HEADERS_PER_ANSWER) {
        // The peer showed a chain with the minimum work and no longer serves it: what it proved
        // with commitments is released, the rest forgotten.
        taken.step = Step::Abandoned;
        Finalize();
    }
    return taken;
}

// Core's redownload of one header (ValidateAndStoreRedownloadedHeader): it extends the buffer, its
// difficulty transition, the work so far, then its commitment unless the work already reached the
// minimum (the peer may have grown its chain since the presync).
std::optional<PresyncFailure> HeadersPresync::Redownloaded(const BlockHeader& header)
{
    const int64_t height = m_buffer_last_height + 1;
    if (header.hash_prev_block != m_buffer_last_hash) return PresyncFailure{PresyncErrc::DoesNotConnect, height};
    if (!PermittedDifficultyTransition(m_chain.Params().consensus, height, m_buffer_last_bits, header.bits)) {
        return PresyncFailure{PresyncErrc::DifficultyTransition, height};
    }
    m_redownload_work += GetBlockProof(header.bits);
    if (m_redownload_work >= m_minimum) m_release_all = true;
    const BlockHash hash = header.GetHash();
    if (!m_release_all && AtCommitment(height)) {
        if (Commitments() == 0) return PresyncFailure{PresyncErrc::CommitmentOverrun, height};
        const uint64_t k = m_commitments_checked++;
        const bool expected = ((m_commitments[k / 64] >> (k % 64)) & 1) != 0;
        if (CommitmentBit(hash) != expected) return PresyncFailure{PresyncErrc::CommitmentMismatch, height};
    }
    m_buffer.push_back(Compressed{header.version, header.hash_merkle_root, header.time, header.bits, header.nonce});
    m_buffer_last_hash = hash;
    m_buffer_last_bits = header.bits;
    m_buffer_last_height = height;
    return std::nullopt;
}

// The buffered headers with enough commitments checked on top of them (all of them once the
// redownloaded chain has the minimum work), rebuilt with their parents' hashes.
std::vector<BlockHeader> HeadersPresync::Release()
{
    std::vector<BlockHeader> released;
    while (m_buffer.size() > m_params.redownload_buffer_size || (!m_buffer.empty() && m_release_all)) {
        const Compressed& c = m_buffer.front();
        BlockHeader header;
        header.version = c.version;
        header.hash_prev_block = m_buffer_first_parent;
        header.hash_merkle_root = c.merkle_root;
        header.time = c.time;
        header.bits = c.bits;
        header.nonce = c.nonce;
        m_buffer_first_parent = header.GetHash();
        released.push_back(header);
        m_buffer.pop_front();
    }
    return released;
}

} // namespace ibdkit

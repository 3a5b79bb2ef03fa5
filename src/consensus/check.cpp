#include <ibdkit/consensus/check.h>

#include <ibdkit/consensus/pow.h>
#include <ibdkit/crypto/sha256.h>
#include <ibdkit/primitives/consensus_constants.h>
#include <ibdkit/primitives/script_ops.h>

#include "consensus/merkle.h"
#include "consensus/signet.h"
#include "consensus/tx_check.h"

#include <algorithm>
#include <cassert>
#include <cstring>

namespace ibdkit {

std::string_view BlockValidationResultName(BlockValidationResult r) noexcept
{
    switch (r) {
    case BlockValidationResult::BLOCK_RESULT_UNSET: return "unset";
    case BlockValidationResult::BLOCK_CONSENSUS: return "consensus";
    case BlockValidationResult::BLOCK_CACHED_INVALID: return "cached-invalid";
    case BlockValidationResult::BLOCK_INVALID_HEADER: return "invalid-header";
    case BlockValidationResult::BLOCK_MUTATED: return "mutated";
    case BlockValidationResult::BLOCK_MISSING_PREV: return "missing-prev";
    case BlockValidationResult::BLOCK_INVALID_PREV: return "invalid-prev";
    case BlockValidationResult::BLOCK_TIME_FUTURE: return "time-future";
    case BlockValidationResult::BLOCK_HEADER_LOW_WORK: return "header-low-work";
    }
    return "unknown";
}

bool IsMutatedReason(std::string_view reject_reason) noexcept
{
    static constexpr std::string_view MUTATED[]{"bad-txnmrklroot", "bad-txns-duplicate", "bad-witness-nonce-size",
                                                "bad-witness-merkle-match", "unexpected-witness"};
    return std::find(std::begin(MUTATED), std::end(MUTATED), reject_reason) != std::end(MUTATED);
}

bool CheckBlockRules(const Block& block, BlockValidationState& state, const ConsensusParams& params, CheckBlockOptions opts,
                     std::vector<uint32_t>* legacy_sigops)
{
    // Header: proof of work matches the claimed target.
    if (opts.check_pow && !CheckProofOfWork(block.GetHash().ToUint256(), block.bits, params)) {
        return state.Invalid(BlockValidationResult::BLOCK_INVALID_HEADER, "high-hash", "proof of work failed");
    }
    // Signet: the block's signature, not its trivial proof of work, is what makes it valid; checked
    // whenever proof of work is, before the merkle root as Core does (consensus/signet.h).
    if (params.signet_blocks && opts.check_pow && !CheckSignetBlockSolution(block, params)) {
        return state.Invalid(BlockValidationResult::BLOCK_CONSENSUS, "bad-signet-blksig", "signet block signature validation failure");
    }
    if (opts.check_merkle_root) {
        bool mutated = false;
        const uint256 root = BlockMerkleRoot(block, &mutated);
        if (block.hash_merkle_root != root) {
            return state.Invalid(BlockValidationResult::BLOCK_MUTATED, "bad-txnmrklroot", "hashMerkleRoot mismatch");
        }
        // CVE-2012-2459: a repeated tail of transactions leaves the root unchanged.
        if (mutated) return state.Invalid(BlockValidationResult::BLOCK_MUTATED, "bad-txns-duplicate", "duplicate transaction");
    }
    // Size limits.
    if (block.vtx.empty() || block.vtx.size() * WITNESS_SCALE_FACTOR > MAX_BLOCK_WEIGHT ||
        GetBlockStrippedSize(block) * WITNESS_SCALE_FACTOR > MAX_BLOCK_WEIGHT) {
        return state.Invalid(BlockValidationResult::BLOCK_CONSENSUS, "bad-blk-length", "size limits failed");
    }
    // The first transaction must be the coinbase, the others must not be.
    if (!block.vtx[0].IsCoinBase()) {
        return state.Invalid(BlockValidationResult::BLOCK_CONSENSUS, "bad-cb-missing", "first tx is not coinbase");
    }
    for (std::size_t i = 1; i < block.vtx.size(); i++) {
        if (block.vtx[i].IsCoinBase()) {
            return state.Invalid(BlockValidationResult::BLOCK_CONSENSUS, "bad-cb-multiple", "more than one coinbase");
        }
    }
    for (const Transaction& tx : block.vtx) {
        TxValidationState tx_state;
        if (!CheckTransaction(tx, tx_state)) {
            return state.Invalid(BlockValidationResult::BLOCK_CONSENSUS, tx_state.GetRejectReason(),
                                 "Transaction check failed (tx hash " + tx.GetHash().ToHex() + ") " +
                                     tx_state.GetDebugMessage());
        }
    }
    unsigned sigops = 0;
    if (legacy_sigops) legacy_sigops->resize(block.vtx.size());
    for (std::size_t i = 0; i < block.vtx.size(); ++i) {
        const unsigned n = GetLegacySigOpCount(block.vtx[i]);
        if (legacy_sigops) (*legacy_sigops)[i] = n;
        sigops += n;
    }
    if (int64_t(sigops) * WITNESS_SCALE_FACTOR > MAX_BLOCK_SIGOPS_COST) {
        return state.Invalid(BlockValidationResult::BLOCK_CONSENSUS, "bad-blk-sigops", "out-of-bounds SigOpCount");
    }
    return true;
}

std::optional<CheckedBlock> CheckBlock(Block&& block, BlockValidationState& state, const ConsensusParams& params,
                                       CheckBlockOptions opts)
{
    std::vector<uint32_t> legacy_sigops;
    if (!CheckBlockRules(block, state, params, opts, &legacy_sigops)) return std::nullopt;
    std::size_t inputs = 0;
    for (std::size_t t = 1; t < block.vtx.size(); ++t) inputs += block.vtx[t].vin().size();
    std::vector<InputSigOps> input_sigops;
    input_sigops.reserve(inputs);
    for (std::size_t t = 1; t < block.vtx.size(); ++t) {
        for (const TxIn& in : block.vtx[t].vin()) input_sigops.push_back(InputSigOpsOf(in));
    }
    const WitnessFacts witness = WitnessFactsOf(block, true);
    return CheckedBlock(std::move(block), opts, std::move(legacy_sigops), std::move(input_sigops), witness);
}

int GetWitnessCommitmentIndex(const Block& block) noexcept
{
    int pos = NO_WITNESS_COMMITMENT;
    if (block.vtx.empty()) return pos;
    const auto& vout = block.vtx[0].vout();
    for (std::size_t o = 0; o < vout.size(); o++) {
        const Script& s = vout[o].script_pubkey;
        if (s.size() >= MINIMUM_WITNESS_COMMITMENT && s[0] == OP_RETURN && s[1] == 0x24 && s[2] == 0xaa && s[3] == 0x21 &&
            s[4] == 0xa9 && s[5] == 0xed) {
            pos = int(o);
        }
    }
    return pos;
}

WitnessFacts WitnessFactsOf(const Block& block, bool read_commitment)
{
    WitnessFacts f;
    for (const Transaction& tx : block.vtx) f.any_witness = f.any_witness || tx.HasWitness();
    if (!read_commitment) {
        f.commitment = WitnessFacts::Commitment::NotRead;
        return f;
    }
    const int pos = GetWitnessCommitmentIndex(block);
    if (pos == NO_WITNESS_COMMITMENT) return f;
    const auto& stack = block.vtx[0].vin()[0].witness.stack;
    if (stack.size() != 1 || stack[0].size() != 32) {
        f.commitment = WitnessFacts::Commitment::BadNonceSize;
        return f;
    }
    // The malleation flag of the witness tree is ignored: the txid tree already rules it out.
    uint256 hash = BlockWitnessMerkleRoot(block);
    Sha256d h;
    h.Write(hash.span());
    h.Write(std::span<const uint8_t>(stack[0]));
    h.Finalize(hash.data());
    const bool matches = std::memcmp(hash.data(), block.vtx[0].vout()[std::size_t(pos)].script_pubkey.data() + 6, 32) == 0;
    f.commitment = matches ? WitnessFacts::Commitment::Matches : WitnessFacts::Commitment::Mismatch;
    return f;
}

bool CheckWitnessMalleation(const WitnessFacts& facts, bool expect_witness_commitment, BlockValidationState& state)
{
    using C = WitnessFacts::Commitment;
    if (expect_witness_commitment) {
        assert(facts.commitment != C::NotRead);
        switch (facts.commitment) {
        case C::BadNonceSize:
            return state.Invalid(BlockValidationResult::BLOCK_MUTATED, "bad-witness-nonce-size",
                                 "CheckWitnessMalleation : invalid witness reserved value size");
        case C::Mismatch:
            return state.Invalid(BlockValidationResult::BLOCK_MUTATED, "bad-witness-merkle-match",
                                 "CheckWitnessMalleation : witness merkle commitment mismatch");
        case C::Matches:
            return true;
        case C::Absent:
        case C::NotRead:
            break;
        }
    }
    // Without a commitment, witness data would be free space for spam.
    if (facts.any_witness) {
        return state.Invalid(BlockValidationResult::BLOCK_MUTATED, "unexpected-witness",
                             "CheckWitnessMalleation : unexpected witness data found");
    }
    return true;
}

bool CheckWitnessMalleation(const Block& block, bool expect_witness_commitment, BlockValidationState& state)
{
    return CheckWitnessMalleation(WitnessFactsOf(block, expect_witness_commitment), expect_witness_commitment, state);
}

bool CheckBlockWeight(const Block& block, BlockValidationState& state)
{
    if (GetBlockWeight(block) > MAX_BLOCK_WEIGHT) {
        return state.Invalid(BlockValidationResult::BLOCK_CONSENSUS, "bad-blk-weight", "ContextualCheckBlock : weight limit failed");
    }
    return true;
}

bool CheckCoinbaseHeight(const Block& block, int height, BlockValidationState& state)
{
    const Script expect = ScriptForHeight(height);
    const bool ok = !block.vtx.empty() && !block.vtx[0].vin().empty() &&
                    block.vtx[0].vin()[0].script_sig.size() >= expect.size() &&
                    std::equal(expect.begin(), expect.end(), block.vtx[0].vin()[0].script_sig.begin());
    if (!ok) return state.Invalid(BlockValidationResult::BLOCK_CONSENSUS, "bad-cb-height", "block height mismatch in coinbase");
    return true;
}

} // namespace ibdkit

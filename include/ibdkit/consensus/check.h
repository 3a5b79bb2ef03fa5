// ibdkit/consensus/check.h — context-free block checks (Core's CheckBlock) and the type-state
// that records them.
//
// Only CheckBlock makes a CheckedBlock, and a CheckedBlock gives read-only access: a value of that
// type is proof that the block passed, and nothing can change the block afterwards. There is no
// "checked" flag inside Block (Core's fChecked), so a block is never trusted by accident.
//
// Every function here reads only its arguments (and writes `state`) and throws nothing but
// allocation failures: several threads may check blocks at once, the same const Block included.
// A CheckedBlock is immutable: any number of threads may read one.
#pragma once

#include <ibdkit/chain/params.h>
#include <ibdkit/consensus/tx_verify.h>
#include <ibdkit/consensus/validation.h>
#include <ibdkit/primitives/block.h>
#include <ibdkit/primitives/consensus_constants.h>

#include <cstdint>
#include <optional>
#include <span>
#include <string_view>
#include <utility>
#include <vector>

namespace ibdkit {

struct CheckBlockOptions {
    bool check_pow{true};         ///< proof of work against nBits and the network's pow limit (and a signet's block solution)
    bool check_merkle_root{true}; ///< merkle root and the CVE-2012-2459 mutation rule
};

/// What CheckWitnessMalleation's verdict depends on, read from the block alone: whether the
/// coinbase commits to the witness merkle root (and whether that commitment holds), and whether
/// any transaction carries witness data. Only whether segwit is active comes from the chain.
struct WitnessFacts {
    enum class Commitment : uint8_t {
        Absent,       ///< no commitment output
        BadNonceSize, ///< the coinbase witness is not one 32-byte item
        Mismatch,     ///< SHA256d(witness merkle root ‖ item) differs from the committed hash
        Matches,
        NotRead,      ///< not evaluated (WitnessFactsOf without the commitment)
    };
    Commitment commitment{Commitment::Absent};
    bool any_witness{false};
};

/// Whether `reject_reason` is one with which CheckBlock or the witness checks refuse a block whose
/// transactions are not those its header commits to - Core's BLOCK_MUTATED: bad-txnmrklroot,
/// bad-txns-duplicate, bad-witness-nonce-size, bad-witness-merkle-match, unexpected-witness. Such a
/// block says nothing about the block its header names: whoever sent it is at fault, and Core
/// neither marks the block invalid nor stops asking others for it.
bool IsMutatedReason(std::string_view reject_reason) noexcept;

/// The facts of `block`; the commitment (a witness merkle tree) only if `read_commitment`. With a
/// commitment present, reads the coinbase's first input: the block must have one (CheckBlock's rules).
WitnessFacts WitnessFactsOf(const Block& block, bool read_commitment);

/// A block that passed CheckBlock (with the options it records). Immutable.
class CheckedBlock {
public:
    /// The block that passed (valid while this CheckedBlock lives), and the options it passed with.
    const Block& block() const noexcept { return m_block; }
    const Block& operator*() const noexcept { return m_block; }
    const Block* operator->() const noexcept { return &m_block; }
    const CheckBlockOptions& options() const noexcept { return m_opts; }
    /// Each transaction's legacy sigop count (Core's GetLegacySigOpCount), as CheckBlock counted
    /// them for its own limit: ConnectBlock's sigop cost starts from these.
    std::span<const uint32_t> legacy_sigops() const noexcept { return m_legacy_sigops; }
    /// What each input's sigop cost needs from the block (InputSigOpsOf), for every input of the
    /// transactions after the coinbase, in block order: ConnectBlock adds the spent outputs.
    std::span<const InputSigOps> input_sigops() const noexcept { return m_input_sigops; }
    /// The block's witness facts, read by CheckBlock (on the thread that checked the block, so that
    /// the connecting thread does not build the witness merkle tree).
    const WitnessFacts& witness_facts() const noexcept { return m_witness; }
    /// Gives the block back (the proof is consumed).
    Block Release() && { return std::move(m_block); }

private:
    friend std::optional<CheckedBlock> CheckBlock(Block&&, BlockValidationState&, const ConsensusParams&, CheckBlockOptions);
    CheckedBlock(Block&& b, CheckBlockOptions o, std::vector<uint32_t>&& sigops, std::vector<InputSigOps>&& input_sigops,
                 WitnessFacts witness)
        : m_block(std::move(b)), m_opts(o), m_legacy_sigops(std::move(sigops)), m_input_sigops(std::move(input_sigops)),
          m_witness(witness)
    {
    }
    Block m_block;
    CheckBlockOptions m_opts;
    std::vector<uint32_t> m_legacy_sigops;
    std::vector<InputSigOps> m_input_sigops;
    WitnessFacts m_witness;
};

/// Core's CheckBlock on a block it does not take: returns true if every context-free rule holds,
/// otherwise false with `state` holding Core's reject reason, in Core's order: high-hash,
/// bad-signet-blksig (on a network with `signet_blocks`, when `check_pow`: BIP 325's block
/// solution to `signet_challenge`), bad-txnmrklroot, bad-txns-duplicate, bad-blk-length,
/// bad-cb-missing, bad-cb-multiple, the first failing transaction's CheckTransaction reason,
/// bad-blk-sigops.
/// `legacy_sigops`, when given, receives each transaction's legacy sigop count (filled once the
/// sigop rule is reached).
bool CheckBlockRules(const Block& block, BlockValidationState& state, const ConsensusParams& params,
                     CheckBlockOptions opts = {}, std::vector<uint32_t>* legacy_sigops = nullptr);

/// The only way to make a CheckedBlock. On success the block is moved into the result; on failure
/// `block` is left untouched and `state` says why.
std::optional<CheckedBlock> CheckBlock(Block&& block, BlockValidationState& state, const ConsensusParams& params,
                                       CheckBlockOptions opts = {});

/// Index of the coinbase output holding the witness commitment (the last one that matches
/// `6a 24 aa 21 a9 ed`), or NO_WITNESS_COMMITMENT (-1).
int GetWitnessCommitmentIndex(const Block& block) noexcept;

/// Core's CheckWitnessMalleation (part of ContextualCheckBlock): with a commitment expected
/// (segwit active) and present, the coinbase witness must be one 32-byte item
/// (bad-witness-nonce-size) and SHA256d(witness merkle root ‖ item) must equal the committed hash
/// (bad-witness-merkle-match); otherwise no transaction may carry witness data (unexpected-witness).
/// The block must have passed CheckBlock's rules (WitnessFactsOf reads the coinbase's input).
bool CheckWitnessMalleation(const Block& block, bool expect_witness_commitment, BlockValidationState& state);
/// The same from facts read before (CheckedBlock::witness_facts); NotRead with a commitment
/// expected is a programmer error.
bool CheckWitnessMalleation(const WitnessFacts& facts, bool expect_witness_commitment, BlockValidationState& state);

/// BIP141 block weight limit (ContextualCheckBlock's bad-blk-weight).
bool CheckBlockWeight(const Block& block, BlockValidationState& state);

/// BIP34: the coinbase scriptSig starts with `CScript() << height` (bad-cb-height).
bool CheckCoinbaseHeight(const Block& block, int height, BlockValidationState& state);

} // namespace ibdkit

// src/consensus/signet.h — BIP 325: a signet block's solution to its network's challenge (Core's
// signet.cpp, CheckSignetBlockSolution and SignetTxs).
//
// On a signet the proof of work is trivial: what makes a block valid is a solution (a scriptSig
// and a witness) that satisfies the network's challenge script. The solution rides in the coinbase's
// witness-commitment output, as the first push that starts with SIGNET_HEADER and carries more
// bytes; the signature commits to the block without that push (a merkle root over the coinbase
// with the push cut down to the header alone) and without the nonce. CheckBlockRules runs the check
// (consensus/check.h) on a network with `signet_blocks`, whenever proof of work is checked.
//
// Both functions read only their arguments: any number of threads may call them at once.
#pragma once

#include <ibdkit/chain/params.h>
#include <ibdkit/primitives/block.h>
#include <ibdkit/primitives/transaction.h>
#include <ibdkit/script/flags.h>

#include <array>
#include <cstdint>
#include <optional>
#include <span>

namespace ibdkit {

/// The four bytes that open the push holding a signet solution (BIP 325).
inline constexpr std::array<uint8_t, 4> SIGNET_HEADER{0xec, 0xc7, 0xda, 0xa2};

/// The flags a solution is verified under (Core's signet BLOCK_SCRIPT_VERIFY_FLAGS): taproot is
/// not among them, so a witness v1 challenge is an upgradable program that any solution satisfies.
inline constexpr ScriptFlags SIGNET_SCRIPT_FLAGS =
    SCRIPT_VERIFY_P2SH | SCRIPT_VERIFY_WITNESS | SCRIPT_VERIFY_DERSIG | SCRIPT_VERIFY_NULLDUMMY;

/// BIP 325's virtual transactions of a block: `to_spend` pays nothing to the challenge from an
/// input whose scriptSig is OP_0 and a push of the block's first 72 header bytes (version,
/// previous hash, the merkle root with the solution cut out, time); `to_sign` spends it with the
/// block's solution (an empty scriptSig and witness when the block carries none, which a trivial
/// challenge such as OP_TRUE accepts).
struct SignetTxs {
    Transaction to_spend;
    Transaction to_sign;
};

/// The block's virtual transactions under `challenge` (Core's SignetTxs::Create), or nullopt when
/// the block has no transactions, its coinbase has no witness commitment, or the solution does not
/// decode as a scriptSig followed by a witness stack with nothing after them.
std::optional<SignetTxs> MakeSignetTxs(const Block& block, std::span<const uint8_t> challenge);

/// Whether the block's solution satisfies `params.signet_challenge` (Core's
/// CheckSignetBlockSolution). The genesis block (`params.hash_genesis_block`) always passes.
bool CheckSignetBlockSolution(const Block& block, const ConsensusParams& params);

} // namespace ibdkit

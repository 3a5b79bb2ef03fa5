// ibdkit/primitives/consensus_constants.h — consensus constants, named as in Bitcoin Core (its
// consensus/consensus.h and script/script.h). A leaf: the byte formats, scripts and rules all read them.
#pragma once

#include <cstddef>
#include <cstdint>

namespace ibdkit {

/// The maximum allowed size for a serialized block, in bytes (only for buffer size limits).
inline constexpr unsigned int MAX_BLOCK_SERIALIZED_SIZE = 4'000'000;
/// The maximum allowed weight for a block (BIP141).
inline constexpr unsigned int MAX_BLOCK_WEIGHT = 4'000'000;
/// The maximum allowed number of signature check operations in a block, in weight units.
inline constexpr int64_t MAX_BLOCK_SIGOPS_COST = 80'000;
/// Coinbase outputs can be spent only after this many confirmations.
inline constexpr int COINBASE_MATURITY = 100;
inline constexpr int WITNESS_SCALE_FACTOR = 4;
/// 60 is the lower bound for the size of a valid serialized transaction.
inline constexpr std::size_t MIN_TRANSACTION_WEIGHT = WITNESS_SCALE_FACTOR * 60;
/// 10 is the lower bound for the size of a serialized transaction.
inline constexpr std::size_t MIN_SERIALIZABLE_TRANSACTION_WEIGHT = WITNESS_SCALE_FACTOR * 10;
/// Public keys a CHECKMULTISIG may take; also what the legacy (inaccurate) sigop count charges for
/// one (Core's script/script.h, an int there too).
inline constexpr int MAX_PUBKEYS_PER_MULTISIG = 20;
/// The largest script the interpreter runs, and the size above which an output is unspendable
/// (Core's script/script.h).
inline constexpr std::size_t MAX_SCRIPT_SIZE = 10'000;
/// Minimum size of a witness commitment output script (OP_RETURN, push 36, 4-byte tag, 32-byte hash).
inline constexpr std::size_t MINIMUM_WITNESS_COMMITMENT = 38;
inline constexpr int NO_WITNESS_COMMITMENT = -1;

} // namespace ibdkit

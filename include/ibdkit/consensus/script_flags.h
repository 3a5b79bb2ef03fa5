// ibdkit/consensus/script_flags.h — the script flags a block is connected under (Core's
// GetBlockScriptFlags): which script rules were in force at a height on a network.
#pragma once

#include <ibdkit/chain/params.h>
#include <ibdkit/primitives/hash.h>
#include <ibdkit/script/flags.h>

namespace ibdkit {

/// The script flags Core connects the block at `height` with hash `hash` under (Core's
/// GetBlockScriptFlags): P2SH, WITNESS and TAPROOT everywhere but the networks' exception blocks,
/// then DERSIG, CHECKLOCKTIMEVERIFY, CHECKSEQUENCEVERIFY and NULLDUMMY from their activation heights.
ScriptFlags GetBlockScriptFlags(const ConsensusParams& params, int height, const BlockHash& hash);

} // namespace ibdkit

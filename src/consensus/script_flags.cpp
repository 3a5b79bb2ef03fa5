#include <ibdkit/consensus/script_flags.h>

namespace ibdkit {

ScriptFlags GetBlockScriptFlags(const ConsensusParams& params, int height, const BlockHash& hash)
{
    // P2SH, WITNESS and TAPROOT apply to every block, retroactively: only the listed blocks broke
    // one of them before it was enforced, and those run under the flags listed with them.
    ScriptFlags flags = SCRIPT_VERIFY_P2SH | SCRIPT_VERIFY_WITNESS | SCRIPT_VERIFY_TAPROOT;
    for (const auto& exception : params.script_flag_exceptions) {
        if (exception.hash == hash) {
            flags = exception.flags;
            break;
        }
    }
    // The buried deployments, from their activation heights.
    if (height >= params.bip66_height) flags |= SCRIPT_VERIFY_DERSIG;
    if (height >= params.bip65_height) flags |= SCRIPT_VERIFY_CHECKLOCKTIMEVERIFY;
    if (height >= params.csv_height) flags |= SCRIPT_VERIFY_CHECKSEQUENCEVERIFY;
    if (height >= params.segwit_height) flags |= SCRIPT_VERIFY_NULLDUMMY; // BIP147 came with segwit
    return flags;
}

} // namespace ibdkit

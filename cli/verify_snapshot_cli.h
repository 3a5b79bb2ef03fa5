// cli/verify_snapshot_cli.h — `ibdkit utxo verify-snapshot` (cli/cmd_verify_snapshot.cpp).
#pragma once

#include "commands.h"

namespace ibdkit::cli {

/// Adds `verify-snapshot` to the `utxo` command.
void AddVerifySnapshot(CLI::App* utxo);

} // namespace ibdkit::cli

// src/common/network_folders.h — where each network lives inside a Bitcoin Core data directory.
#pragma once

#include <array>
#include <string_view>

namespace ibdkit {

/// Core's folder of each network in a data directory, in ChainType's order (main, testnet3,
/// testnet4, signet, regtest; chain/chain_type.h): "" for main, whose folder is the data directory
/// itself. The one table: the write guards read it by name, blockfile/network_folders.h by network.
inline constexpr std::array<std::string_view, 5> NETWORK_SUBFOLDERS{"", "testnet3", "testnet4", "signet", "regtest"};

} // namespace ibdkit

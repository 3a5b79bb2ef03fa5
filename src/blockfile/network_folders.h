// src/blockfile/network_folders.h — each network with its folder in a data directory.
#pragma once

#include <ibdkit/chain/chain_type.h>

#include "common/network_folders.h"

#include <array>
#include <cstddef>
#include <string_view>

namespace ibdkit {

struct NetworkFolder {
    ChainType chain;
    std::string_view sub; ///< Core's folder for it in a data directory ("" for main: the directory itself)
};

/// Every network with its folder, in ChainType's order (common/network_folders.h).
inline constexpr std::array<NetworkFolder, NETWORK_SUBFOLDERS.size()> NETWORK_FOLDERS = [] {
    std::array<NetworkFolder, NETWORK_SUBFOLDERS.size()> folders{};
    for (std::size_t i = 0; i < folders.size(); ++i) folders[i] = NetworkFolder{ChainType(i), NETWORK_SUBFOLDERS[i]};
    return folders;
}();
static_assert(NETWORK_FOLDERS[std::size_t(ChainType::MAIN)].sub.empty() &&
              NETWORK_FOLDERS[std::size_t(ChainType::TESTNET)].sub == "testnet3" &&
              NETWORK_FOLDERS[std::size_t(ChainType::TESTNET4)].sub == "testnet4" &&
              NETWORK_FOLDERS[std::size_t(ChainType::SIGNET)].sub == "signet" &&
              NETWORK_FOLDERS[std::size_t(ChainType::REGTEST)].sub == "regtest" && NETWORK_FOLDERS.size() == 5,
              "NETWORK_SUBFOLDERS follows ChainType's order");

} // namespace ibdkit

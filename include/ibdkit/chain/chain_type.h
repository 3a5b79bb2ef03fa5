// ibdkit/chain/chain_type.h — the networks by name: what a run's options carry (their parameters
// are in chain/params.h). Both functions are pure and thread-safe.
#pragma once

#include <optional>
#include <string_view>

namespace ibdkit {

enum class ChainType { MAIN, TESTNET, TESTNET4, SIGNET, REGTEST };

/// Parses a network name: "main"/"mainnet", "test"/"testnet"/"testnet3", "testnet4", "signet",
/// "regtest" (case-insensitive). nullopt if unknown.
std::optional<ChainType> ParseChainType(std::string_view name) noexcept;
/// Core's name for the chain ("main", "test", "testnet4", "signet", "regtest").
std::string_view ChainTypeName(ChainType type) noexcept;

} // namespace ibdkit

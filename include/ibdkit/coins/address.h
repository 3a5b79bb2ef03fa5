// ibdkit/coins/address.h — script classification (Core's Solver type names) and address encoding
// (base58check for P2PKH/P2SH, bech32/bech32m for segwit) for UTXO dumps.
#pragma once

#include <ibdkit/primitives/script.h>

#include <optional>
#include <string>
#include <string_view>

namespace ibdkit {

enum class AddressNetwork { Main, Test, Signet, Regtest };

/// "main", "test"/"testnet"/"testnet4", "signet", "regtest"; nullopt if unknown.
std::optional<AddressNetwork> ParseAddressNetwork(std::string_view name) noexcept;

/// Core's TxoutType names: "pubkey", "pubkeyhash", "scripthash", "multisig", "nulldata",
/// "witness_v0_keyhash", "witness_v0_scripthash", "witness_v1_taproot", "anchor",
/// "witness_unknown", "nonstandard".
std::string_view ScriptTypeName(const Script& script) noexcept;

/// The address of a standard output script on `net` (P2PKH, P2SH, any witness program);
/// nullopt for P2PK, multisig, OP_RETURN and non-standard scripts.
std::optional<std::string> EncodeAddress(const Script& script, AddressNetwork net);

} // namespace ibdkit

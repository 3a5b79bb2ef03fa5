// ibdkit/utxo/address.h — address encoding of output scripts (Core's EncodeDestination:
// base58check for P2PKH/P2SH, bech32/bech32m for witness programs) for UTXO dumps. Scripts are
// classified by the one classifier, Solver (primitives/script_ops.h).
#pragma once

#include <ibdkit/primitives/script.h>
#include <ibdkit/primitives/script_ops.h>

#include <cstddef>
#include <optional>
#include <span>
#include <string>
#include <string_view>

namespace ibdkit {

enum class AddressNetwork { Main, Test, Signet, Regtest };

/// "main", "test"/"testnet"/"testnet4", "signet", "regtest"; nullopt if unknown.
std::optional<AddressNetwork> ParseAddressNetwork(std::string_view name) noexcept;

/// The address of a standard output script on `net` (P2PKH, P2SH, any witness program);
/// nullopt for P2PK, multisig, OP_RETURN and non-standard scripts.
std::optional<std::string> EncodeAddress(const Script& script, AddressNetwork net);
/// Same, for a caller that already has the script's Solver type (must be Solver(script)).
std::optional<std::string> EncodeAddress(const Script& script, TxoutType type, AddressNetwork net);

/// Longest address EncodeAddressInto writes: bech32m of a 40-byte program with the hrp "bcrt".
inline constexpr std::size_t MAX_ADDRESS_LENGTH = 4 + 1 + 1 + 64 + 6;
/// Same as EncodeAddress, without allocating (for column builders): writes the address into
/// `out` (room for MAX_ADDRESS_LENGTH characters) and returns its length, 0 if it has none.
std::size_t EncodeAddressInto(const Script& script, TxoutType type, AddressNetwork net, char* out) noexcept;
/// Same, for a script held as bytes (a view into a block).
std::size_t EncodeAddressInto(std::span<const uint8_t> script, TxoutType type, AddressNetwork net, char* out) noexcept;

} // namespace ibdkit

// ibdkit/spent/tables.h — the four tables of blocks with their spent outputs (blocks,
// transactions, inputs, outputs) as column lists and row producers.
//
// A producer writes one block's rows cell by cell, in column order, to a sink (tabular/table.h):
// the CLI's TableWriter (CSV, JSON lines, SQLite) and Python's Arrow column builders take the same
// cells. Nothing is allocated per cell: hashes and addresses are written
// into stack buffers, scripts are views into the block or its undo data. Columns and their meaning:
// docs/spent-outputs.md.
//
// Every function here reads only its arguments and writes only to `sink` or `out`: thread-safe.
// A Text or Blob cell handed to a sink is valid during that call only (a sink that keeps it copies).
#pragma once

#include <ibdkit/spent/spent_block.h>
#include <ibdkit/tabular/table.h>
#include <ibdkit/utxo/address.h>

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string_view>

namespace ibdkit {

enum class BlockTable : uint8_t { Blocks, Transactions, Inputs, Outputs };
inline constexpr BlockTable ALL_BLOCK_TABLES[] = {BlockTable::Blocks, BlockTable::Transactions, BlockTable::Inputs,
                                                  BlockTable::Outputs};

/// "blocks", "transactions", "inputs", "outputs".
std::string_view BlockTableName(BlockTable t) noexcept;
std::optional<BlockTable> ParseBlockTable(std::string_view name) noexcept;
/// The table's columns, in the order EmitRows writes their cells (static storage).
std::span<const Column> BlockTableColumns(BlockTable t) noexcept;

/// The address network of a chain (signet and the testnets share their encoding, not regtest).
AddressNetwork AddressNetworkOf(ChainType chain) noexcept;

/// Writes the 64 hex digits of the 32 bytes of a hash held in internal order into `out`, in Core's
/// display order (reversed): exactly 64 characters, no terminator.
void HashHexInto(const uint8_t* hash, char* out) noexcept;
/// Writes the rows of `table` that `block` holds to `sink`: one for the block; one per
/// transaction; one per input after the coinbase (with the coin it spends); one per output. Cells
/// in BlockTableColumns(table)'s order and types.
void EmitRows(BlockTable table, const SpentBlock& block, AddressNetwork net, RowSinkBase& sink);

} // namespace ibdkit

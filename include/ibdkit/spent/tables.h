// ibdkit/spent/tables.h — the four tables of blocks with their spent outputs (blocks,
// transactions, inputs, outputs) as column lists and row producers.
//
// A producer writes one block's rows cell by cell, in column order, to any RowSink
// (tabular/table.h): the CLI's TableWriter (CSV, JSON lines, SQLite) and Python's Arrow column
// builders take the same cells. Nothing is allocated per cell: hashes and addresses are written
// into stack buffers, scripts are views into the block or its undo data. Columns and their meaning:
// docs/spent-outputs.md.
//
// Every function here reads only its arguments and writes only to `sink` or `out`: thread-safe.
// A Text or Blob cell handed to a sink is valid during that call only (a sink that keeps it copies).
#pragma once

#include <ibdkit/primitives/script_ops.h>
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
/// A row's address cell for a script with its Solver type: the address, or a null cell.
template <RowSink S>
void AddressCell(S& sink, std::span<const uint8_t> script, TxoutType type, AddressNetwork net)
{
    char addr[MAX_ADDRESS_LENGTH];
    const std::size_t n = EncodeAddressInto(script, type, net, addr);
    if (n == 0) {
        sink.Null();
    } else {
        sink.Text(std::string_view(addr, n));
    }
}

/// Writes the rows of `table` that `block` holds: one for the block; one per transaction; one per
/// input after the coinbase (with the coin it spends); one per output.
template <RowSink S>
void EmitRows(BlockTable table, const SpentBlock& block, AddressNetwork net, S& sink)
{
    char hex[64];
    const int64_t height = block.height();
    switch (table) {
    case BlockTable::Blocks:
        sink.Int(height);
        HashHexInto(block.hash().data(), hex);
        sink.Text(std::string_view(hex, 64));
        sink.Int(int64_t(block.time()));
        sink.Int(int64_t(block.txs().size()));
        sink.Int(int64_t(block.size()));
        sink.Int(int64_t(block.weight()));
        sink.Int(block.fees());
        sink.Int(block.subsidy());
        sink.Int(block.coinbase_value());
        sink.EndRow();
        return;
    case BlockTable::Transactions:
        for (std::size_t i = 0; i < block.txs().size(); ++i) {
            const TxLayout& tx = block.txs()[i];
            const std::size_t weight = TxWeight(tx);
            const std::size_t vsize = VirtualSize(weight);
            sink.Int(height);
            HashHexInto(block.txids()[i].data(), hex);
            sink.Text(std::string_view(hex, 64));
            if (i == 0) {
                sink.Null();
            } else {
                sink.Int(block.Fee(i));
            }
            sink.Int(int64_t(vsize));
            if (i == 0) {
                sink.Null();
            } else {
                sink.Real(double(block.Fee(i)) / double(vsize));
            }
            sink.Int(int64_t(tx.n_in));
            sink.Int(int64_t(tx.n_out));
            sink.Int(int64_t(weight));
            sink.Int(int64_t(tx.end - tx.begin));
            sink.EndRow();
        }
        return;
    case BlockTable::Inputs:
        for (std::size_t i = 1; i < block.txs().size(); ++i) {
            const TxView tx(block.txs()[i]);
            const std::span<const Coin> coins = block.SpentBy(i);
            HashHexInto(block.txids()[i].data(), hex);
            const std::string_view txid(hex, 64);
            int64_t vin = 0;
            for (InputView in : tx.inputs()) {
                const Coin& coin = coins[std::size_t(vin)];
                const std::span<const uint8_t> script = coin.out.script_pubkey.span();
                const TxoutType type = Solver(script);
                char prev[64];
                HashHexInto(in.prevout_bytes, prev);
                sink.Int(height);
                sink.Text(txid);
                sink.Int(vin);
                sink.Text(std::string_view(prev, 64));
                sink.Int(int64_t(in.prevout_n()));
                sink.Int(coin.out.value);
                sink.Blob(script);
                sink.Text(GetTxnOutputType(type));
                AddressCell(sink, script, type, net);
                sink.Int(int64_t(coin.height));
                sink.Bool(coin.coinbase);
                sink.EndRow();
                ++vin;
            }
        }
        return;
    case BlockTable::Outputs:
        for (std::size_t i = 0; i < block.txs().size(); ++i) {
            const TxView tx(block.txs()[i]);
            HashHexInto(block.txids()[i].data(), hex);
            const std::string_view txid(hex, 64);
            int64_t vout = 0;
            for (OutputView o : tx.outputs()) {
                const TxoutType type = Solver(o.script_pubkey);
                sink.Int(height);
                sink.Text(txid);
                sink.Int(vout++);
                sink.Int(o.value);
                sink.Blob(o.script_pubkey);
                sink.Text(GetTxnOutputType(type));
                AddressCell(sink, o.script_pubkey, type, net);
                sink.EndRow();
            }
        }
        return;
    }
}

} // namespace ibdkit

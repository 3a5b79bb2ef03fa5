// src/spent/emit_rows.h — the block tables' row producer for any RowSink (tabular/table.h), its
// cell calls bound at compile time; the public EmitRows (spent/tables.h) is it over RowSinkBase.
#pragma once

#include <ibdkit/primitives/script_ops.h>
#include <ibdkit/spent/tables.h>
#include <ibdkit/utxo/address.h>

#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>

namespace ibdkit {

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

/// EmitRows (spent/tables.h) for any RowSink, its calls bound at compile time: for sinks whose
/// cells cost little (the Arrow builders, the benchmark's counting sink).
template <RowSink S>
void EmitRowsTo(BlockTable table, const SpentBlock& block, AddressNetwork net, S& sink)
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

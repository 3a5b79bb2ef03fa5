// Balances written as a table (include/ibdkit/utxo/balances.h, WriteBalances): the rows of
// ComputeBalances through the shared table writer (CSV, JSON lines, SQLite).
#include <ibdkit/utxo/balances.h>

#include <ibdkit/primitives/script_ops.h>

#include <array>

namespace ibdkit {

std::span<const Column> BalanceColumns() noexcept
{
    static constexpr std::array<Column, 5> COLUMNS{{
        {"script_pubkey", ColumnType::Blob},
        {"address", ColumnType::Text, true},
        {"script_type", ColumnType::Text},
        {"coins", ColumnType::Int},
        {"value", ColumnType::Int},
    }};
    return COLUMNS;
}

Result<BalancesResult> WriteBalances(const CoinsDB& db, TableFormat format, const std::filesystem::path& out,
                                     AddressNetwork net, const BalancesOptions& options, const BalancesProgress& progress)
{
    auto writer = TableWriter::Create(out, format, "balances", BalanceColumns());
    if (!writer) return writer.error();
    TableWriter& w = **writer;
    char addr[MAX_ADDRESS_LENGTH];
    auto r = ComputeBalances(db, options, [&](const BalanceRow& row) {
        const Script script(row.script.data(), row.script.size());
        const TxoutType type = Solver(row.script);
        w.Blob(row.script);
        const std::size_t n = EncodeAddressInto(script, type, net, addr);
        if (n) w.Text(std::string_view(addr, n));
        else w.Null();
        w.Text(GetTxnOutputType(type));
        w.Int(int64_t(row.coins));
        w.Int(row.value);
        w.EndRow();
        return w.ok();
    }, progress);
    if (!r) return r.error(); // the writer goes without Finish(): no file is left
    // A write that failed stopped the rows early; Finish() returns its error.
    if (auto e = w.Finish()) return *e;
    return r;
}

} // namespace ibdkit

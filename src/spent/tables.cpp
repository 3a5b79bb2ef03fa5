#include <ibdkit/spent/tables.h>

#include "spent/emit_rows.h"

namespace ibdkit {

namespace {

constexpr Column BLOCKS[] = {
    {"height", ColumnType::Int},        {"hash", ColumnType::Text},   {"time", ColumnType::Int},
    {"txs", ColumnType::Int},           {"size", ColumnType::Int},    {"weight", ColumnType::Int},
    {"fees", ColumnType::Int},          {"subsidy", ColumnType::Int}, {"coinbase_value", ColumnType::Int},
};
constexpr Column TRANSACTIONS[] = {
    {"height", ColumnType::Int}, {"txid", ColumnType::Text},          {"fee", ColumnType::Int, true},
    {"vsize", ColumnType::Int},  {"feerate", ColumnType::Real, true}, {"inputs", ColumnType::Int},
    {"outputs", ColumnType::Int}, {"weight", ColumnType::Int},        {"size", ColumnType::Int},
};
constexpr Column INPUTS[] = {
    {"height", ColumnType::Int},        {"txid", ColumnType::Text},        {"vin", ColumnType::Int},
    {"prev_txid", ColumnType::Text},    {"prev_vout", ColumnType::Int},    {"value", ColumnType::Int},
    {"script_pubkey", ColumnType::Blob}, {"script_type", ColumnType::Text}, {"address", ColumnType::Text, true},
    {"spent_height", ColumnType::Int},  {"coinbase", ColumnType::Bool},
};
constexpr Column OUTPUTS[] = {
    {"height", ColumnType::Int},         {"txid", ColumnType::Text},        {"vout", ColumnType::Int},
    {"value", ColumnType::Int},          {"script_pubkey", ColumnType::Blob}, {"script_type", ColumnType::Text},
    {"address", ColumnType::Text, true},
};

} // namespace

std::string_view BlockTableName(BlockTable t) noexcept
{
    switch (t) {
    case BlockTable::Blocks: return "blocks";
    case BlockTable::Transactions: return "transactions";
    case BlockTable::Inputs: return "inputs";
    case BlockTable::Outputs: break;
    }
    return "outputs";
}

std::optional<BlockTable> ParseBlockTable(std::string_view name) noexcept
{
    for (BlockTable t : ALL_BLOCK_TABLES) {
        if (BlockTableName(t) == name) return t;
    }
    return std::nullopt;
}

std::span<const Column> BlockTableColumns(BlockTable t) noexcept
{
    switch (t) {
    case BlockTable::Blocks: return BLOCKS;
    case BlockTable::Transactions: return TRANSACTIONS;
    case BlockTable::Inputs: return INPUTS;
    case BlockTable::Outputs: break;
    }
    return OUTPUTS;
}

AddressNetwork AddressNetworkOf(ChainType chain) noexcept
{
    switch (chain) {
    case ChainType::MAIN: return AddressNetwork::Main;
    case ChainType::SIGNET: return AddressNetwork::Signet;
    case ChainType::REGTEST: return AddressNetwork::Regtest;
    case ChainType::TESTNET:
    case ChainType::TESTNET4: break;
    }
    return AddressNetwork::Test;
}

void HashHexInto(const uint8_t* hash, char* out) noexcept
{
    static constexpr char DIGITS[] = "0123456789abcdef";
    for (std::size_t i = 0; i < 32; ++i) {
        const uint8_t b = hash[31 - i];
        out[2 * i] = DIGITS[b >> 4];
        out[2 * i + 1] = DIGITS[b & 15];
    }
}

void EmitRows(BlockTable table, const SpentBlock& block, AddressNetwork net, RowSinkBase& sink)
{
    EmitRowsTo(table, block, net, sink);
}

} // namespace ibdkit

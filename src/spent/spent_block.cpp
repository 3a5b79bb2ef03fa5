#include <ibdkit/spent/spent_block.h>

#include <ibdkit/encoding/serialize.h>

#include <string>
#include <utility>

namespace ibdkit {

namespace {

Error BlockError(Errc code, const BlockHash& hash, int height, const std::string& what)
{
    return Error{code, "block " + hash.ToHex() + " at height " + std::to_string(height) + ": " + what};
}

} // namespace

Result<SpentBlock> SpentBlock::Make(std::vector<uint8_t> bytes, int height, BlockUndo spent, ChainType chain)
{
    SpentBlock b;
    b.m_bytes = std::move(bytes);
    auto view = BlockView::Parse(ByteSpan(b.m_bytes.data(), b.m_bytes.size()));
    if (!view) return view.error();
    b.m_view = *view;
    b.m_height = height;
    b.m_chain = chain;
    b.m_hash = b.m_view.ComputeHash();
    b.m_undo = std::move(spent);

    const std::size_t n = b.m_view.tx_count();
    b.m_txs.reserve(n);
    b.m_stripped_size = BlockHeader::SIZE + GetSizeOfCompactSize(n);
    for (TxView tx : b.m_view.txs()) {
        b.m_txs.push_back(tx.layout());
        b.m_stripped_size += tx.GetStrippedSize();
    }
    if (n == 0 || !TxView(b.m_txs[0]).IsCoinBase()) {
        return BlockError(Errc::Corrupt, b.m_hash, height, "the first transaction is not a coinbase");
    }
    if (b.m_undo.vtxundo.size() != n - 1) {
        return BlockError(Errc::Corrupt, b.m_hash, height,
                          "its spent outputs cover " + std::to_string(b.m_undo.vtxundo.size()) + " transactions, the block has " +
                              std::to_string(n - 1) + " after its coinbase");
    }
    b.m_txids = b.m_view.ComputeTxIds().txids;

    // Core's amount rules, in its order: every output and their sum in range (CheckTransaction),
    // then per transaction the spent coins in range, no less than the outputs, the fee in range
    // (CheckTxInputs), the block's fees in range and the coinbase within subsidy + fees.
    b.m_fees.assign(n, 0);
    for (std::size_t i = 0; i < n; ++i) {
        const TxView tx(b.m_txs[i]);
        Amount out = 0;
        for (OutputView o : tx.outputs()) {
            // Each value is in range before it is added, so the sum cannot overflow.
            if (!MoneyRange(o.value) || !MoneyRange(out += o.value)) {
                return BlockError(Errc::Corrupt, b.m_hash, height,
                                  "transaction " + b.m_txids[i].ToHex() + ": an output value out of range (bad-txns-vout-toolarge)");
            }
        }
        if (i == 0) {
            b.m_coinbase_value = out;
            continue;
        }
        const auto& coins = b.m_undo.vtxundo[i - 1].prevout;
        if (coins.size() != b.m_txs[i].n_in) {
            return BlockError(Errc::Corrupt, b.m_hash, height,
                              "transaction " + b.m_txids[i].ToHex() + " has " + std::to_string(b.m_txs[i].n_in) +
                                  " inputs but " + std::to_string(coins.size()) + " spent outputs");
        }
        Amount in = 0;
        for (const Coin& c : coins) {
            if (!MoneyRange(c.out.value) || !MoneyRange(in += c.out.value)) {
                return BlockError(Errc::Corrupt, b.m_hash, height,
                                  "transaction " + b.m_txids[i].ToHex() + ": spent values out of range (bad-txns-inputvalues-outofrange)");
            }
        }
        if (in < out) {
            return BlockError(Errc::Corrupt, b.m_hash, height,
                              "transaction " + b.m_txids[i].ToHex() + " spends " + std::to_string(in) + " sat and creates " +
                                  std::to_string(out) + " (bad-txns-in-belowout)");
        }
        b.m_fees[i] = in - out;
        b.m_total_fees += b.m_fees[i];
        if (!MoneyRange(b.m_total_fees)) {
            return BlockError(Errc::Corrupt, b.m_hash, height, "fees out of range (bad-txns-accumulated-fee-outofrange)");
        }
    }
    b.m_subsidy = GetBlockSubsidy(height, GetChainParams(chain).consensus);
    if (b.m_coinbase_value > b.m_subsidy + b.m_total_fees) {
        return BlockError(Errc::Corrupt, b.m_hash, height,
                          "the coinbase claims " + std::to_string(b.m_coinbase_value) + " sat, more than subsidy " +
                              std::to_string(b.m_subsidy) + " + fees " + std::to_string(b.m_total_fees) + " (bad-cb-amount)");
    }
    return b;
}

Result<SpentBlock> SpentBlock::FromCoins(std::vector<uint8_t> bytes, int height, std::span<const Coin> coins, ChainType chain)
{
    auto view = BlockView::Parse(ByteSpan(bytes.data(), bytes.size()));
    if (!view) return view.error();
    // The counts come from the parsed block, whose inputs the bytes really hold.
    BlockUndo undo;
    undo.vtxundo.reserve(view->tx_count() > 0 ? view->tx_count() - 1 : 0);
    std::size_t k = 0;
    bool first = true;
    for (TxView tx : view->txs()) {
        if (first) {
            first = false;
            continue;
        }
        const std::size_t n_in = tx.layout().n_in;
        if (coins.size() - k < n_in) {
            return Error{Errc::InvalidValue, "block " + view->ComputeHash().ToHex() + ": " + std::to_string(coins.size()) +
                                                 " spent outputs given, too few for its inputs after the coinbase"};
        }
        undo.vtxundo.emplace_back().prevout.assign(coins.begin() + std::ptrdiff_t(k), coins.begin() + std::ptrdiff_t(k + n_in));
        k += n_in;
    }
    if (k != coins.size()) {
        return Error{Errc::InvalidValue, "block " + view->ComputeHash().ToHex() + ": " + std::to_string(coins.size()) +
                                             " spent outputs given, its inputs after the coinbase are " + std::to_string(k)};
    }
    return Make(std::move(bytes), height, std::move(undo), chain);
}

} // namespace ibdkit

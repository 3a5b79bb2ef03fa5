// ibdkit/spent/spent_block.h — a block with the coins its inputs spend (its "spent outputs"), and
// what they give: each transaction's fee, the block's fees, subsidy and coinbase value.
//
// The spent coins are the block's undo data (coins/undo.h: per transaction after the coinbase, the
// coins its inputs spend, in input order), whether read from Core's rev files, computed by the
// engine as it connects the block, or supplied by the caller. Make() checks them against the block
// before anything reads them, with Core's amount rules (CheckTransaction's output ranges,
// CheckTxInputs, ConnectBlock's bad-cb-amount): a mismatch is a typed error naming the block, never
// an out-of-range read. docs/spent-outputs.md.
//
// A SpentBlock is immutable once made: any number of threads may read one at once. VirtualSize and
// TxWeight are pure.
#pragma once

#include <ibdkit/chain/params.h>
#include <ibdkit/coins/coin.h>
#include <ibdkit/coins/undo.h>
#include <ibdkit/error.h>
#include <ibdkit/primitives/amount.h>
#include <ibdkit/primitives/block_view.h>
#include <ibdkit/primitives/hash.h>

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

namespace ibdkit {

/// A serialized block, its height, and the coins its inputs spend, checked against each other.
/// Move-only: the views point into the bytes it owns.
class SpentBlock {
public:
    /// Checks `spent` against the block in `bytes` (BlockView::Parse's errors for the bytes):
    /// one TxUndo per transaction after the coinbase and one coin per input (Errc::Corrupt naming
    /// the block and the transaction otherwise); every amount in Core's MoneyRange, no transaction
    /// spending less than it creates, and the coinbase claiming at most subsidy + fees on `chain`
    /// (Errc::Corrupt with Core's reject reason). The first transaction must be a coinbase
    /// (Errc::Corrupt otherwise). The result owns `bytes` and `spent`.
    static Result<SpentBlock> Make(std::vector<uint8_t> bytes, int height, BlockUndo spent, ChainType chain);
    /// The same with the spent coins as one list over all inputs after the coinbase, in block order
    /// (how a caller usually holds them); too few or too many is Errc::InvalidValue. Copies `coins`.
    static Result<SpentBlock> FromCoins(std::vector<uint8_t> bytes, int height, std::span<const Coin> coins, ChainType chain);

    SpentBlock(SpentBlock&&) noexcept = default;
    SpentBlock& operator=(SpentBlock&&) noexcept = default;
    SpentBlock(const SpentBlock&) = delete;
    SpentBlock& operator=(const SpentBlock&) = delete;

    /// The block's bytes and a view of them (owned by this SpentBlock: valid while it lives).
    ByteSpan bytes() const noexcept { return m_view.bytes(); }
    const BlockView& view() const noexcept { return m_view; }
    /// Where it is: its height, its chain, its hash (computed once by Make) and its header's time.
    int height() const noexcept { return m_height; }
    ChainType chain() const noexcept { return m_chain; }
    const BlockHash& hash() const noexcept { return m_hash; }
    uint32_t time() const noexcept { return m_view.header().time; }
    /// Transactions in block order (index 0: the coinbase).
    std::span<const TxLayout> txs() const noexcept { return m_txs; }
    std::span<const Txid> txids() const noexcept { return m_txids; }
    /// The undo data as given (vtxundo[i - 1] belongs to transaction i).
    const BlockUndo& undo() const noexcept { return m_undo; }
    /// The coins transaction `tx` (below txs().size(), unchecked) spends, in input order (empty for
    /// the coinbase).
    std::span<const Coin> SpentBy(std::size_t tx) const noexcept
    {
        if (tx == 0) return {};
        return m_undo.vtxundo[tx - 1].prevout;
    }
    /// Σ spent values − Σ output values of transaction `tx` (0 for the coinbase; `tx` unchecked).
    Amount Fee(std::size_t tx) const noexcept { return m_fees[tx]; }
    Amount fees() const noexcept { return m_total_fees; }
    Amount subsidy() const noexcept { return m_subsidy; }
    Amount coinbase_value() const noexcept { return m_coinbase_value; }
    std::size_t size() const noexcept { return m_view.GetTotalSize(); }
    /// BIP141 weight: stripped size × 3 + size.
    std::size_t weight() const noexcept { return m_stripped_size * 3 + size(); }

private:
    SpentBlock() = default;
    std::vector<uint8_t> m_bytes;
    BlockView m_view;
    int m_height{0};
    ChainType m_chain{ChainType::MAIN};
    BlockHash m_hash;
    std::vector<TxLayout> m_txs;
    std::vector<Txid> m_txids;
    BlockUndo m_undo;
    std::vector<Amount> m_fees;
    Amount m_total_fees{0}, m_subsidy{0}, m_coinbase_value{0};
    std::size_t m_stripped_size{0};
};

/// Ceil(weight / 4): BIP141's virtual size.
constexpr std::size_t VirtualSize(std::size_t weight) noexcept { return (weight + 3) / 4; }
/// A transaction's BIP141 weight from its layout.
inline std::size_t TxWeight(const TxLayout& tx) noexcept
{
    const TxView v(tx);
    return v.GetStrippedSize() * 3 + v.GetTotalSize();
}

} // namespace ibdkit

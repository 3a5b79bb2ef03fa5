#include "connect/disconnect.h"

#include <ibdkit/coins/compressor.h>
#include <ibdkit/primitives/consensus_constants.h>

namespace ibdkit {

namespace {

// Core's MAX_OUTPUTS_PER_BLOCK: no transaction has more outputs than a block of empty ones could.
constexpr uint32_t MAX_OUTPUTS_PER_BLOCK = MAX_BLOCK_WEIGHT / (WITNESS_SCALE_FACTOR * 9);

// Core's AccessByTxid: the first unspent output of `txid`, or the empty coin.
Coin AccessByTxid(CoinsCache& view, const Txid& txid)
{
    for (uint32_t n = 0; n < MAX_OUTPUTS_PER_BLOCK; ++n) {
        Coin c = view.AccessCoin(OutPoint{txid, n});
        if (!c.IsSpent()) return c;
    }
    return Coin();
}

// The blocks whose coinbases a later duplicate overwrote (Core's DisconnectBlock exceptions; they
// differ from ConnectBlock's because blocks are undone in reverse).
bool IsBIP30Overwritten(int height, const BlockHash& hash)
{
    static const BlockHash h91722 = *BlockHash::FromHex("00000000000271a2dc26e7667f8419f2e15416dc6955e5a6c6cdf3f2574dd08e");
    static const BlockHash h91812 = *BlockHash::FromHex("00000000000af0aed4792b1acee3d966af36cf5def14935db8de83d6f9306f2f");
    return (height == 91722 && hash == h91722) || (height == 91812 && hash == h91812);
}

} // namespace

DisconnectResult ApplyTxInUndo(Coin&& coin, CoinsCache& view, const OutPoint& out)
{
    bool clean = true;
    if (view.HaveCoin(out)) clean = false; // overwriting a transaction output
    if (coin.height == 0) {
        // A legacy record without metadata: another output of the same transaction carries it.
        const Coin alternate = AccessByTxid(view, out.hash);
        if (alternate.IsSpent()) return DisconnectResult::FAILED;
        coin.height = alternate.height;
        coin.coinbase = alternate.coinbase;
    }
    view.AddCoin(out, std::move(coin), /*possible_overwrite=*/!clean);
    return clean ? DisconnectResult::OK : DisconnectResult::UNCLEAN;
}

DisconnectResult DisconnectBlock(const Block& block, int height, const BlockHash& hash, BlockUndo undo, CoinsCache& view,
                                 std::string* error)
{
    auto fail = [&](const char* why) {
        if (error) *error = why;
        return DisconnectResult::FAILED;
    };
    if (undo.vtxundo.size() + 1 != block.vtx.size()) return fail("DisconnectBlock(): block and undo data inconsistent");
    const bool enforce_bip30 = !IsBIP30Overwritten(height, hash);
    bool clean = true;
    for (std::size_t i = block.vtx.size(); i-- > 0;) {
        const Transaction& tx = block.vtx[i];
        const Txid& txid = tx.GetHash();
        const bool is_coinbase = tx.IsCoinBase();
        const bool is_bip30_exception = is_coinbase && !enforce_bip30;
        // Every output must be there and match the block's exactly.
        for (uint32_t o = 0; o < tx.vout().size(); ++o) {
            if (IsUnspendable(tx.vout()[o].script_pubkey)) continue;
            Coin coin;
            const bool is_spent = view.SpendCoin(OutPoint{txid, o}, &coin);
            if (!is_spent || tx.vout()[o] != coin.out || uint32_t(height) != coin.height || is_coinbase != coin.coinbase) {
                if (!is_bip30_exception) clean = false; // transaction output mismatch
            }
        }
        if (i == 0) continue;
        // Restore the inputs, last first.
        TxUndo& txundo = undo.vtxundo[i - 1];
        if (txundo.prevout.size() != tx.vin().size()) return fail("DisconnectBlock(): transaction and undo data inconsistent");
        for (std::size_t j = tx.vin().size(); j-- > 0;) {
            const DisconnectResult r = ApplyTxInUndo(std::move(txundo.prevout[j]), view, tx.vin()[j].prevout);
            if (r == DisconnectResult::FAILED) return fail("DisconnectBlock(): legacy undo record without metadata");
            clean = clean && r != DisconnectResult::UNCLEAN;
        }
    }
    view.SetBestBlock(block.hash_prev_block);
    return clean ? DisconnectResult::OK : DisconnectResult::UNCLEAN;
}

} // namespace ibdkit

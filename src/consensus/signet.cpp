#include "consensus/signet.h"

#include <ibdkit/consensus/check.h>
#include <ibdkit/error.h>
#include <ibdkit/primitives/script_ops.h>
#include <ibdkit/script/verify.h>

#include "consensus/merkle.h"

#include <algorithm>
#include <cstddef>
#include <cstring>
#include <utility>
#include <vector>

namespace ibdkit {
namespace {

/// A push as Core's `CScript << bytes` writes it: the shortest of the direct length, PUSHDATA1,
/// PUSHDATA2 and PUSHDATA4 forms (never OP_0 or OP_1..OP_16, whatever the original used).
void AppendPush(Script& s, std::span<const uint8_t> d)
{
    const std::size_t n = d.size();
    if (n < OP_PUSHDATA1) {
        s.push_back(uint8_t(n));
    } else if (n <= 0xff) {
        s.push_back(OP_PUSHDATA1);
        s.push_back(uint8_t(n));
    } else if (n <= 0xffff) {
        s.push_back(OP_PUSHDATA2);
        s.push_back(uint8_t(n));
        s.push_back(uint8_t(n >> 8));
    } else {
        s.push_back(OP_PUSHDATA4);
        for (int i = 0; i < 4; ++i) s.push_back(uint8_t(n >> (8 * i)));
    }
    s.append(d);
}

/// Core's FetchAndClearCommitmentSection: finds the first push longer than SIGNET_HEADER that
/// starts with it, takes the bytes after the header as the solution, and rewrites the script with
/// that push cut to the header. The rewrite re-encodes every op as Core's does: pushes in the form
/// AppendPush writes, empty pushes as their bare opcode, and nothing past a truncated push. The
/// script stays untouched when no such push is found.
bool TakeSolution(Script& commitment, std::vector<uint8_t>& solution)
{
    Script rewritten;
    bool found = false;
    const uint8_t* pc = commitment.data();
    const uint8_t* const end = pc + commitment.size();
    uint8_t op = 0;
    std::span<const uint8_t> data;
    while (GetScriptOp(pc, end, op, &data)) {
        if (data.empty()) {
            rewritten.push_back(op);
            continue;
        }
        if (!found && data.size() > SIGNET_HEADER.size() &&
            std::equal(SIGNET_HEADER.begin(), SIGNET_HEADER.end(), data.begin())) {
            solution.assign(data.begin() + SIGNET_HEADER.size(), data.end());
            data = data.first(SIGNET_HEADER.size());
            found = true;
        }
        AppendPush(rewritten, data);
    }
    if (found) commitment = std::move(rewritten);
    return found;
}

/// Reads the solution's bytes for encoding/serialize.h's decoders; a read past the end throws.
class SolutionReader {
public:
    explicit SolutionReader(std::span<const uint8_t> bytes) noexcept : m_rest(bytes) {}
    void read(std::span<std::byte> out)
    {
        if (out.size() > m_rest.size()) throw DecodeError(Errc::EndOfData);
        if (!out.empty()) std::memcpy(out.data(), m_rest.data(), out.size());
        m_rest = m_rest.subspan(out.size());
    }
    bool empty() const noexcept { return m_rest.empty(); }

private:
    std::span<const uint8_t> m_rest;
};

/// A solution is a scriptSig then a witness stack, in transaction encoding, and nothing else.
bool DecodeSolution(std::span<const uint8_t> bytes, TxIn& in)
{
    try {
        SolutionReader r(bytes);
        Unserialize(r, in.script_sig);
        Unserialize(r, in.witness.stack);
        return r.empty();
    } catch (const DecodeError&) {
        return false;
    }
}

} // namespace

std::optional<SignetTxs> MakeSignetTxs(const Block& block, std::span<const uint8_t> challenge)
{
    if (block.vtx.empty()) return std::nullopt;
    const int commitment = GetWitnessCommitmentIndex(block);
    if (commitment == NO_WITNESS_COMMITMENT) return std::nullopt;

    MutableTransaction to_sign;
    to_sign.version = 0;
    to_sign.lock_time = 0;
    to_sign.vin.resize(1);
    to_sign.vin[0].sequence = 0;
    to_sign.vout.resize(1);
    to_sign.vout[0].value = 0;
    to_sign.vout[0].script_pubkey.push_back(OP_RETURN);

    // The coinbase with the solution cut out: the signature cannot cover its own bytes.
    MutableTransaction coinbase = block.vtx[0].ToMutable();
    std::vector<uint8_t> solution;
    // Without a solution the empty scriptSig and witness stand: a trivial challenge accepts them.
    if (TakeSolution(coinbase.vout[std::size_t(commitment)].script_pubkey, solution) && !DecodeSolution(solution, to_sign.vin[0])) {
        return std::nullopt;
    }
    std::vector<uint256> leaves;
    leaves.reserve(block.vtx.size() + 1);
    leaves.push_back(coinbase.GetHash().ToUint256());
    for (std::size_t t = 1; t < block.vtx.size(); ++t) leaves.push_back(block.vtx[t].GetHash().ToUint256());

    // What is signed: the header without bits and nonce, over the modified merkle root.
    BlockHeader signed_header = block;
    signed_header.hash_merkle_root = ComputeMerkleRoot(std::move(leaves));
    const std::array<uint8_t, BlockHeader::SIZE> header_bytes = HeaderToBytes(signed_header);
    constexpr std::size_t SIGNED_BYTES = 4 + 32 + 32 + 4;

    MutableTransaction to_spend;
    to_spend.version = 0;
    to_spend.lock_time = 0;
    to_spend.vin.resize(1);
    to_spend.vin[0].sequence = 0;
    to_spend.vin[0].script_sig.push_back(OP_0);
    AppendPush(to_spend.vin[0].script_sig, std::span<const uint8_t>(header_bytes).first(SIGNED_BYTES));
    to_spend.vout.resize(1);
    to_spend.vout[0].value = 0;
    to_spend.vout[0].script_pubkey = Script(challenge);

    to_sign.vin[0].prevout = OutPoint{to_spend.GetHash(), 0};
    return SignetTxs{Transaction(std::move(to_spend)), Transaction(std::move(to_sign))};
}

bool CheckSignetBlockSolution(const Block& block, const ConsensusParams& params)
{
    if (block.GetHash() == params.hash_genesis_block) return true;
    const std::optional<SignetTxs> txs = MakeSignetTxs(block, params.signet_challenge);
    if (!txs) return false;
    const TxOut spent = txs->to_spend.vout()[0];
    return VerifyInput(txs->to_sign, 0, std::span<const TxOut>(&spent, 1), SIGNET_SCRIPT_FLAGS).ok();
}

} // namespace ibdkit

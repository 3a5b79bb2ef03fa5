// A peer made of a header list that answers a locator as Core does, for the header download's
// tests (HeaderWalk in test_header_walk.cpp, HeadersPresync in test_headers_presync.cpp): regtest
// headers mined on the spot, cheap at regtest's difficulty.
#pragma once

#include "consensus/headers_presync.h"
#include "wire/protocol.h"

#include <ibdkit/chain/params.h>
#include <ibdkit/consensus/pow.h>

#include <algorithm>
#include <cstdint>
#include <vector>

namespace ibdkit::test {

inline const ChainParams& Regtest() { return GetChainParams(ChainType::REGTEST); }

/// A regtest header on `prev`, `n` seconds after the genesis, its nonce ground to meet `bits`
/// (the genesis's unless given).
inline BlockHeader Mined(const BlockHash& prev, uint32_t n, uint32_t bits = 0)
{
    BlockHeader h;
    h.version = 0x20000000;
    h.hash_prev_block = prev;
    h.time = Regtest().genesis.time + n;
    h.bits = bits != 0 ? bits : Regtest().genesis.bits;
    while (!CheckProofOfWork(h.GetHash().ToUint256(), h.bits, Regtest().consensus)) ++h.nonce;
    return h;
}

/// A peer's best chain, the genesis first.
struct FakePeer {
    std::vector<BlockHeader> headers{Regtest().genesis};

    /// `count` more headers on the header at `height` (the rest above it dropped), `salt` seconds
    /// apart from another branch's, each carrying `bits` (the genesis's unless given).
    void Grow(int height, int count, uint32_t salt = 0, uint32_t bits = 0)
    {
        headers.resize(std::size_t(height) + 1);
        for (int i = 0; i < count; ++i) {
            headers.push_back(Mined(headers.back().GetHash(), uint32_t(headers.size()) * 600 + salt, bits));
        }
    }
    /// Core's answer to getheaders: after the first locator hash on its chain (the genesis when none is).
    std::vector<BlockHeader> Answer(const HeadersAsk& ask) const
    {
        std::size_t after = 0;
        for (const BlockHash& hash : MakeLocator(ask.chain, ask.first)) {
            auto at = std::find_if(headers.begin(), headers.end(), [&](const BlockHeader& h) { return h.GetHash() == hash; });
            if (at != headers.end()) {
                after = std::size_t(at - headers.begin());
                break;
            }
        }
        const std::size_t end = std::min(headers.size(), after + 1 + HEADERS_PER_ANSWER);
        return {headers.begin() + std::ptrdiff_t(after) + 1, headers.begin() + std::ptrdiff_t(end)};
    }
};

} // namespace ibdkit::test

// Fuzz: a peer's low-work header chain downloaded twice (HeadersPresync, consensus/headers_presync.h),
// fed answers of any order and size: from the chain it presyncs, from another chain forking off it
// anywhere, cut short, with a header changed, or raw 80-byte headers from the input. The network
// is regtest with a commitment every 3 headers and a buffer of 10, so the redownload's release and
// its commitments come within reach. Checks: no crash; the commitments held never exceed their
// bound nor the buffer its size after an answer; the released headers make one chain from the
// start, each meeting its nBits; a Complete chain has the minimum work; an end frees the memory;
// and a peer that answers every request in full from one chain is never refused.
#include "consensus/headers_presync.h"
#include "wire/protocol.h"

#include <ibdkit/chain/params.h>
#include <ibdkit/consensus/pow.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <span>
#include <vector>

using namespace ibdkit;

namespace {

const ChainParams& SmallRegtest()
{
    static const ChainParams params = [] {
        ChainParams p = GetChainParams(ChainType::REGTEST);
        p.headers_sync = {3, 10};
        return p;
    }();
    return params;
}

/// The input, read from the front; zeros once it is used up.
struct Input {
    std::span<const uint8_t> bytes;
    bool Empty() const { return bytes.empty(); }
    uint8_t Byte()
    {
        if (bytes.empty()) return 0;
        const uint8_t b = bytes.front();
        bytes = bytes.subspan(1);
        return b;
    }
    uint32_t Word() { return uint32_t(Byte()) | uint32_t(Byte()) << 8; }
};

BlockHeader Mined(const BlockHash& prev, uint32_t time)
{
    BlockHeader h;
    h.version = 0x20000000;
    h.hash_prev_block = prev;
    h.time = time;
    h.bits = SmallRegtest().genesis.bits;
    while (!CheckProofOfWork(h.GetHash().ToUint256(), h.bits, SmallRegtest().consensus)) ++h.nonce;
    return h;
}

/// A peer's chain, the genesis first, grown as far as asked.
struct Chain {
    std::vector<BlockHeader> headers{SmallRegtest().genesis};
    uint32_t salt{0};
    void GrowTo(std::size_t height)
    {
        while (headers.size() <= height) headers.push_back(Mined(headers.back().GetHash(), SmallRegtest().genesis.time + uint32_t(headers.size()) * 600 + salt));
    }
    /// Core's answer to a locator: up to `limit` headers after its first hash on this chain.
    std::vector<BlockHeader> Answer(const HeadersAsk& ask, std::size_t limit, std::size_t length)
    {
        std::size_t after = 0;
        for (const BlockHash& hash : MakeLocator(ask.chain, ask.first)) {
            auto at = std::find_if(headers.begin(), headers.end(), [&](const BlockHeader& h) { return h.GetHash() == hash; });
            if (at != headers.end()) {
                after = std::size_t(at - headers.begin());
                break;
            }
        }
        const std::size_t end = std::min(length, after + limit);
        if (end <= after) return {};
        GrowTo(end);
        return {headers.begin() + std::ptrdiff_t(after) + 1, headers.begin() + std::ptrdiff_t(end) + 1};
    }
};

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size)
{
    Input in{{data, size}};
    static HeaderChain held = [] {
        HeaderChain c(SmallRegtest());
        Chain seed;
        seed.GrowTo(8);
        for (int h = 1; h <= 8; ++h) (void)c.Append(seed.headers[std::size_t(h)]);
        return c;
    }();
    const int start = in.Byte() % 9;
    const std::size_t length = std::size_t(start) + 1 + in.Word() % 5000; // the honest chain's height
    const arith_uint256 minimum = held.ChainWork()[std::size_t(start)] + arith_uint256(uint64_t(in.Word() % 6000));
    uint256 salt;
    for (uint8_t& b : salt) b = in.Byte();
    const int64_t now = int64_t(held.MedianTimePast(start)) - 7200 + int64_t(in.Word()) * 8;
    HeadersPresync presync(held, start, minimum, salt, now);

    Chain honest;
    for (int h = 1; h <= start; ++h) honest.headers.push_back(held.Header(h));
    Chain other = honest;
    other.salt = 1 + in.Byte();

    bool truthful = true; // every answer so far full and from the honest chain
    BlockHash released_tip = held.Hash(start);
    arith_uint256 released_work = held.ChainWork()[std::size_t(start)];
    while (presync.CurrentPhase() != HeadersPresync::Phase::Final) {
        const uint8_t op = in.Byte();
        std::vector<BlockHeader> answer;
        if (in.Empty() || op % 8 < 4) {
            answer = honest.Answer(presync.Next(), HEADERS_PER_ANSWER, length);
        } else if (op % 8 < 6) {
            const std::size_t fork = std::size_t(start) + in.Word() % (length - std::size_t(start));
            honest.GrowTo(fork);
            other.headers.assign(honest.headers.begin(), honest.headers.begin() + std::ptrdiff_t(fork) + 1);
            answer = other.Answer(presync.Next(), op % 8 == 4 ? HEADERS_PER_ANSWER : 1 + in.Byte(), length);
            truthful = false;
        } else if (op % 8 == 6) {
            answer = honest.Answer(presync.Next(), 1 + in.Word() % HEADERS_PER_ANSWER, length);
            if (!answer.empty() && in.Byte() % 2) answer[in.Byte() % answer.size()].nonce ^= 1u << (in.Byte() % 32);
            truthful = false;
        } else {
            for (std::size_t n = in.Byte() % 4; n > 0 && in.bytes.size() >= 80; --n) {
                answer.push_back(HeaderFromBytes(in.bytes.first<80>()));
                in.bytes = in.bytes.subspan(80);
            }
            truthful = false;
        }
        const auto taken = presync.Take(answer);
        if (presync.Commitments() > presync.MaxCommitments()) std::abort();
        if (!taken.ok()) {
            if (truthful && taken.error().code != PresyncErrc::TooManyCommitments) std::abort();
            if (presync.CurrentPhase() != HeadersPresync::Phase::Final || presync.Commitments() != 0 || presync.Buffered() != 0) std::abort();
            break;
        }
        if (presync.Buffered() > SmallRegtest().headers_sync.redownload_buffer_size) std::abort();
        for (const BlockHeader& h : taken->released) {
            if (h.hash_prev_block != released_tip) std::abort();
            if (!CheckProofOfWork(h.GetHash().ToUint256(), h.bits, SmallRegtest().consensus)) std::abort();
            released_tip = h.GetHash();
            released_work += GetBlockProof(h.bits);
        }
        if (taken->step == HeadersPresync::Step::Complete && released_work < minimum) std::abort();
        if (truthful && taken->step == HeadersPresync::Step::Abandoned) std::abort();
    }
    return 0;
}

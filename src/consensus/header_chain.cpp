#include <ibdkit/engine/header_chain.h>

#include <ibdkit/consensus/pow.h>
#include <ibdkit/wire/protocol.h>

#include <algorithm>
#include <ctime>
#include <fstream>

namespace ibdkit {

HeaderChain::HeaderChain(const ChainParams& params) : m_params(params)
{
    m_headers.push_back(params.genesis.header());
    m_hashes.push_back(params.consensus.hash_genesis_block);
    m_ancestry.push_back(HeaderInfo{params.genesis.time, params.genesis.bits});
    m_work.push_back(GetBlockProof(params.genesis.bits));
    m_height_of.emplace(m_hashes.back(), 0);
}

std::optional<int> HeaderChain::HeightOf(const BlockHash& hash) const
{
    auto it = m_height_of.find(hash);
    if (it == m_height_of.end()) return std::nullopt;
    return it->second;
}

std::optional<std::string> CheckHeaderOn(const BlockHeader& header, const HeaderAncestry& prev, const ConsensusParams& params)
{
    const BlockHash hash = header.GetHash();
    const std::string where = "header " + hash.ToHex() + " at height " + std::to_string(prev.prev_height() + 1);
    if (!CheckProofOfWork(hash.ToUint256(), header.bits, params)) return where + " does not meet its nBits (high-hash)";
    BlockValidationState state;
    if (!ContextualCheckBlockHeader(header, prev, params, int64_t(std::time(nullptr)), state)) {
        return where + " fails Core's header checks: " + state.GetRejectReason();
    }
    return std::nullopt;
}

HeaderAncestry HeaderChain::AncestryAt(int height) const
{
    const std::size_t end = std::size_t(height) + 1;
    const std::size_t take = std::min<std::size_t>(end, HEADER_ANCESTRY_NEEDED);
    return HeaderAncestry{int(end - take), std::span<const HeaderInfo>(m_ancestry).subspan(end - take, take)};
}

std::optional<std::string> HeaderChain::Append(const BlockHeader& header)
{
    if (header.hash_prev_block != Tip()) {
        return "header " + header.GetHash().ToHex() + " does not extend our best header " + Tip().ToHex() + " (height " +
               std::to_string(Height()) + ")";
    }
    if (auto why = CheckHeaderOn(header, AncestryAt(Height()), m_params.consensus)) return why;
    const BlockHash hash = header.GetHash();
    m_headers.push_back(header);
    m_hashes.push_back(hash);
    m_ancestry.push_back(HeaderInfo{header.time, header.bits});
    m_work.push_back(m_work.back() + GetBlockProof(header.bits));
    m_height_of.emplace(hash, Height());
    return std::nullopt;
}

void HeaderChain::Truncate(int height)
{
    while (Height() > std::max(0, height)) {
        m_height_of.erase(m_hashes.back());
        m_headers.pop_back();
        m_hashes.pop_back();
        m_ancestry.pop_back();
        m_work.pop_back();
    }
}

int64_t HeaderChain::MedianTimePast(int height) const
{
    return GetMedianTimePast(HeaderAncestry{0, std::span<const HeaderInfo>(m_ancestry).first(std::size_t(height) + 1)});
}

Result<int> HeaderChain::Load(const std::filesystem::path& file)
{
    std::error_code ec;
    if (!std::filesystem::exists(file, ec)) return 0;
    std::ifstream in(file, std::ios::binary);
    if (!in) return Error{Errc::Corrupt, "cannot read " + file.string()};
    int loaded = 0;
    std::array<uint8_t, 80> buf;
    while (in.read(reinterpret_cast<char*>(buf.data()), 80)) {
        if (Append(HeaderFromBytes(buf))) break;
        ++loaded;
    }
    in.close();
    const auto want = uintmax_t(loaded) * 80;
    if (std::filesystem::file_size(file, ec) != want) {
        std::filesystem::resize_file(file, want, ec);
        if (ec) return Error{Errc::Corrupt, "cannot truncate " + file.string() + ": " + ec.message()};
    }
    return loaded;
}

std::optional<std::string> HeaderChain::Persist(const std::filesystem::path& file, int from) const
{
    from = std::max(from, 1);
    std::error_code ec;
    const auto keep = uintmax_t(from - 1) * 80;
    if (std::filesystem::exists(file, ec) && std::filesystem::file_size(file, ec) != keep) {
        std::filesystem::resize_file(file, keep, ec);
        if (ec) return "cannot truncate " + file.string() + ": " + ec.message();
    }
    std::ofstream out(file, std::ios::binary | std::ios::app);
    for (int h = from; h <= Height(); ++h) {
        const auto bytes = HeaderToBytes(Header(h));
        out.write(reinterpret_cast<const char*>(bytes.data()), 80);
    }
    out.flush();
    if (!out) return "cannot write " + file.string();
    return std::nullopt;
}

} // namespace ibdkit

#include <ibdkit/blockfile/blockfile.h>

#include <ibdkit/encoding/endian.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <regex>
#include <unordered_map>

namespace ibdkit {

namespace {

// Core's MAX_BLOCK_SERIALIZED_SIZE: no record larger than this is a block.
constexpr uint32_t MAX_RECORD_SIZE = 4'000'000;
constexpr uint32_t MIN_RECORD_SIZE = 80;

Error EnvError(const std::filesystem::path& p, const std::string& what)
{
    return Error{Errc::Corrupt, p.string() + ": " + what};
}

// Reads a whole file read-only.
Result<std::vector<uint8_t>> ReadWholeFile(const std::filesystem::path& p)
{
    std::ifstream f(p, std::ios::binary);
    if (!f) return EnvError(p, "cannot open for reading");
    f.seekg(0, std::ios::end);
    const auto size = f.tellg();
    if (size < 0) return EnvError(p, "cannot determine size");
    std::vector<uint8_t> buf(static_cast<std::size_t>(size));
    f.seekg(0);
    if (!buf.empty() && !f.read(reinterpret_cast<char*>(buf.data()), size)) return EnvError(p, "read failed");
    return buf;
}

} // namespace

Result<ObfuscationKey> ReadXorKey(const std::filesystem::path& blocks_dir)
{
    const auto p = blocks_dir / "xor.dat";
    std::error_code ec;
    if (!std::filesystem::exists(p, ec)) return ObfuscationKey{};
    auto bytes = ReadWholeFile(p);
    if (!bytes) return bytes.error();
    if (bytes->size() != 8) {
        return Error{Errc::Corrupt, p.string() + ": xor.dat must hold exactly 8 bytes, found " + std::to_string(bytes->size())};
    }
    ObfuscationKey key;
    std::memcpy(key.bytes.data(), bytes->data(), 8);
    return key;
}

std::vector<std::filesystem::path> ListBlockFiles(const std::filesystem::path& dir_or_file)
{
    std::error_code ec;
    if (std::filesystem::is_regular_file(dir_or_file, ec)) return {dir_or_file};
    std::vector<std::pair<unsigned long, std::filesystem::path>> found;
    static const std::regex name(R"(blk(\d{5,})\.dat)");
    for (const auto& entry : std::filesystem::directory_iterator(dir_or_file, ec)) {
        std::smatch m;
        const std::string fn = entry.path().filename().string();
        if (entry.is_regular_file() && std::regex_match(fn, m, name)) found.emplace_back(std::stoul(m[1]), entry.path());
    }
    std::sort(found.begin(), found.end());
    std::vector<std::filesystem::path> out;
    for (auto& f : found) out.push_back(std::move(f.second));
    return out;
}

Result<BlockFileScanStats> ScanBlockFiles(const std::vector<std::filesystem::path>& files,
                                          std::span<const uint8_t, 4> magic, const ObfuscationKey& key,
                                          const std::function<void(const BlockRecordPos&, std::span<const uint8_t>)>& fn)
{
    BlockFileScanStats st;
    for (uint32_t fi = 0; fi < files.size(); ++fi) {
        auto data = ReadWholeFile(files[fi]);
        if (!data) return data.error();
        auto& buf = *data;
        XorBytes(MakeWritableByteSpan(buf), key, 0);
        const std::size_t n = buf.size();
        std::size_t pos = 0;
        while (pos < n) {
            if (n - pos >= 8 && std::memcmp(buf.data() + pos, magic.data(), 4) == 0) {
                const uint32_t size = ReadLE32(buf.data() + pos + 4);
                if (size >= MIN_RECORD_SIZE && size <= MAX_RECORD_SIZE) {
                    if (size > n - pos - 8) { // declared size runs past the end: a truncated tail
                        ++st.truncated;
                        st.skipped_bytes += n - pos;
                        break;
                    }
                    ++st.records;
                    st.bytes += size;
                    fn(BlockRecordPos{fi, pos + 8, size}, std::span<const uint8_t>(buf.data() + pos + 8, size));
                    pos += 8 + std::size_t(size);
                    continue;
                }
            }
            // Not a record here: a zero run to the end is pre-allocated space; otherwise resync on
            // the next magic.
            if (std::all_of(buf.begin() + std::ptrdiff_t(pos), buf.end(), [](uint8_t b) { return b == 0; })) {
                st.zero_tail_bytes += n - pos;
                break;
            }
            const auto* next = static_cast<const uint8_t*>(memmem(buf.data() + pos + 1, n - pos - 1, magic.data(), 4));
            const std::size_t to = next ? std::size_t(next - buf.data()) : n;
            st.skipped_bytes += to - pos;
            pos = to;
        }
    }
    return st;
}

Result<std::vector<uint8_t>> ReadBlockAt(const std::filesystem::path& file, const BlockRecordPos& pos,
                                         const ObfuscationKey& key)
{
    std::ifstream f(file, std::ios::binary);
    if (!f) return EnvError(file, "cannot open for reading");
    std::vector<uint8_t> out(pos.size);
    f.seekg(std::streamoff(pos.offset));
    if (!f.read(reinterpret_cast<char*>(out.data()), std::streamsize(out.size()))) {
        return Error{Errc::EndOfData, file.string() + ": record runs past the end of the file"};
    }
    XorBytes(MakeWritableByteSpan(out), key, std::size_t(pos.offset));
    return out;
}

double BlockProofApprox(uint32_t bits) noexcept
{
    const uint32_t exponent = bits >> 24;
    const uint32_t mantissa = bits & 0x007fffff;
    if (mantissa == 0 || (bits & 0x00800000)) return 0; // zero or negative target: no work
    const double target = double(mantissa) * std::ldexp(1.0, 8 * (int(exponent) - 3));
    return std::ldexp(1.0, 256) / (target + 1);
}

void ChainOrderer::Add(const BlockRecordPos& pos, std::span<const uint8_t, 80> header)
{
    Node n;
    n.pos = pos;
    n.hash = BlockHash(HashSha256d(std::span<const uint8_t>(header)));
    n.prev = BlockHash(uint256(header.subspan<4, 32>()));
    n.bits = ReadLE32(header.data() + 72);
    m_nodes.push_back(n);
}

ChainOrder ChainOrderer::Finish() const
{
    ChainOrder out;
    std::unordered_map<BlockHash, std::size_t, Uint256Hasher> index;
    std::vector<bool> dup(m_nodes.size(), false);
    for (std::size_t i = 0; i < m_nodes.size(); ++i) {
        if (!index.emplace(m_nodes[i].hash, i).second) {
            dup[i] = true;
            ++out.duplicates;
        }
    }
    // Children by parent; the genesis may be a record (height 0) or only the parent of height 1.
    std::unordered_map<BlockHash, std::vector<std::size_t>, Uint256Hasher> children;
    for (std::size_t i = 0; i < m_nodes.size(); ++i) {
        if (!dup[i] && m_nodes[i].hash != m_genesis) children[m_nodes[i].prev].push_back(i);
    }
    std::vector<double> work(m_nodes.size(), -1);
    std::vector<std::size_t> parent(m_nodes.size(), SIZE_MAX);
    std::vector<std::size_t> frontier;
    if (auto g = index.find(m_genesis); g != index.end()) {
        work[g->second] = BlockProofApprox(m_nodes[g->second].bits);
        frontier.push_back(g->second);
    }
    auto visit_children_of = [&](const BlockHash& h, double base, std::size_t from) {
        auto it = children.find(h);
        if (it == children.end()) return;
        for (std::size_t c : it->second) {
            work[c] = base + BlockProofApprox(m_nodes[c].bits);
            parent[c] = from;
            frontier.push_back(c);
        }
    };
    if (frontier.empty()) visit_children_of(m_genesis, 0, SIZE_MAX);
    for (std::size_t k = 0; k < frontier.size(); ++k) {
        const std::size_t i = frontier[k];
        visit_children_of(m_nodes[i].hash, work[i], i);
    }
    std::size_t best = SIZE_MAX;
    uint64_t reached = 0;
    for (std::size_t i = 0; i < m_nodes.size(); ++i) {
        if (dup[i]) continue;
        if (work[i] < 0) {
            ++out.orphans;
            continue;
        }
        ++reached;
        if (best == SIZE_MAX || work[i] > work[best]) best = i;
    }
    for (std::size_t i = best; i != SIZE_MAX; i = parent[i]) {
        out.blocks.push_back(m_nodes[i].pos);
        out.hashes.push_back(m_nodes[i].hash);
    }
    std::reverse(out.blocks.begin(), out.blocks.end());
    std::reverse(out.hashes.begin(), out.hashes.end());
    out.stale = reached - out.blocks.size();
    return out;
}

} // namespace ibdkit

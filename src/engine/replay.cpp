#include <ibdkit/engine/replay.h>

#include "run.h"

#include <ibdkit/stream/streams.h>
#include <ibdkit/wire/message.h>

#include <algorithm>
#include <chrono>
#include <fstream>
#include <unordered_map>

namespace ibdkit {

namespace {

using engine::EnvError;

// Keeps block files open for random reads of records.
class RecordReader {
public:
    RecordReader(const std::vector<std::filesystem::path>& files, const ObfuscationKey& key) : m_files(files), m_key(key)
    {
        m_streams.resize(files.size());
    }
    // Reads the record's bytes into dst (resized to the record size).
    template <typename Stream>
    bool Read(const BlockRecordPos& pos, Stream& dst)
    {
        auto& f = m_streams[pos.file];
        if (!f) f = std::make_unique<std::ifstream>(m_files[pos.file], std::ios::binary);
        dst.resize(pos.size);
        f->seekg(std::streamoff(pos.offset));
        if (!f->read(reinterpret_cast<char*>(dst.data()), std::streamsize(pos.size))) return false;
        XorBytes(std::span<std::byte>(reinterpret_cast<std::byte*>(dst.data()), pos.size), m_key, std::size_t(pos.offset));
        return true;
    }

private:
    const std::vector<std::filesystem::path>& m_files;
    ObfuscationKey m_key;
    std::vector<std::unique_ptr<std::ifstream>> m_streams;
};

struct Scanned {
    ChainParams const* params{nullptr};
    std::vector<std::filesystem::path> files;
    ObfuscationKey key;
    BlockFileScanStats scan;
    ChainOrder order;
    std::vector<uint32_t> times; ///< index 0 = the block before order.blocks[0] when genesis is not a record
    int base_height{0};          ///< height of order.blocks[0]
    bool genesis_is_record{false};
};

Result<Scanned> ScanChain(const ReplayOptions& opts, ChainType chain)
{
    Scanned s;
    s.params = &GetChainParams(chain);
    s.files = ListBlockFiles(opts.blocks_dir);
    if (s.files.empty()) {
        return Error{Errc::InvalidValue, "no blkNNNNN.dat files in " + opts.blocks_dir.string() +
                                             " (point --blocks-dir at a Bitcoin Core blocks directory or a blk file)"};
    }
    const auto key_dir = std::filesystem::is_directory(opts.blocks_dir) ? opts.blocks_dir : opts.blocks_dir.parent_path();
    auto key = ReadXorKey(key_dir);
    if (!key) return key.error();
    s.key = *key;
    const BlockHash genesis = s.params->consensus.hash_genesis_block;
    ChainOrderer orderer(genesis);
    std::unordered_map<BlockHash, uint32_t, Uint256Hasher> time_of;
    auto scan = ScanBlockFiles(s.files, std::span<const uint8_t, 4>(s.params->message_start), s.key,
                               [&](const BlockRecordPos& pos, std::span<const uint8_t> b) {
                                   auto hdr = b.first<80>();
                                   orderer.Add(pos, hdr);
                                   time_of.emplace(BlockHash(HashSha256d(std::span<const uint8_t>(hdr))), ReadLE32(hdr.data() + 68));
                               });
    if (!scan) return scan.error();
    s.scan = *scan;
    s.order = orderer.Finish();
    s.genesis_is_record = !s.order.hashes.empty() && s.order.hashes.front() == genesis;
    s.base_height = s.genesis_is_record ? 0 : 1;
    if (!s.genesis_is_record) s.times.push_back(s.params->genesis.time);
    for (const auto& h : s.order.hashes) s.times.push_back(time_of[h]);
    return s;
}

// The block files as a block source: the chain ordered by the scan, each block read from its
// record into the policy's buffer (or framed and received as a P2P message with via_p2p).
template <typename Policy>
class FileSource final : public engine::BlockSource<Policy> {
public:
    FileSource(const ReplayOptions& opts, const Scanned& sc)
        : m_opts(opts), m_sc(sc), m_params(*sc.params), m_reader(sc.files, sc.key), m_rx(sc.params->message_start),
          m_tip_height(sc.base_height + int(sc.order.blocks.size()) - 1)
    {
        m_height_of.reserve(sc.order.hashes.size());
        for (std::size_t i = 0; i < sc.order.hashes.size(); ++i) m_height_of.emplace(sc.order.hashes[i], sc.base_height + int(i));
        const int bip34 = m_params.consensus.bip34_height;
        if (bip34 >= sc.base_height && bip34 <= m_tip_height) m_bip34_hash = sc.order.hashes[Index(bip34)];
    }

    std::optional<Error> Prepare(const BlockHash&) override { return std::nullopt; }
    bool Failed() const override { return false; }
    int TipHeight() const override { return m_tip_height; }

    std::optional<int> HeightOf(const BlockHash& hash) const override
    {
        if (hash == m_params.consensus.hash_genesis_block) return 0;
        auto it = m_height_of.find(hash);
        if (it == m_height_of.end()) return std::nullopt;
        return it->second;
    }

    std::optional<Error> Produce(int from, int to, const typename engine::BlockSource<Policy>::Emit& emit) override
    {
        for (int h = std::max(from, m_sc.base_height); h <= std::min(to, m_tip_height); ++h) {
            engine::RawBlock<Policy> raw;
            raw.height = h;
            raw.hash = m_sc.order.hashes[Index(h)];
            raw.ctx.height = h;
            // times[] holds the block before order.blocks[0] first when the genesis is not a record.
            raw.ctx.median_time_past =
                MedianTimePast(std::span<const uint32_t>(m_sc.times.data(), Index(h) + (m_sc.genesis_is_record ? 0 : 1)));
            if (m_bip34_hash && h > m_params.consensus.bip34_height) raw.ctx.bip34_ancestor = m_bip34_hash;
            if (auto e = Load(h, raw.bytes)) return e;
            if (!emit(std::move(raw))) break;
        }
        return std::nullopt;
    }

    std::optional<Error> Undecodable(int height, const Error& e) override
    {
        return Error{e.code, "block at height " + std::to_string(height) + " does not decode: " + e.message};
    }
    std::string NotOurChain(const BlockHash& best) const override
    {
        return "the chainstate's best block " + best.ToHex() +
               " is not on the chain in these block files (use another --chainstate or the matching blocks)";
    }
    std::string NotOurRecovery() const override
    {
        return "chainstate was interrupted mid-flush between blocks that are not in these block files; "
               "point --blocks-dir at the files it was built from";
    }

private:
    std::size_t Index(int height) const { return std::size_t(height - m_sc.base_height); }

    // Reads the block at `height` into `out`. Each block gets a fresh buffer, as each P2P message
    // does in Core, so every policy pays its allocation and free once per block.
    std::optional<Error> Load(int height, DataStream<Policy>& out)
    {
        if (!m_reader.Read(m_sc.order.blocks[Index(height)], out)) {
            return EnvError("cannot read block at height " + std::to_string(height));
        }
        if (!m_opts.via_p2p) return std::nullopt;
        // As Core's IBD receives it: the block framed as a P2P message, fed in socket-sized reads.
        m_wire.clear();
        VectorWriter w(m_wire, 0);
        WriteMessage(w, m_params.message_start, "block", std::span<const uint8_t>(UCharCast(out.data()), out.size()));
        out = DataStream<Policy>{};
        std::span<const uint8_t> in(m_wire);
        while (!in.empty()) {
            auto chunk = in.first(std::min<std::size_t>(in.size(), 64 * 1024));
            in = in.subspan(chunk.size());
            while (!chunk.empty()) {
                auto r = m_rx.Feed(chunk);
                if (!r) return r.error();
                if (*r) {
                    out = std::move(m_rx.TakeMessage().payload);
                    return std::nullopt;
                }
            }
        }
        return Error{Errc::EndOfData, "P2P framing delivered no block at height " + std::to_string(height)};
    }

    const ReplayOptions& m_opts;
    const Scanned& m_sc;
    const ChainParams& m_params;
    RecordReader m_reader;
    MessageReceiver<Policy> m_rx;
    std::vector<uint8_t> m_wire;
    const int m_tip_height;
    std::optional<BlockHash> m_bip34_hash;
    std::unordered_map<BlockHash, int, Uint256Hasher> m_height_of;
};

} // namespace

std::optional<ChainType> DetectChain(const std::filesystem::path& blocks_dir)
{
    const auto files = ListBlockFiles(blocks_dir);
    if (files.empty()) return std::nullopt;
    const auto key_dir = std::filesystem::is_directory(blocks_dir) ? blocks_dir : blocks_dir.parent_path();
    auto key = ReadXorKey(key_dir);
    if (!key) return std::nullopt;
    std::ifstream f(files.front(), std::ios::binary);
    std::array<uint8_t, 4> magic{};
    if (!f.read(reinterpret_cast<char*>(magic.data()), 4)) return std::nullopt;
    XorBytes(MakeWritableByteSpan(magic), *key, 0);
    return ChainTypeFromMagic(magic);
}

Result<ReplayResult> Replay(const ReplayOptions& opts)
{
    const auto t_start = engine::Clock::now();
    ReplayResult res;
    std::optional<ChainType> chain = opts.chain ? opts.chain : DetectChain(opts.blocks_dir);
    if (!chain) {
        return Error{Errc::BadMagic, "cannot tell the network of " + opts.blocks_dir.string() +
                                         ": its first record has no known magic (pass --network)"};
    }
    res.chain = *chain;
    auto sc = ScanChain(opts, *chain);
    if (!sc) return sc.error();
    res.scan = sc->scan;
    res.orphans = sc->order.orphans;
    res.stale = sc->order.stale;
    res.duplicates = sc->order.duplicates;
    if (sc->order.blocks.empty()) {
        return Error{Errc::InvalidValue, "no block in " + opts.blocks_dir.string() + " connects to the " +
                                             std::string(ChainTypeName(*chain)) + " genesis block"};
    }

    auto cs = ChainstateHandle::Open(opts.chainstate, opts.policy, opts.dbcache_mib, "ibdkit-replay");
    if (!cs) return cs.error();
    auto run = VisitPolicy(opts.policy, [&]<typename P>(P) {
        FileSource<P> source(opts, *sc);
        return engine::RunEngine<P>(opts, *sc->params, source, *cs, res);
    });
    if (!run) return run.error();
    static_cast<EngineResult&>(res) = std::move(*run);
    res.total_seconds = std::chrono::duration<double>(engine::Clock::now() - t_start).count();
    return res;
}

} // namespace ibdkit

#include <ibdkit/engine/replay.h>

#include <ibdkit/blockfile/checked_read.h>
#include "blockfile/read_owned.h"
#include "run.h"

#include <ibdkit/blockfile/locate.h>

#include "common/write_guard_internal.h"
#include "memory/policy.h"
#include "stream/streams.h"
#include "wire/message.h"

#include <algorithm>
#include <chrono>
#include <fstream>
#include <unordered_map>

namespace ibdkit {

namespace {

using engine::EnvError;

// The block files as a block source: the chain ordered by the scan, each block read from its
// record into the policy's buffer (or framed and received as a P2P message with via_p2p).
class FileSource final : public engine::BlockSource {
public:
    FileSource(const ReplayOptions& opts, const LocatedChain& sc)
        : m_opts(opts), m_sc(sc), m_params(GetChainParams(sc.chain)), m_reader(sc.files, sc.key),
          m_read_record(VisitPolicy(opts.policy, []<typename P>(P) -> ReadOwnedFn { return &ReadOwned<P>; })),
          m_rx(m_params.message_start, opts.policy), m_tip_height(sc.TipHeight())
    {
    }

    Result<Prepared> Prepare(const BlockHash&) override
    {
        Prepared p;
        p.chain = "the chain in these block files";
        p.chain_advice = " (use another --chainstate or the matching blocks)";
        p.recovery = "chainstate was interrupted mid-flush between blocks that are not in these block files; "
                     "point --blocks-dir at the files it was built from";
        return p;
    }
    int TipHeight() const override { return m_tip_height; }

    // The whole chain, known from the scan or the index: its best header is the last block.
    const HeaderChain& Headers() const override { return m_sc.headers; }

    std::optional<Error> Produce(int from, int to, const Emit& emit) override
    {
        for (int h = std::max(from, m_sc.base_height); h <= std::min(to, m_tip_height); ++h) {
            engine::RawBlock raw;
            raw.height = h;
            raw.hash = m_sc.headers.Hash(h);
            if (auto e = Load(h, raw.bytes)) return e;
            if (!emit(std::move(raw))) break;
        }
        return std::nullopt;
    }

    std::optional<Error> Undecodable(int height, const Error& e) override
    {
        return Error{e.code, "block at height " + std::to_string(height) + " does not decode: " + e.message};
    }

private:
    std::size_t Index(int height) const { return std::size_t(height - m_sc.base_height); }

public:
    /// Block bytes read from the blk files so far.
    uint64_t BytesRead() const noexcept { return m_reader.bytes_read(); }

private:

    // Reads the block at `height` into `out`. Each block gets a fresh buffer, as each P2P message
    // does in Core, so every policy pays its allocation and free once per block.
    std::optional<Error> Load(int height, OwnedBytes& out)
    {
        if (auto bad = m_sc.unreadable.find(height); bad != m_sc.unreadable.end()) return bad->second;
        if (auto r = m_read_record(m_reader, m_sc.order.blocks[Index(height)], out); !r) {
            return Error{r.error().code, "cannot read block at height " + std::to_string(height) + ": " + r.error().message};
        }
        // The bytes must be the block the index or the scan named (a stale index can point elsewhere).
        if (auto e = CheckRecordIsBlock(std::span<const std::byte>(out.data(), out.size()), height, m_sc.headers.Hash(height))) {
            return e;
        }
        if (!m_opts.via_p2p) return std::nullopt;
        // As Core's IBD receives it: the block framed as a P2P message, fed in socket-sized reads.
        m_wire.clear();
        VectorWriter w(m_wire, 0);
        WriteMessage(w, m_params.message_start, "block", out.uchars());
        out.Release();
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
    const LocatedChain& m_sc;
    const ChainParams& m_params;
    BlockFileReader m_reader;
    const ReadOwnedFn m_read_record; ///< the one place the policy is a type: the block's buffer
    MessageReceiver m_rx;
    std::vector<uint8_t> m_wire;
    const int m_tip_height;
};

} // namespace

std::optional<ChainType> DetectChain(const std::filesystem::path& blocks_dir) { return DetectChainFromBlockFiles(blocks_dir); }

Result<ReplayResult> Replay(const ReplayOptions& opts)
{
    const auto t_start = engine::Clock::now();
    ReplayResult res;
    if (!opts.source.datadir.empty() && !opts.source.blocks_dir.empty()) {
        return Error{Errc::InvalidValue, "give either a data directory or a blocks directory, not both"};
    }
    if (!opts.undo_dir.empty()) {
        // Undo data goes to a directory of ibdkit's own, never into the user's Core directories.
        for (const auto& theirs : {opts.source.datadir, opts.source.blocks_dir}) {
            std::error_code ec;
            if (theirs.empty() || !std::filesystem::is_directory(theirs, ec)) continue;
            if (IsSameOrInside(opts.undo_dir, theirs)) {
                return Error{Errc::InvalidValue, "the undo directory " + opts.undo_dir.string() + " is inside " + theirs.string() +
                                                     ": ibdkit never writes into a Bitcoin Core directory; choose another"};
            }
        }
    }
    if (auto refused = ChainstateHandle::CheckOutputs(opts)) return *refused;
    // A block the files cannot deliver ends the run there, after the blocks before it (FileSource::Load).
    auto sc = LocateBlocks(opts.source, /*keep_unreadable=*/true);
    if (!sc) return sc.error();
    res.chain = sc->chain;
    res.scan = sc->scan;
    res.orphans = sc->order.orphans;
    res.stale = sc->order.stale;
    res.duplicates = sc->order.duplicates;
    if (sc->live && !sc->order.blocks.empty()) {
        res.live_height = sc->TipHeight();
        res.live_hash = sc->headers.Hash(sc->TipHeight());
    }
    if (sc->order.blocks.empty()) {
        return Error{Errc::InvalidValue, "no block in " + (opts.source.datadir.empty() ? opts.source.blocks_dir : sc->blocks_dir).string() +
                                             " connects to the " + std::string(ChainTypeName(sc->chain)) + " genesis block"};
    }

    auto cs = ChainstateHandle::OpenFor(opts, "replay", sc->chain);
    if (!cs) return cs.error();
    FileSource source(opts, *sc);
    auto run = engine::RunEngine(opts, GetChainParams(sc->chain), source, *cs, res);
    res.bytes_read = source.BytesRead();
    if (!run) return run.error();
    static_cast<EngineResult&>(res) = std::move(*run);
    res.total_seconds = std::chrono::duration<double>(engine::Clock::now() - t_start).count();
    return res;
}

} // namespace ibdkit

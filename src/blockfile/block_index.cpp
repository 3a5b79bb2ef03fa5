// Bitcoin Core's block index, read through the store's read-only overlay (or a snapshot of it).
#include "blockfile/block_index.h"

#include <ibdkit/consensus/best_chain.h>
#include <ibdkit/encoding/endian.h>
#include <ibdkit/encoding/serialize.h>

#include "kv/store.h"
#include "stream/streams.h"

#include <algorithm>
#include <limits>

namespace ibdkit {

namespace {

constexpr uint8_t DB_BLOCK_INDEX = 'b';
constexpr uint8_t DB_REINDEX_FLAG = 'R';

// Core's VARINT_MODE(NONNEGATIVE_SIGNED) into an int32_t.
int32_t ReadSignedVarInt(SpanReader& r, const char* what)
{
    const uint32_t v = ReadVarInt<uint32_t>(r);
    if (v > uint32_t(std::numeric_limits<int32_t>::max())) {
        throw DecodeError(Errc::VarIntOverflow, what);
    }
    return int32_t(v);
}

} // namespace

uint32_t BlockIndexEntry::Time() const noexcept { return ReadLE32(header.data() + 68); }
uint32_t BlockIndexEntry::Bits() const noexcept { return ReadLE32(header.data() + 72); }

Result<BlockIndexEntry> DecodeBlockIndexEntry(const BlockHash& hash, std::span<const uint8_t> value)
{
    return CatchDecode([&]() -> BlockIndexEntry {
        SpanReader r(value);
        BlockIndexEntry e;
        e.hash = hash;
        e.client_version = ReadSignedVarInt(r, "block index: client version out of range");
        e.height = ReadSignedVarInt(r, "block index: height out of range");
        e.status = ReadVarInt<uint32_t>(r);
        e.tx_count = ReadVarInt<uint32_t>(r);
        if (e.status & (BLOCK_HAVE_DATA | BLOCK_HAVE_UNDO)) e.file = ReadSignedVarInt(r, "block index: file number out of range");
        if (e.status & BLOCK_HAVE_DATA) e.data_pos = ReadVarInt<uint32_t>(r);
        if (e.status & BLOCK_HAVE_UNDO) e.undo_pos = ReadVarInt<uint32_t>(r);
        r.read(MakeWritableByteSpan(e.header));
        if (!r.empty()) throw DecodeError(Errc::TrailingData, "block index: trailing bytes after the header");
        return e;
    });
}

std::vector<uint8_t> EncodeBlockIndexEntry(const BlockIndexEntry& e)
{
    std::vector<uint8_t> out;
    VectorWriter w(out, 0);
    WriteVarInt(w, uint32_t(e.client_version));
    WriteVarInt(w, uint32_t(e.height));
    WriteVarInt(w, e.status);
    WriteVarInt(w, e.tx_count);
    if (e.status & (BLOCK_HAVE_DATA | BLOCK_HAVE_UNDO)) WriteVarInt(w, uint32_t(e.file));
    if (e.status & BLOCK_HAVE_DATA) WriteVarInt(w, e.data_pos);
    if (e.status & BLOCK_HAVE_UNDO) WriteVarInt(w, e.undo_pos);
    w.write(MakeByteSpan(e.header));
    return out;
}

void BlockFileInfo::AddBlock(uint32_t height, uint64_t time) noexcept
{
    if (blocks == 0 || height_first > height) height_first = height;
    if (blocks == 0 || time_first > time) time_first = time;
    ++blocks;
    if (height > height_last) height_last = height;
    if (time > time_last) time_last = time;
}

std::vector<uint8_t> EncodeBlockFileInfo(const BlockFileInfo& info)
{
    std::vector<uint8_t> out;
    VectorWriter w(out, 0);
    WriteVarInt(w, info.blocks);
    WriteVarInt(w, info.size);
    WriteVarInt(w, info.undo_size);
    WriteVarInt(w, info.height_first);
    WriteVarInt(w, info.height_last);
    WriteVarInt(w, info.time_first);
    WriteVarInt(w, info.time_last);
    return out;
}

Result<BlockFileInfo> DecodeBlockFileInfo(std::span<const uint8_t> value)
{
    return CatchDecode([&]() -> BlockFileInfo {
        SpanReader r(value);
        BlockFileInfo info;
        info.blocks = ReadVarInt<uint32_t>(r);
        info.size = ReadVarInt<uint32_t>(r);
        info.undo_size = ReadVarInt<uint32_t>(r);
        info.height_first = ReadVarInt<uint32_t>(r);
        info.height_last = ReadVarInt<uint32_t>(r);
        info.time_first = ReadVarInt<uint64_t>(r);
        info.time_last = ReadVarInt<uint64_t>(r);
        if (!r.empty()) throw DecodeError(Errc::TrailingData, "block file info: trailing bytes");
        return info;
    });
}

Result<BlockIndex> ReadBlockIndex(const std::filesystem::path& index_dir, bool snapshot)
{
    std::error_code ec;
    if (!std::filesystem::exists(index_dir / "CURRENT", ec)) {
        return Error{Errc::InvalidValue, "no block index at " + index_dir.string() + " (missing CURRENT)"};
    }
    StoreOptions so;
    so.read_only = true;
    so.snapshot = snapshot; // a held LOCK makes the store take a snapshot by itself
    so.create_if_missing = false;
    so.obfuscate = false;
    so.cache_bytes = 8 << 20;
    StoreStatus status;
    auto store = Store::Open(index_dir, so, &status);
    if (!store) return Error{Errc::Corrupt, "block index " + index_dir.string() + ": " + status.message};
    BlockIndex out;
    out.from_snapshot = store->FromSnapshot();
    try {
        const std::array<uint8_t, 1> rkey{DB_REINDEX_FLAG};
        out.reindexing = store->Exists(MakeByteSpan(rkey));
        auto it = store->NewIterator();
        const std::array<uint8_t, 1> prefix{DB_BLOCK_INDEX};
        it->Seek(MakeByteSpan(prefix));
        std::vector<uint8_t> value;
        for (; it->Valid(); it->Next()) {
            const auto key = it->Key();
            if (key.empty() || uint8_t(key[0]) != DB_BLOCK_INDEX) break;
            if (key.size() != 33) return Error{Errc::Corrupt, "block index: a 'b' key of " + std::to_string(key.size()) + " bytes"};
            BlockHash hash(uint256(std::span<const uint8_t, 32>(reinterpret_cast<const uint8_t*>(key.data()) + 1, 32)));
            const auto raw = it->RawValue();
            value.assign(reinterpret_cast<const uint8_t*>(raw.data()), reinterpret_cast<const uint8_t*>(raw.data()) + raw.size());
            XorBytes(MakeWritableByteSpan(value), store->Obfuscation());
            auto e = DecodeBlockIndexEntry(hash, value);
            if (!e) return Error{e.error().code, "block index record " + hash.ToHex() + ": " + e.error().message};
            if (BlockHash(HashSha256d(std::span<const uint8_t>(e->header))) != hash) {
                return Error{Errc::Corrupt, "block index record " + hash.ToHex() + " holds the header of another block"};
            }
            out.entries.push_back(std::move(*e));
        }
        if (auto st = it->status(); !st.ok()) return Error{Errc::Corrupt, "block index " + index_dir.string() + ": " + st.message};
    } catch (const StoreError& e) {
        return Error{Errc::Corrupt, "block index " + index_dir.string() + ": " + e.what()};
    }
    return out;
}

Result<BestChain> SelectBestChain(const BlockIndex& index, const BlockHash& genesis)
{
    BestChain out;
    const auto& es = index.entries;
    // The candidates: blocks with data and no FAILED flag, in disk order (file, then position), so
    // that ties go to the tip whose data comes first.
    std::vector<std::size_t> usable;
    bool genesis_usable = false;
    for (std::size_t i = 0; i < es.size(); ++i) {
        if (es[i].status & BLOCK_HAVE_DATA) ++out.with_data;
        if (es[i].status & BLOCK_FAILED_MASK) ++out.failed;
        if (!(es[i].status & BLOCK_HAVE_DATA) || (es[i].status & BLOCK_FAILED_MASK)) continue;
        usable.push_back(i);
        genesis_usable |= es[i].hash == genesis;
    }
    if (!genesis_usable) {
        out.orphans = usable.size();
        return out;
    }
    std::stable_sort(usable.begin(), usable.end(), [&](std::size_t a, std::size_t b) {
        return std::pair(es[a].file, es[a].data_pos) < std::pair(es[b].file, es[b].data_pos);
    });
    std::vector<ChainCandidate> candidates;
    candidates.reserve(usable.size());
    for (std::size_t i : usable) candidates.push_back({es[i].hash, es[i].Prev(), es[i].Bits()});
    const MostWorkChain best = SelectMostWorkChain(candidates, genesis);
    for (std::size_t k = 0; k < usable.size(); ++k) {
        const auto& e = es[usable[k]];
        if (best.heights[k] >= 0 && e.height != best.heights[k]) {
            return Error{Errc::Corrupt, "block index: block " + e.hash.ToHex() + " is stored at height " +
                                            std::to_string(e.height) + " but is block " + std::to_string(best.heights[k]) +
                                            " of the chain from the genesis"};
        }
    }
    for (std::size_t k : best.chain) out.entries.push_back(usable[k]);
    out.orphans = best.orphans;
    out.stale = best.stale;
    return out;
}

} // namespace ibdkit

// Locating the best chain's blocks: by scanning bare blk files, or through Core's block index.
#include <ibdkit/blockfile/locate.h>

#include <ibdkit/common/write_guard.h>
#include <ibdkit/encoding/endian.h>

#include "blockfile/block_index.h"
#include "blockfile/network_folders.h"
#include "kv/store.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cstdio>
#include <map>
#include <unordered_map>

namespace ibdkit {

namespace {

bool HasIndex(const std::filesystem::path& blocks_dir)
{
    std::error_code ec;
    return std::filesystem::exists(blocks_dir / "index" / "CURRENT", ec);
}

std::filesystem::path BlocksDirOf(const std::filesystem::path& dir, const NetworkFolder& n)
{
    return !n.sub.empty() ? dir / n.sub / "blocks" : dir / "blocks";
}

std::string Name(ChainType c) { return std::string(ChainTypeName(c)); }


} // namespace

std::optional<ChainType> DetectChainFromBlockFiles(const std::filesystem::path& blocks_dir)
{
    const auto files = ListBlockFiles(blocks_dir);
    if (!files || files->empty()) return std::nullopt;
    std::error_code ec;
    const auto key_dir = std::filesystem::is_directory(blocks_dir, ec) ? blocks_dir : blocks_dir.parent_path();
    auto key = ReadXorKey(key_dir);
    if (!key) return std::nullopt;
    BlockFileReader reader({files->front()}, *key);
    std::array<uint8_t, 4> magic{};
    if (!reader.ReadInto(0, 0, MakeWritableByteSpan(magic))) return std::nullopt;
    return ChainTypeFromMagic(magic);
}

Result<LocatedChain> LocateFromBlocksDir(const std::filesystem::path& blocks_dir, std::optional<ChainType> chain)
{
    LocatedChain s;
    if (auto e = CheckBlocksComplete(blocks_dir)) return *e;
    auto files = ListBlockFiles(blocks_dir);
    if (!files) return files.error();
    s.files = std::move(*files);
    if (s.files.empty()) {
        return Error{Errc::InvalidValue, "no blkNNNNN.dat files in " + blocks_dir.string() +
                                             " (point --blocks-dir at a Bitcoin Core blocks directory or a blk file)"};
    }
    if (!chain) chain = DetectChainFromBlockFiles(blocks_dir);
    if (!chain) {
        return Error{Errc::BadMagic, "cannot tell the network of " + blocks_dir.string() +
                                         ": its first record has no known magic (pass --network)"};
    }
    s.chain = *chain;
    const auto& params = GetChainParams(*chain);
    std::error_code ec;
    s.blocks_dir = std::filesystem::is_directory(blocks_dir, ec) ? blocks_dir : blocks_dir.parent_path();
    auto key = ReadXorKey(s.blocks_dir);
    if (!key) return key.error();
    s.key = *key;
    const BlockHash genesis = params.consensus.hash_genesis_block;
    ChainOrderer orderer(genesis);
    std::unordered_map<BlockHash, std::pair<uint32_t, uint32_t>, Uint256Hasher> time_bits_of;
    auto scan = ScanBlockFiles(s.files, std::span<const uint8_t, 4>(params.message_start), s.key,
                               [&](const BlockRecordPos& pos, std::span<const uint8_t, 80> hdr) {
                                   orderer.Add(pos, hdr);
                                   time_bits_of.emplace(BlockHash(HashSha256d(std::span<const uint8_t>(hdr))),
                                                        std::pair{ReadLE32(hdr.data() + 68), ReadLE32(hdr.data() + 72)});
                               });
    if (!scan) return scan.error();
    s.scan = *scan;
    s.order = orderer.Finish();
    const bool genesis_is_record = !s.order.hashes.empty() && s.order.hashes.front() == genesis;
    s.base_height = genesis_is_record ? 0 : 1;
    s.headers = HeaderChain(params);
    s.headers.Reserve(s.order.hashes.size() + 1);
    for (std::size_t i = genesis_is_record ? 1 : 0; i < s.order.hashes.size(); ++i) {
        const auto [time, bits] = time_bits_of[s.order.hashes[i]];
        s.headers.AppendKnown(s.order.hashes[i], HeaderInfo{time, bits});
    }
    std::vector<BlockHash>().swap(s.order.hashes); // kept once, in s.headers
    return s;
}

std::filesystem::path NetworkDataDir(const std::filesystem::path& datadir, ChainType chain)
{
    const std::string_view sub = NETWORK_FOLDERS[std::size_t(chain)].sub;
    return sub.empty() ? datadir : datadir / sub;
}

Result<std::filesystem::path> DatadirChainstate(const std::filesystem::path& datadir, ChainType chain)
{
    const auto net = NetworkDataDir(datadir, chain);
    if (auto refused = CheckDatadirWritable(datadir, net)) return *refused;
    return net / "chainstate";
}

std::optional<ChainType> DatadirNetworkRecord(const std::filesystem::path& datadir)
{
    std::optional<ChainType> found;
    for (const NetworkFolder& f : NETWORK_FOLDERS) {
        const auto recorded = ChainstateNetworkRecord(NetworkDataDir(datadir, f.chain) / "chainstate");
        if (!recorded || ParseChainType(*recorded) != f.chain) continue;
        if (found) return std::nullopt;
        found = f.chain;
    }
    return found;
}

Result<DatadirLayout> ResolveDatadir(const std::filesystem::path& dir, std::optional<ChainType> chain)
{
    std::error_code ec;
    if (!std::filesystem::exists(dir, ec)) {
        return Error{Errc::NotFound, "data directory " + dir.string() + " does not exist: give Bitcoin Core's data directory (e.g. ~/.bitcoin)"};
    }
    if (!std::filesystem::is_directory(dir, ec)) {
        return Error{Errc::InvalidValue, dir.string() + " is a file, not a folder: --datadir names Bitcoin Core's data directory (e.g. ~/.bitcoin)"};
    }
    auto finish = [&](ChainType layout_chain, const std::filesystem::path& blocks_dir, bool magic_decides) -> Result<DatadirLayout> {
        DatadirLayout l;
        l.chain = layout_chain;
        l.blocks_dir = blocks_dir;
        l.lock_file = blocks_dir.parent_path() / ".lock";
        const auto magic = DetectChainFromBlockFiles(blocks_dir);
        if (chain) {
            if (magic && *magic != *chain) {
                return Error{Errc::BadMagic, blocks_dir.string() + " holds " + Name(*magic) + " blocks, not " + Name(*chain)};
            }
            l.chain = *chain;
        } else if (magic_decides && magic) {
            l.chain = *magic;
        } else if (magic && *magic != layout_chain) {
            return Error{Errc::BadMagic, blocks_dir.string() + " holds " + Name(*magic) + " blocks, not " + Name(layout_chain) +
                                             " as its place in the data directory says"};
        }
        return l;
    };
    // A blocks directory itself (it holds index/).
    if (HasIndex(dir)) {
        auto magic = DetectChainFromBlockFiles(dir);
        if (!chain && !magic) {
            return Error{Errc::InvalidValue, "cannot tell the network of " + dir.string() + ": pass --network"};
        }
        return finish(chain ? *chain : *magic, dir, true);
    }
    std::vector<NetworkFolder> found;
    for (const auto& n : NETWORK_FOLDERS) {
        if (HasIndex(BlocksDirOf(dir, n))) found.push_back(n);
    }
    auto looked = [&] {
        std::string s;
        for (const auto& n : NETWORK_FOLDERS) s += (s.empty() ? "" : ", ") + (BlocksDirOf(dir, n) / "index").string();
        return s;
    };
    if (chain) {
        for (const auto& n : found) {
            if (n.chain == *chain) return finish(n.chain, BlocksDirOf(dir, n), false);
        }
        // DIR may be a network's own directory (e.g. ~/.bitcoin/testnet3): its blocks are DIR/blocks.
        if (!found.empty() && found.front().chain == ChainType::MAIN) return finish(*chain, dir / "blocks", true);
        if (!found.empty()) {
            std::string names;
            for (const auto& n : found) names += (names.empty() ? "" : " and ") + Name(n.chain);
            return Error{Errc::InvalidValue, dir.string() + " is a " + names + " data directory, not " + Name(*chain) +
                                                 ": drop --network, or pass --network " + Name(found.front().chain)};
        }
        return Error{Errc::NotFound, "no " + Name(*chain) + " block index in " + dir.string() + " (looked for " + looked() + ")"};
    }
    if (found.empty()) {
        return Error{Errc::NotFound, "no Bitcoin Core block index in " + dir.string() + " (looked for " + looked() + ")"};
    }
    if (found.size() > 1) {
        std::string names;
        for (const auto& n : found) names += (names.empty() ? "" : ", ") + Name(n.chain);
        return Error{Errc::InvalidValue, dir.string() + " holds the blocks of several networks (" + names + "): pass --network"};
    }
    // DIR/blocks is main by layout, unless the files say otherwise (DIR is then a network's own
    // directory such as ~/.bitcoin/testnet3).
    return finish(found.front().chain, BlocksDirOf(dir, found.front()), found.front().chain == ChainType::MAIN);
}

namespace {
/// A Core data directory's best chain, as both readers of a datadir need it: the layout (network,
/// blocks directory), the block index and its best chain of valid blocks; a clear error when
/// bitcoind holds the directory, the index is being rebuilt, or it has no stored genesis block.
struct DatadirChain {
    DatadirLayout layout;
    BlockIndex index;
    BestChain best;
};

Result<DatadirChain> OpenDatadirChain(const std::filesystem::path& dir, std::optional<ChainType> chain)
{
    auto layout = ResolveDatadir(dir, chain);
    if (!layout) return layout.error();
    // bitcoind holds `.lock` for as long as it runs, the index's LOCK only while the index is open:
    // either one held means the index may change under the reader.
    auto index = ReadBlockIndex(layout->blocks_dir / "index", IsFileLocked(layout->lock_file));
    if (!index) return index.error();
    if (index->reindexing) {
        return Error{Errc::InvalidValue, "the block index in " + layout->blocks_dir.string() +
                                             " is being rebuilt (-reindex did not finish): let bitcoind finish, or use --blocks-dir"};
    }
    auto best = SelectBestChain(*index, GetChainParams(layout->chain).consensus.hash_genesis_block);
    if (!best) return best.error();
    if (best->entries.empty() && index->from_snapshot) {
        return Error{Errc::InvalidValue, "bitcoind is running and its block index in " + layout->blocks_dir.string() +
                                             " holds no " + Name(layout->chain) +
                                             " genesis block yet (it writes the index at its first flush): try again in a moment"};
    }
    if (best->entries.empty()) {
        return Error{Errc::InvalidValue, "the block index in " + layout->blocks_dir.string() + " has no stored " +
                                             Name(layout->chain) + " genesis block (" + std::to_string(index->entries.size()) +
                                             " entries; a pruned node, or another network's index?)"};
    }
    return DatadirChain{std::move(*layout), std::move(*index), std::move(*best)};
}
} // namespace

std::string LiveDatadirMessage(int height, const BlockHash& hash)
{
    return "bitcoind is running: reading a snapshot of its block index; data consistent up to height " +
           std::to_string(height) + " (" + hash.ToHex() + ")";
}

Result<DatadirUndo> LocateUndoInDatadir(const std::filesystem::path& dir, std::optional<ChainType> chain)
{
    auto dc = OpenDatadirChain(dir, chain);
    if (!dc) return dc.error();
    const BlockIndex* index = &dc->index;
    const BestChain* best = &dc->best;
    DatadirUndo u;
    u.live = index->from_snapshot;
    u.chain = dc->layout.chain;
    u.blocks_dir = dc->layout.blocks_dir;
    auto key = ReadXorKey(u.blocks_dir);
    if (!key) return key.error();
    u.key = *key;
    if (!best->entries.empty()) u.tip_height = index->entries[best->entries.back()].height;
    for (std::size_t i = 1; i < best->entries.size(); ++i) {
        const auto& e = index->entries[best->entries[i]];
        if (!(e.status & BLOCK_HAVE_UNDO) || e.file < 0) {
            ++u.without_undo;
            continue;
        }
        u.blocks.push_back({e.height, e.hash, e.Prev(), uint32_t(e.file), e.undo_pos});
    }
    return u;
}

Result<LocatedChain> LocateFromDatadir(const std::filesystem::path& dir, std::optional<ChainType> chain, bool keep_unreadable)
{
    auto dc = OpenDatadirChain(dir, chain);
    if (!dc) return dc.error();
    const DatadirLayout* layout = &dc->layout;
    const BlockIndex* index = &dc->index;
    const BestChain* best = &dc->best;
    const auto& params = GetChainParams(layout->chain);
    LocatedChain s;
    s.chain = layout->chain;
    s.blocks_dir = layout->blocks_dir;
    s.from_index = true;
    s.live = index->from_snapshot;
    s.index_entries = index->entries.size();
    s.failed = best->failed;
    auto key = ReadXorKey(s.blocks_dir);
    if (!key) return key.error();
    s.key = *key;
    // Only the files the chain uses, in number order (an index naming file 2^31 costs one entry).
    std::map<int32_t, uint32_t> file_index;
    for (std::size_t i : best->entries) file_index.emplace(index->entries[i].file, 0);
    for (auto& [number, idx] : file_index) {
        idx = uint32_t(s.files.size());
        s.files.push_back(BlockFilePath(s.blocks_dir, int(number)));
    }
    BlockFileReader frames(s.files, s.key);
    const auto magic = std::span<const uint8_t, 4>(params.message_start);
    s.order.blocks.reserve(best->entries.size());
    s.headers = HeaderChain(params);
    s.headers.Reserve(best->entries.size());
    for (std::size_t i : best->entries) {
        const auto& e = index->entries[i];
        auto pos = frames.ReadFrame(file_index.at(e.file), e.data_pos, magic);
        if (!pos) {
            Error why{pos.error().code, "block " + e.hash.ToHex() + " at height " + std::to_string(e.height) +
                                            " (blk" + std::to_string(e.file) + " position " + std::to_string(e.data_pos) +
                                            "): " + pos.error().message};
            if (!keep_unreadable) return why;
            s.unreadable.emplace(e.height, std::move(why));
        }
        s.order.blocks.push_back(pos ? *pos : BlockRecordPos{});
        if (e.height != 0) s.headers.AppendKnown(e.hash, HeaderInfo{e.Time(), e.Bits()});
    }
    s.order.orphans = best->orphans;
    s.order.stale = best->stale;
    s.base_height = 0;
    return s;
}

Result<LocatedChain> LocateBlocks(const BlockFileSource& source, bool keep_unreadable)
{
    return source.datadir.empty() ? LocateFromBlocksDir(source.blocks_dir, source.chain)
                                  : LocateFromDatadir(source.datadir, source.chain, keep_unreadable);
}

} // namespace ibdkit

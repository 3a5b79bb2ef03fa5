// Which chainstate a path names, and its network (blockfile/locate.h, LocateChainstate).
#include <ibdkit/blockfile/locate.h>
#include <ibdkit/common/write_guard.h>

#include "blockfile/network_folders.h"
#include "common/write_guard_internal.h"

#include <unistd.h>

#include <array>
#include <string>
#include <vector>

namespace ibdkit {

namespace fs = std::filesystem;

namespace {

bool Exists(const fs::path& p)
{
    std::error_code ec;
    return fs::exists(p, ec);
}

std::string Name(ChainType c) { return std::string(ChainTypeName(c)); }

/// The network a chainstate folder's place says, as for blocks (ResolveDatadir): the magic of the
/// blk files beside it in DIR/blocks; else DIR/<net>/chainstate is <net>'s and DIR/chainstate
/// beside DIR/blocks/index is main's.
std::optional<ChainType> ChainOfPlace(const fs::path& chainstate)
{
    std::error_code ec;
    const fs::path parent = fs::weakly_canonical(fs::absolute(chainstate, ec), ec).parent_path();
    if (Exists(parent / "blocks")) {
        if (auto magic = DetectChainFromBlockFiles(parent / "blocks")) return magic;
    }
    const std::string name = parent.filename().string();
    for (const auto& n : NETWORK_FOLDERS) {
        if (!n.sub.empty() && name == n.sub && Exists(parent / "blocks")) return n.chain;
    }
    if (Exists(parent / "blocks" / "index")) return ChainType::MAIN;
    return std::nullopt;
}

/// A folder a reader takes as a chainstate: LevelDB's CURRENT, or the marker that an unfinished
/// SwiftSync writer puts there before LevelDB's first file (Found refuses it by name).
bool HoldsChainstate(const fs::path& dir) { return Exists(dir / "CURRENT") || Exists(dir / UNFINISHED_CHAINSTATE_MARKER); }

Result<ChainstateLocation> Found(const fs::path& dir, std::optional<ChainType> chain)
{
    if (auto unfinished = CheckChainstateFinished(dir)) return *unfinished;
    if (::access(dir.c_str(), R_OK | X_OK) != 0 || ::access((dir / "CURRENT").c_str(), R_OK) != 0) {
        return Error{Errc::Refused, "cannot read the chainstate " + dir.string() + ": permission denied (check its owner and mode)"};
    }
    std::optional<ChainType> recorded;
    if (auto r = ChainstateNetworkRecord(dir)) recorded = ParseChainType(*r);
    if (!recorded) recorded = ChainOfPlace(dir);
    if (chain && recorded && *chain != *recorded) {
        return Error{Errc::InvalidValue, dir.string() + " is a " + Name(*recorded) + " chainstate, not " + Name(*chain) +
                                             ": drop --network, or pass --network " + Name(*recorded)};
    }
    return ChainstateLocation{dir, chain ? chain : recorded};
}

} // namespace

Result<ChainstateLocation> LocateChainstate(const fs::path& path, std::optional<ChainType> chain)
{
    std::error_code ec;
    const auto st = fs::status(path, ec);
    if (!fs::exists(st)) {
        if (st.type() == fs::file_type::unknown || ec == std::errc::permission_denied) {
            return Error{Errc::Refused, "cannot look into " + path.string() + ": permission denied (check its owner and mode)"};
        }
        return Error{Errc::NotFound, path.string() + " does not exist: give a chainstate folder or a Bitcoin Core data directory"};
    }
    if (!fs::is_directory(st)) {
        return Error{Errc::InvalidValue, path.string() + " is a file, not a folder: give a chainstate folder or a Bitcoin Core data directory"};
    }
    if (HoldsChainstate(path)) return Found(path, chain);
    if (::access(path.c_str(), R_OK | X_OK) != 0) {
        return Error{Errc::Refused, "cannot look into " + path.string() + ": permission denied (check its owner and mode)"};
    }
    // A data directory, or a network's own folder (~/.bitcoin/testnet3).
    std::vector<NetworkFolder> found;
    for (const auto& n : NETWORK_FOLDERS) {
        const fs::path cs = (!n.sub.empty() ? path / n.sub : path) / "chainstate";
        if (HoldsChainstate(cs)) found.push_back(n);
    }
    auto folder = [&](const NetworkFolder& n) { return (!n.sub.empty() ? path / n.sub : path) / "chainstate"; };
    if (found.empty()) {
        return Error{Errc::NotFound, "no chainstate in " + path.string() + " (looked for " + (path / "CURRENT").string() + ", " +
                                         (path / "chainstate").string() + " and each network's NETWORK/chainstate)"};
    }
    if (chain) {
        for (const auto& n : found) {
            if (n.chain == *chain || (n.sub.empty() && ChainOfPlace(folder(n)) == chain)) return Found(folder(n), chain);
        }
        // DIR/chainstate of a network's own folder: its place names the network.
        if (found.size() == 1 && found.front().sub.empty() && !ChainOfPlace(folder(found.front()))) return Found(folder(found.front()), chain);
        std::string names, first;
        for (const auto& n : found) {
            const auto c = !n.sub.empty() ? n.chain : ChainOfPlace(folder(n)).value_or(ChainType::MAIN);
            names += (names.empty() ? "" : " and ") + Name(c);
            if (first.empty()) first = Name(c);
        }
        return Error{Errc::InvalidValue, path.string() + " is a " + names + " data directory, not " + Name(*chain) +
                                             ": drop --network, or pass --network " + first};
    }
    if (found.size() > 1) {
        std::string names;
        for (const auto& n : found) names += (names.empty() ? "" : ", ") + Name(n.chain);
        return Error{Errc::InvalidValue, path.string() + " holds the chainstates of several networks (" + names + "): pass --network"};
    }
    const auto& n = found.front();
    return Found(folder(n), !n.sub.empty() ? std::optional<ChainType>(n.chain) : std::nullopt);
}

} // namespace ibdkit

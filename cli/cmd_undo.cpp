// `ibdkit undo`: the undo data (rev files) of a Bitcoin Core data directory's best chain, read-only
// through its block index; every record's checksum is verified against the block's parent.
#include "commands.h"
#include "json_output.h"

#include <ibdkit/blockfile/locate.h>
#include <ibdkit/blockfile/undo_reader.h>
#include <ibdkit/chain/params.h>
#include <ibdkit/encoding/hex.h>

#include <nlohmann/json.hpp>

#include <cstdio>
#include <memory>
#include <string>

namespace ibdkit::cli {
namespace {

const CommandRegistrar undo_cmd([](CLI::App& app) {
    auto* cmd = app.add_subcommand("undo",
        "Read the undo data (revNNNNN.dat) of a Bitcoin Core data directory's best chain through its block index,\n"
        "strictly read-only, verifying each record's checksum: per block the spent coins it would restore");
    struct Args {
        std::string datadir, network;
        int height{-1};
        bool json{false}, hex{false}, quiet{false};
    };
    auto a = std::make_shared<Args>();
    cmd->add_option("--datadir", a->datadir, "Bitcoin Core data directory (while bitcoind runs: a snapshot of its block index)")->required();
    AddNetworkOption(cmd, a->network, "from the datadir layout");
    cmd->add_option("--height", a->height, "Only the block at this height")->check(IntegerIn(0, MAX_HEIGHT));
    cmd->add_flag("--json", a->json, "Print JSON: per block height, hash, rev file, position, size, transactions, coins");
    cmd->add_flag("--hex", a->hex, "With --json: each record's undo bytes in hex");
    cmd->add_flag("-q,--quiet", a->quiet, "No notes on stderr (such as: bitcoind is running, read up to height N)");
    cmd->callback([a] {
        const std::optional<ChainType> chain = ParseNetworkOption(a->network);
        auto loc = LocateUndoInDatadir(a->datadir, chain);
        if (!loc) {
            PrintError(loc.error().message);
            ExitCode() = EXIT_FAILED;
            return;
        }
        if (loc->live && !loc->blocks.empty() && !a->quiet) {
            PrintNote(LiveDatadirMessage(loc->blocks.back().height, loc->blocks.back().hash));
        }
        UndoFileReader reader(loc->blocks_dir, loc->key, GetChainParams(loc->chain).message_start);
        nlohmann::json blocks = nlohmann::json::array();
        uint64_t records = 0, coins = 0;
        for (const auto& b : loc->blocks) {
            if (a->height >= 0 && b.height != a->height) continue;
            auto bytes = reader.ReadBytes(b.file, b.undo_pos, b.prev);
            if (!bytes) {
                PrintError("block " + b.hash.ToHex() + " at height " + std::to_string(b.height) + ": " + bytes.error().message);
                ExitCode() = EXIT_FAILED;
                return;
            }
            auto undo = DecodeBlockUndo(*bytes);
            if (!undo) {
                PrintError("block " + b.hash.ToHex() + " at height " + std::to_string(b.height) + ": " + undo.error().message);
                ExitCode() = EXIT_FAILED;
                return;
            }
            ++records;
            coins += undo->CoinCount();
            if (a->json) {
                nlohmann::json j{{"height", b.height}, {"hash", b.hash.ToHex()}, {"file", b.file}, {"undo_pos", b.undo_pos},
                                 {"size", bytes->size()}, {"transactions", undo->vtxundo.size()}, {"coins", undo->CoinCount()}};
                if (a->hex) j["hex"] = HexStr(*bytes);
                blocks.push_back(std::move(j));
            } else {
                std::printf("%7d %s rev%05u.dat@%-9u %8zu bytes %6zu txs %7llu coins\n", b.height, b.hash.ToHex().c_str(), b.file,
                            b.undo_pos, bytes->size(), undo->vtxundo.size(), (unsigned long long)undo->CoinCount());
            }
        }
        if (a->height >= 0 && records == 0) {
            PrintError(a->height > loc->tip_height
                           ? "--height " + std::to_string(a->height) + " is above the datadir's tip, height " +
                                 std::to_string(loc->tip_height)
                           : "the block at height " + std::to_string(a->height) + " has no undo data (" +
                                 (a->height == 0 ? "the genesis block never has any" : "pruned, or not connected yet") + ")");
            ExitCode() = EXIT_FAILED;
            return;
        }
        if (a->json) {
            nlohmann::json out{{"network", std::string(ChainTypeName(loc->chain))}, {"blocks", std::move(blocks)},
                               {"records", records}, {"coins", coins}, {"without_undo", loc->without_undo}};
            PrintJsonResult(out);
        } else {
            std::printf("%llu undo records verified, %llu coins; %llu best-chain blocks without undo data\n",
                        (unsigned long long)records, (unsigned long long)coins, (unsigned long long)loc->without_undo);
        }
    });
});

} // namespace
} // namespace ibdkit::cli

// `ibdkit swiftsync`: checks blocks 1..n against a hintsfile in SwiftSync's outpoints or coins mode
// (docs/swiftsync.md) — range by range, as a distributed driver would, then one verdict. The salt is
// drawn here and never shown.
#include "commands.h"
#include "progress.h"
#include "replay_cli.h"

#include <ibdkit/blockfile/locate.h>
#include <ibdkit/primitives/amount.h>
#include <ibdkit/swiftsync/aggregate.h>
#include <ibdkit/swiftsync/check_range.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

namespace ibdkit::cli {
namespace {

nlohmann::json CountsJson(const swiftsync::RangeCounts& c)
{
    return {{"blocks", c.blocks},   {"transactions", c.transactions}, {"inputs", c.inputs},
            {"outputs", c.outputs}, {"unspent", c.unspent},           {"unspendable", c.unspendable}};
}

const CommandRegistrar swiftsync_cmd([](CLI::App& app) {
    auto* cmd = app.add_subcommand("swiftsync",
        "Check blocks 1..n against a SwiftSync hintsfile, range by range as a distributed driver would, and say\n"
        "whether the history holds: the inputs' and the non-hinted outputs' salted sums equal, the unspent value\n"
        "within the subsidies. --mode outpoints (BIP 457's assume-valid extension: Core's CheckBlock only) checks\n"
        "much less than Core's assumevalid; --mode coins checks Core's rules from a datadir's rev files\n"
        "(docs/swiftsync.md, *Trust*). Writes nothing: `replay --swiftsync` writes the chainstate");
    struct Args {
        std::string hints, datadir, blocks_dir, network, mode{swiftsync::AggregateModeName(swiftsync::AggregateMode::OutPoints)}, assumevalid;
        unsigned ranges{4};
        unsigned threads{std::min(4u, UsableCores())};
        bool json{false}, quiet{false}, skip_scripts{false};
    };
    auto a = std::make_shared<Args>();
    cmd->add_option("--hints", a->hints, "The hintsfile (`ibdkit hints`)")->required();
    cmd->add_option("--datadir", a->datadir, "Bitcoin Core data directory: blocks through its block index, read-only");
    cmd->add_option("--blocks-dir", a->blocks_dir, "Or a blocks directory (blkNNNNN.dat, xor.dat) or one blk file");
    AddNetworkOption(cmd, a->network, "from the blocks");
    cmd->add_option("--ranges", a->ranges, "Split 1..n into this many ranges, checked apart and combined")
        ->check(IntegerIn(1, MAX_HEIGHT))
        ->capture_default_str();
    AddThreadsOption(cmd, a->threads, "Threads per range");
    cmd->add_option("--mode", a->mode,
                    "outpoints: any blocks, Core's CheckBlock only; coins: BIP 457's Coin elements and every rule of Core's\n"
                    "ConnectBlock, the spent coins from the datadir's rev files (needs --datadir)")
        ->check(SwiftSyncModeIn())
        ->capture_default_str();
    auto* av = cmd->add_option("--assumevalid", a->assumevalid,
                               "Coins mode: as replay's (default: the network's; 0: verify every script)");
    cmd->add_flag("--skip-scripts", a->skip_scripts, "Coins mode: trust every script (a benchmark, as replay --skip-scripts)")->excludes(av);
    cmd->add_flag("--json", a->json, "Print the verdict as JSON");
    AddQuietOption(cmd, a->quiet);
    cmd->callback([a] {
        RequireOneBlockSource(a->datadir, a->blocks_dir);
        const bool coins_mode = swiftsync::ParseAggregateMode(a->mode) == swiftsync::AggregateMode::Coins;
        if (coins_mode && a->datadir.empty()) {
            throw UsageError("--mode coins reads the spent coins from a Bitcoin Core datadir's rev files: give --datadir, or "
                             "--mode outpoints for bare block files (it checks much less)");
        }
        if (!coins_mode && (!a->assumevalid.empty() || a->skip_scripts)) {
            throw UsageError("--mode outpoints checks no scripts: --assumevalid and --skip-scripts go with --mode coins");
        }
        const std::optional<ChainType> chain = ParseNetworkOption(a->network);
        auto fail = [](const std::string& m) {
            PrintError(m);
            ExitCode() = EXIT_FAILED;
        };
        auto hints = swiftsync::Hints::Read(a->hints);
        if (!hints) return fail(hints.error().message);
        auto loc = LocateBlocks({.datadir = a->datadir, .blocks_dir = a->blocks_dir, .chain = chain});
        if (!loc) return fail(loc.error().message);
        std::optional<DatadirUndo> undo;
        swiftsync::CoinsModeOptions co;
        if (coins_mode) {
            auto u = LocateUndoInDatadir(a->datadir, loc->chain);
            if (!u) return fail(u.error().message);
            undo = std::move(*u);
            co.undo = &*undo;
            co.assumevalid = ParseAssumeValid(a->assumevalid);
            co.skip_scripts = a->skip_scripts;
        }
        const uint32_t n = hints->height();
        const swiftsync::Salt salt = swiftsync::Salt::Random();
        auto bar = std::make_shared<ProgressLine>(!a->quiet && !a->json);
        swiftsync::CheckRangeOptions o;
        o.threads = a->threads;
        o.collect_unspent = false;
        o.progress = [bar, n](uint32_t h, uint32_t) { bar->Update(n ? double(h) / n : 1.0, "block " + std::to_string(h) + " of " + std::to_string(n)); };
        std::vector<swiftsync::Partial> parts;
        const uint32_t k = std::max(1u, std::min(a->ranges, std::max(n, 1u)));
        for (uint32_t i = 0; i < k && n > 0; ++i) {
            const uint32_t from = uint32_t(uint64_t(n) * i / k) + 1, to = uint32_t(uint64_t(n) * (i + 1) / k);
            auto p = coins_mode ? swiftsync::CheckRangeCoins(*loc, *hints, salt, from, to, o, co)
                                : swiftsync::CheckRange(*loc, *hints, salt, from, to, o);
            if (!p) return fail(p.error().message);
            parts.push_back(std::move(*p));
        }
        bar->Done();
        const auto v = swiftsync::Combine(parts, n, loc->chain);
        if (a->json) {
            const nlohmann::json j{{"ok", v.ok}, {"reason", v.reason}, {"height", n}, {"ranges", parts.size()},
                                   {"counts", CountsJson(v.counts)}, {"supply_sat", v.supply}, {"supply_bound_sat", v.supply_bound},
                                   {"mode", a->mode}, {"script_checked_inputs", v.script_checked_inputs}};
            std::printf("%s\n", j.dump(2).c_str());
        } else {
            const std::string accepted = coins_mode ? "accepted (coins mode: Core's rules, scripts verified on " +
                                                          std::to_string(v.script_checked_inputs) + " inputs)"
                                                    : "accepted (outpoints mode: much less than assumevalid, docs/swiftsync.md)";
            std::printf("verdict            %s\nheight             %u (%zu ranges)\nblocks             %llu, %llu transactions\n"
                        "inputs             %llu\nspendable outputs  %llu, %llu hinted unspent\nunspent value      %lld sat of at most %lld\n",
                        v.ok ? accepted.c_str() : ("REFUSED: " + v.reason).c_str(),
                        n, parts.size(), (unsigned long long)v.counts.blocks, (unsigned long long)v.counts.transactions,
                        (unsigned long long)v.counts.inputs, (unsigned long long)v.counts.outputs, (unsigned long long)v.counts.unspent,
                        (long long)v.supply, (long long)v.supply_bound);
        }
        if (!v.ok) {
            PrintError("SwiftSync refuses the chain: " + v.reason);
            ExitCode() = EXIT_INVALID_CHAIN;
        }
    });
});

} // namespace
} // namespace ibdkit::cli

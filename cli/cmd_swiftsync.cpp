// `ibdkit swiftsync`: checks blocks 1..n against a hintsfile in SwiftSync's outpoints mode
// (docs/swiftsync.md) — range by range, as a distributed driver would, then one verdict. The salt is
// drawn here and never shown.
#include "commands.h"
#include "progress.h"

#include <ibdkit/blockfile/locate.h>
#include <ibdkit/primitives/amount.h>
#include <ibdkit/swiftsync/check_range.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdio>
#include <memory>
#include <string>
#include <thread>
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
        "Check blocks 1..n against a SwiftSync hintsfile in outpoints mode (BIP 457's assume-valid extension):\n"
        "Core's CheckBlock on every block, the inputs' and the non-hinted outputs' salted sums equal, the unspent\n"
        "value within the subsidies. Checks much less than Core's assumevalid: read docs/swiftsync.md, *Trust*");
    struct Args {
        std::string hints, datadir, blocks_dir, network;
        unsigned ranges{4};
        unsigned threads{std::max(1u, std::min(4u, std::thread::hardware_concurrency()))};
        bool json{false}, quiet{false};
    };
    auto a = std::make_shared<Args>();
    cmd->add_option("--hints", a->hints, "The hintsfile (`ibdkit hints`)")->required();
    auto* dd = cmd->add_option("--datadir", a->datadir, "Bitcoin Core data directory: blocks through its block index, read-only");
    cmd->add_option("--blocks-dir", a->blocks_dir, "Or a blocks directory (blkNNNNN.dat, xor.dat) or one blk file")->excludes(dd);
    AddNetworkOption(cmd, a->network, "from the blocks");
    cmd->add_option("--ranges", a->ranges, "Split 1..n into this many ranges, checked apart and combined")
        ->check(IntegerIn(1, MAX_HEIGHT))
        ->capture_default_str();
    cmd->add_option("--threads", a->threads, "Threads per range")->check(IntegerIn(1, MAX_THREADS))->capture_default_str();
    cmd->add_flag("--json", a->json, "Print the verdict as JSON");
    AddQuietOption(cmd, a->quiet);
    cmd->callback([a] {
        if (a->datadir.empty() == a->blocks_dir.empty()) throw UsageError("--datadir or --blocks-dir (exactly one)");
        const std::optional<ChainType> chain = ParseNetworkOption(a->network);
        auto fail = [](const std::string& m) {
            PrintError(m);
            ExitCode() = EXIT_FAILED;
        };
        auto hints = swiftsync::Hints::Read(a->hints);
        if (!hints) return fail(hints.error().message);
        auto loc = a->datadir.empty() ? LocateFromBlocksDir(a->blocks_dir, chain) : LocateFromDatadir(a->datadir, chain);
        if (!loc) return fail(loc.error().message);
        const uint32_t n = hints->height();
        const swiftsync::Salt salt = swiftsync::Salt::Random();
        auto bar = std::make_shared<ProgressLine>(!a->quiet && !a->json);
        swiftsync::CheckRangeOptions o;
        o.threads = std::max(1u, a->threads);
        o.collect_unspent = false;
        o.progress = [bar, n](uint32_t h, uint32_t) { bar->Update(n ? double(h) / n : 1.0, "block " + std::to_string(h) + " of " + std::to_string(n)); };
        std::vector<swiftsync::Partial> parts;
        const uint32_t k = std::max(1u, std::min(a->ranges, std::max(n, 1u)));
        for (uint32_t i = 0; i < k && n > 0; ++i) {
            const uint32_t from = uint32_t(uint64_t(n) * i / k) + 1, to = uint32_t(uint64_t(n) * (i + 1) / k);
            auto p = swiftsync::CheckRange(*loc, *hints, salt, from, to, o);
            if (!p) return fail(p.error().message);
            parts.push_back(std::move(*p));
        }
        bar->Done();
        const auto v = swiftsync::Combine(parts, n, loc->chain);
        if (a->json) {
            const nlohmann::json j{{"ok", v.ok}, {"reason", v.reason}, {"height", n}, {"ranges", parts.size()},
                                   {"counts", CountsJson(v.counts)}, {"supply_sat", v.supply}, {"supply_bound_sat", v.supply_bound},
                                   {"mode", "outpoints"}};
            std::printf("%s\n", j.dump(2).c_str());
        } else {
            std::printf("verdict            %s\nheight             %u (%zu ranges)\nblocks             %llu, %llu transactions\n"
                        "inputs             %llu\nspendable outputs  %llu, %llu hinted unspent\nunspent value      %lld sat of at most %lld\n",
                        v.ok ? "accepted (outpoints mode: much less than assumevalid, docs/swiftsync.md)" : ("REFUSED: " + v.reason).c_str(),
                        n, parts.size(), (unsigned long long)v.counts.blocks, (unsigned long long)v.counts.transactions,
                        (unsigned long long)v.counts.inputs, (unsigned long long)v.counts.outputs, (unsigned long long)v.counts.unspent,
                        (long long)v.supply, (long long)v.supply_bound);
        }
        if (!v.ok) ExitCode() = EXIT_INVALID_CHAIN;
    });
});

} // namespace
} // namespace ibdkit::cli

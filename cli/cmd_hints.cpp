// `ibdkit hints`: writes a SwiftSync hintsfile (BIP 456) for the height of a UTXO set — a
// chainstate's tip or a snapshot's base — from the blocks 1..n of a data or blocks directory; and
// `replay --write-hints`, the same for the chainstate a replay leaves.
#include "hints_cli.h"
#include "json_output.h"
#include "progress.h"
#include "replay_cli.h"

#include <ibdkit/run/result_fields.h>

#include <algorithm>
#include <cstdio>
#include <memory>
#include <string>
#include <utility>

namespace ibdkit::cli {

std::function<void(uint32_t, uint32_t)> HintsProgressPrinter(std::shared_ptr<ProgressLine> bar)
{
    return [bar = std::move(bar), first = true](uint32_t h, uint32_t target) mutable {
        if (std::exchange(first, false)) bar->Done(); // the run's line before it stays
        bar->Update(target ? double(h) / target : 1.0, "hints: block " + std::to_string(h) + " of " + std::to_string(target));
    };
}

nlohmann::json HintsJson(const swiftsync::BuildHintsResult& r, PolicyId policy, const std::string& out)
{
    return ToJson(HintsFields(r, policy, out));
}

void PrintHints(const swiftsync::BuildHintsResult& r, const std::string& out)
{
    std::printf("hintsfile          %s\nnetwork            %s\nheight             %u\ntip                %s\n"
                "unspent outputs    %llu of %llu spendable\nbytes              %llu\n",
                out.c_str(), std::string(ChainTypeName(r.chain)).c_str(), r.height, r.tip.ToHex().c_str(),
                (unsigned long long)r.coins, (unsigned long long)r.outputs, (unsigned long long)r.bytes);
}

void HintsAfterRun::AddOption(CLI::App* cmd)
{
    cmd->add_option("--write-hints", m_out,
                    "After a run that connects every block, write the SwiftSync hintsfile (BIP 456) for the chainstate's\n"
                    "tip, as `ibdkit hints` does: a second pass over the blocks (replaced only once complete)");
}

std::filesystem::path HintsAfterRun::Request() const
{
    if (!Enabled()) return {};
    CheckOutput(m_out);
    return m_out;
}

void HintsAfterRun::NoteIfMissing(const run::RunOutputsResult& written) const
{
    if (Enabled() && !written.hints) PrintNote("--write-hints: the run did not connect every block; no hintsfile written");
}

namespace {

const CommandRegistrar hints_cmd([](CLI::App& app) {
    auto* cmd = app.add_subcommand("hints",
        "Write a SwiftSync hintsfile (BIP 456): for each block 1..n, which of its spendable outputs are unspent at n,\n"
        "n being the tip of a chainstate (Core's, read-only, or ibdkit's) or the base of an assumeutxo snapshot.\n"
        "Written under a temporary name and renamed when complete (docs/swiftsync.md)");
    struct Args {
        std::string chainstate, snapshot, datadir, blocks_dir, network, out;
        unsigned threads{std::min(4u, UsableCores())};
        std::string policy{PolicyName(PolicyId::Hardened)};
        bool json{false}, quiet{false};
    };
    auto a = std::make_shared<Args>();
    auto* cs = cmd->add_option("--chainstate", a->chainstate,
        "Chainstate directory (Core's DATADIR/chainstate or ibdkit's; a datadir is accepted). Default: --datadir's");
    cmd->add_option("--snapshot", a->snapshot, "Or an assumeutxo snapshot file (dumptxoutset, `ibdkit utxo snapshot`)")->excludes(cs);
    cmd->add_option("--datadir", a->datadir, "Bitcoin Core data directory: blocks through its block index, read-only");
    cmd->add_option("--blocks-dir", a->blocks_dir, "Or a blocks directory (blkNNNNN.dat, xor.dat) or one blk file");
    AddNetworkOption(cmd, a->network, "from the blocks");
    cmd->add_option("--out", a->out, "The hintsfile to write (replaced only once complete; its folder must exist)")->required();
    AddThreadsOption(cmd, a->threads, "Threads decoding blocks");
    AddOneRunPolicyOption(cmd, a->policy);
    cmd->add_flag("--json", a->json, "Print the result as JSON");
    AddQuietOption(cmd, a->quiet);
    cmd->callback([a] {
        RequireOneBlockSource(a->datadir, a->blocks_dir);
        if (a->chainstate.empty() && a->snapshot.empty() && a->datadir.empty()) {
            throw CLI::RequiredError("--chainstate or --snapshot (with --blocks-dir)");
        }
        CheckOutput(a->out); // before any block is read: a refused or impossible --out costs nothing
        swiftsync::BuildHintsOptions o;
        o.chainstate = a->chainstate;
        o.snapshot = a->snapshot;
        o.source = {.datadir = a->datadir, .blocks_dir = a->blocks_dir, .chain = ParseNetworkOption(a->network)};
        o.out = a->out;
        o.threads = a->threads;
        o.policy = PolicyOf(a->policy);
        auto bar = std::make_shared<ProgressLine>(!a->quiet && !a->json);
        o.on_progress = HintsProgressPrinter(bar);
        auto r = swiftsync::BuildHints(o);
        bar->Done();
        if (!r) {
            PrintError(r.error().message);
            ExitCode() = EXIT_FAILED;
            return;
        }
        if (a->json) {
            PrintJsonResult(HintsJson(*r, PolicyOf(a->policy), a->out));
        } else {
            PrintHints(*r, a->out);
        }
    });
});

} // namespace
} // namespace ibdkit::cli

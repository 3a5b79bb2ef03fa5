// `ibdkit export blocks|transactions|inputs|outputs`: one table of blocks with their spent outputs
// from a Core data directory (its rev files) or blk files (replayed), to CSV, JSON lines or SQLite:
// the options, then the driver run::ExportBlockTable (run/block_export.h), then its result.
// docs/spent-outputs.md.
#include "commands.h"
#include "json_output.h"
#include "progress.h"
#include "replay_cli.h"

#include <ibdkit/chain/params.h>
#include <ibdkit/run/block_export.h>
#include <ibdkit/run/result_fields.h>

#include <algorithm>
#include <cstdio>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>

namespace ibdkit::cli {
namespace {

struct ExportArgs {
    std::string table, datadir, blocks_dir, network, format, out;
    int from{0};
    std::optional<int> to;
    std::size_t dbcache{200};
    bool quiet{false}, json{false};
};

void RunExport(const ExportArgs& a)
{
    const auto table = ParseBlockTable(a.table);
    if (!table) throw CLI::ValidationError("TABLE", "unknown table '" + a.table + "': blocks, transactions, inputs or outputs");
    const auto format = ParseTableFormat(a.format);
    if (!format) throw CLI::ValidationError("--format", "unknown format '" + a.format + "': csv, jsonl or sqlite");
    CheckOutput(a.out);
    if (a.to && *a.to < a.from) throw UsageError("--to " + std::to_string(*a.to) + " is below --from " + std::to_string(a.from));
    run::BlockExportOptions o;
    o.reader.source = {.datadir = a.datadir, .blocks_dir = a.blocks_dir, .chain = ParseNetworkOption(a.network)};
    o.reader.from_height = a.from;
    o.reader.to_height = a.to;
    o.reader.dbcache_mib = a.dbcache;
    o.table = *table;
    o.format = *format;
    o.out = a.out;
    ProgressLine bar(!a.quiet);
    o.on_progress = [&](const run::BlockExportProgress& p) {
        char text[160];
        std::snprintf(text, sizeof text, "height %d  %llu rows  %.1f MB of blocks  %.1f MB/s", p.height, (unsigned long long)p.rows,
                      double(p.block_bytes) / 1e6, double(p.block_bytes) / 1e6 / std::max(p.seconds, 1e-9));
        const int first = p.first_height, last = p.last_height;
        bar.Update(last >= first ? double(p.height - first + 1) / double(last - first + 1) : -1.0, text);
    };
    auto r = run::ExportBlockTable(o);
    bar.Done();
    if (!r) throw std::runtime_error(r.error().message);
    if (a.json) {
        PrintJsonResult(ToJson(BlockExportFields(*r, *table, a.out)));
        return;
    }
    if (a.quiet) return;
    std::fprintf(stderr, "wrote %s: %s, %llu rows from %llu blocks (heights %d to %d, %.1f MB of blocks) in %.2f s\n", a.out.c_str(),
                 std::string(BlockTableName(*table)).c_str(), (unsigned long long)r->rows, (unsigned long long)r->blocks, r->from_height,
                 r->to_height, double(r->block_bytes) / 1e6, r->seconds);
}

const CommandRegistrar export_cmd([](CLI::App& app) {
    auto* cmd = app.add_subcommand("export",
        "Write one table of blocks with their spent outputs (blocks, transactions, inputs, outputs) to CSV, JSON lines\n"
        "or SQLite. From a Bitcoin Core data directory the spent outputs come from its rev files (read-only; beside a\n"
        "running bitcoind, up to what a snapshot of its block index holds); from blk files the blocks are replayed\n"
        "into a temporary chainstate to compute them.\n"
        "Columns: docs/spent-outputs.md");
    auto a = std::make_shared<ExportArgs>();
    cmd->add_option("TABLE", a->table, "blocks, transactions, inputs or outputs")->required()
        ->check(CLI::IsMember({"blocks", "transactions", "inputs", "outputs"}));
    auto* dd = cmd->add_option("--datadir", a->datadir, "Bitcoin Core data directory (its block index and rev files)");
    auto* bd = cmd->add_option("--blocks-dir", a->blocks_dir, "A directory of blk files, or one blk file (replayed)");
    dd->excludes(bd);
    AddNetworkOption(cmd, a->network, "from the files' magic or the datadir layout");
    cmd->add_option("--format", a->format, "csv, jsonl or sqlite")->required()->check(CLI::IsMember({"csv", "jsonl", "sqlite"}));
    cmd->add_option("--out", a->out, "The file to write (replaced only once complete; its folder must exist)")->required();
    cmd->add_option("--from", a->from, "First height (default 0)")->check(IntegerIn(0, MAX_HEIGHT));
    cmd->add_option("--to", a->to, "Last height (default: the tip; a datadir's last block with undo data)")->check(IntegerIn(0, MAX_HEIGHT));
    cmd->add_option("--dbcache", a->dbcache, "With --blocks-dir: the replay's UTXO cache in MiB (default 200)")->check(IntegerIn(1, MAX_DBCACHE_MIB));
    AddQuietOption(cmd, a->quiet);
    cmd->add_flag("--json", a->json, "Print the summary as JSON on stdout");
    cmd->callback([a] {
        RequireOneBlockSource(a->datadir, a->blocks_dir);
        RunExport(*a);
    });
});

} // namespace
} // namespace ibdkit::cli

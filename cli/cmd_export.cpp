// `ibdkit export blocks|transactions|inputs|outputs`: one table of blocks with their spent outputs
// (spent/tables.h) from a Core data directory (its rev files) or blk files (replayed), to CSV, JSON
// lines or SQLite through the shared table writer. docs/spent-outputs.md.
#include "commands.h"
#include "progress.h"

#include <ibdkit/chain/params.h>
#include <ibdkit/spent/reader.h>
#include <ibdkit/spent/tables.h>
#include <ibdkit/tabular/table.h>

#include <nlohmann/json.hpp>

#include <chrono>
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

std::string Failure(const Error& e) { return e.message; }

void RunExport(const ExportArgs& a)
{
    const auto table = ParseBlockTable(a.table);
    if (!table) throw CLI::ValidationError("TABLE", "unknown table '" + a.table + "': blocks, transactions, inputs or outputs");
    const auto format = ParseTableFormat(a.format);
    if (!format) throw CLI::ValidationError("--format", "unknown format '" + a.format + "': csv, jsonl or sqlite");
    CheckOutput(a.out);
    if (a.to && *a.to < a.from) throw UsageError("--to " + std::to_string(*a.to) + " is below --from " + std::to_string(a.from));
    SpentReaderOptions o;
    o.source = {.datadir = a.datadir, .blocks_dir = a.blocks_dir, .chain = ParseNetworkOption(a.network)};
    o.from_height = a.from;
    o.to_height = a.to;
    o.dbcache_mib = a.dbcache;
    auto reader = SpentBlockReader::Open(o);
    if (!reader) throw std::runtime_error(Failure(reader.error()));
    auto writer = TableWriter::Create(a.out, *format, BlockTableName(*table), BlockTableColumns(*table));
    if (!writer) throw std::runtime_error(Failure(writer.error()));
    const AddressNetwork net = AddressNetworkOf((*reader)->chain());

    ProgressLine bar(!a.quiet);
    const auto start = std::chrono::steady_clock::now();
    uint64_t blocks = 0, bytes = 0;
    int height = -1;
    for (;;) {
        auto b = (*reader)->Next();
        if (!b) {
            bar.Done();
            throw std::runtime_error(Failure(b.error()) + " (nothing written to " + a.out + ")");
        }
        if (!*b) break;
        EmitRows(*table, **b, net, **writer);
        ++blocks;
        bytes += (*b)->size();
        height = (*b)->height();
        const int first = (*reader)->first_height(), last = (*reader)->last_height();
        const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
        char text[160];
        std::snprintf(text, sizeof text, "height %d  %llu rows  %.1f MB of blocks  %.1f MB/s", height,
                      (unsigned long long)(*writer)->Rows(), double(bytes) / 1e6, double(bytes) / 1e6 / std::max(secs, 1e-9));
        bar.Update(last >= first ? double(height - first + 1) / double(last - first + 1) : -1.0, text);
    }
    if (auto e = (*writer)->Finish()) {
        bar.Done();
        throw std::runtime_error(Failure(*e) + " (writing " + a.out + ")");
    }
    bar.Done();
    const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (a.json) {
        const nlohmann::json j{{"out", a.out}, {"table", std::string(BlockTableName(*table))}, {"rows", (*writer)->Rows()},
                               {"blocks", blocks}, {"from_height", (*reader)->first_height()}, {"to_height", height},
                               {"block_bytes", bytes}, {"seconds", secs}};
        std::printf("%s\n", j.dump(2).c_str());
        return;
    }
    if (a.quiet) return;
    std::fprintf(stderr, "wrote %s: %s, %llu rows from %llu blocks (heights %d to %d, %.1f MB of blocks) in %.2f s\n", a.out.c_str(),
                 std::string(BlockTableName(*table)).c_str(), (unsigned long long)(*writer)->Rows(), (unsigned long long)blocks,
                 (*reader)->first_height(), height, double(bytes) / 1e6, secs);
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

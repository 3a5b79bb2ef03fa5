// `ibdkit gen-chain`: writes a deterministic regtest chain as Core-format blk files.
#include "commands.h"
#include "json_output.h"
#include "interrupt.h"

#include <ibdkit/blockfile/blockfile.h>
#include <ibdkit/common/atomic_file.h>

#include "gen/chain_gen.h"

#include <nlohmann/json.hpp>

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <memory>
#include <optional>
#include <string>

namespace ibdkit::cli {
namespace {

struct GenOpts {
    std::string out;
    std::string preset{"default"};
    std::string profile{"default"};
    std::optional<int> blocks;
    uint64_t seed{1};
    std::optional<int64_t> start_time;
    std::optional<double> target_mb;
    bool xor_files{false};
    bool signed_spends{false};
    bool no_genesis{false};
    bool no_progress{false};
    bool json{false};
};

nlohmann::json StatsJson(const ChainWriteResult& r, const GenOpts& o, const ChainGenOptions& g, double secs)
{
    const ChainGenStats& s = r.stats;
    return nlohmann::json{
        {"generator", "ibdkit gen-chain"},
        {"network", "regtest"},
        {"profile", o.profile},
        {"blocks", s.height},
        {"tip_hash", s.tip.ToHex()},
        {"tip_time", s.tip_time},
        {"seed", g.seed},
        {"start_time", g.start_time},
        {"target_bytes", g.target_bytes},
        {"xor", o.xor_files},
        {"signed", g.signed_spends},
        {"genesis_included", !o.no_genesis},
        {"txs", s.txs},
        {"inputs", s.inputs},
        {"outputs", s.outputs},
        {"utxos", s.utxos},
        {"block_bytes", s.block_bytes},
        {"file_bytes", r.file_bytes},
        {"files", r.files},
        {"block_weight", s.block_weight},
        {"max_block_weight", s.max_block_weight},
        {"witness_txs", s.witness_txs},
        {"witness_blocks", s.witness_blocks},
        {"tx_shapes", {{"fanout", s.fanouts}, {"consolidation", s.consolidations}, {"ordinary", s.ordinary}}},
        {"spent", {{"p2sh", s.spent_p2sh}, {"p2wsh", s.spent_p2wsh}, {"p2tr_script", s.spent_p2tr}, {"coinbase", s.spent_coinbase}}},
        {"signed_inputs",
         {{"total", s.signed_inputs}, {"p2pkh", s.spent_signed_p2pkh}, {"p2wpkh", s.spent_signed_p2wpkh},
          {"p2tr_key", s.spent_signed_p2tr_key}, {"multisig", s.spent_signed_multisig}, {"tapscript", s.spent_signed_tapscript}}},
        {"outputs_by_type",
         {{"p2pkh", s.out_p2pkh}, {"p2sh", s.out_p2sh}, {"p2wpkh", s.out_p2wpkh}, {"p2wsh", s.out_p2wsh}, {"p2tr", s.out_p2tr},
          {"p2pk", s.out_p2pk}, {"multisig", s.out_multisig}, {"op_return", s.out_op_return}}},
        {"spent_by_age",
         {{"same_block", s.spent_by_age[0]}, {"1_6", s.spent_by_age[1]}, {"7_144", s.spent_by_age[2]},
          {"145_1008", s.spent_by_age[3]}, {"1009_4320", s.spent_by_age[4]}, {"over_4320", s.spent_by_age[5]}}},
        {"never_spent_outputs", s.never_spent_outputs},
        {"pending_coins_peak", s.pending_coins_peak},
        {"seconds", secs},
    };
}

const CommandRegistrar gen_chain_cmd([](CLI::App& app) {
    auto* cmd = app.add_subcommand(
        "gen-chain",
        "Generate a deterministic regtest chain as Bitcoin Core blk files (DIR/blocks/blkNNNNN.dat). Spent outputs are "
        "anyone-can-spend scripts (P2SH/P2WSH/P2TR-script of OP_TRUE), or with --signed the types mainnet spends with "
        "real signatures; Bitcoin Core accepts either chain with full validation; all other outputs stay unspent. Same options give byte-identical files.");
    auto o = std::make_shared<GenOpts>();
    cmd->add_option("--out", o->out, "Output directory (blk files go to OUT/blocks; existing blk*.dat/xor.dat there are replaced)")
        ->required();
    cmd->add_option("--preset", o->preset, "Size preset: default (2,500 blocks, ~180 MB) or tiny (150 blocks, ~2 MB)")
        ->check(CLI::IsMember({"default", "tiny"}))
        ->capture_default_str();
    cmd->add_option("--profile", o->profile,
                    "Chain shape: default (the benchmark chain), mainnet (mainnet-shaped transactions, output types by era, "
                    "dust-heavy values, full blocks and coin lifetimes; 0.8 MB per block, 2,000 blocks unless sized) or "
                    "mainnet-utxo (mainnet with most bytes in 2023-24's dust era and its dust drops: twice the coins "
                    "per byte, mainnet's UTXO set in ~20 GB); see docs/generator.md")
        ->check(CLI::IsMember({"default", "mainnet", "mainnet-utxo"}))
        ->capture_default_str();
    cmd->add_option("--blocks", o->blocks, "Height of the last block (overrides the preset)")->check(IntegerIn(1, 1'000'000));
    cmd->add_option("--seed", o->seed, "Seed of every random choice")->check(IntegerIn(0, UINT64_MAX))->capture_default_str();
    cmd->add_option("--start-time", o->start_time,
                    "Timestamp of block 1 (default: such that the last block is stamped about now; fix it for identical output)")
        ->check(IntegerIn(0, UINT32_MAX));
    cmd->add_option("--target-mb", o->target_mb,
                    "Approximate total block bytes in MB (default: the preset's, or 72 kB per block with --blocks; mainnet "
                    "profile: 1 MB per block)")
        ->check(NumberIn(0.001, 4'000'000));
    cmd->add_flag("--signed", o->signed_spends,
                  "Spend with real signatures in mainnet's shares (P2PKH, P2WPKH, P2TR key path, 2-of-3 multisig in P2SH and "
                  "P2WSH, tapscript), so full validation checks a signature for every input");
    cmd->add_flag("--xor", o->xor_files, "Obfuscate like Core >= 28: write blocks/xor.dat and XOR the blk files with it");
    cmd->add_flag("--no-genesis", o->no_genesis, "Do not write the genesis block as the first record");
    AddQuietOption(cmd, o->no_progress);
    cmd->add_flag("--json", o->json, "Print the summary as JSON");
    cmd->callback([o] {
        ChainGenOptions g = o->preset == "tiny" ? TinyChainGenOptions() : GenChainPresetOptions();
        if (o->profile == "mainnet" || o->profile == "mainnet-utxo") {
            // 0.8 MB per block unless both sizes are given (full blocks hold ~1 MB; the first ones
            // fill up); --preset tiny: 150 blocks.
            int blocks = o->preset == "tiny" ? 150 : 0;
            if (o->blocks) blocks = *o->blocks;
            else if (o->target_mb) blocks = std::max(150, int(std::min(*o->target_mb / 0.8, 1e6)));
            g = MainnetChainGenOptions(blocks);
            g.utxo_heavy = o->profile == "mainnet-utxo";
        } else if (o->blocks) {
            g.target_bytes = uint64_t(*o->blocks) * (GenChainPresetOptions().target_bytes / uint64_t(GenChainPresetOptions().blocks));
            g.blocks = *o->blocks;
        }
        if (o->target_mb) g.target_bytes = uint64_t(*o->target_mb * 1e6);
        g.seed = o->seed;
        g.signed_spends = o->signed_spends;
        g.start_time = o->start_time ? *o->start_time : DefaultStartTime(g.blocks, int64_t(std::time(nullptr)));
        ChainWriteOptions w;
        w.xor_files = o->xor_files;
        w.include_genesis = !o->no_genesis;

        w.own_files = {"chain.json"};
        if (auto refused = CheckChainOutWritable(o->out, w, "--out")) throw UsageError(refused->message);
        const bool tty = ::isatty(STDERR_FILENO);
        const auto start = std::chrono::steady_clock::now();
        auto last = start;
        auto progress = [&](const ChainGenStats& s) {
            if (o->no_progress || !(tty || ProgressForced())) return;
            const auto now = std::chrono::steady_clock::now();
            const bool final = s.height == g.blocks;
            if (!final && now - last < std::chrono::milliseconds(tty ? 200 : 2000)) return;
            last = now;
            std::fprintf(stderr, "%sgen-chain: height %d/%d  %.1f MB  %llu txs  %llu utxos  %.1f s%s", tty ? "\r" : "",
                         s.height, g.blocks, double(s.block_bytes) / 1e6, (unsigned long long)s.txs,
                         (unsigned long long)s.utxos, std::chrono::duration<double>(now - start).count(),
                         tty && !final ? "   " : "\n");
            std::fflush(stderr);
        };
        // chain.json describes a finished chain: the old one goes first, the new one comes last.
        const std::filesystem::path summary = std::filesystem::path(o->out) / "chain.json";
        std::error_code ec;
        std::filesystem::remove(summary, ec);
        SetInterruptNote((std::filesystem::path(o->out) / "blocks").string() + " holds an incomplete chain, marked so (" +
                         INCOMPLETE_BLOCKS_MARKER + "; replay refuses it): rerun gen-chain with the same options");
        auto r = WriteGeneratedChain(o->out, g, w, progress);
        SetInterruptNote(r ? (std::filesystem::path(o->out) / "blocks").string() + " holds the complete chain" : "");
        const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
        if (!r) throw std::runtime_error(r.error().message);

        if (r->stats.tip_time > int64_t(std::time(nullptr)) + 2 * 60 * 60) {
            PrintNote("warning: the tip is stamped more than 2 hours ahead of this clock; Bitcoin Core "
                      "rejects such blocks (time-too-new) until its clock catches up");
        }
        const nlohmann::json j = StatsJson(*r, *o, g, secs);
        {
            AtomicFile file(summary);
            std::ofstream f(file.Temp());
            f << j.dump(2) << "\n";
            f.close();
            if (!f) throw std::runtime_error("cannot write " + file.Temp().string());
            if (auto e = file.Commit()) throw std::runtime_error(e->message);
        }
        if (o->json) {
            PrintJsonResult(j);
            return;
        }
        const ChainGenStats& s = r->stats;
        std::printf("blocks        %d (tip %s)\n", s.height, s.tip.ToHex().c_str());
        std::printf("transactions  %llu (%llu fan-out, %llu consolidation, %llu ordinary, %llu with witness)\n",
                    (unsigned long long)s.txs, (unsigned long long)s.fanouts, (unsigned long long)s.consolidations,
                    (unsigned long long)s.ordinary, (unsigned long long)s.witness_txs);
        std::printf("bytes         %.1f MB of blocks, %.1f MB in %d blk file(s)%s\n", double(s.block_bytes) / 1e6,
                    double(r->file_bytes) / 1e6, r->files, o->xor_files ? " (xor)" : "");
        std::printf("utxos at tip  %llu\n", (unsigned long long)s.utxos);
        std::printf("max weight    %llu WU\n", (unsigned long long)s.max_block_weight);
        std::printf("time          %.2f s\n", secs);
    });
});

} // namespace
} // namespace ibdkit::cli

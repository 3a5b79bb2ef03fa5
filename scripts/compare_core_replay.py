#!/usr/bin/env python3
"""Same chain, same session: Bitcoin Core's -reindex-chainstate (its engine, py-bitcoinkernel) against
`ibdkit replay` over the very same block files, alternating runs so machine drift hits both alike.

What is timed, on both sides, is one job: rebuild the chainstate from block files already on disk.
- Core: the chain is imported once (untimed) into a Core datadir of its own (blk files with xor.dat,
  block index, undo data). Each round then creates a chainstate manager with the chainstate wiped
  (set_wipe_dbs(False, True)), its validation worker threads on, and `import_blocks([])` re-connects
  every block from Core's own block files with full validation — `-reindex-chainstate`. Timed: from
  creating the manager (loading the block index) to destroying it (the final flush). Core's kernel
  sizes its caches with its default (450 MiB, like -dbcache=450).
- ibdkit: `ibdkit replay --blocks-dir CORE_DATADIR/blocks` (Core's xor'd files) with --dbcache,
  --threads, --policy and --no-stats (Core's reindex computes no UTXO statistics; --with-stats adds
  ibdkit's final walk over the set to its side); timed: the whole process (scan, connect, flush).
Both must reach the same height and tip.

Scripts: on regtest Core's assumevalid is unset, so Core verifies every script and signature. With
--full-validation ibdkit does too (`--assumevalid 0`), and the comparison is like for like: both
verify every input, and that is checked on both sides (Core's log says "Enabling script
verification at block #1 ... assumevalid=0 (always verify)"; ibdkit's JSON has
`script_checks_from_height` at its first connected block). Without it ibdkit replays as it does by default on
regtest's null assumevalid — that is, it verifies scripts too; pass --ibdkit-assumevalid HASH for the
old scripts-skipped-on-one-side comparison, which is not like for like and must be quoted as such.

Usage: scripts/compare_core_replay.py BLOCKS_DIR [--ibdkit PATH] [--rounds N] [--policy NAME]
                                      [--threads N] [--core-threads N] [--dbcache MIB] [--chain regtest]
                                      [--with-stats] [--datadir DIR]

--datadir keeps Core's datadir in DIR: the first run imports into it, later runs only time the
rounds (an 8 GB chain's import takes about half an hour here).
"""
import argparse
import json
import os
import pathlib
import statistics
import subprocess
import sys
import tempfile
import time


def chain_type(pbk, name):
    return {"regtest": pbk.ChainType.REGTEST, "main": pbk.ChainType.MAINNET, "signet": pbk.ChainType.SIGNET}[name]


def core_import_once(pbk, blocks_dir, datadir, chain):
    """Core imports the files into a datadir of its own (untimed set-up)."""
    files = sorted(pathlib.Path(blocks_dir).glob("blk*.dat"))
    cm = pbk.load_chainman(datadir, chain_type(pbk, chain))
    cm.import_blocks(files)
    active = cm.get_active_chain()
    height = active.height
    del active
    del cm
    return height


def core_reindex_chainstate(pbk, datadir, chain, threads, log):
    """One timed -reindex-chainstate: wipe the chainstate, re-connect from Core's own block files.
    `log` collects the kernel's validation log lines of the round."""
    pbk.enable_log_category(pbk.LogCategory.VALIDATION)
    pbk.set_log_level_category(pbk.LogCategory.VALIDATION, pbk.LogLevel.INFO)
    conn = pbk.LoggingConnection(log.append)
    t0 = time.perf_counter()
    ctx = pbk.make_context(chain_type(pbk, chain))
    opts = pbk.ChainstateManagerOptions(ctx, str(datadir.absolute()), str((datadir / "blocks").absolute()))
    opts.set_wipe_dbs(False, True)
    opts.set_worker_threads_num(threads)
    cm = pbk.ChainstateManager(opts)
    cm.import_blocks([])
    active = cm.get_active_chain()
    height = active.height
    tip = bytes(active._get_by_height(height).block_hash)[::-1].hex()
    del active
    del cm  # flushes the chainstate: part of the job
    elapsed = time.perf_counter() - t0
    del conn
    return elapsed, height, tip


def core_script_mode(log):
    """What Core's log says about script verification: the first 'Enabling/Disabling script
    verification' line, or None."""
    for line in log:
        text = str(line)
        if "script verification at block" in text:
            return text.strip()
    return None


def ibdkit_replay(exe, blocks_dir, policy, threads, dbcache, with_stats, assumevalid):
    t0 = time.perf_counter()
    r = subprocess.run([exe, "replay", "-q", "--json", "--blocks-dir", str(blocks_dir), "--policy", policy,
                        "--threads", str(threads), "--dbcache", str(dbcache)] + ([] if with_stats else ["--no-stats"])
                       + ([] if assumevalid is None else ["--assumevalid", assumevalid]),
                       capture_output=True, text=True, check=True)
    wall = time.perf_counter() - t0
    j = json.loads(r.stdout)
    return wall, j["height"], j["bestblock"], j


def verified_all(j):
    """ibdkit checked scripts from its first connected block on."""
    first = j.get("script_checks_from_height")
    return first is not None and first <= max(1, j.get("start_height", 1))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("blocks_dir", help="block files to rebuild from (a generated chain's blocks/)")
    ap.add_argument("--ibdkit", default=str(pathlib.Path(__file__).resolve().parents[1] / "build/release/ibdkit"))
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--policy", default="hardened")
    ap.add_argument("--threads", type=int, default=0, help="ibdkit --threads (0: every core)")
    ap.add_argument("--core-threads", type=int, default=os.cpu_count() or 1,
                    help="Core's validation worker threads (default: every core)")
    ap.add_argument("--dbcache", type=int, default=450)
    ap.add_argument("--chain", default="regtest")
    ap.add_argument("--with-stats", action="store_true",
                    help="time ibdkit's final statistics walk too (work Core's reindex does not do)")
    ap.add_argument("--datadir", help="keep Core's datadir here and reuse it if already imported")
    ap.add_argument("--import-only", action="store_true", help="import into --datadir, time nothing")
    ap.add_argument("--full-validation", action="store_true",
                    help="ibdkit --assumevalid 0: both sides verify every script (like for like)")
    ap.add_argument("--ibdkit-assumevalid", help="ibdkit --assumevalid HASH (scripts skipped on ibdkit's side only)")
    a = ap.parse_args()
    import pbk

    with tempfile.TemporaryDirectory(prefix="ibdkit-core-") as d:
        datadir = pathlib.Path(a.datadir or d)
        marker = datadir / "ibdkit-imported"
        if marker.exists():
            print(f"core's datadir {datadir} was imported before ({marker.read_text().strip()})", flush=True)
        else:
            imported = core_import_once(pbk, a.blocks_dir, datadir, a.chain)
            marker.write_text(f"height {imported}\n")
            print(f"core imported the files once (height {imported}); rounds alternate core / ibdkit", flush=True)
        if a.import_only:
            return
        assumevalid = "0" if a.full_validation else a.ibdkit_assumevalid
        core_t, ours_t = [], []
        for i in range(a.rounds):
            log = []
            ct, ch, ctip = core_reindex_chainstate(pbk, datadir, a.chain, a.core_threads, log)
            core_mode = core_script_mode(log)
            ot, oh, otip, j = ibdkit_replay(a.ibdkit, datadir / "blocks", a.policy, a.threads, a.dbcache, a.with_stats,
                                            assumevalid)
            if (ch, ctip) != (oh, otip):
                sys.exit(f"tips differ: core {ch} {ctip} vs ibdkit {oh} {otip}")
            if i == 0:
                print(f"core's log: {core_mode or 'no script-verification line'}", flush=True)
                print(f"ibdkit: {j.get('script_checked_inputs', 0)} inputs script-checked, "
                      f"from height {j.get('script_checks_from_height')}", flush=True)
            if a.full_validation and (core_mode is None or "Enabling" not in core_mode or not verified_all(j)):
                sys.exit("--full-validation: one side did not verify every script (see the two lines above)")
            core_t.append(ct)
            ours_t.append(ot)
            print(f"round {i + 1}: core reindex-chainstate {ct:.2f} s, ibdkit replay {ot:.2f} s "
                  f"(connect loop {j['seconds']:.2f} s, {j['threads']} threads), ratio {ct / ot:.2f}x, height {oh}",
                  flush=True)
    mb = j["bytes"] / 1e6
    ratios = sorted(c / o for c, o in zip(core_t, ours_t))
    print(f"median: core {statistics.median(core_t):.2f} s, ibdkit {statistics.median(ours_t):.2f} s, "
          f"ratio {statistics.median(ratios):.2f}x [{ratios[0]:.2f}-{ratios[-1]:.2f}] "
          f"({mb:.0f} MB, {j['blocks_connected']} blocks, --dbcache {a.dbcache}, core threads {a.core_threads}, "
          f"ibdkit {'with' if a.with_stats else 'without'} its statistics walk; "
          f"{'both verified every script: like for like' if verified_all(j) else 'core verified scripts, ibdkit skipped some: not like for like'})")


if __name__ == "__main__":
    main()

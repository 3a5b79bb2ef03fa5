#!/usr/bin/env python3
"""SwiftSync against the classic replay, same datadir, same session (docs/benchmarks.md, docs/swiftsync.md).

    scripts/swiftsync_bench.py DATADIR [--ibdkit PATH] [--rounds 3] [--threads 2] [--dbcache 450]
                               [--scripts skip|all] [--outpoints]

DATADIR is a Bitcoin Core data directory with its rev files (Core's own, or one that
`scripts/compare_core_replay.py BLOCKS --datadir DIR --import-only` made with Core's engine). First,
untimed for the rounds: the hintsfile from Core's chainstate (`ibdkit hints --datadir`, timed on
its own beside one classic replay). Then, interleaved for `--rounds` rounds, each into a fresh
chainstate that is deleted afterwards, with `--no-stats` (the job ends when the chainstate is
written, as Core's -reindex-chainstate does):
  classic    ibdkit replay --datadir DATADIR
  coins      ibdkit replay --swiftsync HINTS --datadir DATADIR          (coins mode, every Core rule)
  outpoints  ibdkit replay --swiftsync HINTS --swiftsync-mode outpoints (with --outpoints)
`--scripts skip` gives every run --skip-scripts (the work below an assumevalid block); `all` gives
--assumevalid 0 (every script verified on both sides, checked from the runs' JSON). Prints wall
seconds (median, min-max), peak RSS, the ratio to classic, the last round's throughput per tenth
of the block bytes (for SwiftSync: of its check, before the chainstate is written), the hintsfile's
size per coin and per block, and the load average before and after.
"""
import argparse
import json
import os
import pathlib
import shutil
import statistics
import subprocess
import tempfile
import time


def run(cmd):
    t = time.perf_counter()
    r = subprocess.run([str(c) for c in cmd], capture_output=True, text=True)
    dt = time.perf_counter() - t
    if r.returncode != 0:
        raise SystemExit(f"failed ({r.returncode}): {' '.join(map(str, cmd))}\n{r.stderr}")
    return dt, json.loads(r.stdout) if r.stdout.strip().startswith("{") else {}


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("datadir")
    ap.add_argument("--ibdkit", default=str(pathlib.Path(__file__).resolve().parents[1] / "build/release/ibdkit"))
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--dbcache", type=int, default=450)
    ap.add_argument("--scripts", choices=("skip", "all"), default="skip")
    ap.add_argument("--outpoints", action="store_true", help="also time outpoints mode over the bare blocks")
    ap.add_argument("--network", default="regtest")
    ap.add_argument("--no-beside", action="store_true", help="time the hintsfile alone, without a classic replay beside it")
    a = ap.parse_args()

    ib = a.ibdkit
    work = pathlib.Path(tempfile.mkdtemp(prefix="ibdkit-swiftsync-bench-"))
    hints = work / "utxo.hints"
    common = ["--datadir", a.datadir, "--network", a.network, "--threads", a.threads, "--dbcache", a.dbcache, "--no-stats",
              "-q", "--json"]
    common += ["--skip-scripts"] if a.scripts == "skip" else ["--assumevalid", "0"]
    dd = pathlib.Path(a.datadir)
    blocks_dir = dd / "blocks" if (dd / "blocks").is_dir() else dd / a.network / "blocks"
    load0 = os.getloadavg()
    try:
        t_hints, _ = run([ib, "hints", "-q", "--datadir", a.datadir, "--network", a.network, "--threads", a.threads,
                          "--out", hints])
        t_classic0 = float("nan")
        if not a.no_beside:
            t_classic0, _ = run([ib, "replay", *common, "--chainstate", work / "cs0"])
            shutil.rmtree(work / "cs0", ignore_errors=True)
        kinds = {"classic": ["replay", *common], "coins": ["replay", "--swiftsync", hints, *common]}
        if a.outpoints:
            out = ["replay", "--swiftsync", hints, "--swiftsync-mode", "outpoints", "--blocks-dir", blocks_dir,
                   "--network", a.network, "--threads", a.threads, "--dbcache", a.dbcache, "--no-stats", "-q", "--json"]
            kinds["outpoints"] = out
        times = {k: [] for k in kinds}
        rss = {k: 0 for k in kinds}
        results = {}
        for _ in range(a.rounds):
            for k, cmd in kinds.items():
                cs = work / f"cs-{k}"
                dt, j = run([ib, *cmd, "--chainstate", cs])
                shutil.rmtree(cs, ignore_errors=True)
                times[k].append(dt)
                rss[k] = max(rss[k], j.get("peak_rss_bytes", 0))
                results[k] = j
        load1 = os.getloadavg()
        coins = results["coins"]["swiftsync"]
        assert coins["ok"], coins
        if a.scripts == "all":
            assert results["coins"]["script_checked_inputs"] == results["classic"]["script_checked_inputs"] > 0
        size = hints.stat().st_size
        base = statistics.median(times["classic"])
        print(f"chain: {coins['blocks']} blocks, {coins['inputs']} inputs, {coins['unspent']} coins at the tip; "
              f"scripts: {a.scripts}; --threads {a.threads} --dbcache {a.dbcache}")
        print(f"hintsfile: {size} bytes, {size / max(coins['unspent'], 1):.2f} bytes/coin, {size / max(coins['blocks'], 1):.1f} "
              f"bytes/block; built in {t_hints:.2f} s (one classic replay beside it: {t_classic0:.2f} s)")
        print(f"{'run':<10} {'median s':>9} {'min-max s':>15} {'peak RSS MiB':>13} {'classic/this':>13}")
        for k, ts in times.items():
            m = statistics.median(ts)
            print(f"{k:<10} {m:>9.2f} {min(ts):>7.2f}-{max(ts):<7.2f} {rss[k] / 2**20:>13.0f} {base / m:>12.2f}x")
        for k, j in results.items():  # the last round's throughput per tenth of the block bytes
            mb = [t["mb_per_s"] for t in j.get("throughput_by_decile", [])]
            if mb:
                print(f"{k:<10} MB/s per tenth (last round): {' '.join(f'{x:.0f}' for x in mb)}; "
                      f"slowest/fastest {min(mb) / max(mb):.2f}")
        print(f"load average before {load0[0]:.2f}, after {load1[0]:.2f}")
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()

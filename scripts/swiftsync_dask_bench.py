#!/usr/bin/env python3
"""SwiftSync on Dask against the in-process range check (docs/benchmarks.md, docs/swiftsync.md).

    build/venv/bin/python scripts/swiftsync_dask_bench.py BLOCKS HINTS [--rounds 3] [--ranges 8]

Runs, interleaved for `--rounds` rounds: `check_range(1..n, threads=2)` in this process, and
`run_dask` on a `distributed.LocalCluster(n_workers=2, processes=True, threads_per_worker=1)`
(started once, before the clock; the first Dask round is reported apart, as it locates the chain
and reads the hintsfile in each worker). Both with and without collecting the unspent coins.
Checks that every run gives the same verdict and unspent set, and prints a table of wall seconds
(the median of the rounds) with the machine's load average before and after.
"""
import argparse
import os
import statistics
import sys
import time


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("blocks")
    ap.add_argument("hints")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--ranges", type=int, default=8)
    a = ap.parse_args()

    import distributed
    from ibdkit import swiftsync

    staged = os.path.dirname(os.path.dirname(swiftsync.__file__))
    os.environ["PYTHONPATH"] = os.pathsep.join(p for p in (staged, os.environ.get("PYTHONPATH")) if p)
    load0 = os.getloadavg()
    cluster = distributed.LocalCluster(n_workers=2, processes=True, threads_per_worker=1, host="127.0.0.1",
                                       dashboard_address=":0", silence_logs=40)
    client = distributed.Client(cluster)
    hints = swiftsync.Hints(a.hints)
    n = hints.height
    times = {}
    reference = {}

    def record(name, seconds, verdict, stats):
        times.setdefault(name, []).append(seconds)
        key = "coins" if stats else "verdict"
        got = (verdict.ok, verdict.counts, verdict.supply_sat, stats)
        if reference.setdefault(key, got) != got:
            sys.exit(f"{name}: a different result")

    for r in range(a.rounds + 1):
        for coins in (False, True):
            suffix = " + coins" if coins else ""
            t = time.perf_counter()
            run = swiftsync.run_dask(client, a.blocks, hints, ranges=a.ranges, collect_unspent=coins)
            stats = run.unspent_stats()["hash_serialized_3"] if coins else None
            record(("dask, first round" if r == 0 else "dask") + suffix, time.perf_counter() - t, run.verdict, stats)
            if r == 0:
                continue
            t = time.perf_counter()
            p = swiftsync.check_range(a.blocks, hints, swiftsync.Salt.new(), 1, n, threads=2, collect_unspent=coins)
            stats = swiftsync.unspent_stats([p], height=n)["hash_serialized_3"] if coins else None
            v = swiftsync.combine([p], n, run.verdict.network)
            record("in-process, threads=2" + suffix, time.perf_counter() - t, v, stats)
    client.close()
    cluster.close()
    print(f"height {n}, {a.ranges} Dask ranges, {a.rounds} rounds; load average {load0[0]:.1f} before, "
          f"{os.getloadavg()[0]:.1f} after; verdict ok: {reference['verdict'][0]}")
    print(f"{'run':34} {'median s':>9} {'min s':>7}")
    for name, ts in times.items():
        print(f"{name:34} {statistics.median(ts):9.2f} {min(ts):7.2f}")


if __name__ == "__main__":
    main()

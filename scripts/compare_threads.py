#!/usr/bin/env python3
"""`ibdkit replay` of the same block files with different --threads, interleaved (1, N, 1, N, ...) so
machine drift hits every thread count alike. Prints each run and the median speed-up of every count
over --threads 1 (ratio of connect-loop wall times, and of whole-process wall times), and checks that
every run ends with the same UTXO hash.

Usage: scripts/compare_threads.py BLOCKS_DIR [--threads 1,2] [--rounds 3] [--dbcache 450]
                                  [--policy hardened] [--ibdkit PATH]
"""
import argparse
import json
import pathlib
import statistics
import subprocess
import sys
import time


def replay(exe, blocks, threads, dbcache, policy):
    t0 = time.perf_counter()
    r = subprocess.run([exe, "replay", "-q", "--json", "--blocks-dir", str(blocks), "--threads", str(threads),
                        "--dbcache", str(dbcache), "--policy", policy, "--skip-scripts"],  # the pipeline's threads, not scripts'
                       capture_output=True, text=True, check=True)
    return time.perf_counter() - t0, json.loads(r.stdout)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("blocks_dir")
    ap.add_argument("--threads", default="1,2")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--dbcache", type=int, default=450)
    ap.add_argument("--policy", default="hardened")
    ap.add_argument("--ibdkit", default=str(pathlib.Path(__file__).resolve().parents[1] / "build/release/ibdkit"))
    a = ap.parse_args()
    counts = [int(x) for x in a.threads.split(",")]
    runs = {n: [] for n in counts}
    hashes = set()
    for rnd in range(a.rounds):
        for n in counts:
            wall, j = replay(a.ibdkit, a.blocks_dir, n, a.dbcache, a.policy)
            runs[n].append((wall, j))
            hashes.add(j.get("hash_serialized_3"))
            print(f"round {rnd + 1} threads {n}: wall {wall:.2f} s, connect loop {j['seconds']:.2f} s, "
                  f"{j['mb_per_s']:.1f} MB/s, coins read from disk {j.get('coins_read_from_disk', 0)}, "
                  f"prefetched {j.get('coins_prefetched', 0)}, flushes {j['flushes']}", flush=True)
    if len(hashes) != 1:
        sys.exit(f"UTXO hashes differ between runs: {hashes}")
    base = counts[0]
    j = runs[base][0][1]
    print(f"\n{j['blocks_connected']} blocks, {j['bytes'] / 1e6:.0f} MB, --dbcache {a.dbcache}, hash {hashes.pop()}")
    for n in counts:
        loop = [runs[base][i][1]["seconds"] / runs[n][i][1]["seconds"] for i in range(a.rounds)]
        wall = [runs[base][i][0] / runs[n][i][0] for i in range(a.rounds)]
        print(f"threads {n}: connect loop {statistics.median(r[1]['seconds'] for r in runs[n]):.2f} s, "
              f"speed-up vs {base}: loop {statistics.median(loop):.2f}x [{min(loop):.2f}-{max(loop):.2f}], "
              f"process {statistics.median(wall):.2f}x [{min(wall):.2f}-{max(wall):.2f}]")


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""Same chain, same session: Bitcoin Core's engine (py-bitcoinkernel import_blocks, full validation)
against `ibdkit replay`, alternating runs so machine drift hits both alike.

Usage: scripts/compare_core_replay.py BLOCKS_DIR [--ibdkit PATH] [--rounds N] [--policy NAME]
Prints each run's wall time and the median ratio; checks both reach the same tip.
"""
import argparse
import json
import pathlib
import statistics
import subprocess
import sys
import tempfile
import time


def core_import(blocks_dir):
    import pbk

    files = sorted(pathlib.Path(blocks_dir).glob("blk*.dat"))
    with tempfile.TemporaryDirectory(prefix="ibdkit-core-") as d:
        t0 = time.perf_counter()
        cm = pbk.load_chainman(pathlib.Path(d), pbk.ChainType.REGTEST)
        status = cm.import_blocks(files)
        chain = cm.get_active_chain()
        height = chain.height
        tip = bytes(chain._get_by_height(height).block_hash)[::-1].hex()
        del chain
        del cm  # flushes the chainstate, part of the work
        return time.perf_counter() - t0, height, tip, status


def ibdkit_replay(exe, blocks_dir, policy):
    t0 = time.perf_counter()
    r = subprocess.run([exe, "replay", "-q", "--json", "--blocks-dir", str(blocks_dir), "--policy", policy],
                       capture_output=True, text=True, check=True)
    wall = time.perf_counter() - t0
    j = json.loads(r.stdout)
    return wall, j["height"], j["bestblock"], j


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("blocks_dir")
    ap.add_argument("--ibdkit", default=str(pathlib.Path(__file__).resolve().parents[1] / "build/release/ibdkit"))
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--policy", default="hardened")
    a = ap.parse_args()
    core_t, ours_t = [], []
    for i in range(a.rounds):
        ct, ch, ctip, status = core_import(a.blocks_dir)
        ot, oh, otip, j = ibdkit_replay(a.ibdkit, a.blocks_dir, a.policy)
        if (ch, ctip) != (oh, otip):
            sys.exit(f"tips differ: core {ch} {ctip} vs ibdkit {oh} {otip} (import status {status})")
        core_t.append(ct)
        ours_t.append(ot)
        print(f"round {i + 1}: core {ct:.2f} s, ibdkit {ot:.2f} s (connect loop {j['seconds']:.2f} s), "
              f"ratio {ct / ot:.2f}x, height {oh}", flush=True)
    mb = j["bytes"] / 1e6
    cm, om = statistics.median(core_t), statistics.median(ours_t)
    print(f"median: core {cm:.2f} s ({ch / cm:.0f} blocks/s, {mb / cm:.1f} MB/s), "
          f"ibdkit {om:.2f} s ({oh / om:.0f} blocks/s, {mb / om:.1f} MB/s): ibdkit is {cm / om:.2f}x faster")


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""Bitcoin Core's own initial block download against ibdkit's `sync`, classic and `--swiftsync`: the
same chain from the same `ibdkit serve` peer over loopback, side by side in one run
(docs/swiftsync.md, *Against Bitcoin Core's IBD*).

    python3 scripts/core_ibd_bench.py IBDKIT BITCOIND DATADIR [ROUNDS] [--dbcache MIB] [--threads N]

DATADIR is a Core datadir with its rev files, served read-only by one `ibdkit serve`. Every case
takes the chain's tip as its assumevalid block, so that Core's rule, on both sides, checks the
scripts of the blocks within two weeks of work of the tip and skips the rest; MIB of cache (Core's
-dbcache, default 450) and N threads (Core's -par=N: script checks on N threads, the validating one
among them; default 2). Timed: each whole process, start to exit, ROUNDS times interleaved
(default 1).
- Core: `bitcoind -regtest -connect=PEER -stopatheight=TIP` on an empty datadir: headers, blocks,
  every rule, and what a node keeps (blk and rev files, block index, chainstate), exiting after
  its last flush. Its hash_serialized_3 is asked over RPC after a restart, untimed.
- ibdkit: `sync --connect PEER --assumevalid TIP` (a chainstate), the same with `--swiftsync
  HINTS` (hints for the tip, made untimed), and that again with `--datadir` (a Core datadir beside
  the chainstate, as Core keeps one: the like-for-like job).
Prints each run, then each case's best as a ratio to Core's: seconds, peak RSS from the kernel
(/usr/bin/time), hash_serialized_3 (all must agree).
"""
import argparse
import json
import pathlib
import re
import signal
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
from check_live_bitcoind import Rpc, free_port  # noqa: E402  (a sibling script: one RPC client)


def timed(cmd, out=subprocess.PIPE):
    """Runs cmd under /usr/bin/time: (seconds, peak RSS in MiB, the process)."""
    t = time.time()
    r = subprocess.run(["/usr/bin/time", "-f", "%M", *map(str, cmd)], stdout=out, stderr=subprocess.PIPE, text=True,
                       timeout=4 * 3600)
    s = time.time() - t
    if r.returncode != 0:
        sys.exit(f"{cmd[0]} failed ({r.returncode}): {r.stderr[-2000:]}")
    return s, int(r.stderr.split()[-1]) // 1024, r


def core_ibd(bitcoind, node, peer_port, tip_height, dbcache, threads):
    """Core's IBD from the peer into the empty datadir `node`, to the tip; then its hash."""
    node.mkdir()
    common = ["-regtest", f"-datadir={node}", "-listen=0", "-dnsseed=0", "-fixedseeds=0", "-printtoconsole=0",
              f"-dbcache={dbcache}"]
    s, rss, _ = timed([bitcoind, *common, f"-connect=127.0.0.1:{peer_port}", "-server=0", f"-par={threads}",
                       f"-assumevalid={tip_height[0]}", f"-stopatheight={tip_height[1]}"], out=subprocess.DEVNULL)
    rpc_port = free_port()
    proc = subprocess.Popen([bitcoind, *common, "-connect=0", "-server=1", "-rpcbind=127.0.0.1",
                             "-rpcallowip=127.0.0.1", f"-rpcport={rpc_port}"], stdout=subprocess.DEVNULL)
    rpc = Rpc(str(node), rpc_port)
    try:
        height = rpc.wait_ready(proc, seconds=600)
        stats = rpc("gettxoutsetinfo", "hash_serialized_3", timeout=3600)
    finally:
        proc.send_signal(signal.SIGINT)
        proc.wait()
    if height != tip_height[1]:
        sys.exit(f"Core stopped at height {height}, not {tip_height[1]}")
    log = (node / "regtest" / "debug.log").read_text(errors="replace")
    # Core decides per block; it logs each change ("Enabling script verification at block #N ...").
    turns = re.findall(r"(Enabling|Disabling) script verification at block #(\d+)", log)
    return {"s": s, "rss_mib": rss, "hash": stats["hash_serialized_3"],
            "scripts": [", ".join(f"{'on' if on == 'Enabling' else 'off'} from {h}" for on, h in turns) or "?"]}


def ibdkit_sync(cli, args):
    s, rss, r = timed([cli, "sync", "--network", "regtest", "--json", "-q", *args])
    got = json.loads(r.stdout)
    return {"s": s, "rss_mib": rss, "hash": got.get("hash_serialized_3"),
            "scripts": [f"from height {got.get('script_checks_from_height')}"]}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("ibdkit", type=pathlib.Path)
    ap.add_argument("bitcoind", type=pathlib.Path)
    ap.add_argument("datadir", type=pathlib.Path)
    ap.add_argument("rounds", type=int, nargs="?", default=1)
    ap.add_argument("--dbcache", type=int, default=450)
    ap.add_argument("--threads", type=int, default=2)
    a = ap.parse_args()
    work = pathlib.Path(tempfile.mkdtemp(prefix="ibdkit-core-ibd-bench-"))
    hints = work / "tip.hints"
    made = json.loads(subprocess.run([a.ibdkit, "hints", "-q", "--json", "--datadir", a.datadir, "--out", hints],
                                     check=True, capture_output=True, text=True).stdout)
    tip = (made["tip"], made["height"])
    server = subprocess.Popen([a.ibdkit, "serve", "--datadir", a.datadir, "--listen", "127.0.0.1:0", "-q"],
                              stdout=subprocess.PIPE, text=True)
    port = int(server.stdout.readline().strip().rsplit(":", 1)[1])
    common = ["--connect", f"127.0.0.1:{port}", "--assumevalid", tip[0], "--dbcache", str(a.dbcache),
              "--threads", str(a.threads)]
    node = work / "node"
    cases = {
        "Bitcoin Core IBD (bitcoind)": lambda: core_ibd(a.bitcoind, node, port, tip, a.dbcache, a.threads),
        "ibdkit sync (classic)": lambda: ibdkit_sync(a.ibdkit, [*common, "--chainstate", work / "cs"]),
        "ibdkit sync --swiftsync": lambda: ibdkit_sync(a.ibdkit, [*common, "--chainstate", work / "cs", "--swiftsync", hints]),
        # The chainstate in the datadir's network folder, where bitcoind looks for it.
        "ibdkit sync --swiftsync --datadir": lambda: ibdkit_sync(a.ibdkit, [*common, "--swiftsync", hints, "--datadir", node]),
    }
    runs = {k: [] for k in cases}
    try:
        for _ in range(a.rounds):
            for name, run in cases.items():
                subprocess.run(["rm", "-rf", work / "cs", node], check=True)
                runs[name].append(run())
                print(name, runs[name][-1], flush=True)
    finally:
        server.send_signal(signal.SIGINT)
        server.wait()
        subprocess.run(["rm", "-rf", work])
    core = min(x["s"] for x in runs["Bitcoin Core IBD (bitcoind)"])
    hashes = {x["hash"] for v in runs.values() for x in v}
    for name, v in runs.items():
        best = min(x["s"] for x in v)
        print(f"{name:36s} {best:8.1f} s  {core / best:5.2f}x Core's IBD  peak RSS {max(x['rss_mib'] for x in v)} MiB  "
              f"scripts {v[0]['scripts'][0]}")
    print(f"tip {tip[0]} at height {tip[1]}; hash_serialized_3: {' / '.join(sorted(map(str, hashes)))}"
          + ("" if len(hashes) == 1 else "  DIFFERENT"))


if __name__ == "__main__":
    main()

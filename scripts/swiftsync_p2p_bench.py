#!/usr/bin/env python3
"""`sync --swiftsync` from `ibdkit serve` peers over loopback, against the classic `sync` from the
same peer and `replay --swiftsync` of the datadir itself (docs/swiftsync.md, *Speed over P2P*).

    python3 scripts/swiftsync_p2p_bench.py build/release/ibdkit DATADIR [ROUNDS] [--datadir-cost | --upload-rate R | --one-core] [-- EXTRA...]

DATADIR is a Core datadir with its rev files (e.g. one Core's engine wrote from a `gen-chain
--profile mainnet` chain); hints are made for its tip. The cases run interleaved, ROUNDS times
(default 2); EXTRA options (e.g. `--dbcache 16`) go to every case. Prints each run (seconds, peak
RSS from the kernel through /usr/bin/time, hash_serialized_3, bspent bytes) and the best of each
case as a ratio to the classic sync from one peer (the classic sync from two peers too). With --datadir-cost the cases are the classic sync and
`sync --swiftsync` (1 peer), each with and without `--datadir` (a Bitcoin Core data directory
written beside the chainstate): what writing the node's blocks, undo data and index costs. With
--upload-rate R the servers run with `--max-upload-rate R` (a link of R bytes/s each, e.g. 20M) and
the cases are the syncs from one peer and from two, each set against the time the busiest peer's
link needs for the bytes it carried (blocks and bspents, from the result's `peers`).
"""
import json
import pathlib
import signal
import subprocess
import sys
import tempfile
import time


def main():
    args = sys.argv[1:]
    extra = args[args.index("--") + 1:] if "--" in args else []
    args = args[:args.index("--")] if "--" in args else args
    datadir_cost = "--datadir-cost" in args
    args = [a for a in args if a != "--datadir-cost"]
    one_core = "--one-core" in args
    args = [a for a in args if a != "--one-core"]
    client = ["taskset", "-c", "0"] if one_core else []
    if one_core:
        extra = ["--threads", "1", *extra]
    rate = None
    if "--upload-rate" in args:
        i = args.index("--upload-rate")
        rate = args[i + 1]
        del args[i:i + 2]
    cli, dd = pathlib.Path(args[0]), pathlib.Path(args[1])
    rounds = int(args[2]) if len(args) > 2 else 2
    work = pathlib.Path(tempfile.mkdtemp(prefix="ibdkit-p2p-bench-"))
    hints = work / "tip.hints"
    subprocess.run([cli, "hints", "-q", "--datadir", dd, "--out", hints], check=True)
    servers = []
    for _ in range(2):
        capped = ["--max-upload-rate", rate] if rate else []
        p = subprocess.Popen([*(["taskset", "-c", "1"] if one_core else []), cli, "serve", "--datadir", dd, "--listen", "127.0.0.1:0", "-q", *capped], stdout=subprocess.PIPE, text=True)
        servers.append((p, int(p.stdout.readline().strip().rsplit(":", 1)[1])))
    peer = [a for _, port in servers for a in ("--connect", f"127.0.0.1:{port}")]
    swift = ["sync", "--network", "regtest", "--swiftsync", hints]
    cases = {
        "replay --swiftsync (its own rev files)": ["replay", "--swiftsync", hints, "--datadir", dd],
        "classic sync, 1 peer": ["sync", "--network", "regtest", *peer[:2]],
        "sync --swiftsync, 1 peer": [*swift, "--keep-recent", "0", *peer[:2]],
        "sync --swiftsync, 2 peers": [*swift, "--keep-recent", "0", *peer],
        "sync --swiftsync, 1 peer, --keep-recent 16": [*swift, "--keep-recent", "16", *peer[:2]],
        "classic sync, 2 peers": ["sync", "--network", "regtest", *peer],
    }
    node = work / "node"
    if datadir_cost:
        cases = {name + suffix: case + more for name, case in list(cases.items())[1:3]
                 for suffix, more in (("", []), (", --datadir", ["--datadir", node]))}
    if rate:
        cases = {name: case for name, case in cases.items() if "peer" in name and "keep-recent" not in name}
    if one_core:
        cases = {name: case for name, case in cases.items() if name.endswith(", 1 peer")}
    runs = {k: [] for k in cases}
    try:
        for _ in range(rounds):
            for name, case in cases.items():
                cs = work / "cs"
                subprocess.run(["rm", "-rf", cs, node], check=True)
                t = time.time()
                r = subprocess.run(["/usr/bin/time", "-f", "%M", *client, cli, *case, "--chainstate", cs, "--json", "-q", *extra],
                                   capture_output=True, text=True)
                if r.returncode != 0:
                    sys.exit(f"{name}: {r.stderr[-2000:]}")
                got = json.loads(r.stdout)
                runs[name].append({"s": time.time() - t, "rss_mib": int(r.stderr.split()[-1]) // 1024,
                                   "hash": got.get("hash_serialized_3"), "spent": got.get("spent_bytes"),
                                   "saved": got.get("spent_bytes_saved"),
                                   "carried": sum(q.get("block_bytes", 0) + q.get("spent_bytes", 0) for q in got.get("peers", [])),
                                   "busiest": max((q.get("block_bytes", 0) + q.get("spent_bytes", 0) for q in got.get("peers", [])), default=0)})
                print(name, runs[name][-1], flush=True)
    finally:
        for p, _ in servers:
            p.send_signal(signal.SIGINT)
            p.wait()
        subprocess.run(["rm", "-rf", work])
    if rate:
        report_against_link(runs, rate)
        return
    base = min(x["s"] for x in runs["classic sync, 1 peer"])
    for name, v in runs.items():
        best = min(x["s"] for x in v)
        if datadir_cost and name.endswith("--datadir"):
            without = min(x["s"] for x in runs[name[:-len(", --datadir")]])
            print(f"{name:45s} {best:7.2f} s  +{100 * (best / without - 1):.1f}% for the datadir  peak RSS "
                  f"{max(x['rss_mib'] for x in v)} MiB  hash {v[0]['hash']}")
            continue
        print(f"{name:45s} {best:7.2f} s  {base / best:5.2f}x the classic sync  peak RSS {max(x['rss_mib'] for x in v)} MiB  "
              f"hash {v[0]['hash']}  bspent {v[0]['spent']} (saved {v[0]['saved']})")


def report_against_link(runs, rate):
    """Each case's best time against the link's: the bytes it carried at the servers' cap. The
    classic sync's result has no `peers`: it carried the same blocks as SwiftSync without bspents."""
    per_s = float(rate[:-1]) * {"k": 1e3, "M": 1e6, "G": 1e9, "T": 1e12}[rate[-1]] if rate[-1] in "kMGT" else float(rate)
    blocks = next(x["carried"] - x["spent"] for v in runs.values() for x in v if x["spent"])
    for name, v in runs.items():
        best = min(v, key=lambda x: x["s"])
        carried = best["carried"] or blocks
        link = (best["busiest"] or carried) / per_s  # each peer has a link of its own
        print(f"{name:45s} {best['s']:7.2f} s  the link needs {link:6.2f} s for {carried / 1e6:.1f} MB at {rate}/s: "
              f"{100 * (best['s'] / link - 1):+.1f}%  peak RSS {max(x['rss_mib'] for x in v)} MiB  hash {best['hash']}")


if __name__ == "__main__":
    main()

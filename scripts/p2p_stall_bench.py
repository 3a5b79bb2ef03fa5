#!/usr/bin/env python3
"""The classic `sync` from two `ibdkit serve` peers over loopback, one of them holding back a block
(docs/sync.md, *From several peers*): what a peer that stalls the download costs the run.

    python3 scripts/p2p_stall_bench.py BLOCKS_DIR IBDKIT [IBDKIT ...] [--rounds N] [-- EXTRA...]

BLOCKS_DIR is a blocks directory (e.g. `gen-chain --profile mainnet --blocks 400 --target-mb 300`'s
OUT/blocks, larger than the 64 MiB of blocks the sync keeps ahead, so that the room fills). Each
binary syncs, interleaved with the others, N rounds (default 2): from two honest peers, and with the
first or the second peer a proxy that withholds the 50th block it is asked for (and only that one:
it forwards everything else and keeps its connection). EXTRA options go to every sync (default
`--dbcache 16 --timeout 30`). Prints each run's seconds, peak RSS from the kernel, hash_serialized_3
and why the withholding peer was dropped.
"""
import json
import os
import pathlib
import shutil
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent / "python" / "tests"))
from test_serve import Server  # noqa: E402
from test_sync_peers import instead_of_block  # noqa: E402
from test_sync_swiftsync import LyingProxy  # noqa: E402


def sync(cli, ports, chainstate, extra):
    args = [str(cli), "sync", "-q", "--json", "--network", "regtest", "--chainstate", str(chainstate), *extra]
    for p in ports:
        args += ["--connect", f"127.0.0.1:{p}"]
    t = time.monotonic()
    proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    out = proc.stdout.read()
    _, status, usage = os.wait4(proc.pid, 0)
    if os.waitstatus_to_exitcode(status) != 0:
        sys.exit(f"{cli} sync failed: {out[-2000:]}")
    return json.loads(out), time.monotonic() - t, usage.ru_maxrss / 1024


def main():
    args = sys.argv[1:]
    extra = args[args.index("--") + 1:] if "--" in args else ["--dbcache", "16", "--timeout", "30"]
    args = args[:args.index("--")] if "--" in args else args
    rounds = 2
    if "--rounds" in args:
        i = args.index("--rounds")
        rounds = int(args[i + 1])
        del args[i:i + 2]
    blocks, clis = pathlib.Path(args[0]), [pathlib.Path(a) for a in args[1:]]
    work = pathlib.Path(tempfile.mkdtemp(prefix="ibdkit-stall-bench-"))
    for r in range(rounds):
        for cli in clis:
            for case in ("two honest peers", "withholding peer first", "withholding peer second"):
                honest, upstream = Server(clis[-1], "--blocks-dir", blocks), Server(clis[-1], "--blocks-dir", blocks)
                liar = LyingProxy(upstream.port, instead_of_block(50, lambda block: None))
                ports = {"two honest peers": [honest.port, upstream.port], "withholding peer first": [liar.port, honest.port],
                         "withholding peer second": [honest.port, liar.port]}[case]
                try:
                    got, secs, rss = sync(cli, ports, work / "cs", extra)
                finally:
                    shutil.rmtree(work / "cs", ignore_errors=True)
                    liar.close()
                    honest.stop()
                    upstream.stop()
                why = [p["dropped"] for p in got["peers"] if p["address"] == f"127.0.0.1:{liar.port}"]
                print(f"round {r + 1} {cli}: {case}: {secs:.1f} s, peak RSS {rss:.0f} MiB, height {got['height']}, "
                      f"{got['hash_serialized_3'][:16]}{'; dropped: ' + why[0] if why and why[0] else ''}", flush=True)


if __name__ == "__main__":
    main()

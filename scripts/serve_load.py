#!/usr/bin/env python3
"""`ibdkit serve` under load, on a chain larger than the test's (docs/serve.md, *Under load*).

    python3 scripts/serve_load.py [--blocks-dir DIR | --target-mb 1000] [--ibdkit PATH]
                                  [--clients 64] [--junk 1000] [--max-peers 80]

The load of python/tests/test_serve_load.py (its `run_load`): one `ibdkit serve` of a blocks
directory, CLIENTS honest peers at once that each download the whole chain (handshake, getheaders
until done, getdata of every block, each block checked against its header, every byte against the
blk files, the tip against the files' last block), and, once they are all connected, JUNK
connections that send half a message and vanish. Without --blocks-dir it first generates
`gen-chain --profile mainnet --target-mb MB` into a temporary folder (removed afterwards). Prints
clients, blocks, bytes served, wall seconds, aggregate MB/s, the server's peak RSS (VmHWM) and its
open descriptors before, at the peak (sampled) and after. The clients are Python threads on the
same machine: on few cores they take much of the CPU the server would use.
"""
import argparse
import pathlib
import shutil
import subprocess
import sys
import tempfile
import time

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "python" / "tests"))
from test_serve_load import expected_chain, fd_bound, rss_bound_kib, run_load  # noqa: E402


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--blocks-dir", help="a generated chain's blocks directory (plain blk files, regtest)")
    ap.add_argument("--target-mb", type=float, default=1000, help="without --blocks-dir: the chain to generate (MB)")
    ap.add_argument("--ibdkit", default=str(ROOT / "build/release/ibdkit"))
    ap.add_argument("--clients", type=int, default=64)
    ap.add_argument("--junk", type=int, default=1000)
    ap.add_argument("--max-peers", type=int, default=80)
    a = ap.parse_args()

    work = None
    blocks = a.blocks_dir
    if not blocks:
        work = pathlib.Path(tempfile.mkdtemp(prefix="ibdkit-serve-load-"))
        t = time.monotonic()
        subprocess.run([a.ibdkit, "gen-chain", "--out", str(work / "g"), "--profile", "mainnet", "--target-mb", str(a.target_mb),
                        "--no-progress"], check=True, stdout=subprocess.DEVNULL)
        blocks = work / "g" / "blocks"
        print(f"gen-chain --profile mainnet --target-mb {a.target_mb:g}: {time.monotonic() - t:.0f} s")
    try:
        expected = expected_chain(blocks)
        files = len(list(pathlib.Path(blocks).glob("blk*.dat")))
        got = run_load(a.ibdkit, blocks, a.clients, a.junk, a.max_peers)
    finally:
        if work:
            shutil.rmtree(work, ignore_errors=True)
    bad = [(i, r) for i, r in enumerate(got["results"])
           if "error" in r or (r["tip"], r["digest"]) != (expected["tip"], expected["digest"])]
    c = got["counters"]
    sent = c["bytes_sent"]
    print(f"chain               {expected['height']} blocks in {files} blk files, largest block {expected['largest'] / 1e6:.2f} MB")
    print(f"clients             {a.clients} at once ({len(bad)} failed), ending on {expected['tip']}")
    print(f"half messages       {a.junk}: {got['junk']}; {c['refused']} refused (--max-peers {a.max_peers})")
    print(f"blocks served       {c['blocks_sent']}, {sent / 1e6:.1f} MB sent in all")
    print(f"wall                {got['wall']:.1f} s, {sent / 1e6 / got['wall']:.1f} MB/s together")
    print(f"server peak RSS     {got['peak_rss_kib'] / 1024:.1f} MiB (before the load {got['base_hwm_kib'] / 1024:.1f} MiB; "
          f"bound {rss_bound_kib(got['base_hwm_kib'], a.max_peers, a.clients, expected['largest']) / 1024:.0f} MiB)")
    print(f"server fds          {got['base_fds']} before, peak {got['peak_fds']} ({got['fd_samples']} samples; bound "
          f"{fd_bound(got['base_fds'], a.max_peers, a.clients)}), {got['fds_after']} after")
    print(f"server threads      {got['base_threads']} before, peak {got['peak_threads']}, {got['threads_after']} after")
    for i, r in bad[:5]:
        print(f"client {i}: {r.get('error') or 'another tip or other bytes'}")
    sys.exit(1 if bad or not got["settled"] else 0)


if __name__ == "__main__":
    main()

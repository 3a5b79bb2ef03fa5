#!/usr/bin/env python3
"""Reads the datadir of a real, running bitcoind while it imports a chain (docs/live-node.md).

The test suite's live node is Core's engine in another process (python/tests/test_live_datadir.py),
because CI has no bitcoind. This script does the same with a bitcoind binary, on regtest, bound to
the loopback address and listening to no peer:

1. bitcoind starts on an empty datadir and receives a generated chain (or `--chain DIR` of your own,
   unobfuscated blk files) block by block through `submitblock`, validating, storing and connecting
   each while it runs, holding its `.lock` and LevelDB's locks; `-dbcache` is small so that it
   flushes its chainstate and block index often.
2. While it imports, `ibdkit replay --datadir` and `ibdkit utxo stats --chainstate` read its datadir
   again and again. Each result must be the generated chain's at the height it reports (the UTXO
   hash of `ibdkit replay --blocks-dir CHAIN --stop-height H`), or a refusal that names a flush in
   progress. In every other round bitcoind is stopped (SIGSTOP) during the reads and every path's
   size, SHA-256, mtime and link count are compared before and after: with the writer frozen, any
   difference would be ibdkit's.
3. bitcoind must finish the import (getblockcount over RPC, cookie auth) and stay up throughout;
   after `stop`, ibdkit reads the chainstate in place and its hash must equal Core's own
   `gettxoutsetinfo` taken before the stop.

Usage: scripts/check_live_bitcoind.py --bitcoind PATH [--ibdkit build/release/ibdkit] [--chain DIR]
Exits 0 and prints a summary when every check holds; exits 1 at the first failure.
"""
import argparse
import base64
import hashlib
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request

NO_PROXY = urllib.request.build_opener(urllib.request.ProxyHandler({}))  # loopback only, whatever http_proxy says
FLUSH_REFUSAL = "flush in progress"
NOT_FLUSHED_YET = "holds no regtest genesis block yet"


def run_json(cmd):
    p = subprocess.run(cmd, capture_output=True, text=True)
    return p.returncode, (json.loads(p.stdout) if p.returncode == 0 and p.stdout.strip() else None), p.stderr


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Rpc:
    def __init__(self, datadir, port):
        self.cookie = os.path.join(datadir, "regtest", ".cookie")
        self.url = f"http://127.0.0.1:{port}/"

    def __call__(self, method, *params, timeout=600):
        auth = base64.b64encode(open(self.cookie, "rb").read().strip()).decode()
        body = json.dumps({"jsonrpc": "1.0", "id": 1, "method": method, "params": list(params)}).encode()
        req = urllib.request.Request(self.url, body, {"Authorization": "Basic " + auth})
        with NO_PROXY.open(req, timeout=timeout) as r:
            return json.loads(r.read())["result"]

    def wait_ready(self, proc, seconds=120):
        end = time.time() + seconds
        while time.time() < end:
            if proc.poll() is not None:
                sys.exit(f"bitcoind exited with {proc.returncode} before answering RPC")
            try:
                return self("getblockcount", timeout=5)
            except Exception:
                time.sleep(0.2)
        sys.exit("bitcoind did not answer RPC")


def blocks_of(blocks_dir):
    """Every block record of the blk files, in file order, as bytes (magic, size, block)."""
    for name in sorted(f for f in os.listdir(blocks_dir) if f.startswith("blk")):
        data = open(os.path.join(blocks_dir, name), "rb").read()
        pos = 0
        while pos + 8 <= len(data) and data[pos:pos + 4] != b"\0\0\0\0":
            size = int.from_bytes(data[pos + 4:pos + 8], "little")
            yield data[pos + 8:pos + 8 + size]
            pos += 8 + size


def feed(rpc, blocks_dir, pace, errors):
    """Submits every block after the genesis block, `pace` seconds apart."""
    try:
        for i, block in enumerate(blocks_of(blocks_dir)):
            if i == 0:
                continue
            verdict = rpc("submitblock", block.hex())
            if verdict is not None:
                errors.append(f"submitblock of record {i}: {verdict}")
                return
            time.sleep(pace)
    except Exception as e:  # the node went away: the main loop reports it
        errors.append(f"submitblock: {e}")


def fingerprint(root):
    """Every path below root: size, SHA-256, mtime and link count (directories: mtime only)."""
    out = {}
    for d, dirs, files in os.walk(root):
        out[d] = ("dir", os.stat(d).st_mtime_ns)
        for f in files:
            p = os.path.join(d, f)
            st = os.lstat(p)
            h = hashlib.sha256(open(p, "rb").read()).hexdigest() if os.path.isfile(p) else ""
            out[p] = (st.st_size, h, st.st_mtime_ns, st.st_nlink)
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--bitcoind", required=True)
    ap.add_argument("--ibdkit", default=os.path.join(os.path.dirname(__file__), "..", "build", "release", "ibdkit"))
    ap.add_argument("--chain", help="a generated chain's directory (CHAIN/blocks); default: gen-chain --preset default")
    ap.add_argument("--dbcache", type=int, default=4, help="bitcoind's -dbcache in MiB (small, and -maxmempool=5 so that the cache cannot borrow the mempool's\n"
                    "unused memory: frequent flushes)")
    ap.add_argument("--pace", type=float, default=0.005, help="seconds between two submitted blocks")
    ap.add_argument("--work", help="work directory (default: a temporary one, removed)")
    a = ap.parse_args()
    ibdkit = os.path.abspath(a.ibdkit)
    work = a.work or tempfile.mkdtemp(prefix="ibdkit-live-")
    chain = a.chain or os.path.join(work, "chain")
    if not a.chain:
        subprocess.run([ibdkit, "gen-chain", "--out", chain, "--start-time", "1700000000", "--no-progress"],
                       check=True, stdout=subprocess.DEVNULL)
    datadir = os.path.join(work, "node")
    os.makedirs(datadir, exist_ok=True)
    expected = {}

    def expected_hash(height):
        if height not in expected:
            rc, r, err = run_json([ibdkit, "replay", "--blocks-dir", os.path.join(chain, "blocks"), "--stop-height",
                                   str(height), "--json", "-q", "--policy", "plain"])
            if rc != 0:
                sys.exit(f"replay of the chain to {height} failed: {err}")
            expected[height] = r["hash_serialized_3"]
        return expected[height]

    port = free_port()
    args = [a.bitcoind, "-regtest", f"-datadir={datadir}", "-listen=0", "-connect=0", "-dnsseed=0", "-server=1",
            "-rpcbind=127.0.0.1", "-rpcallowip=127.0.0.1", f"-rpcport={port}", f"-dbcache={a.dbcache}", "-maxmempool=5",
            "-printtoconsole=0"]
    node = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    rpc = Rpc(datadir, port)
    tip = None
    counts = {"replay": 0, "stats": 0, "refused": 0, "frozen": 0, "heights": set()}
    try:
        rpc.wait_ready(node)
        feed_errors = []
        feeder = threading.Thread(target=feed, args=(rpc, os.path.join(chain, "blocks"), a.pace, feed_errors), daemon=True)
        feeder.start()
        rc, r, _ = run_json([ibdkit, "replay", "--blocks-dir", os.path.join(chain, "blocks"), "--json", "-q",
                             "--policy", "plain", "--no-stats"])
        chain_height = r["height"]
        round_no = 0
        while True:
            count = rpc("getblockcount")
            if feed_errors:
                raise SystemExit(feed_errors[0])
            done = count >= chain_height
            frozen = round_no % 2 == 1 and not done
            if frozen:
                node.send_signal(signal.SIGSTOP)
                time.sleep(0.2)
                before = fingerprint(datadir)
            rc, r, err = run_json([ibdkit, "replay", "--datadir", datadir, "--json", "-q", "--policy", "plain"])
            if rc != 0 and NOT_FLUSHED_YET in err and not counts["replay"]:
                if frozen:
                    node.send_signal(signal.SIGCONT)
                print(f"round {round_no}: node at {count}, its block index not written yet", flush=True)
                round_no += 1
                time.sleep(0.5)
                continue
            if rc != 0:
                raise SystemExit(f"replay --datadir failed beside bitcoind: {err}")
            h = r["height"]
            if r["live_snapshot_height"] != h:
                raise SystemExit(f"replay reported live_snapshot_height {r['live_snapshot_height']} at height {h}")
            if h > 0 and r["hash_serialized_3"] != expected_hash(h):
                raise SystemExit(f"replay --datadir at height {h}: UTXO hash differs from the chain's")
            counts["replay"] += 1
            counts["heights"].add(h)
            rc, s, err = run_json([ibdkit, "utxo", "stats", "--chainstate", os.path.join(datadir, "regtest", "chainstate"),
                                   "--json", "--no-progress"])
            if rc != 0:
                if FLUSH_REFUSAL not in err:
                    raise SystemExit(f"utxo stats beside bitcoind failed: {err}")
                counts["refused"] += 1
            elif s["height"] > 0:
                if s["hash_serialized_3"] != expected_hash(s["height"]):
                    raise SystemExit(f"utxo stats at height {s['height']}: UTXO hash differs from the chain's")
                counts["stats"] += 1
            if frozen:
                after = fingerprint(datadir)
                node.send_signal(signal.SIGCONT)
                if before != after:
                    diff = sorted(set(before.items()) ^ set(after.items()))
                    raise SystemExit(f"the frozen node's datadir changed during ibdkit's reads: {diff[:5]}")
                counts["frozen"] += 1
            print(f"round {round_no}: node at {count}, replay read height {h}"
                  f"{' (node frozen, datadir unchanged)' if frozen else ''}", flush=True)
            round_no += 1
            if node.poll() is not None:
                raise SystemExit(f"bitcoind exited ({node.returncode}) during the reads")
            if done:
                break
        core = rpc("gettxoutsetinfo")
        tip = core["height"]
        rpc("stop")
        node.wait(timeout=300)
        rc, s, err = run_json([ibdkit, "utxo", "stats", "--chainstate", os.path.join(datadir, "regtest", "chainstate"),
                               "--json", "--no-progress"])
        if rc != 0 or s["hash_serialized_3"] != core["hash_serialized_3"] or s["height"] != tip:
            raise SystemExit(f"after stop: ibdkit's stats {s} differ from Core's gettxoutsetinfo {core} ({err})")
        if core["hash_serialized_3"] != expected_hash(tip):
            raise SystemExit("Core's UTXO hash differs from ibdkit's replay of the chain")
    finally:
        if node.poll() is None:
            node.send_signal(signal.SIGCONT)
            node.terminate()
            node.wait(timeout=300)
        if not a.work:
            shutil.rmtree(work, ignore_errors=True)
    print(json.dumps({"tip": tip, "replays": counts["replay"], "distinct_heights": len(counts["heights"]),
                      "stats_read": counts["stats"], "stats_refused_mid_flush": counts["refused"],
                      "frozen_rounds_unchanged": counts["frozen"], "core_and_ibdkit_hash_at_tip": "equal"}))


if __name__ == "__main__":
    main()

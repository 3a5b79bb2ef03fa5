#!/usr/bin/env python3
"""Python-level benchmarks of the ibdkit package (docs/benchmarks.md, "Python package").

  1. every txid of a generated chain: ibdkit.read_blocks (tx.txid per transaction object, and
     Block.txids()) vs python-bitcoin-blockchain-parser (PyPI blockchain-parser) on the same files,
     interleaved in one session (the parser hard-codes mainnet's magic: it is patched to the
     chain's magic; files must not be XOR-obfuscated, which the parser does not support);
  2. Chainstate.to_arrow: coins per second over a chainstate (replayed from the chain if absent);
  3. with --datadir (a Core datadir of the same chain, e.g. compare_core_replay.py --import-only):
     blocks with their spent outputs from its rev files, each table to Arrow (one core) and to CSV
     through the CLI (MB of blocks per second, peak RSS), and the transactions table against the
     parser listing every transaction of the chain's blk files (it has no spent outputs, no fees).

Usage: PYTHONPATH=build/release/python build/venv/bin/python scripts/bench_python.py CHAIN_DIR \
           [--chainstate DIR] [--datadir CORE_DATADIR] [--rounds 3] [--skip-parser] [--only txids|arrow|spent]
(scripts/pydeps.sh --bench installs blockchain-parser and duckdb.)
"""
import argparse
import os
import platform
import statistics
import time

import ibdkit


def ibdkit_txids(blocks_dir, per_object):
    n = 0
    h = 0
    for block in ibdkit.read_blocks(blocks_dir):
        if per_object:
            for tx in block:
                h ^= hash(tx.txid)
                n += 1
        else:
            ids = block.txids()
            n += len(ids)
            h ^= hash(ids[-1])
    return n


def parser_txids(blocks_dir, magic):
    from blockchain_parser import blockchain as bp
    bp.BITCOIN_CONSTANT = magic
    n = 0
    h = 0
    for block in bp.Blockchain(blocks_dir).get_unordered_blocks():
        for tx in block.transactions:
            h ^= hash(tx.txid)
            n += 1
    return n


def spent_tables(datadir, cli, rounds, block_mb):
    """Each block table from a Core datadir's rev files: Arrow (CPU of this process) and CSV (the CLI)."""
    import subprocess
    import tempfile
    for table in ("transactions", "inputs", "outputs", "blocks"):
        cpu = []
        for _ in range(rounds):
            c = time.process_time()
            rows = sum(b.num_rows for b in ibdkit.read_blocks(datadir, spent_outputs=True).to_arrow(table))
            cpu.append(time.process_time() - c)
        med = statistics.median(cpu)
        print(f"to_arrow({table!r:14s}) {rows:>10d} rows  median {med:6.2f} s cpu  {block_mb / med:6.0f} MB of blocks/s"
              f"  (runs {', '.join(f'{t:.2f}' for t in cpu)})")
        with tempfile.TemporaryDirectory() as tmp:
            runs = []
            for _ in range(rounds):
                # GNU time reports the CLI's own peak RSS (a forked child's counts the parent's pages).
                out = os.path.join(tmp, "t.csv")
                t = time.perf_counter()
                r = subprocess.run(["/usr/bin/time", "-f", "%U %S %M", cli, "export", table, "--datadir", datadir,
                                    "--format", "csv", "--out", out, "--quiet"], check=True, capture_output=True, text=True)
                wall = time.perf_counter() - t
                user, sys_s, kb = r.stderr.strip().splitlines()[-1].split()
                runs.append((wall, float(user) + float(sys_s), int(kb)))
                size = os.path.getsize(out)
            wall = statistics.median(w for w, _, _ in runs)
            cpu_s = statistics.median(c for _, c, _ in runs)
            print(f"export {table:12s} --format csv  {size / 1e6:8.0f} MB of CSV  median {wall:6.2f} s wall {cpu_s:6.2f} s cpu"
                  f"  {block_mb / wall:6.0f} MB of blocks/s  peak RSS {max(k for _, _, k in runs) / 1024:.0f} MiB")


def timed(fn, *args):
    t = time.perf_counter()
    n = fn(*args)
    return n, time.perf_counter() - t


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("chain", help="blocks directory of a generated chain (no --xor)")
    ap.add_argument("--chainstate", help="chainstate for to_arrow (default: CHAIN/../chainstate, replayed if absent)")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--skip-parser", action="store_true")
    ap.add_argument("--datadir", help="a Core datadir of the same chain: blocks with spent outputs (part 3)")
    ap.add_argument("--cli", default=os.path.join(os.path.dirname(__file__), "..", "build", "release", "ibdkit"))
    ap.add_argument("--only", choices=["txids", "arrow", "spent"], help="run one of the parts")
    a = ap.parse_args()
    size = sum(os.path.getsize(os.path.join(a.chain, f)) for f in os.listdir(a.chain) if f.startswith("blk"))
    print(f"# {platform.node()} {platform.processor() or platform.machine()} python {platform.python_version()} "
          f"ibdkit {ibdkit.__version__}; chain {a.chain} ({size / 1e6:.0f} MB)")
    reader = ibdkit.read_blocks(a.chain)
    magic = {"regtest": b"\xfa\xbf\xb5\xda", "main": b"\xf9\xbe\xb4\xd9"}[reader.network]
    res = {"ibdkit tx.txid": [], "ibdkit Block.txids()": [], "blockchain-parser tx.txid": []}
    counts = {}
    if a.datadir and a.only in (None, "spent"):
        spent_tables(a.datadir, a.cli, a.rounds, size / 1e6)
    for r in range(a.rounds if a.only in (None, "txids") else 0):
        for name, fn, args in (("ibdkit tx.txid", ibdkit_txids, (a.chain, True)),
                               ("ibdkit Block.txids()", ibdkit_txids, (a.chain, False)),
                               ("blockchain-parser tx.txid", parser_txids, (a.chain, magic))):
            if a.skip_parser and name.startswith("blockchain"):
                continue
            if name.startswith("blockchain") and r > 0 and res[name] and res[name][0] > 120:
                continue  # one round of a slow peer is enough
            n, s = timed(fn, *args)
            counts.setdefault(name, n)
            assert counts[name] == n
            res[name].append(s)
    base = statistics.median(res["ibdkit tx.txid"]) if res["ibdkit tx.txid"] else 1.0
    for name, times in res.items():
        if not times:
            continue
        med = statistics.median(times)
        print(f"{name:28s} {counts[name]:>10d} txids  median {med:8.2f} s  {counts[name] / med / 1e6:6.2f} M txid/s"
              f"  ({med / base:5.1f}x ibdkit tx.txid; runs {', '.join(f'{t:.2f}' for t in times)})")
    if counts and len(set(counts.values())) != 1:
        print("WARNING: txid counts differ:", counts)

    if a.only in ("txids", "spent"):
        return
    cs_dir = a.chainstate or os.path.join(os.path.dirname(os.path.abspath(a.chain)), "chainstate")
    if not os.path.exists(os.path.join(cs_dir, "CURRENT")):
        r = ibdkit.replay(a.chain, chainstate=cs_dir, progress=False)
        print(f"replayed into {cs_dir}: {r['txouts']} coins in {r['total_seconds']:.1f} s")
    cs = ibdkit.Chainstate(cs_dir, network=reader.network)
    for batch_size in (65536,):
        times, cpu = [], []
        for _ in range(a.rounds):
            t, c = time.perf_counter(), time.process_time()
            rows = sum(b.num_rows for b in cs.to_arrow(batch_size=batch_size))
            times.append(time.perf_counter() - t)
            cpu.append(time.process_time() - c)
        med, cmed = statistics.median(times), statistics.median(cpu)
        print(f"Chainstate.to_arrow({batch_size}) {rows:>10d} coins  median {med:8.2f} s wall ({rows / med / 1e6:5.2f} M coins/s)"
              f"  {cmed:8.2f} s cpu ({rows / cmed / 1e6:5.2f} M coins/s)  (wall runs {', '.join(f'{t:.2f}' for t in times)})")
        t, c = time.perf_counter(), time.process_time()
        n = cs.stats("none")["txouts"]
        print(f"Chainstate.stats('none') (cursor alone) {n:>10d} coins  {time.perf_counter() - t:8.2f} s wall"
              f"  {time.process_time() - c:8.2f} s cpu")


if __name__ == "__main__":
    main()

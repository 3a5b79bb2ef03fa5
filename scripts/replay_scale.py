#!/usr/bin/env python3
"""ReplayScale: `ibdkit replay` on a chain whose UTXO set is far larger than the cache, every buffer
policy interleaved, at several --dbcache budgets — the seed's question (what does buffer hygiene
cost?) asked where chainstate reads go through DataStream<Policy> as in Core.

Per budget and policy it reports the connect loop's seconds (median of rounds), the ratio to `plain`
(median of the per-round ratios: rounds interleave the policies, every other round in reverse
order, so drift hits them alike), peak RSS (the child's own, from the kernel) against the budget +
200 MiB bound, coins read back from disk,
and throughput per tenth of the chain's bytes — the last tenth against the first, and, when
matplotlib is installed, a chart of MB/s against height (OUT/replay_scale.png). Replays run with
--no-stats (the run ends at its final flush). Results: OUT/replay_scale.json and a markdown table on
stdout. Long: an 8 GB chain takes 10-30 minutes per run on two cores.

The chain is made when DIR/blocks is missing: `ibdkit gen-chain --profile mainnet --target-mb MB`
(8000 MB: ~33 M coins at the tip; ~13 minutes).

With --core, Bitcoin Core's engine (py-bitcoinkernel) imports the chain once (untimed) and then
reindexes its chainstate from its own block files (`-reindex-chainstate`, see
scripts/compare_core_replay.py), once per round, beside ibdkit's `hardened` run at --dbcache 450
(Core's kernel uses its default 450 MiB cache). Core verifies every script there and ibdkit none:
not like for like.

Usage: scripts/replay_scale.py [--chain DIR] [--target-mb 8000] [--dbcache 100,450]
                               [--policies plain,zero-after-free,hardened] [--rounds 2] [--threads 0]
                               [--ibdkit PATH] [--out DIR] [--core]
"""
import argparse
import json
import pathlib
import statistics
import subprocess
import sys
import tempfile

ROOT = pathlib.Path(__file__).resolve().parents[1]


def replay(exe, blocks, dbcache, policy, threads):
    r = subprocess.run([exe, "replay", "-q", "--json", "--no-stats", "--blocks-dir", str(blocks),
                        "--dbcache", str(dbcache), "--policy", policy, "--threads", str(threads),
                        "--skip-scripts"],  # the buffer policies at scale, as IBD below assumevalid
                       capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit(f"replay failed ({policy}, --dbcache {dbcache}): {r.stderr.strip()}")
    return json.loads(r.stdout)


def ensure_chain(exe, chain, target_mb):
    blocks = chain / "blocks"
    if (blocks / "blk00000.dat").exists():
        return blocks
    print(f"making the chain: gen-chain --profile mainnet --target-mb {target_mb} --out {chain}", flush=True)
    subprocess.run([exe, "gen-chain", "--profile", "mainnet", "--target-mb", str(target_mb), "--out", str(chain),
                    "--no-progress"], check=True)
    return blocks


def chart(path, runs_by_cache):
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("(no chart: pip install matplotlib)")
        return
    fig, ax = plt.subplots(figsize=(8, 4.5))
    for dbcache, run in runs_by_cache.items():
        tenths = run["throughput_by_decile"]
        ax.plot([t["height_to"] for t in tenths], [t["mb_per_s"] for t in tenths], marker="o",
                label=f"--dbcache {dbcache} ({run['policy']})")
    ax.set_xlabel("height (end of each tenth of the chain's bytes)")
    ax.set_ylabel("MB/s of blocks connected")
    ax.set_title("ibdkit replay: throughput as the UTXO set grows")
    ax.grid(True, alpha=0.3)
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    print(f"chart: {path}")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--chain", default="/tmp/ibdkit-scale-chain", help="chain directory (DIR/blocks); made when missing")
    ap.add_argument("--target-mb", type=int, default=8000)
    ap.add_argument("--dbcache", default="100,450")
    ap.add_argument("--policies", default="plain,zero-after-free,hardened")
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--threads", type=int, default=0)
    ap.add_argument("--ibdkit", default=str(ROOT / "build/release/ibdkit"))
    ap.add_argument("--out", default=".")
    ap.add_argument("--core", action="store_true", help="also time Core's -reindex-chainstate (py-bitcoinkernel)")
    a = ap.parse_args()
    caches = [int(c) for c in a.dbcache.split(",")]
    policies = a.policies.split(",")
    if "plain" not in policies:
        policies.insert(0, "plain")
    out = pathlib.Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    blocks = ensure_chain(a.ibdkit, pathlib.Path(a.chain), a.target_mb)

    core = None
    if a.core:
        sys.path.insert(0, str(ROOT / "scripts"))
        import compare_core_replay as ccr
        import pbk
        core = {"pbk": pbk, "ccr": ccr, "dir": tempfile.TemporaryDirectory(prefix="ibdkit-scale-core-"), "times": []}
        core["datadir"] = pathlib.Path(core["dir"].name)
        h = ccr.core_import_once(pbk, blocks, core["datadir"], "regtest")
        print(f"core imported the chain once (height {h})", flush=True)

    results = {"chain": str(blocks), "rounds": a.rounds, "threads": a.threads, "runs": []}
    for dbcache in caches:
        for rnd in range(a.rounds):
            # Every other round in reverse order: a machine that speeds up or slows down over a
            # round then favours no policy by its place in the round.
            for policy in (policies if rnd % 2 == 0 else policies[::-1]):
                j = replay(a.ibdkit, blocks, dbcache, policy, a.threads)
                j.update({"dbcache": dbcache, "round": rnd, "policy": policy})
                results["runs"].append(j)
                print(f"--dbcache {dbcache} round {rnd + 1} {policy}: {j['seconds']:.1f} s, "
                      f"peak RSS {j['peak_rss_bytes'] >> 20} MiB, {j['coins_read_from_disk']:,} coins read from disk",
                      flush=True)
            if core and dbcache == 450:
                t, h, _ = core["ccr"].core_reindex_chainstate(core["pbk"], core["datadir"], "regtest", 2)
                core["times"].append(t)
                print(f"--dbcache 450 round {rnd + 1} core -reindex-chainstate: {t:.1f} s (height {h})", flush=True)

    print("\n| --dbcache | policy | connect loop (median) | vs plain (median [min-max]) | peak RSS (max) | bound | coins read from disk | last tenth / first |")
    print("|---|---|---:|---:|---:|---:|---:|---:|")
    summary, first_plain = [], {}
    for dbcache in caches:
        runs = [r for r in results["runs"] if r["dbcache"] == dbcache]
        plain = {r["round"]: r["seconds"] for r in runs if r["policy"] == "plain"}
        first_plain[dbcache] = next(r for r in runs if r["policy"] == "plain")
        for policy in policies:
            mine = [r for r in runs if r["policy"] == policy]
            ratios = sorted(r["seconds"] / plain[r["round"]] for r in mine)
            tenths = mine[0]["throughput_by_decile"]
            last_first = tenths[-1]["mb_per_s"] / tenths[0]["mb_per_s"] if tenths else float("nan")
            rss = max(r["peak_rss_bytes"] for r in mine) >> 20
            row = {"dbcache": dbcache, "policy": policy, "seconds": statistics.median(r["seconds"] for r in mine),
                   "ratio": statistics.median(ratios), "ratio_min": ratios[0], "ratio_max": ratios[-1],
                   "peak_rss_mib": rss, "bound_mib": dbcache + 200,
                   "coins_read_from_disk": mine[0]["coins_read_from_disk"], "last_tenth_over_first": last_first}
            summary.append(row)
            print(f"| {dbcache} | {policy} | {row['seconds']:.1f} s | {row['ratio']:.3f}x [{ratios[0]:.3f}-{ratios[-1]:.3f}] "
                  f"| {rss} MiB | {'<=' if rss <= dbcache + 200 else '>'} {dbcache + 200} MiB "
                  f"| {row['coins_read_from_disk']:,} | {last_first:.0%} |")
    results["summary"] = summary
    if core:
        hardened = [r["seconds"] for r in results["runs"] if r["dbcache"] == 450 and r["policy"] == "hardened"]
        results["core_reindex_seconds"] = core["times"]
        if hardened and core["times"]:
            print(f"\nCore -reindex-chainstate (450 MiB) median {statistics.median(core['times']):.1f} s vs ibdkit "
                  f"hardened --dbcache 450 {statistics.median(hardened):.1f} s: "
                  f"{statistics.median(core['times']) / statistics.median(hardened):.2f}x "
                  f"(core verified scripts, ibdkit did not: not like for like)")
        core["dir"].cleanup()
    (out / "replay_scale.json").write_text(json.dumps(results, indent=1))
    print(f"\nresults: {out / 'replay_scale.json'}")
    chart(out / "replay_scale.png", first_plain)


if __name__ == "__main__":
    main()

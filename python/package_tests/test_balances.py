"""Balances per script (`ibdkit utxo balances`, `Chainstate.balances`) of the generated chain,
recomputed here from the chain's own blocks."""
import csv
import json
import sqlite3
from collections import defaultdict

import pytest

from conftest import run_cli


@pytest.fixture(scope="module")
def by_hand(ibdkit, chain):
    """{script bytes: [coins, value]} of the unspent outputs, from the blocks alone."""
    unspent = {}
    for block in ibdkit.read_blocks(chain):
        if block.height == 0:
            continue  # the genesis coinbase never enters the UTXO set
        for tx in block.transactions:
            if not tx.is_coinbase:
                for i in tx.inputs:
                    del unspent[(i.prevout_txid, i.prevout_vout)]
            for n, o in enumerate(tx.outputs):
                s = bytes(o.script_pubkey)
                if s[:1] != b"\x6a" and len(s) <= 10000:  # Core's IsUnspendable
                    unspent[(tx.txid, n)] = (s, o.value, o)
    sums = defaultdict(lambda: [0, 0])
    outputs = {}
    for s, v, o in unspent.values():
        sums[s][0] += 1
        sums[s][1] += v
        outputs[s] = o
    return sums, outputs


def expected_rows(sums):
    return sorted(((s.hex(), c, v) for s, (c, v) in sums.items()), key=lambda r: (-r[2], bytes.fromhex(r[0])))


def test_rows_equal_the_blocks_and_totals_the_stats(ibdkit, cli_replay, by_hand):
    sums, outputs = by_hand
    cs = ibdkit.Chainstate(cli_replay[0], network="regtest")
    rows = cs.balances()
    assert [(r["script_pubkey"], r["coins"], r["value"]) for r in rows] == expected_rows(sums)
    stats = cs.stats("none")
    assert sum(r["coins"] for r in rows) == stats["txouts"]
    assert sum(r["value"] for r in rows) == stats["total_amount_sat"]
    # A few scripts by hand: the largest, one with several coins, one without an address.
    several = [r for r in rows if r["coins"] > 1]
    assert several, "the chain reuses no script"
    for r in (rows[0], several[len(several) // 2], rows[-1]):
        o = outputs[bytes.fromhex(r["script_pubkey"])]
        assert r["address"] == o.address
        assert r["script_type"] == o.script_type
        assert (r["coins"], r["value"]) == tuple(sums[bytes.fromhex(r["script_pubkey"])])
    assert cs.balances(top=3) == rows[:3]
    assert cs.balances(top=0) == []


def _read(path, fmt):
    if fmt == "csv":
        with open(path, newline="") as f:
            return [(r["script_pubkey"], r["address"] or None, r["script_type"], int(r["coins"]), int(r["value"]))
                    for r in csv.DictReader(f)]
    if fmt == "jsonl":
        with open(path) as f:
            return [(d["script_pubkey"], d["address"], d["script_type"], d["coins"], d["value"])
                    for d in map(json.loads, f)]
    con = sqlite3.connect(path)
    try:
        return [(bytes(s).hex(), a, t, c, v) for s, a, t, c, v in
                con.execute("SELECT script_pubkey, address, script_type, coins, value FROM balances ORDER BY rowid")]
    finally:
        con.close()


@pytest.mark.parametrize("fmt", ["csv", "jsonl", "sqlite"])
def test_cli_formats_reread(ibdkit, cli, cli_replay, fmt, tmp_path):
    cs = cli_replay[0]
    want = [tuple(r.values()) for r in ibdkit.Chainstate(cs, network="regtest").balances()]
    out = tmp_path / f"b.{fmt}"
    text = run_cli(cli, "utxo", "balances", "--chainstate", cs, "--network", "regtest", "--format", fmt,
                   "--out", out, "--no-progress")
    assert _read(out, fmt) == want
    assert f"coins              {cli_replay[1]['txouts']} (txouts {cli_replay[1]['txouts']})" in text
    top = tmp_path / f"top.{fmt}"
    run_cli(cli, "utxo", "balances", "--chainstate", cs, "--network", "regtest", "--format", fmt,
            "--out", top, "--top", "5", "--no-progress")
    assert _read(top, fmt) == want[:5]
    # Python writes the same file.
    py = tmp_path / f"py.{fmt}"
    summary = ibdkit.Chainstate(cs, network="regtest").balances(out=py)
    assert summary["rows"] == len(want) and summary["coins"] == summary["txouts"]
    assert _read(py, fmt) == want


def test_a_small_budget_gives_the_same_file(cli, cli_replay, tmp_path):
    cs = cli_replay[0]
    files = []
    for memory in ("64", "16K"):
        out = tmp_path / f"b{memory}.csv"
        text = run_cli(cli, "utxo", "balances", "--chainstate", cs, "--network", "regtest", "--out", out,
                       "--memory", memory, "--tmpdir", tmp_path, "--no-progress")
        runs = int(text.split("sort runs")[1].split()[0])
        assert (runs == 0) if memory == "64" else (runs > 3), text
        files.append(out.read_bytes())
    assert files[0] == files[1]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["b16K.csv", "b64.csv"]


def test_bad_arguments(ibdkit, cli_replay, tmp_path):
    cs = ibdkit.Chainstate(cli_replay[0], network="regtest")
    with pytest.raises(ibdkit.Error):
        cs.balances(out=tmp_path / "x.parquet")
    with pytest.raises(ibdkit.Error):
        cs.balances(memory=0)


def test_tmpdir_inside_a_core_datadir_is_refused(ibdkit, cli, cli_replay, tmp_path):
    """Regression: balances(tmpdir=) and `--tmpdir` made their sort's run files inside a Bitcoin Core
    data directory. The write guards refuse it before any work, and the folder is untouched."""
    core = tmp_path / "dd"
    (core / "regtest" / "blocks" / "index").mkdir(parents=True)
    (core / "bitcoin.conf").write_text("regtest=1\n")
    before = sorted((p.name, p.stat().st_mtime_ns) for p in core.rglob("*"))
    mtime = (core / "regtest").stat().st_mtime_ns
    cs = ibdkit.Chainstate(cli_replay[0], network="regtest")
    with pytest.raises(ibdkit.RefusedError, match="inside the Bitcoin Core data directory") as e:
        cs.balances(tmpdir=core / "regtest", memory=1)
    assert "give tmpdir a path outside it" in str(e.value)
    from ibdkit_cli import run_cli as run
    r = run(cli, "utxo", "balances", "--chainstate", cli_replay[0], "--network", "regtest", "--out", tmp_path / "b.csv",
            "--memory", "16K", "--tmpdir", core / "regtest", "-q", check=False)
    assert r.returncode == 64 and "give --tmpdir a path outside it" in r.stderr, r.stderr
    assert not (tmp_path / "b.csv").exists()
    assert sorted((p.name, p.stat().st_mtime_ns) for p in core.rglob("*")) == before
    assert (core / "regtest").stat().st_mtime_ns == mtime

"""`replay --height H --dump FORMAT --out FILE`: the UTXO set at a past height equals what `utxo dump`
(and `utxo snapshot`) write for a chainstate replayed with `--stop-height H`."""
import json
import re

import pytest

from conftest import run_cli

HEIGHT = 100


@pytest.fixture(scope="module")
def chain(cli, tmp_path_factory):
    """A generated regtest chain of 160 blocks with spends, and a chainstate stopped at HEIGHT."""
    d = tmp_path_factory.mktemp("height_export")
    run_cli(cli, "gen-chain", "--out", d / "chain", "--blocks", "160", "--target-mb", "3", "--seed", "3",
            "--start-time", "1700000000", "--no-progress")
    blocks = d / "chain" / "blocks"
    cs = d / "cs"
    r = json.loads(run_cli(cli, "replay", "-q", "--json", "--blocks-dir", blocks, "--chainstate", cs,
                           "--stop-height", HEIGHT).stdout)
    assert r["height"] == HEIGHT
    stats = json.loads(run_cli(cli, "utxo", "stats", "--chainstate", cs, "--json", "--no-progress").stdout)
    assert stats["hash_serialized_3"] == r["hash_serialized_3"]
    tip = json.loads(run_cli(cli, "replay", "-q", "--json", "--blocks-dir", blocks).stdout)
    assert tip["height"] == 160 and tip["hash_serialized_3"] != stats["hash_serialized_3"]
    return d, blocks, cs, stats


def summary(stderr):
    """(coins, hash_serialized_3) from the export's summary line on stderr."""
    m = re.search(r"wrote .*?: (\d+) coins.*verified .*?: (\d+) coins, [0-9.]+ BTC, hash_serialized_3 ([0-9a-f]{64}) "
                  r"equal to the chainstate's", stderr)
    assert m, stderr
    assert m.group(1) == m.group(2)
    return int(m.group(1)), m.group(3)


@pytest.mark.parametrize("fmt", ["csv", "jsonl", "sqlite"])
def test_replay_height_dump_equals_stop_height_chainstate_dump(cli, chain, fmt):
    d, blocks, cs, stats = chain
    ref = d / f"ref.{fmt}"
    r = run_cli(cli, "utxo", "dump", "--chainstate", cs, "--format", fmt, "--out", ref, "--network", "regtest")
    assert summary(r.stderr) == (stats["txouts"], stats["hash_serialized_3"])

    out = d / f"h.{fmt}"
    r = run_cli(cli, "replay", "-q", "--json", "--blocks-dir", blocks, "--height", HEIGHT, "--dump", fmt, "--out", out)
    assert json.loads(r.stdout)["height"] == HEIGHT
    assert summary(r.stderr) == (stats["txouts"], stats["hash_serialized_3"])
    if fmt != "sqlite":  # text exports are byte-identical; SQLite pages need not be
        assert out.read_bytes() == ref.read_bytes()


def test_replay_height_snapshot_equals_utxo_snapshot(cli, chain):
    d, blocks, cs, stats = chain
    ref = d / "ref.snapshot"
    r = run_cli(cli, "utxo", "snapshot", "--chainstate", cs, "--out", ref, "--network", "regtest", "--no-progress")
    assert f"txoutset_hash      {stats['hash_serialized_3']}" in r.stdout
    out = d / "h.snapshot"
    r = run_cli(cli, "replay", "-q", "--blocks-dir", blocks, "--height", HEIGHT, "--dump", "snapshot", "--out", out)
    assert f"coins_written      {stats['txouts']}" in r.stderr
    assert f"txoutset_hash      {stats['hash_serialized_3']}" in r.stderr
    assert out.read_bytes() == ref.read_bytes()


def test_replay_height_with_chainstate_stops_there(cli, chain):
    d, blocks, cs, stats = chain
    cs2 = d / "cs2"
    out = d / "cs2.csv"
    run_cli(cli, "replay", "-q", "--blocks-dir", blocks, "--chainstate", cs2, "--height", HEIGHT, "--dump", "csv",
            "--out", out)
    again = json.loads(run_cli(cli, "utxo", "stats", "--chainstate", cs2, "--json", "--no-progress").stdout)
    assert again["hash_serialized_3"] == stats["hash_serialized_3"]
    # A chainstate cannot go back: asking for an earlier height is refused and exports nothing.
    early = d / "early.csv"
    r = run_cli(cli, "replay", "-q", "--blocks-dir", blocks, "--chainstate", cs2, "--height", HEIGHT - 10, "--dump",
                "csv", "--out", early, check=False)
    assert r.returncode != 0 and "cannot go back" in r.stderr and not early.exists()


def test_replay_height_past_the_tip_exports_nothing(cli, chain):
    d, blocks, _, _ = chain
    out = d / "past.csv"
    r = run_cli(cli, "replay", "-q", "--blocks-dir", blocks, "--height", 500, "--dump", "csv", "--out", out,
                check=False)
    assert r.returncode != 0 and "stands at height 160" in r.stderr and not out.exists()


def test_height_options_help_and_validation(cli, tmp_path):
    for cmd in ("replay", "sync"):
        h = run_cli(cli, cmd, "--help").stdout
        assert "--height" in h and "--dump" in h and "--out" in h and "snapshot" in h
    r = run_cli(cli, "replay", "--blocks-dir", tmp_path, "--height", "5", check=False)
    assert r.returncode != 0 and "--dump" in r.stderr
    r = run_cli(cli, "replay", "--blocks-dir", tmp_path, "--height", "5", "--dump", "xml", "--out", tmp_path / "x",
                check=False)
    assert r.returncode != 0 and "xml" in r.stderr
    r = run_cli(cli, "replay", "--blocks-dir", tmp_path, "--height", "5", "--stop-height", "6", "--dump", "csv",
                "--out", tmp_path / "x", check=False)
    assert r.returncode != 0 and "--stop-height" in r.stderr

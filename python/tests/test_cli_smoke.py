"""The CLI answers --help and rejects unknown policies with a message that says what to do."""
from conftest import run_cli


def test_help(cli):
    out = run_cli(cli, "--help").stdout
    assert "bench" in out and "run" in out


def test_unknown_policy_is_explained(cli):
    r = run_cli(cli, "bench", "--policy", "nope", "--list", check=False)
    assert r.returncode != 0
    assert "unknown policy 'nope'" in r.stderr


def test_replay_no_stats_ends_at_the_flush(cli, shared, tmp_path):
    """--no-stats skips the final walk over the UTXO set (Core's -reindex-chainstate computes no
    statistics either) but still names the tip, and the chainstate it leaves is the same."""
    import json

    blocks = shared / "mainnet" / "blk_0-599"
    quick = json.loads(run_cli(cli, "replay", "-q", "--json", "--no-stats", "--blocks-dir", blocks,
                               "--chainstate", tmp_path / "cs").stdout)
    full = json.loads(run_cli(cli, "replay", "-q", "--json", "--blocks-dir", blocks).stdout)
    assert quick["height"] == full["height"] == 599
    assert quick["bestblock"] == full["bestblock"]
    assert "hash_serialized_3" not in quick and "txouts" not in quick
    st = json.loads(run_cli(cli, "utxo", "stats", "--chainstate", tmp_path / "cs", "--json").stdout)
    assert st["hash_serialized_3"] == full["hash_serialized_3"]
    human = run_cli(cli, "replay", "-q", "--no-stats", "--blocks-dir", blocks).stdout
    assert "statistics         skipped (--no-stats)" in human and "hash_serialized_3" not in human


def test_export_from_a_datadir_without_rev_files_says_what_to_do(cli, shared, tmp_path):
    """The README's data (Core v25's testnet3 blocks and block index) has no rev files: `export
    --datadir` says so and names the --blocks-dir to export from instead, which then works."""
    import shutil

    blocks = tmp_path / "dd" / "testnet3" / "blocks"
    shutil.copytree(shared / "testnet3" / "core_v25_0-121", blocks)
    out = tmp_path / "txs.csv"
    r = run_cli(cli, "export", "transactions", "--datadir", tmp_path / "dd", "--format", "csv", "--out", out, check=False)
    assert r.returncode == 1, r.stderr
    assert r.stderr.startswith("ibdkit: error: ") and len(r.stderr.splitlines()) == 1, r.stderr
    assert "holds no undo data (rev files)" in r.stderr and f"--blocks-dir {blocks}" in r.stderr, r.stderr
    assert not out.exists() and not list(tmp_path.glob("txs.csv*"))
    r = run_cli(cli, "export", "transactions", "--blocks-dir", blocks, "--format", "csv", "--out", out, "-q")
    assert r.stderr == "" and len(out.read_text().splitlines()) > 121


def test_one_default_buffer_policy(cli):
    """replay, sync and the utxo commands default to the same buffer policy, and so does Python."""
    import inspect
    import re

    from conftest import import_ibdkit

    for command in (["replay"], ["sync"], ["utxo", "stats"], ["utxo", "dump"]):
        text = run_cli(cli, *command, "--help").stdout
        m = re.search(r"--policy TEXT=([a-z-]+)", text)
        assert m and m.group(1) == "hardened", (command, text)
    ibdkit = import_ibdkit()
    for f in (ibdkit.replay, ibdkit.sync, ibdkit.Chainstate.__init__):
        assert inspect.signature(f).parameters["policy"].default == "hardened", f

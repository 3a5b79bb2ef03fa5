"""The settings every run shares, on the P2P paths, with one meaning and one rule (RunSettings,
CheckRunSettings) from the CLI and Python alike.

`--minimum-chain-work HEX` (Core's -minimumchainwork) and Python's `minimum_chain_work=`: one
rule on every P2P path. A peers' header chain with less work is not synced, from one peer, two or
four, by the classic sync and by SwiftSync; at exactly the chain's work the sync completes on Core's
UTXO set. The library once honoured the setting with one peer and took the network's value (0 on
regtest) with two or more (this test failed there: the runs with several peers synced).

On regtest every block's proof is 2 (nBits 0x207fffff: GetBlockProof = ~target / (target + 1) + 1),
so the chain to height h has 2 * (h + 1) of work.
"""
import json

import pytest

from conftest import import_ibdkit, run_cli
from test_sync_swiftsync import Peer, chain  # noqa: F401 (chain: the fixture)


def work_of(height):
    return 2 * (height + 1)


def peers_of(cli, datadir, count):
    return [Peer(cli, "--datadir", datadir) for _ in range(count)]


def sync_cli(cli, peers, minimum, *extra):
    args = ["sync", "-q", "--json", "--network", "regtest", "--timeout", "5", "--window", "4", "--assumevalid", "0",
            "--minimum-chain-work", minimum, *extra]
    for p in peers:
        args += ["--connect", f"127.0.0.1:{p.port}"]
    return run_cli(cli, *args, check=False)


def stopped(peers):
    for p in peers:
        p.stop()


@pytest.mark.parametrize("count", [1, 2, 4])
@pytest.mark.parametrize("swift", [False, True], ids=["classic", "swiftsync"])
def test_a_chain_below_the_minimum_work_is_refused_with_any_number_of_peers(cli, chain, tmp_path, count, swift):
    datadir, height, tip, stats, _, hints = chain
    above = hex(work_of(height) + 1)
    peers = peers_of(cli, datadir, count)
    try:
        extra = ["--swiftsync", hints] if swift else []
        got = sync_cli(cli, peers, above, "--chainstate", tmp_path / "cs", *extra)
    finally:
        stopped(peers)
    assert got.returncode == 1, (got.returncode, got.stderr)
    assert "has less work than the minimum chain work" in got.stderr, got.stderr
    assert f"{work_of(height) + 1:064x}" in got.stderr, got.stderr
    assert "--minimum-chain-work" in got.stderr, "the refusal names the setting"
    if got.stdout.strip():
        assert json.loads(got.stdout).get("blocks_connected", 0) == 0, got.stdout


@pytest.mark.parametrize("count", [1, 2])
@pytest.mark.parametrize("swift", [False, True], ids=["classic", "swiftsync"])
def test_a_chain_with_exactly_the_minimum_work_is_synced(cli, chain, tmp_path, count, swift):
    datadir, height, tip, stats, _, hints = chain
    peers = peers_of(cli, datadir, count)
    try:
        extra = ["--swiftsync", hints] if swift else []
        got = sync_cli(cli, peers, "0x" + f"{work_of(height):x}", "--chainstate", tmp_path / "cs", *extra)
    finally:
        stopped(peers)
    assert got.returncode == 0, got.stderr
    got = json.loads(got.stdout)
    assert (got["height"], got["bestblock"], got["hash_serialized_3"]) == (height, tip, stats["hash_serialized_3"])


def test_a_malformed_minimum_is_a_usage_error_in_the_libraries_words(cli, tmp_path):
    ibdkit = import_ibdkit()
    got = run_cli(cli, "sync", "--connect", "127.0.0.1:1", "--minimum-chain-work", "12zz", "--chainstate", tmp_path / "cs",
                  check=False)
    assert got.returncode == 64, got.stderr
    words = "minimum chain work must be a hex number of at most 64 digits, as Core's -minimumchainwork takes it, got '12zz'"
    assert words in got.stderr, got.stderr
    with pytest.raises(ibdkit.ArgumentError) as e:
        ibdkit.sync("127.0.0.1:1", minimum_chain_work="12zz", chainstate=tmp_path / "py")
    assert words in str(e.value) and e.value.kind == "InvalidArgument"
    assert not (tmp_path / "cs").exists() and not (tmp_path / "py").exists(), "refused before anything was written"


@pytest.mark.parametrize("peers", [1, 2])
def test_python_takes_the_same_minimum(cli, chain, tmp_path, peers):
    ibdkit = import_ibdkit()
    datadir, height, tip, stats, _, hints = chain
    servers = peers_of(cli, datadir, peers)
    connect = [f"127.0.0.1:{s.port}" for s in servers]
    try:
        with pytest.raises(ibdkit.Error) as e:
            ibdkit.sync(connect, network="regtest", chainstate=tmp_path / "below", timeout=5, assumevalid=0,
                        minimum_chain_work=hex(work_of(height) + 1), progress=False)
        assert "has less work than the minimum chain work" in str(e.value)
        with pytest.raises(ibdkit.Error) as e:
            ibdkit.sync(connect, network="regtest", swiftsync=hints, chainstate=tmp_path / "swift", timeout=5, assumevalid=0,
                        minimum_chain_work=hex(work_of(height) + 1), progress=False)
        assert "has less work than the minimum chain work" in str(e.value) and e.value.kind == "NotFound"
        got = ibdkit.sync(connect, network="regtest", chainstate=tmp_path / "at", timeout=5, assumevalid=0,
                          minimum_chain_work=hex(work_of(height)), progress=False)
        assert (got["height"], got["hash_serialized_3"]) == (height, stats["hash_serialized_3"])
    finally:
        stopped(servers)


def test_dbcache_zero_is_the_least_on_every_path(cli, chain, tmp_path):
    """`--dbcache 0` once meant a flush after every block to the classic sync, was refused by
    `sync --swiftsync` (after the datadir's skeleton was made) and raised to 1 MiB by Python: now
    the least the run can work with, everywhere."""
    ibdkit = import_ibdkit()
    datadir, height, tip, stats, _, hints = chain
    servers = peers_of(cli, datadir, 2)
    try:
        got = sync_cli(cli, servers, "0", "--swiftsync", hints, "--dbcache", "0", "--datadir", tmp_path / "dd")
        assert got.returncode == 0, got.stderr
        assert json.loads(got.stdout)["hash_serialized_3"] == stats["hash_serialized_3"]
        py = ibdkit.sync([f"127.0.0.1:{s.port}" for s in servers], network="regtest", swiftsync=hints, dbcache=0,
                         chainstate=tmp_path / "py", timeout=5, assumevalid=0, progress=False)
        assert py["hash_serialized_3"] == stats["hash_serialized_3"]
    finally:
        stopped(servers)


@pytest.mark.parametrize("swift", [False, True], ids=["classic", "swiftsync"])
def test_sync_skips_scripts_as_replay_does(cli, chain, tmp_path, swift):
    """`sync --skip-scripts` (and Python's skip_scripts=), as replay's: the data path alone, on the
    same UTXO set, not one input's scripts verified; beside an assumevalid hash it is refused in the
    library's words."""
    ibdkit = import_ibdkit()
    datadir, height, tip, stats, _, hints = chain
    servers = peers_of(cli, datadir, 2)
    extra = ["--swiftsync", hints] if swift else []
    try:
        args = ["sync", "-q", "--json", "--network", "regtest", "--timeout", "5", "--skip-scripts", *extra]
        for s in servers:
            args += ["--connect", f"127.0.0.1:{s.port}"]
        got = json.loads(run_cli(cli, *args).stdout)
        assert got["hash_serialized_3"] == stats["hash_serialized_3"]
        assert got["script_checked_inputs"] == 0, got
        refused = run_cli(cli, *args, "--assumevalid", "0", check=False)
        assert refused.returncode == 64 and "skip-scripts trusts every script: drop assumevalid" in refused.stderr
        with pytest.raises(ibdkit.ArgumentError, match="skip-scripts trusts every script: drop assumevalid"):
            ibdkit.sync([f"127.0.0.1:{s.port}" for s in servers], network="regtest", skip_scripts=True, assumevalid=0,
                        swiftsync=hints if swift else None)
        py = ibdkit.sync([f"127.0.0.1:{s.port}" for s in servers], network="regtest", skip_scripts=True, timeout=5,
                         swiftsync=hints if swift else None, progress=False)
        assert py["hash_serialized_3"] == stats["hash_serialized_3"]
    finally:
        stopped(servers)

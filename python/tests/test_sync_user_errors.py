"""`ibdkit sync` as a user meets it around the path that works: every mistake named with its cause
and its fix in one line, `--json` printing a failure object on every failure, nothing left behind
that blocks the corrected rerun (issue #79).

The peers are `ibdkit serve` over a datadir Core's engine wrote (the chain of test_sync_swiftsync.py).
Each test is named for what a user did wrong, and fails on the behaviour it replaces: hints of
another chain reported as an invalid chain (exit 2), no reachable peer blamed on the hintsfile, a
peer of another network reported as one that closed the connection, a stock-Core-only peer set
without the two ways out, an interrupt that waited for the whole range to be checked and written,
and a failed run's own leftovers refusing its rerun.
"""
import json
import os
import pty
import socket
import subprocess
import threading

import pytest

from conftest import import_ibdkit, run_cli
from test_serve import Server, message
from test_swiftsync_hints import hintsfile
from test_sync_swiftsync import Peer, assert_core_utxo_set, chain, swiftsync  # noqa: F401  (chain: a fixture)



def failure(r, code):
    """The --json failure object of a run that exited `code`: its error is what stderr said."""
    assert r.returncode == code, (r.returncode, r.stderr)
    got = json.loads(r.stdout)
    assert got["exit_code"] == code and got["error"] and got["error"].splitlines()[0] in r.stderr, (got, r.stderr)
    return got


def test_hints_for_another_chain_are_named_not_called_an_invalid_chain(cli, chain, tmp_path):
    """Regression: hints whose block 1 names outputs the peers' block 1 does not have (another
    chain's) ended in exit 2, a block rejected, with `swiftsync-hint-out-of-range`; the summary said
    "blocks 0.0 MB" beside peer lines that counted the blocks served."""
    datadir, _, _, _, n, _ = chain
    other = tmp_path / "other.hints"
    other.write_bytes(hintsfile([list(range(12))] + [[] for _ in range(n - 1)]))
    server = Peer(cli, "--datadir", datadir)
    try:
        r = swiftsync(cli, other, [server.port], "--chainstate", tmp_path / "cs", check=False)
        human = run_cli(cli, "sync", "--network", "regtest", "--swiftsync", other, "--connect", f"127.0.0.1:{server.port}",
                        "--timeout", "5", check=False)
    finally:
        server.stop()
    got = failure(r, 1)
    assert "the hints are for another chain: make them with `ibdkit hints` on a node of this chain" in r.stderr, r.stderr
    assert got["swiftsync"]["ok"] is False and "swiftsync-hint-out-of-range" in got["swiftsync"]["reason"], got
    assert not (tmp_path / "cs").exists() or not any((tmp_path / "cs").iterdir())
    # The refused block 1 was read: its bytes count, as the peer lines count the blocks served.
    assert 0 < got["bytes"] <= sum(p["block_bytes"] for p in got["peers"]), got
    assert human.returncode == 1, human.stderr
    summary = [line for line in human.stdout.splitlines() if line.startswith("bandwidth")]
    served = sum(float(line.split(", ")[1].split(" MB")[0]) for line in human.stdout.splitlines() if line.startswith("peer "))
    assert len(summary) == 1, human.stdout
    assert float(summary[0].split("blocks ")[1].split(" MB")[0]) == pytest.approx(served, abs=0.11), human.stdout


@pytest.mark.parametrize("swift", [False, True], ids=["classic", "swiftsync"])
def test_no_reachable_peer_is_named_and_leaves_nothing(cli, chain, tmp_path, swift):
    """Regression: with --swiftsync, no reachable peer was blamed on the hintsfile ("the peers'
    headers reach height 0"), --json printed nothing and --datadir kept eight files."""
    hints = chain[5]
    node = tmp_path / "node"
    empty = tmp_path / "empty"
    empty.mkdir()
    for where in (node, empty):
        r = run_cli(cli, "sync", "-q", "--json", "--network", "regtest", "--timeout", "5", "--connect", "127.0.0.1:1",
                    "--connect", "127.0.0.1:2", *(["--swiftsync", hints] if swift else []), "--datadir", where, check=False)
        got = failure(r, 1)
        assert "no peer could be reached (127.0.0.1:1: cannot connect to 127.0.0.1:1" in got["error"], got
        assert "give the address of a running regtest node" in got["error"], got
    assert not node.exists() and not any(empty.iterdir()), "a run that wrote nothing usable leaves nothing"
    # One peer: the classic sync's own connect (regression: the cause without the fix).
    one = run_cli(cli, "sync", "-q", "--json", "--network", "regtest", "--timeout", "5", "--connect", "127.0.0.1:1",
                  *(["--swiftsync", hints] if swift else []), check=False)
    got = failure(one, 1)
    assert "cannot connect to 127.0.0.1:1" in got["error"] and "give the address of a running regtest node" in got["error"], got


def test_a_peer_of_another_network_is_named_with_the_fix(cli, chain, tmp_path):
    """Regression: `--network main` against a regtest peer said "the peer closed the connection
    during the handshake"; with --swiftsync and testnet4 a minimum-chain-work refusal, no --json."""
    datadir, _, _, _, _, hints = chain
    server = Peer(cli, "--datadir", datadir)
    try:
        classic = run_cli(cli, "sync", "-q", "--json", "--network", "main", "--connect", f"127.0.0.1:{server.port}",
                          "--timeout", "5", check=False)
        swift = run_cli(cli, "sync", "-q", "--json", "--network", "testnet4", "--swiftsync", hints, "--timeout", "5",
                        "--connect", f"127.0.0.1:{server.port}", check=False)
    finally:
        server.stop()
    for r, given in ((classic, "main"), (swift, "testnet4")):
        got = failure(r, 1)
        assert f"the peer is a regtest node, not {given}" in got["error"] and "give --network regtest" in got["error"], got


def test_a_peer_that_answers_in_another_networks_magic_is_named(cli, tmp_path):
    """A peer that answers our version in its own network's magic (rather than closing the
    connection) is named by that magic."""
    listener = socket.create_server(("127.0.0.1", 0))
    port = listener.getsockname()[1]

    def answer():
        conn, _ = listener.accept()
        with conn:
            conn.recv(4096)
            conn.sendall(message("version", bytes(100)))  # regtest's magic
            conn.recv(4096)
    t = threading.Thread(target=answer, daemon=True)
    t.start()
    try:
        r = run_cli(cli, "sync", "-q", "--json", "--network", "main", "--connect", f"127.0.0.1:{port}", "--timeout", "5",
                    check=False)
    finally:
        listener.close()
    got = failure(r, 1)
    assert "the peer is a regtest node, not main (its messages carry that network's magic): give --network regtest" in got["error"], got


def test_serve_refuses_blocks_of_another_network(cli, chain):
    """Regression: `serve --blocks-dir <regtest blocks> --network main` listened and served height 0."""
    env = {k: v for k, v in os.environ.items() if k != "LD_PRELOAD"}  # as run_cli: the CLI links its own runtime
    try:
        r = subprocess.run([str(cli), "serve", "--blocks-dir", str(chain[0] / "regtest" / "blocks"), "--network", "main",
                            "--listen", "127.0.0.1:0"], capture_output=True, text=True, env=env, timeout=60)
    except subprocess.TimeoutExpired:
        pytest.fail("serve listened on blocks of another network instead of refusing them")
    assert r.returncode == 64, (r.returncode, r.stdout, r.stderr)
    assert "connects to the main genesis block: they are regtest blocks: give --network regtest" in r.stderr, r.stderr
    assert "listening" not in r.stdout


def test_stock_core_peers_for_swiftsync_name_both_ways_out(cli, chain, tmp_path):
    """Peers without BIP 455 (serve over a blocks directory, as stock Core): the error names the
    missing support and both fixes."""
    datadir, _, _, _, _, hints = chain
    server = Peer(cli, "--blocks-dir", datadir / "regtest" / "blocks")
    try:
        r = swiftsync(cli, hints, [server.port], check=False)
    finally:
        server.stop()
    got = failure(r, 1)
    for words in ("no peer serves spent coins (BIP 455)", "--swiftsync-mode outpoints", "drop --swiftsync"):
        assert words in got["error"], got


def test_an_interrupt_stops_the_check_of_blocks_that_have_arrived(cli, chain, tmp_path):
    """Regression: at the default --dbcache every block arrives ahead of the check, which took the
    ones that had arrived without looking at the interrupt: Ctrl-C waited until the whole range was
    checked and the chainstate written. The progress callback raises once the peer has had time to
    send every block; the run stops there, keeps no chainstate, and the same call completes."""
    ibdkit = import_ibdkit()
    datadir, height, tip, stats, n, hints = chain
    server = Server(cli, "--datadir", datadir)  # no link latency: the blocks arrive at once
    cs = tmp_path / "cs"
    seen = []

    def interrupt(progress):
        seen.append(progress)
        threading.Event().wait(2.0)  # every block of the range arrives meanwhile
        raise KeyboardInterrupt

    try:
        with pytest.raises(KeyboardInterrupt):
            ibdkit.sync([f"127.0.0.1:{server.port}"], swiftsync=hints, chainstate=cs, assumevalid=0, threads=1, progress=interrupt)
        assert len(seen) == 1
        assert not cs.exists() or (cs / "IBDKIT_UNFINISHED").exists() or not any(cs.iterdir()), "nothing claimed"
        got = ibdkit.sync([f"127.0.0.1:{server.port}"], swiftsync=hints, chainstate=cs, assumevalid=0, progress=False)
        assert_core_utxo_set(got, height, tip, stats)
    finally:
        server.stop()


def test_the_progress_line_follows_the_check_and_then_the_write(cli, chain, tmp_path):
    """On a terminal SwiftSync's line shows the check (rate, peers, ETA), then the write of the
    accepted coins into the chainstate, which on mainnet takes minutes: regression, the line stopped
    at the last block checked while the coins were written."""
    datadir, height, tip, stats, n, hints = chain
    server = Peer(cli, "--datadir", datadir)
    master, terminal = pty.openpty()
    try:
        env = {k: v for k, v in os.environ.items() if k != "LD_PRELOAD"}  # as run_cli: the CLI links its own runtime
        proc = subprocess.Popen([str(cli), "sync", "--network", "regtest", "--swiftsync", str(hints), "--connect",
                                 f"127.0.0.1:{server.port}", "--timeout", "5", "--assumevalid", "0", "--chainstate",
                                 str(tmp_path / "cs")], stdout=subprocess.PIPE, stderr=terminal, env=env)
        os.close(terminal)
        shown = b""
        while True:
            try:
                part = os.read(master, 65536)
            except OSError:  # EIO: the CLI closed the terminal
                break
            if not part:
                break
            shown += part
        out, _ = proc.communicate(timeout=120)
    finally:
        os.close(master)
        server.stop()
    text = shown.decode(errors="replace")
    assert proc.returncode == 0, text
    assert f"swiftsync: height {n}/{n}" in text and "blk/s" in text and "peers 1" in text, text
    written = [t.split("writing the chainstate: ")[1].split(" coins")[0] for t in text.split("\r") if "writing the chainstate: " in t]
    assert written and written[0].startswith("0/") and written[-1].split("/")[0] == written[-1].split("/")[1], written
    assert int(written[-1].split("/")[0]) > 0, written


def test_a_run_on_the_wrong_network_leaves_no_obstacle_to_the_corrected_one(cli, chain, tmp_path):
    """Regression: `sync --network signet --datadir W` against a regtest peer left W/signet, and the
    corrected `--network regtest` was refused ("holds other files") until the user removed it."""
    datadir, height, tip, stats, _, _ = chain
    node = tmp_path / "node"
    server = Peer(cli, "--datadir", datadir)
    try:
        wrong = run_cli(cli, "sync", "-q", "--network", "signet", "--connect", f"127.0.0.1:{server.port}", "--timeout", "5",
                        "--datadir", node, check=False)
        assert wrong.returncode == 1 and "give --network regtest" in wrong.stderr, wrong.stderr
        assert not node.exists(), "a run that connected no block leaves nothing"
        right = run_cli(cli, "sync", "-q", "--json", "--network", "regtest", "--connect", f"127.0.0.1:{server.port}",
                        "--timeout", "5", "--assumevalid", "0", "--datadir", node, check=False)
    finally:
        server.stop()
    assert right.returncode == 0, right.stderr
    got = json.loads(right.stdout)
    assert (got["height"], got["bestblock"], got["hash_serialized_3"]) == (height, tip, stats["hash_serialized_3"])

"""`ibdkit sync --connect A --connect B ...` without --swiftsync: the classic engine fed by several
peers at once (stock Bitcoin Core peers serve it: no BIP 455 needed).

Every run ends on the UTXO set of the blocks Core's engine connected (a datadir it wrote, served by
`ibdkit serve`), with every script verified (`--assumevalid 0`) and the blocks spread over the
peers; a peer that vanishes mid-window, withholds a block, answers `notfound` or frames a message
wrongly loses its heights to the others and is named with what it did; with no peer left the run
stops cleanly, keeps what it connected, and the same command resumes it; the result can be a
Bitcoin Core data directory (--datadir) that replays to the same set. A block that is mutated or
does not decode is its sender's fault, never the block's (Core's BLOCK_MUTATED): the sender is
dropped and the others serve that block; with no other peer the run stops as for a misbehaving
peer (exit 1), the block is not called invalid, and a rerun from an honest peer completes.
"""
import json
import struct

import pytest

from chain_model import compact_size, sha256d
from conftest import import_ibdkit, run_cli
from test_replay_datadir import FIELDS
from test_serve import REGTEST_MAGIC, Server, message
from test_sync_swiftsync import LyingProxy, chain, gone_after, mutated_block  # noqa: F401 (chain: the fixture)


def sync(cli, ports, *extra, check=True, timeout=5):
    args = ["sync", "-q", "--json", "--network", "regtest", "--timeout", str(timeout), "--window", "4", "--assumevalid", "0",
            *extra]
    for p in ports:
        args += ["--connect", f"127.0.0.1:{p}"]
    return run_cli(cli, *args, check=check)


def sync_from_servers(cli, datadir, peers, *extra):
    """The sync's JSON from `peers` fresh `serve` peers of the datadir, and each server's counters."""
    servers = [Server(cli, "--datadir", datadir) for _ in range(peers)]
    try:
        got = json.loads(sync(cli, [s.port for s in servers], *extra).stdout)
    finally:
        counters = [s.stop()[0] for s in servers]
    return got, counters, [f"127.0.0.1:{s.port}" for s in servers]


def assert_core_utxo_set(got, height, tip, stats):
    assert (got["height"], got["bestblock"]) == (height, tip), got
    for k in FIELDS:
        assert got[k] == stats[k], k


@pytest.mark.parametrize("peers", [2, 3])
def test_classic_sync_from_several_peers_ends_on_cores_utxo_set(cli, chain, tmp_path, peers):
    datadir, height, tip, stats, _, _ = chain
    got, counters, addresses = sync_from_servers(cli, datadir, peers, "--chainstate", tmp_path / "cs")
    assert_core_utxo_set(got, height, tip, stats)
    assert got["blocks_connected"] == height and got["header_height"] == height
    assert got["script_checked_inputs"] > 0 and got["script_checks_from_height"] == 1
    assert [p["address"] for p in got["peers"]] == addresses
    assert all(p["dropped"] is None and p["spent_bytes"] == 0 for p in got["peers"]), got["peers"]
    assert sum(p["blocks"] for p in got["peers"]) == height
    assert sum(1 for p in got["peers"] if p["blocks"]) > 1, "the blocks were spread over the peers"
    assert sum(c["bspent_sent"] for c in counters) == 0, "no spent coins were asked for"
    # The same command again has nothing left to do.
    again, _, _ = sync_from_servers(cli, datadir, 2, "--chainstate", tmp_path / "cs")
    assert again["blocks_connected"] == 0 and again["hash_serialized_3"] == stats["hash_serialized_3"]


def test_a_peer_that_vanishes_loses_its_blocks_to_the_others(cli, chain, tmp_path):
    datadir, height, tip, stats, _, _ = chain
    honest, upstream = Server(cli, "--datadir", datadir), Server(cli, "--datadir", datadir)
    dying = LyingProxy(upstream.port, gone_after(3))  # inside its first window of 4
    try:
        got = json.loads(sync(cli, [dying.port, honest.port], "--chainstate", tmp_path / "cs").stdout)
    finally:
        dying.close()
        honest.stop()
        upstream.stop()
    assert_core_utxo_set(got, height, tip, stats)
    first, last = got["peers"]
    assert first["dropped"] and first["blocks"] <= 3 and last["dropped"] is None, got["peers"]


def instead_of_block(nth, sent):
    """A peer that sends `sent(block)` (as LyingProxy's lies: None for nothing) in place of the nth
    block it is asked for, and never that block: it forwards everything else, pings and their
    answers too, and keeps its connection until the client closes it."""
    seen = {"blocks": 0, "hash": None}

    def lie(command, payload):
        if command != "block":
            return payload
        seen["blocks"] += 1
        if seen["blocks"] == nth:
            seen["hash"] = sha256d(payload[:80])
            return sent(payload)
        return None if sha256d(payload[:80]) == seen["hash"] else payload
    return lie


def bad_checksum(block):
    m = message("block", block)
    return [m[:20] + bytes(b ^ 0xFF for b in m[20:24]) + m[24:]]


MSG_WITNESS_BLOCK = 0x40000002
# What a peer sends in place of a block mid-sync, and the words its `dropped` reason must hold. A
# message with a bad checksum is skipped unread, as Core skips it: the peer has then stalled.
MISBEHAVIOURS = {
    "withheld block": (lambda block: None, "stalled: nothing asked for within 1.5 s"),
    "bad checksum": (bad_checksum, "stalled: nothing asked for within 1.5 s; 1 of its messages skipped for a bad checksum"),
    "oversize length": (lambda block: [REGTEST_MAGIC + b"block".ljust(12, b"\0") + struct.pack("<I", 4_000_001) + bytes(4)],
                        "exceeds the limit"),
    "wrong magic": (lambda block: [message("block", block, magic=bytes.fromhex("f9beb4d9"))], "wrong network magic"),
    "notfound": (lambda block: [("notfound", compact_size(1) + struct.pack("<I", MSG_WITNESS_BLOCK) + sha256d(block[:80]))],
                 "notfound"),
}
NTH = 6  # mid-way through the peer's second window of 4


@pytest.mark.parametrize("name", sorted(MISBEHAVIOURS))
def test_a_peer_that_misbehaves_mid_sync_is_dropped_and_the_other_serves_the_rest(cli, chain, tmp_path, name):
    """The peer is dropped, with a reason that says what it did; the height it did not give and the
    rest of its heights come from the other peer, and the run ends on Core's UTXO set."""
    datadir, height, tip, stats, _, _ = chain
    sent, words = MISBEHAVIOURS[name]
    honest, upstream = Server(cli, "--datadir", datadir), Server(cli, "--datadir", datadir)
    liar = LyingProxy(upstream.port, instead_of_block(NTH, sent))
    try:
        got = json.loads(sync(cli, [liar.port, honest.port], "--chainstate", tmp_path / "cs", timeout=1.5).stdout)
    finally:
        liar.close()
        honest.stop()
        upstream.stop()
    assert_core_utxo_set(got, height, tip, stats)
    assert liar.lies == 1 and got["failure"] is None, (liar.lies, got["failure"])
    lying, fair = got["peers"]
    assert lying["address"] == f"127.0.0.1:{liar.port}" and lying["dropped"] and words in lying["dropped"], got["peers"]
    assert lying["blocks"] >= NTH - 1 and fair["dropped"] is None, got["peers"]
    assert sum(p["blocks"] for p in got["peers"]) == height


def test_with_no_peer_left_the_run_keeps_what_it_connected_and_resumes(cli, chain, tmp_path):
    """Both peers vanish after some blocks: exit 1 with the reason, the chainstate flushed at the
    last block connected (a whole UTXO set), and the same command with a live peer completes."""
    datadir, height, tip, stats, _, _ = chain
    upstream = Server(cli, "--datadir", datadir)
    dying = [LyingProxy(upstream.port, gone_after(40)) for _ in range(2)]
    try:
        r = sync(cli, [d.port for d in dying], "--chainstate", tmp_path / "cs", check=False)
    finally:
        for d in dying:
            d.close()
    assert r.returncode == 1, (r.returncode, r.stderr)
    assert "no peer is left" in r.stderr, r.stderr
    kept = json.loads(r.stdout)
    assert 0 < kept["height"] < height, kept["height"]
    assert kept["failure"], kept
    try:
        got = json.loads(sync(cli, [upstream.port], "--chainstate", tmp_path / "cs").stdout)
    finally:
        upstream.stop()
    assert_core_utxo_set(got, height, tip, stats)
    assert got["start_height"] == kept["height"] + 1


def test_several_peers_write_a_datadir_that_replays_to_the_same_set(cli, chain, tmp_path):
    datadir, height, tip, stats, _, _ = chain
    got, _, _ = sync_from_servers(cli, datadir, 2, "--datadir", tmp_path / "node")
    assert_core_utxo_set(got, height, tip, stats)
    replayed = json.loads(run_cli(cli, "replay", "-q", "--json", "--datadir", tmp_path / "node").stdout)
    assert (replayed["height"], replayed["hash_serialized_3"]) == (height, stats["hash_serialized_3"])


def test_python_sync_from_several_peers_gives_the_clis_fields(cli, chain, tmp_path):
    ibdkit = import_ibdkit()
    datadir, height, tip, stats, _, _ = chain
    servers = [Server(cli, "--datadir", datadir) for _ in range(2)]
    try:
        got = ibdkit.sync([f"127.0.0.1:{s.port}" for s in servers], chainstate=tmp_path / "py", timeout=5, window=4,
                          assumevalid=0)
        shown = json.loads(sync(cli, [s.port for s in servers], "--chainstate", tmp_path / "cli").stdout)
    finally:
        for s in servers:
            s.stop()
    assert_core_utxo_set(got, height, tip, stats)
    assert sorted(got) == sorted(shown)
    assert [p["address"] for p in got["peers"]] == [p["address"] for p in shown["peers"]]


def test_options_the_sync_from_several_peers_does_not_take_are_refused(cli, tmp_path):
    for extra, words in ((["--getblocks"], "takes one peer"), (["--policy", "all"], "give one --connect")):
        r = run_cli(cli, "sync", "--connect", "127.0.0.1:1", "--connect", "127.0.0.1:2", *extra, check=False)
        assert r.returncode == 64 and words in r.stderr, (extra, r.returncode, r.stderr)


def truncated_block(command, payload):
    """The block's last byte cut off: its header (and so the hash asked for) is kept, the rest
    does not decode."""
    return payload[:-1] if command == "block" and len(payload) > 200 else payload


@pytest.mark.parametrize("lie, says", [(mutated_block, "mutated block"), (truncated_block, "does not decode")])
def test_a_peer_that_sends_a_broken_block_is_dropped_and_the_others_serve_it(cli, chain, tmp_path, lie, says):
    datadir, height, tip, stats, _, _ = chain
    upstream = Server(cli, "--datadir", datadir)
    honest = Server(cli, "--datadir", datadir)
    liar = LyingProxy(upstream.port, lie)
    try:
        got = json.loads(sync(cli, [liar.port, honest.port], "--chainstate", tmp_path / "cs").stdout)
    finally:
        liar.close()
        honest.stop()
        upstream.stop()
    assert_core_utxo_set(got, height, tip, stats)
    assert got["reject_reason"] is None and got["failure"] is None, got
    assert got["blocks_connected"] == height and got["start_height"] == 1, "the runs' counts add up"
    lying, fair = got["peers"]
    assert says in lying["dropped"] and fair["dropped"] is None, got["peers"]
    assert any(says in n and n.startswith(lying["address"]) for n in got["notes"]), got["notes"]


@pytest.mark.parametrize("peers", [1, 2])
def test_with_only_peers_that_mutate_blocks_the_run_stops_without_calling_one_invalid(cli, chain, tmp_path, peers):
    """One peer (the one-peer sync) or two that mutate every block they send: exit 1 as for a
    misbehaving peer, no block refused as invalid, the blocks before kept; an honest peer then
    completes the same chainstate."""
    datadir, height, tip, stats, _, _ = chain
    upstream = Server(cli, "--datadir", datadir)
    liars = [LyingProxy(upstream.port, mutated_block) for _ in range(peers)]
    try:
        r = sync(cli, [p.port for p in liars], "--chainstate", tmp_path / "cs", check=False)
    finally:
        for p in liars:
            p.close()
    assert r.returncode == 1, (r.returncode, r.stderr)
    assert "mutated block" in r.stderr and "invalid" not in r.stderr, r.stderr
    kept = json.loads(r.stdout)
    assert kept["reject_reason"] is None and kept["reject_height"] is None and kept["failure"], kept
    assert 0 <= kept["height"] < height, kept["height"]
    try:
        got = json.loads(sync(cli, [upstream.port], "--chainstate", tmp_path / "cs").stdout)
    finally:
        upstream.stop()
    assert_core_utxo_set(got, height, tip, stats)


def evil_user_agent(command, payload):
    """The upstream's version message with a user agent that would write escapes and a forged line."""
    if command != "version":
        return payload
    n = payload[80]  # the user agent's length (one byte below 253) after version, services, time, two addresses, nonce
    evil = b"/evil:1.0/\x1b[31m\npeer 10.0.0.1:8333 forged\x07"
    return payload[:80] + bytes([len(evil)]) + evil + payload[81 + n:]


@pytest.mark.parametrize("swift", [False, True])
def test_a_peers_user_agent_cannot_write_into_the_peers_lines(cli, chain, tmp_path, swift):
    """Regression: sync --swiftsync from several peers showed each peer's user agent as it came,
    in `peers` and on its lines. Both syncs from several peers show it as Core's getpeerinfo does."""
    datadir, height, _, _, _, hints = chain
    upstream, honest = Server(cli, "--datadir", datadir), Server(cli, "--datadir", datadir)
    evil = LyingProxy(upstream.port, evil_user_agent)
    args = ["sync", "--network", "regtest", "--timeout", "5", "--window", "4", "--chainstate", tmp_path / "cs",
            "--connect", f"127.0.0.1:{evil.port}", "--connect", f"127.0.0.1:{honest.port}"]
    args += ["--swiftsync", hints] if swift else []
    try:
        shown = run_cli(cli, *args)
        got = json.loads(run_cli(cli, *args[:-2], "--json", "-q").stdout)  # one peer: nothing left to do
    finally:
        evil.close()
        honest.stop()
        upstream.stop()
    line = next(l for l in shown.stdout.splitlines() if f"127.0.0.1:{evil.port}" in l)
    assert "/evil:1.0/31mpeer 10.0.0.1:8333 forged" in line, shown.stdout
    assert not any(l.startswith("peer 10.0.0.1") for l in shown.stdout.splitlines()), shown.stdout
    assert not any(ch in shown.stdout + shown.stderr for ch in "\x1b\x07"), repr(shown.stdout)
    assert got["height"] == height

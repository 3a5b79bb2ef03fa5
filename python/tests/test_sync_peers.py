"""`ibdkit sync --connect A --connect B ...` without --swiftsync: the classic engine fed by several
peers at once (stock Bitcoin Core peers serve it: no BIP 455 needed).

Every run ends on the UTXO set of the blocks Core's engine connected (a datadir it wrote, served by
`ibdkit serve`), with every script verified (`--assumevalid 0`) and the blocks spread over the
peers; a peer that vanishes mid-window, withholds a block, answers `notfound` or frames a message
wrongly loses its heights to the others and is named with what it did; with no peer left the run
stops cleanly, keeps what it connected, and the same command resumes it (only the headers above
its chainstate's tip travel again); a peer that holds back
the block the run waits for, even while it sends a block within each --timeout, is dropped for
stalling the download (Core's block-stalling rule), while a slow peer that still gives its heights
in time, or is the only one left, keeps serving; the peers' header chain is the one with the most
work, whichever peer answers first; a peer behind (its chain ends at 60, or 4,000 of 8,300, its
first answer then all headers held) shows its tip and is asked only for blocks up to it; the result can be a
Bitcoin Core data directory (--datadir) that replays to the same set. A block that is mutated or
does not decode is its sender's fault, never the block's (Core's BLOCK_MUTATED): the sender is
dropped and the others serve that block; with no other peer the run stops as for a misbehaving
peer (exit 1), the block is not called invalid, and a rerun from an honest peer completes.
"""
import json
import re
import shutil
import struct
import time

import pytest

from chain_model import compact_size, sha256d
from conftest import import_ibdkit, run_cli
from test_replay_datadir import FIELDS, block_hash, records
from test_replay_scripts import write_blk
from test_serve import REGTEST_MAGIC, message
from test_swiftsync_coins import gen_blocks
from test_sync_swiftsync import LyingProxy, Peer, chain, gone_after, invalid_header, mutated_block  # noqa: F401 (chain: the fixture)


def sync(cli, ports, *extra, check=True, timeout=5):
    args = ["sync", "-q", "--json", "--network", "regtest", "--timeout", str(timeout), "--window", "4", "--assumevalid", "0",
            *extra]
    for p in ports:
        args += ["--connect", f"127.0.0.1:{p}"]
    return run_cli(cli, *args, check=check)


def beside_an_honest_peer(cli, datadir, lie, tmp_path, **kw):
    """The sync's JSON from a LyingProxy telling `lie` (the first peer) and an honest `serve` (the
    second), and the proxy's port and lies."""
    honest, upstream = Peer(cli, "--datadir", datadir), Peer(cli, "--datadir", datadir)
    liar = LyingProxy(upstream.port, lie)
    try:
        got = json.loads(sync(cli, [liar.port, honest.port], "--chainstate", tmp_path / "cs", **kw).stdout)
    finally:
        liar.close()
        honest.stop()
        upstream.stop()
    return got, liar.port, liar.lies


def from_liars_alone(cli, upstream, lies, tmp_path):
    """The sync's outcome (not checked) from one LyingProxy per lie in front of `upstream`, and no
    honest peer."""
    liars = [LyingProxy(upstream.port, lie) for lie in lies]
    try:
        return sync(cli, [p.port for p in liars], "--chainstate", tmp_path / "cs", check=False)
    finally:
        for p in liars:
            p.close()


def sync_from_servers(cli, datadir, peers, *extra):
    """The sync's JSON from `peers` fresh `serve` peers of the datadir, and each server's counters."""
    servers = [Peer(cli, "--datadir", datadir) for _ in range(peers)]
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
    # The first peer sent the chain; each other one only the tip again (the locator starts at the
    # tip's parent, as Core's first getheaders does, so a peer at the tip shows it).
    assert got["headers_received"] == height + peers - 1, got["headers_received"]
    # The same command again has nothing left to do, and only the tip's header travels again.
    again, _, _ = sync_from_servers(cli, datadir, 2, "--chainstate", tmp_path / "cs")
    assert again["blocks_connected"] == 0 and again["hash_serialized_3"] == stats["hash_serialized_3"]
    assert again["headers_received"] == 2 and again["header_height"] == height, again


def test_a_peer_that_vanishes_loses_its_blocks_to_the_others(cli, chain, tmp_path):
    datadir, height, tip, stats, _, _ = chain
    got, _, _ = beside_an_honest_peer(cli, datadir, gone_after(3), tmp_path)  # inside its first window of 4
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
# What a peer sends in place of a block mid-sync, and a pattern its `dropped` reason must match. A
# message with a bad checksum is skipped unread, as Core skips it: the peer has then stalled, and
# either rule may see it first: its silence, or the run waiting for the block it holds.
STALLED = r"(stalled: nothing asked for within|stalling block download: height \d+, which the run waits for, not given within) 1\.5 s"
MISBEHAVIOURS = {
    "withheld block": (lambda block: None, STALLED + "$"),
    "bad checksum": (bad_checksum, STALLED + "; 1 of its messages skipped for a bad checksum$"),
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
    got, port, lies = beside_an_honest_peer(cli, datadir, instead_of_block(NTH, sent), tmp_path, timeout=1.5)
    assert_core_utxo_set(got, height, tip, stats)
    assert lies == 1 and got["failure"] is None, (lies, got["failure"])
    lying, fair = got["peers"]
    assert lying["address"] == f"127.0.0.1:{port}" and lying["dropped"], got["peers"]
    assert re.search(words, lying["dropped"]), got["peers"]
    assert lying["blocks"] >= NTH - 1 and fair["dropped"] is None, got["peers"]
    assert sum(p["blocks"] for p in got["peers"]) == height


def slow(seconds):
    """A peer that forwards each block `seconds` after it came: a drip when that is just under the
    timeout (it is never silent that long), a slow honest peer when it is small."""
    def lie(command, payload):
        if command == "block":
            time.sleep(seconds)
        return payload
    return lie


def test_a_peer_that_drips_the_block_the_run_waits_for_is_dropped_for_stalling(cli, chain, tmp_path):
    """Regression: a peer that sent each block just inside --timeout was never dropped, as each block
    restarted its timeout; the run waited on it a timeout per block of its window (Core's stalling
    rule drops it). Now the block the run waits for, asked for longer than --timeout ago, is taken
    from it while another peer can serve it: dropped for stalling the download, and the other peer
    serves the rest to Core's UTXO set."""
    datadir, height, tip, stats, _, _ = chain
    started = time.monotonic()
    got, port, _ = beside_an_honest_peer(cli, datadir, slow(1.2), tmp_path, timeout=1.5)
    took = time.monotonic() - started
    assert_core_utxo_set(got, height, tip, stats)
    assert got["failure"] is None, got["failure"]
    dripping, fair = got["peers"]
    assert dripping["address"] == f"127.0.0.1:{port}" and fair["dropped"] is None, got["peers"]
    assert dripping["dropped"] and re.fullmatch(r"stalling block download: height \d+, which the run waits for, not given "
                                                r"within 1\.5 s", dripping["dropped"]), got["peers"]
    assert dripping["blocks"] < 4 and fair["blocks"] == height - dripping["blocks"], got["peers"]
    print(f"synced in {took:.1f} s")  # about a timeout; it was a timeout per block of the drip's window


def test_a_slow_honest_peer_beside_another_is_not_dropped(cli, chain, tmp_path):
    """A peer a little slow with each block, whose window of 4 still comes well within --timeout,
    keeps serving beside a fast one."""
    datadir, height, tip, stats, _, _ = chain
    got, _, _ = beside_an_honest_peer(cli, datadir, slow(0.05), tmp_path, timeout=2)
    assert_core_utxo_set(got, height, tip, stats)
    assert all(p["dropped"] is None for p in got["peers"]) and got["peers"][0]["blocks"] > 0, got["peers"]


def test_the_last_peer_left_is_not_dropped_for_slowness(cli, chain, tmp_path):
    """The stalling rule takes a height from a peer only for another to serve: once the fast peer
    has vanished, a slow one whose window of 4 takes longer than --timeout (each block within it)
    serves the run alone, to the stop height; an honest peer then completes Core's UTXO set."""
    datadir, height, tip, stats, _, _ = chain
    upstream = Peer(cli, "--datadir", datadir)
    dying, slowly = LyingProxy(upstream.port, gone_after(2)), LyingProxy(upstream.port, slow(0.3))
    try:
        got = json.loads(sync(cli, [dying.port, slowly.port], "--chainstate", tmp_path / "cs", "--stop-height", "20",
                              timeout=1).stdout)
        assert got["height"] == 20 and got["failure"] is None, got
        gone, last = got["peers"]
        assert gone["dropped"] and last["dropped"] is None and last["blocks"] == 20 - gone["blocks"], got["peers"]
        got = json.loads(sync(cli, [upstream.port], "--chainstate", tmp_path / "cs").stdout)
    finally:
        dying.close()
        slowly.close()
        upstream.stop()
    assert_core_utxo_set(got, height, tip, stats)


def test_with_no_peer_left_the_run_keeps_what_it_connected_and_resumes(cli, chain, tmp_path):
    """Both peers vanish after some blocks: exit 1 with the reason, the chainstate flushed at the
    last block connected (a whole UTXO set), and the same command with live peers completes. The
    headers do not travel again: the locator starts at the parent of the last header held, as
    Core's first getheaders does, so a peer sends that one header again: from one peer the stored
    headers' tip (the failed run stored them all), from several the chainstate's tip."""
    datadir, height, tip, stats, _, _ = chain
    upstream, other = Peer(cli, "--datadir", datadir), Peer(cli, "--datadir", datadir)
    try:
        for peers in ([upstream.port], [upstream.port, other.port]):
            r = from_liars_alone(cli, upstream, [gone_after(40), gone_after(40)], tmp_path)
            assert r.returncode == 1, (r.returncode, r.stderr)
            assert "no peer is left" in r.stderr, r.stderr
            kept = json.loads(r.stdout)
            assert 0 < kept["height"] < height, kept["height"]
            assert kept["failure"], kept
            got = json.loads(sync(cli, peers, "--chainstate", tmp_path / "cs").stdout)
            assert_core_utxo_set(got, height, tip, stats)
            assert got["start_height"] == kept["height"] + 1
            assert got["headers_received"] == (1 if len(peers) == 1 else height - kept["height"] + 2), (peers, got)
            shutil.rmtree(tmp_path / "cs")
    finally:
        upstream.stop()
        other.stop()


def test_several_peers_write_a_datadir_that_replays_to_the_same_set(cli, chain, tmp_path):
    datadir, height, tip, stats, _, _ = chain
    got, _, _ = sync_from_servers(cli, datadir, 2, "--datadir", tmp_path / "node")
    assert_core_utxo_set(got, height, tip, stats)
    replayed = json.loads(run_cli(cli, "replay", "-q", "--json", "--datadir", tmp_path / "node").stdout)
    assert (replayed["height"], replayed["hash_serialized_3"]) == (height, stats["hash_serialized_3"])


def test_python_sync_from_several_peers_gives_the_clis_fields(cli, chain, tmp_path):
    """ibdkit.sync(peers): the same run, the same keys and types as --json."""
    from test_result_fields import types
    ibdkit = import_ibdkit()
    datadir, height, tip, stats, _, _ = chain
    servers = [Peer(cli, "--datadir", datadir) for _ in range(2)]
    try:
        got = ibdkit.sync([f"127.0.0.1:{s.port}" for s in servers], chainstate=tmp_path / "py", timeout=5, window=4,
                          assumevalid=0)
        shown = json.loads(sync(cli, [s.port for s in servers], "--chainstate", tmp_path / "cli").stdout)
    finally:
        for s in servers:
            s.stop()
    assert_core_utxo_set(got, height, tip, stats)
    assert set(got) == set(shown), set(got) ^ set(shown)
    assert types(got) == types(shown)
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
    got, _, _ = beside_an_honest_peer(cli, datadir, lie, tmp_path)
    assert_core_utxo_set(got, height, tip, stats)
    assert got["reject_reason"] is None and got["failure"] is None, got
    assert got["blocks_connected"] == height and got["start_height"] == 1, "the runs' counts add up"
    lying, fair = got["peers"]
    assert says in lying["dropped"] and fair["dropped"] is None, got["peers"]
    assert any(says in n and n.startswith(lying["address"]) for n in got["notes"]), got["notes"]


def test_a_peer_whose_headers_break_cores_rules_is_dropped_before_any_block(cli, chain, tmp_path):
    """Core disconnects a peer that sends a header failing its checks. Before, such a peer stayed:
    it was asked for the blocks below its bad header (here 1..49) as if nothing had happened."""
    datadir, height, tip, stats, _, _ = chain
    got, _, lies = beside_an_honest_peer(cli, datadir, invalid_header, tmp_path)
    assert lies > 0
    assert_core_utxo_set(got, height, tip, stats)
    lying, fair = got["peers"]
    assert lying["dropped"] and lying["dropped"].startswith("headers: sent an invalid header: "), got["peers"]
    assert lying["blocks"] == 0 and fair["blocks"] == height and fair["dropped"] is None, got["peers"]
    assert any(n.startswith(lying["address"] + ": headers: sent an invalid header") for n in got["notes"]), got["notes"]


@pytest.mark.parametrize("peers", [1, 2])
def test_with_only_peers_that_mutate_blocks_the_run_stops_without_calling_one_invalid(cli, chain, tmp_path, peers):
    """One peer (the one-peer sync) or two that mutate every block they send: exit 1 as for a
    misbehaving peer, no block refused as invalid, the blocks before kept; an honest peer then
    completes the same chainstate."""
    datadir, height, tip, stats, _, _ = chain
    upstream = Peer(cli, "--datadir", datadir)
    r = from_liars_alone(cli, upstream, [mutated_block] * peers, tmp_path)
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
    upstream, honest = Peer(cli, "--datadir", datadir), Peer(cli, "--datadir", datadir)
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


def test_a_chainstate_of_another_chain_is_refused_not_taken_for_synced(cli, chain, tmp_path):
    """The headers are asked for from the chainstate's tip; peers on another chain answer from the
    fork (here the genesis): their chain replaces the stored one above it, and the run refuses the
    chainstate, whose tip is not on it, instead of finding nothing to do."""
    datadir = chain[0]
    got, _, _ = sync_from_servers(cli, datadir, 2, "--chainstate", tmp_path / "cs", "--stop-height", "50")
    assert got["height"] == 50
    gen_blocks(cli, tmp_path, 60, seed=99)
    others = [Peer(cli, "--blocks-dir", tmp_path / "chain" / "blocks") for _ in range(2)]
    try:
        r = sync(cli, [s.port for s in others], "--chainstate", tmp_path / "cs", check=False)
    finally:
        for s in others:
            s.stop()
    assert r.returncode == 1, (r.returncode, r.stderr)
    assert "is not on the peers' chain" in r.stderr and "peers on the same chain" in r.stderr, r.stderr


@pytest.mark.parametrize("liar_first", [True, False])
def test_the_peers_chain_is_the_one_with_most_work_whichever_peer_answers_first(cli, chain, tmp_path, liar_first):
    """A peer on another chain with less work (60 blocks from the genesis against 160) does not
    define the peers' chain by answering first: its rival's branch is followed and taken for its
    work, as Core chooses; the sync ends on Core's UTXO set, and the other peer, whose chain shares
    only the genesis with it (`synced_headers` 0), is asked for no block."""
    datadir, height, tip, stats, _, _ = chain
    gen_blocks(cli, tmp_path, 60, seed=99)
    honest, other = Peer(cli, "--datadir", datadir), Peer(cli, "--blocks-dir", tmp_path / "chain" / "blocks")
    ports = [other.port, honest.port] if liar_first else [honest.port, other.port]
    try:
        got = json.loads(sync(cli, ports, "--chainstate", tmp_path / "cs").stdout)
    finally:
        honest.stop()
        other.stop()
    assert_core_utxo_set(got, height, tip, stats)
    said = "more work: the peers' chain follows it" if liar_first else "no more work (kept the chain held)"
    who = f"127.0.0.1:{(honest if liar_first else other).port}"
    assert any(n.startswith(who) and "forks from the one held after height 0 with " + said in n for n in got["notes"]), got["notes"]
    peers = {p["address"]: p for p in got["peers"]}
    assert peers[f"127.0.0.1:{honest.port}"]["synced_headers"] == height, got["peers"]
    assert peers[f"127.0.0.1:{other.port}"]["synced_headers"] == 0 and peers[f"127.0.0.1:{other.port}"]["blocks"] == 0, got["peers"]
    assert all(p["dropped"] is None for p in got["peers"]), got["peers"]


def test_a_peer_behind_serves_the_blocks_it_holds_and_is_never_asked_for_more(cli, chain, tmp_path):
    """A peer whose chain ends at 60 (a node still syncing: `serve` on the chain's first 60 blocks)
    beside one at the tip: its headers show where its chain ends (`synced_headers`), as Core
    learns a peer's best block, and it is asked only for heights up to it: it serves some of them,
    is not dropped for a `notfound`, and the sync ends on Core's UTXO set."""
    datadir, height, tip, stats, _, _ = chain
    gen_blocks(cli, tmp_path, height, seed=23)  # the fixture's blocks again
    blocks = records(tmp_path / "chain" / "blocks")
    assert len(blocks) == height + 1 and block_hash(blocks[-1]) == tip  # the genesis first
    prefix = write_blk(tmp_path / "prefix" / "blk00000.dat", blocks[:61]).parent
    behind, honest = Peer(cli, "--blocks-dir", prefix), Peer(cli, "--datadir", datadir)
    try:
        got = json.loads(sync(cli, [behind.port, honest.port], "--chainstate", tmp_path / "cs").stdout)
    finally:
        served = behind.stop()[0]
        honest.stop()
    assert_core_utxo_set(got, height, tip, stats)
    first, second = got["peers"]
    assert (first["synced_headers"], second["synced_headers"]) == (60, height), got["peers"]
    assert first["dropped"] is None and second["dropped"] is None, got["peers"]
    assert 0 < first["blocks"] <= 60 and first["blocks"] + second["blocks"] == height, got["peers"]
    assert served["blocks_sent"] == first["blocks"], served


@pytest.fixture(scope="module")
def long_chain(cli, tmp_path_factory):
    """A generated chain of 8,300 small blocks, and the blocks dir of its first 4,000 (the genesis
    first): a peer that far behind answers the tip's locator from an entry more than 2,000 headers
    below its own tip."""
    tmp = tmp_path_factory.mktemp("long-chain")
    run_cli(cli, "gen-chain", "--out", tmp / "chain", "--blocks", "8300", "--target-mb", "3", "--seed", "7", "--no-progress", "--json")
    blocks = records(tmp / "chain" / "blocks")
    prefix = write_blk(tmp / "prefix" / "blk00000.dat", blocks[:4001]).parent
    return tmp / "chain" / "blocks", prefix


def test_a_peer_far_behind_shows_its_tip_and_serves_below_it(cli, long_chain, tmp_path):
    """Its first answer is 2,000 headers the chain holds already; asked on from the last of them,
    as Core asks on, it shows its tip (before, the same request went round forever), serves blocks
    below it and is not dropped."""
    full, prefix = (Peer(cli, "--blocks-dir", d) for d in long_chain)
    try:
        got = json.loads(sync(cli, [full.port, prefix.port], "--chainstate", tmp_path / "cs", "--stop-height", "4100").stdout)
    finally:
        full.stop()
        prefix.stop()
    assert got["height"] == 4100 and got["header_height"] == 8300, got
    ahead, behind = got["peers"]
    assert (ahead["synced_headers"], behind["synced_headers"]) == (8300, 4000), got["peers"]
    assert ahead["dropped"] is None and behind["dropped"] is None and behind["blocks"] > 0, got["peers"]


def test_one_peer_far_behind_the_headers_held_is_asked_on_and_the_sync_stops_at_its_tip(cli, long_chain, tmp_path):
    """Headers stored by a sync from a peer at the tip (8,300), then the same chainstate synced from
    a peer at 4,000: its full answers of headers held are asked on from their last (before, the
    sync asked the same forever); the sync keeps every block up to the peer's tip and says why it
    stops there (exit 1, resumable from a peer at the tip)."""
    full, prefix = (Peer(cli, "--blocks-dir", d) for d in long_chain)
    try:
        sync(cli, [full.port], "--chainstate", tmp_path / "cs", "--stop-height", "100")
        r = sync(cli, [prefix.port], "--chainstate", tmp_path / "cs", check=False, timeout=10)
    finally:
        full.stop()
        prefix.stop()
    assert r.returncode == 1, (r.returncode, r.stderr)
    got = json.loads(r.stdout)
    assert got["height"] == 4000 and got["header_height"] == 8300, got
    assert "at height 4001 (notfound): its chain ends below the headers held" in r.stderr, r.stderr


def same_headers_again():
    """A lie: every `headers` answer after the first full one is that first one again (2,000
    headers the client holds by then), as if the peer never moved past them."""
    first = []

    def lie(command, payload):
        if command != "headers":
            return payload
        if not first and len(payload) > 2000 * 81 // 2:
            first.append(payload)
            return payload
        return first[0] if first else payload
    return lie


@pytest.mark.parametrize("peers", [1, 2])
def test_a_peer_that_repeats_headers_held_cannot_hold_the_header_download_forever(cli, long_chain, tmp_path, peers):
    """Asked on from the last header of a full answer of headers held, a peer must go on past it:
    one that sends the same 2,000 again is refused (alone: the sync stops, exit 1; beside an honest
    peer: it is dropped before any block, as a peer whose headers break Core's rules, and the sync
    ends at the tip). Before, the download asked it the same forever."""
    upstream = Peer(cli, "--blocks-dir", long_chain[0])
    liar = LyingProxy(upstream.port, same_headers_again())
    honest = Peer(cli, "--blocks-dir", long_chain[0]) if peers == 2 else None
    try:
        ports = [liar.port] + ([honest.port] if honest else [])
        r = sync(cli, ports, "--chainstate", tmp_path / "cs", "--stop-height", "2100", check=False)
    finally:
        liar.close()
        upstream.stop()
        if honest:
            honest.stop()
    if peers == 1:
        assert r.returncode == 1, (r.returncode, r.stderr)
        assert "peer sent a full headers message of headers held, not past the last one" in r.stderr, r.stderr
        return
    assert r.returncode == 0, r.stderr
    got = json.loads(r.stdout)
    assert got["height"] == 2100 and got["header_height"] == 8300, got
    assert any(n.startswith(f"127.0.0.1:{liar.port}: headers: sent a full headers message of headers held, not past the last one")
               for n in got["notes"]), got["notes"]
    liar_seen = got["peers"][0]
    assert liar_seen["synced_headers"] == 2000 and liar_seen["blocks"] == 0, got["peers"]
    assert liar_seen["dropped"] == "headers: sent a full headers message of headers held, not past the last one", got["peers"]


@pytest.mark.parametrize("peers", [1, 2])
def test_with_only_peers_whose_headers_break_cores_rules_the_run_says_so(cli, chain, tmp_path, peers):
    """One peer (the one-peer sync) or two whose 50th header fails Core's checks, and no honest
    peer: exit 1 naming the invalid header, no block refused as invalid, no chainstate past the
    headers that held; an honest peer then completes the same chainstate."""
    datadir, height, tip, stats, _, _ = chain
    upstream = Peer(cli, "--datadir", datadir)
    try:
        r = from_liars_alone(cli, upstream, [invalid_header] * peers, tmp_path)
        assert r.returncode == 1, (r.returncode, r.stderr)
        assert "sent an invalid header: header " in r.stderr and "(high-hash)" in r.stderr, r.stderr
        if peers == 2:  # both dropped before any block, each named with its reason
            assert "no peer is left to give block " in r.stderr and "spent coins" not in r.stderr, r.stderr
            assert r.stderr.count(": headers: sent an invalid header: header ") == 2, r.stderr
        kept = json.loads(r.stdout)
        assert kept["reject_reason"] is None and kept["failure"] and kept["height"] <= 0, kept
        got = json.loads(sync(cli, [upstream.port], "--chainstate", tmp_path / "cs").stdout)
    finally:
        upstream.stop()
    assert_core_utxo_set(got, height, tip, stats)

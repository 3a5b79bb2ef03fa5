"""`ibdkit sync --swiftsync HINTS --connect A --connect B ...`: SwiftSync over P2P (BIP 457's default
path), the spent coins from `ibdkit serve` peers (BIP 455).

Every run ends on the UTXO set of the blocks Core's engine connected (a datadir it wrote; the
expected statistics are the test's own model of Core's chainstate over Core's blocks), from one, two
and four peers, with every script verified (`--assumevalid 0`); then the classic engine continues
from the hints' height to the peers' tip. Peers that lie (a coin's amount, height, coinbase flag or
script changed, a coin left out or added, a malformed `bspent`, a mutated block, a withheld block,
a block and its `bspent` sent again) are caught: beside an honest peer the sync completes on the
right hash and names the peer it dropped; alone, the sync fails with a clear error and leaves no
chainstate.
"""
import json
import os
import random
import signal
import socket
import struct
import subprocess
import threading
import time

import pytest

from chain_model import compact_size as encode_compact_size, sha256d
from conftest import import_ibdkit, import_pbk, run_cli

pbk = import_pbk()

from test_replay_datadir import FIELDS, core_datadir, framed_records  # noqa: E402
from test_serve import Server, compact_size, message  # noqa: E402
from test_swiftsync_coins import gen_blocks  # noqa: E402

BELOW_TIP = 15  # the hints are for the tip less this: the classic engine connects the rest


@pytest.fixture(scope="module")
def chain(cli, tmp_path_factory):
    """A datadir Core's engine wrote (160 blocks: those above 100 spend coins), its expected UTXO
    statistics at the tip, and a hintsfile for height tip - BELOW_TIP."""
    tmp = tmp_path_factory.mktemp("p2p-swiftsync")
    blocks = gen_blocks(cli, tmp, 160, seed=23)
    datadir, height, tip, stats = core_datadir(tmp, blocks, seed=5)
    n = height - BELOW_TIP
    cs = tmp / "cs-n"
    run_cli(cli, "replay", "-q", "--datadir", datadir, "--chainstate", cs, "--stop-height", str(n), "--no-stats")
    hints = tmp / "chain.hints"
    run_cli(cli, "hints", "-q", "--chainstate", cs, "--datadir", datadir, "--out", hints)
    return datadir, height, tip, stats, n, hints


def swiftsync(cli, hints, ports, *extra, check=True, keep=16):
    """sync --swiftsync from the ports; with BIP 455's cutoff (--keep-recent) unless keep is 0."""
    args = ["sync", "-q", "--json", "--network", "regtest", "--swiftsync", hints, "--timeout", "5", "--window", "4",
            "--assumevalid", "0", "--keep-recent", str(keep), *extra]
    for p in ports:
        args += ["--connect", f"127.0.0.1:{p}"]
    return run_cli(cli, *args, check=check)


def assert_core_utxo_set(got, height, tip, stats):
    assert got["swiftsync"]["ok"], got
    assert (got["height"], got["bestblock"]) == (height, tip)
    for k in FIELDS:
        assert got[k] == stats[k], k


@pytest.mark.parametrize("peers", [1, 2, 4])
def test_swiftsync_from_peers_ends_on_cores_utxo_set(cli, chain, tmp_path, peers):
    datadir, height, tip, stats, n, hints = chain
    servers = [Peer(cli, "--datadir", datadir) for _ in range(peers)]
    try:
        got = json.loads(swiftsync(cli, hints, [s.port for s in servers], "--chainstate", tmp_path / "cs").stdout)
    finally:
        counters = [s.stop()[0] for s in servers]
    assert_core_utxo_set(got, height, tip, stats)
    assert got["swiftsync_height"] == n and got["continuation"]["blocks"] == BELOW_TIP
    assert got["script_checked_inputs"] > 0 and got["script_checks_from_height"] == 1
    assert len(got["peers"]) == peers and all(p["dropped"] is None for p in got["peers"])
    assert sum(p["blocks"] for p in got["peers"]) == n and got["spent_bytes"] > 0
    assert sum(c["bspent_sent"] for c in counters) == n
    if peers > 1:
        assert sum(1 for p in got["peers"] if p["blocks"]) > 1, "the blocks were spread over the peers"
    # The chainstate stays: the same command again resumes the classic sync (nothing left to do),
    # as the classic sync itself does.
    server = Peer(cli, "--datadir", datadir)
    try:
        again = json.loads(swiftsync(cli, hints, [server.port], "--chainstate", tmp_path / "cs").stdout)
        classic = json.loads(run_cli(cli, "sync", "-q", "--json", "--connect", f"127.0.0.1:{server.port}",
                                     "--chainstate", tmp_path / "cs", "--timeout", "5").stdout)
    finally:
        server.stop()
    assert again["swiftsync_resumed"] and again["continuation"]["blocks"] == 0 and got["swiftsync_resumed"] is False
    assert again["hash_serialized_3"] == stats["hash_serialized_3"] and again["bestblock"] == tip
    assert classic["blocks_connected"] == 0 and classic["hash_serialized_3"] == stats["hash_serialized_3"]


def test_swiftsync_from_peers_verifies_every_signature_of_cores_signed_chain(cli, shared, tmp_path):
    """Core's regtest test chain (blocks 1-206, real signatures) in a datadir Core's engine wrote,
    hints for its tip, two `serve` peers: every script is verified, signatures included, with the
    spent coins the peers sent (untrusted until the aggregate balances), the same inputs the classic
    replay of the datadir verifies, and the sync ends on Core's UTXO set."""
    blocks = [payload for _, _, payload, _ in framed_records(shared / "regtest", "core_kernel_blocks_1-206.blk")]
    datadir, height, tip, stats = core_datadir(tmp_path, blocks, seed=7)
    assert height == 206
    hints = tmp_path / "tip.hints"
    run_cli(cli, "hints", "-q", "--datadir", datadir, "--out", hints)
    servers = [Peer(cli, "--datadir", datadir) for _ in range(2)]
    try:
        got = json.loads(swiftsync(cli, hints, [s.port for s in servers], "--chainstate", tmp_path / "cs").stdout)
    finally:
        for s in servers:
            s.stop()
    assert_core_utxo_set(got, height, tip, stats)
    assert got["swiftsync"]["mode"] == "coins" and got["swiftsync_height"] == height
    classic = json.loads(run_cli(cli, "replay", "-q", "--json", "--datadir", datadir, "--assumevalid", "0").stdout)
    assert got["script_checked_inputs"] == classic["script_checked_inputs"] > 0, "the same inputs' scripts verified"
    assert got["script_check_reason"] == "assumevalid=0 (always verify)"
    assert got["hash_serialized_3"] == classic["hash_serialized_3"]


def test_the_cutoff_saves_bytes_and_changes_nothing_else(cli, chain, tmp_path):
    """BIP 455's cutoff with the client's recent coins: the same UTXO set from fewer `bspent` bytes,
    and the bytes saved are exactly the difference (what the coins left out would have taken)."""
    datadir, height, tip, stats, _, hints = chain
    server = Peer(cli, "--datadir", datadir)
    try:
        runs = {k: json.loads(swiftsync(cli, hints, [server.port], "--chainstate", tmp_path / f"cs{k}", keep=k).stdout)
                for k in (0, 6, 1000)}
    finally:
        server.stop()
    for got in runs.values():
        assert_core_utxo_set(got, height, tip, stats)
    whole = runs[0]["spent_bytes"]
    assert runs[0]["spent_bytes_saved"] == 0
    for k in (6, 1000):
        # Each block's bspent header (hash and count) stays; the coins left out are what was saved.
        assert 0 < runs[k]["spent_bytes"] < whole and runs[k]["spent_bytes_saved"] > 0, runs[k]
    assert runs[1000]["spent_bytes"] < runs[6]["spent_bytes"]
    assert runs[6]["spent_bytes"] + runs[6]["spent_bytes_saved"] - whole in range(-3 * 200, 3 * 200), "count prefixes only"


def test_python_sync_with_swiftsync_gives_the_clis_fields(cli, chain, tmp_path):
    """ibdkit.sync(peers, swiftsync=HINTS): the same run, the same keys and types as --json."""
    from test_result_fields import types
    ibdkit = import_ibdkit()
    datadir, height, tip, stats, n, hints = chain
    servers = [Peer(cli, "--datadir", datadir) for _ in range(2)]
    try:
        peers = [f"127.0.0.1:{s.port}" for s in servers]
        got = ibdkit.sync(peers, swiftsync=hints, chainstate=tmp_path / "py", assumevalid=0, timeout=5, window=4, keep_recent=16)
        cli_got = json.loads(swiftsync(cli, hints, [s.port for s in servers], "--chainstate", tmp_path / "cli").stdout)
        with pytest.raises(ibdkit.ArgumentError, match="getblocks takes one peer"):
            ibdkit.sync(peers, getblocks=True)
    finally:
        for s in servers:
            s.stop()
    assert_core_utxo_set(got, height, tip, stats)
    assert got["swiftsync_height"] == n and len(got["peers"]) == 2
    assert set(got) == set(cli_got), set(got) ^ set(cli_got)
    assert types(got) == types(cli_got)


def test_an_interrupt_stops_the_download_and_keeps_nothing(cli, chain, tmp_path):
    """Ctrl-C in Python (a progress callback that raises) stops the download of blocks 1..n at once:
    the exception comes back, no chainstate claims a height, and the same call then completes. The
    CLI's first SIGINT stops a download that waits on a peer, exits 130 and says what is kept."""
    ibdkit = import_ibdkit()
    datadir, height, tip, stats, _, hints = chain
    server = Peer(cli, "--datadir", datadir)
    stalled = LyingProxy(server.port, withheld_block)
    cs = tmp_path / "cs"

    def interrupt(progress):
        raise KeyboardInterrupt

    try:
        with pytest.raises(KeyboardInterrupt):
            ibdkit.sync([f"127.0.0.1:{server.port}"], swiftsync=hints, chainstate=cs, window=1, progress=interrupt)
        assert not cs.exists() or (cs / "IBDKIT_UNFINISHED").exists() or not any(cs.iterdir()), "nothing claimed"
        got = ibdkit.sync([f"127.0.0.1:{server.port}"], swiftsync=hints, chainstate=cs, assumevalid=0, progress=False)
        assert_core_utxo_set(got, height, tip, stats)

        env = {k: v for k, v in os.environ.items() if k != "LD_PRELOAD"}  # as run_cli: the CLI links its own runtime
        proc = subprocess.Popen([str(cli), "sync", "-q", "--network", "regtest", "--swiftsync", str(hints), "--timeout", "60",
                                 "--connect", f"127.0.0.1:{stalled.port}", "--chainstate", str(tmp_path / "cli")],
                                stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=env)
        time.sleep(1.5)
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=20)
    finally:
        stalled.close()
        server.stop()
    assert proc.returncode == 130, err
    assert "ibdkit: interrupted: the chainstate" in err and "start over" in err, err


@pytest.mark.parametrize("swift", [False, True], ids=["classic", "swiftsync"])
def test_policy_all_syncs_once_per_policy_to_cores_hash(cli, chain, tmp_path, swift):
    """`sync --policy all`: the seed's question where DataStream carries P2P messages. Each buffer
    policy syncs the same chain from the same peer, one row each, all on Core's hash."""
    datadir, height, tip, stats, _, hints = chain
    server = Peer(cli, "--datadir", datadir)
    try:
        r = run_cli(cli, "sync", "-q", "--network", "regtest", "--connect", f"127.0.0.1:{server.port}", "--assumevalid", "0",
                    "--policy", "all", *(["--swiftsync", hints] if swift else []))
    finally:
        server.stop()
    rows = [line.split("|")[1].strip() for line in r.stdout.splitlines() if line.startswith("| ") and "policy" not in line]
    assert rows == ["plain", "zero-after-free", "barrier-only", "secure", "hardened"], r.stdout
    assert f"height {height}, {stats['txouts']} txouts, hash_serialized_3 {stats['hash_serialized_3']}" in r.stdout, r.stdout
    assert "identical under every policy" in r.stdout, r.stdout
    refused = run_cli(cli, "sync", "--connect", f"127.0.0.1:{server.port}", "--policy", "all", "--chainstate", tmp_path / "cs", check=False)
    assert refused.returncode == 64 and "each syncing into a temporary chainstate" in refused.stderr, refused.stderr
    assert not (tmp_path / "cs").exists()


def test_swiftsync_needs_a_peer_that_serves_spent_coins(cli, chain, tmp_path):
    """A blocks directory has no rev data: serve announces no BIP 455, and the sync says so."""
    datadir, _, _, _, _, hints = chain
    server = Peer(cli, "--blocks-dir", datadir / "regtest" / "blocks")
    try:
        r = swiftsync(cli, hints, [server.port], "--chainstate", tmp_path / "cs", check=False)
    finally:
        server.stop()
    assert r.returncode == 1 and "no peer serves spent coins (BIP 455)" in r.stderr, r.stderr
    assert not (tmp_path / "cs").exists() or not any((tmp_path / "cs").iterdir())



def test_outpoints_mode_syncs_from_peers_that_serve_no_spent_coins(cli, chain, tmp_path):
    """--swiftsync-mode outpoints: blocks alone from two peers without BIP 455 (serve over a blocks
    directory, as a stock Core peer), BIP 457's assume-valid extension, then the classic rest: Core's
    UTXO set; the verdict says which mode checked it."""
    datadir, height, tip, stats, n, hints = chain
    servers = [Peer(cli, "--blocks-dir", datadir / "regtest" / "blocks") for _ in range(2)]
    try:
        got = json.loads(swiftsync(cli, hints, [s.port for s in servers], "--chainstate", tmp_path / "cs",
                                   "--swiftsync-mode", "outpoints", keep=0).stdout)
    finally:
        counters = [s.stop()[0] for s in servers]
    assert_core_utxo_set(got, height, tip, stats)
    assert got["swiftsync"]["mode"] == "outpoints" and got["swiftsync_height"] == n
    assert got["spent_bytes"] == 0 and sum(c["bspent_sent"] for c in counters) == 0
    assert sum(p["blocks"] for p in got["peers"]) == n and sum(1 for p in got["peers"] if p["blocks"]) > 1
    assert got["script_checked_inputs"] == 0, "outpoints mode runs no script"
    assert got["continuation"]["blocks"] == BELOW_TIP


def test_the_classic_rest_also_takes_peers_without_spent_coins(cli, chain, tmp_path):
    """Coins mode uses only the peer that serves BIP 455; the classic sync after n downloads from
    every peer given, the one without BIP 455 too."""
    datadir, height, tip, stats, n, hints = chain
    serving, stock = Peer(cli, "--datadir", datadir), Peer(cli, "--blocks-dir", datadir / "regtest" / "blocks")
    try:
        got = json.loads(swiftsync(cli, hints, [serving.port, stock.port], "--chainstate", tmp_path / "cs").stdout)
    finally:
        stock_counters = stock.stop()[0]
        serving.stop()
    assert_core_utxo_set(got, height, tip, stats)
    assert [p["address"] for p in got["peers"]] == [f"127.0.0.1:{serving.port}"], got["peers"]
    assert any("does not serve spent coins" in u for u in got["unreachable"]), got["unreachable"]
    assert got["continuation"]["blocks"] == BELOW_TIP
    assert 0 < stock_counters["blocks_sent"] < BELOW_TIP, ("the stock peer served a share of the classic rest", stock_counters)


def test_outpoints_mode_drops_a_peer_that_mutates_a_block(cli, chain, tmp_path):
    datadir, height, tip, stats, _, hints = chain
    honest, upstream = Peer(cli, "--blocks-dir", datadir / "regtest" / "blocks"), Peer(cli, "--datadir", datadir)
    liar = proxy(upstream.port, "mutated block")
    try:
        got = json.loads(swiftsync(cli, hints, [liar.port, honest.port], "--chainstate", tmp_path / "cs",
                                   "--swiftsync-mode", "outpoints", keep=0).stdout)
    finally:
        liar.close()
        honest.stop()
        upstream.stop()
    assert_core_utxo_set(got, height, tip, stats)
    lying, fair = got["peers"]
    assert lying["dropped"] and "mutated" in lying["dropped"] and fair["dropped"] is None, got["peers"]


def test_python_sync_in_outpoints_mode(cli, chain, tmp_path):
    ibdkit = import_ibdkit()
    datadir, height, tip, stats, n, hints = chain
    server = Peer(cli, "--blocks-dir", datadir / "regtest" / "blocks")
    try:
        got = ibdkit.sync([f"127.0.0.1:{server.port}"], swiftsync=hints, swiftsync_mode="outpoints", chainstate=tmp_path / "py",
                          timeout=5, window=4)
        with pytest.raises(ibdkit.ArgumentError, match="swiftsync_mode='coins'"):
            ibdkit.sync([f"127.0.0.1:{server.port}"], swiftsync=hints, swiftsync_mode="outpoints", keep_recent=4)
    finally:
        server.stop()
    assert_core_utxo_set(got, height, tip, stats)
    assert got["swiftsync"]["mode"] == "outpoints" and got["swiftsync_height"] == n


@pytest.mark.parametrize("extra,words", [(["--datadir", "NODE"], "--swiftsync-mode coins"),
                                         (["--keep-recent", "4"], "--swiftsync-mode coins")])
def test_outpoints_mode_refuses_what_needs_spent_coins(cli, chain, tmp_path, extra, words):
    _, _, _, _, _, hints = chain
    extra = [str(tmp_path / "node") if e == "NODE" else e for e in extra]
    r = run_cli(cli, "sync", "--swiftsync", hints, "--swiftsync-mode", "outpoints", "--connect", "127.0.0.1:1", *extra, check=False)
    assert r.returncode == 64 and words in r.stderr, (r.returncode, r.stderr)


# ---- hostile peers: a proxy in front of an honest `serve` that changes what it forwards ----------

SCRIPT_BODY = {1: 20, 2: 32, 3: 32, 4: 64, 5: 20, 6: 32, 7: 20, 8: 32}


def parse_bspent(payload):
    """(hash bytes, [[index, code, script bytes as sent, compressed amount]])."""
    count, pos = compact_size(payload, 32)
    coins = []
    for _ in range(count):
        index, code = struct.unpack_from("<II", payload, pos)
        start = pos = pos + 8
        prefix = payload[pos]
        if prefix == 0:
            size, pos = compact_size(payload, pos + 1)
            pos += size
        else:
            pos += 1 + SCRIPT_BODY[prefix]
        script = payload[start:pos]
        amount, pos = compact_size(payload, pos)
        coins.append([index, code, bytes(script), amount])
    return payload[:32], coins


def encode_bspent(block_hash, coins):
    out = block_hash + encode_compact_size(len(coins))
    for index, code, script, amount in coins:
        out += struct.pack("<II", index, code) + script + encode_compact_size(amount)
    return out


def flip_script(script):
    return script[:-1] + bytes([script[-1] ^ 1])


LIES = {
    "amount": lambda c: c[0].__setitem__(3, c[0][3] + 10),
    "amount lowered": lambda c: c[0].__setitem__(3, 1),
    "height": lambda c: c[0].__setitem__(1, c[0][1] + 2),
    "coinbase flag": lambda c: c[0].__setitem__(1, c[0][1] ^ 1),
    "script": lambda c: c[0].__setitem__(2, flip_script(c[0][2])),
    "left out": lambda c: c.pop(0),
    "added": lambda c: c.append([c[-1][0] + 1000, c[-1][1], c[-1][2], c[-1][3]]),
}


class LyingProxy:
    """Listens on a loopback port; each connection goes to the honest server at `upstream`, and
    what comes back passes through `lie(command, payload)` (a payload, None to withhold it, or a
    list of (command, payload) to send in its place, where bytes are sent as they are: a message
    framed wrongly; `lie` None: all of it as it is), each chunk read held `latency` seconds."""

    def __init__(self, upstream, lie, ask=None, latency=0.0):
        self.upstream, self.lie, self.ask, self.lies, self.latency = upstream, lie, ask, 0, latency
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen()
        self.port = self.sock.getsockname()[1]
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self):
        while True:
            try:
                down, _ = self.sock.accept()
            except OSError:
                return
            up = socket.create_connection(("127.0.0.1", self.upstream))
            for s in (down, up):  # as `serve` and Core: each message out at once, no Nagle delay
                s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            threading.Thread(target=self._pipe, args=(down, up, False), daemon=True).start()
            threading.Thread(target=self._pipe, args=(up, down, True), daemon=True).start()

    def _pipe(self, src, dst, lying):
        buf = b""
        try:
            while True:
                chunk = src.recv(1 << 20)
                if not chunk:
                    break
                if lying and self.latency:
                    time.sleep(self.latency)
                if not lying and self.ask is None or lying and self.lie is None:
                    dst.sendall(chunk)
                    continue
                buf += chunk
                while len(buf) >= 24:
                    (length,) = struct.unpack_from("<I", buf, 16)
                    if len(buf) < 24 + length:
                        break
                    command = buf[4:16].rstrip(b"\0").decode()
                    payload = buf[24:24 + length]
                    buf = buf[24 + length:]
                    changed = (self.lie if lying else self.ask)(command, payload)
                    if changed is None:
                        self.lies += 1
                        continue
                    sent = changed if isinstance(changed, list) else [(command, changed)]
                    if sent != [(command, payload)]:
                        self.lies += 1
                    for item in sent:
                        dst.sendall(item if isinstance(item, bytes) else message(*item))
        except OSError:
            pass
        finally:
            for s in (src, dst):
                try:
                    s.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass

    def close(self):
        self.sock.close()


LINK_LATENCY = 0.01


class Peer:
    """`ibdkit serve` (Server's arguments) behind a link that holds what it sends for LINK_LATENCY
    seconds, as a network would: on loopback with no delay at all, one peer can hand over a run's
    small blocks before another has asked for any, and the tests of how the heights are spread, of
    a liar's nth block or of an interrupt mid-download would depend on the scheduler."""

    def __init__(self, cli, *args):
        self.server = Server(cli, *args)
        self.link = LyingProxy(self.server.port, None, latency=LINK_LATENCY)
        self.port, self.proc = self.link.port, self.server.proc

    def stop(self):
        self.link.close()
        return self.server.stop()


def coin_lie(name):
    def lie(command, payload):
        if command != "bspent":
            return payload
        block_hash, coins = parse_bspent(payload)
        if not coins:
            return payload
        LIES[name](coins)
        return encode_bspent(block_hash, coins)
    return lie


def malformed_bspent(command, payload):
    return payload[:-1] if command == "bspent" and len(payload) > 33 else payload


def mutated_block(command, payload):
    # A byte of the last transaction's lock time: the header (and so the hash asked for) is kept.
    return payload[:-1] + bytes([payload[-1] ^ 1]) if command == "block" and len(payload) > 200 else payload


def invalid_header(command, payload):
    """The 50th header of a `headers` answer made version 1, which Core refuses after BIP 34 (its
    hash changed too: bad-version or high-hash): a header no honest node sends."""
    if command != "headers" or not 50 <= payload[0] < 0xfd:
        return payload
    at = 1 + 49 * 81
    return payload[:at] + (1).to_bytes(4, "little") + payload[at + 4:]


def withheld_block(command, payload):
    return None if command == "block" and len(payload) > 200 else payload


def cutoff_ignored(command, payload):
    """Asks the server for every coin, whatever cutoff the client asked for: the answer then holds
    coins the client did not ask for (and it counts as the liar's)."""
    return payload[:32] + bytes(4) if command == "getbspent" and payload[32:] != bytes(4) else payload


def forwarded(command, payload):
    return payload


def sent_again():
    """Sends the first large block and its bspent once more after both arrived: the client already
    holds that height, so the second bspent is one it did not ask for."""
    blocks, done = {}, []

    def lie(command, payload):
        if command == "block":
            blocks[sha256d(payload[:80])] = payload
        elif command == "bspent" and not done and len(blocks.get(payload[:32], b"")) > 200:
            done.append(payload[:32])
            return [("bspent", payload), ("block", blocks[payload[:32]]), ("bspent", payload)]
        return payload
    return lie


HOSTILE = {**{f"coin {k}": coin_lie(k) for k in LIES}, "malformed bspent": malformed_bspent, "mutated block": mutated_block,
           "withheld block": withheld_block, "invalid header": invalid_header, "cutoff ignored": (forwarded, cutoff_ignored), "sent again": sent_again}
MADE_PER_PROXY = {"sent again"}  # lies that keep state: a new one for each proxy


def proxy(upstream, name):
    lie = HOSTILE[name]() if name in MADE_PER_PROXY else HOSTILE[name]
    return LyingProxy(upstream, *lie) if isinstance(lie, tuple) else LyingProxy(upstream, lie)


@pytest.mark.parametrize("name", sorted(HOSTILE))
def test_a_lying_peer_beside_an_honest_one_is_dropped_and_the_sync_completes(cli, chain, tmp_path, name):
    datadir, height, tip, stats, _, hints = chain
    honest, upstream = Peer(cli, "--datadir", datadir), Peer(cli, "--datadir", datadir)
    liar = proxy(upstream.port, name)
    try:
        got = json.loads(swiftsync(cli, hints, [liar.port, honest.port], "--chainstate", tmp_path / "cs").stdout)
    finally:
        liar.close()
        honest.stop()
        upstream.stop()
    assert_core_utxo_set(got, height, tip, stats)
    assert liar.lies > 0, "the liar served blocks with spent coins"
    lying, fair = got["peers"]
    assert lying["address"] == f"127.0.0.1:{liar.port}" and lying["dropped"], got["peers"]
    assert fair["dropped"] is None
    assert any(f"127.0.0.1:{liar.port}" in note for note in got["notes"]), got["notes"]


# Both lies show only in the aggregate; or one in a rule (dropped as its block is checked), one there.
@pytest.mark.parametrize("lies", [("coin amount", "coin amount"), ("coin amount", "coin height")], ids=["aggregate", "rule+aggregate"])
def test_two_lying_peers_beside_an_honest_one_are_both_dropped(cli, chain, tmp_path, lies):
    """Regression: the aggregate's liar was looked for one peer at a time, each weighed against all
    the others, so a second liar hid the first and the run was refused with an honest peer present.
    Now the honest peer's coins alone balance the aggregate: both liars are dropped, Core's set kept."""
    datadir, height, tip, stats, _, hints = chain
    honest, upstream = Peer(cli, "--datadir", datadir), Peer(cli, "--datadir", datadir)
    liars = [proxy(upstream.port, name) for name in lies]
    try:
        got = json.loads(swiftsync(cli, hints, [liars[0].port, liars[1].port, honest.port], "--chainstate", tmp_path / "cs").stdout)
    finally:
        for liar in liars:
            liar.close()
        honest.stop()
        upstream.stop()
    assert_core_utxo_set(got, height, tip, stats)
    assert all(liar.lies > 0 for liar in liars), "each liar served blocks with spent coins"
    *lying, fair = got["peers"]
    assert all(peer["dropped"] for peer in lying) and fair["dropped"] is None, got["peers"]


def two_liars_alone(cli, chain, tmp_path, lie):
    """sync --swiftsync from two peers telling the same lie and nobody else: (the run, the liars)."""
    datadir, _, _, _, _, hints = chain
    upstream = Peer(cli, "--datadir", datadir)
    liars = [proxy(upstream.port, lie) for _ in range(2)]
    try:
        r = swiftsync(cli, hints, [liar.port for liar in liars], "--chainstate", tmp_path / "cs", check=False)
    finally:
        for liar in liars:
            liar.close()
        upstream.stop()
    assert r.returncode == 1, (r.returncode, r.stderr)
    assert not (tmp_path / "cs").exists() or not any((tmp_path / "cs").iterdir()), "no chainstate claims a height"
    return r, liars


def test_two_lying_peers_and_no_honest_one_fail_the_sync_and_leave_no_chainstate(cli, chain, tmp_path):
    """Two peers whose coins pass every rule but not the aggregate, and nobody else: neither peer's
    coins alone balance it, so the run is refused without naming a block invalid and writes nothing."""
    r, liars = two_liars_alone(cli, chain, tmp_path, "coin amount")
    assert all(liar.lies > 0 for liar in liars), "each liar served blocks with spent coins"
    assert "ibdkit: error:" in r.stderr and "invalid" not in r.stderr, r.stderr
    assert "did not balance" in r.stderr or "aggregates differ" in r.stderr, r.stderr


# The lies alone that make a block fail one of Core's rules, with the rule (Core's reason). The
# coins are unproven until the aggregate balances, so the block is not called invalid on their word.
FAILS_A_RULE = {"coin amount lowered": "bad-txns-in-belowout", "coin coinbase flag": "bad-txns-premature-spend-of-coinbase",
                "coin height": "bad-txns-premature-spend-of-coinbase", "coin script": "block-script-verify-flag-failed"}


@pytest.mark.parametrize("name", sorted(HOSTILE))
def test_a_lying_peer_alone_fails_the_sync_and_leaves_no_chainstate(cli, chain, tmp_path, name):
    """Regression: a lie that made a block fail a rule ended in exit 2, an invalid chain, on the
    word of the only peer's coins."""
    datadir, _, _, _, _, hints = chain
    upstream = Peer(cli, "--datadir", datadir)
    liar = proxy(upstream.port, name)
    try:
        r = swiftsync(cli, hints, [liar.port], "--chainstate", tmp_path / "cs", check=False)
    finally:
        liar.close()
        upstream.stop()
    assert r.returncode == 1, (r.returncode, r.stderr)
    assert "ibdkit: error:" in r.stderr and ("no peer is left" in r.stderr or "did not balance" in r.stderr
                                             or "aggregates differ" in r.stderr or "headers: sent an invalid header" in r.stderr), r.stderr
    if name in FAILS_A_RULE:
        assert f"its spent coins from 127.0.0.1:{liar.port} fail {FAILS_A_RULE[name]}" in r.stderr, r.stderr
        for words in ("either every peer that served the block lied or the block is invalid", "no chainstate was written",
                      "blockspentcoinsv1"):
            assert words in r.stderr, r.stderr
    assert not (tmp_path / "cs").exists() or not any((tmp_path / "cs").iterdir()), "no chainstate claims a height"


def test_every_peer_whose_coins_fail_a_rule_is_named_and_the_block_is_not_called_invalid(cli, chain, tmp_path):
    """Two peers lower the same coin's amount: each is dropped in turn, and the error names both,
    since either both lied or the block is invalid."""
    r, liars = two_liars_alone(cli, chain, tmp_path, "coin amount lowered")
    named = [f"127.0.0.1:{liar.port}" for liar in liars]
    assert "fail bad-txns-in-belowout" in r.stderr and all(a in r.stderr.split(" fail ")[0] for a in named), r.stderr
    assert "either every peer that served the block lied or the block is invalid" in r.stderr, r.stderr


# ---- kills: of a serving peer, and of the client ------------------------------------------------

def gone_after(blocks):
    """A peer that serves `blocks` blocks, then vanishes (its connection closed mid-window)."""
    sent = {"blocks": 0}

    def lie(command, payload):
        if command == "block":
            sent["blocks"] += 1
            if sent["blocks"] > blocks:
                raise OSError("the peer is gone")
        return payload
    return lie


@pytest.mark.parametrize("dbcache", ["450", "1"])
def test_a_serving_peer_that_dies_loses_its_blocks_to_the_others(cli, chain, tmp_path, dbcache):
    """One peer disappears mid-window, another `serve` is SIGKILLed during the run: the sync ends on
    the same UTXO set from the peer left, and names the peers it lost. At the smallest budget too,
    where the blocks ahead hold one largest block's worth and a batch a MiB (CacheBudget's floors):
    the heights handed back are still asked for, and the run does not stall."""
    datadir, height, tip, stats, _, hints = chain
    honest, victim, upstream = (Peer(cli, "--datadir", datadir) for _ in range(3))
    dying = LyingProxy(upstream.port, gone_after(3))  # inside its first window of 4
    killer = threading.Timer(0.3, victim.proc.kill)
    try:
        killer.start()
        got = json.loads(swiftsync(cli, hints, [dying.port, victim.port, honest.port], "--chainstate", tmp_path / "cs",
                                   "--dbcache", dbcache).stdout)
    finally:
        killer.cancel()
        dying.close()
        victim.proc.kill()
        victim.proc.wait()
        honest.stop()
        upstream.stop()
    assert_core_utxo_set(got, height, tip, stats)
    first, _, last = got["peers"]
    assert first["address"] == f"127.0.0.1:{dying.port}" and first["dropped"] and first["blocks"] <= 3, got["peers"]
    assert last["dropped"] is None


def test_a_killed_sync_reruns_to_the_same_utxo_set(cli, chain, tmp_path):
    """SIGKILL of the client at random moments: the chainstate claims nothing until SwiftSync's
    aggregate balanced (IBDKIT_UNFINISHED), and the same command run again completes on Core's set.
    The last round writes a data directory (--datadir): its index names only records its files
    hold, and the rerun's folder replays to the same set."""
    datadir, height, tip, stats, _, hints = chain
    rng = random.Random(f"{__name__}-kill")
    servers = [Peer(cli, "--datadir", datadir) for _ in range(2)]
    args = ["sync", "-q", "--json", "--network", "regtest", "--swiftsync", str(hints), "--timeout", "5", "--window", "4",
            "--assumevalid", "0"]
    for s in servers:
        args += ["--connect", f"127.0.0.1:{s.port}"]
    try:
        for round_ in range(3):
            cs = tmp_path / f"cs{round_}"
            node = tmp_path / "node"
            where = ["--datadir", str(node)] if round_ == 2 else ["--chainstate", str(cs)]
            if round_ == 2:
                cs = node / "regtest" / "chainstate"
            env = {k: v for k, v in os.environ.items() if k != "LD_PRELOAD"}  # as run_cli: the CLI links its own runtime
            proc = subprocess.Popen([str(cli), *args, *where], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
            time.sleep(rng.uniform(0.05, 1.5))
            proc.send_signal(signal.SIGKILL)
            proc.wait(timeout=60)
            if cs.exists() and any(cs.iterdir()) and not (cs / "IBDKIT_UNFINISHED").exists():
                # Killed after the chainstate was kept: it is whole, at n or beyond (the classic rest),
                # and the peers' headers lie beside it (written first: the rerun resumes from them).
                assert (cs / "ibdkit-headers.dat").is_file(), sorted(p.name for p in cs.iterdir())
                r = run_cli(cli, "utxo", "stats", "--chainstate", cs, "--json", check=False)
                assert r.returncode == 0, r.stderr
            if (node / "regtest" / "blocks" / "index").is_dir():
                r = run_cli(cli, "undo", "-q", "--json", "--datadir", node, check=False)
                assert r.returncode == 0, ("every record the index names is whole", r.stderr)
            got = json.loads(run_cli(cli, *args, *where).stdout)
            assert (got["height"], got["bestblock"], got["hash_serialized_3"]) == (height, tip, stats["hash_serialized_3"]), round_
        replayed = json.loads(run_cli(cli, "replay", "-q", "--json", "--datadir", node).stdout)
        assert (replayed["height"], replayed["hash_serialized_3"]) == (height, stats["hash_serialized_3"])
    finally:
        for s in servers:
            s.stop()

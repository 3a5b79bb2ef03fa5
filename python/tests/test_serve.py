"""`ibdkit serve`: a read-only P2P server over a Bitcoin Core data directory.

ibdkit's own `sync` (headers-first and getblocks) and btcd, a node no one here wrote, download every
block from it and end on the chain's tip with the UTXO set of the classic replay; the datadir that
Core's engine wrote stays byte-identical; a hostile peer (wrong magic, an oversized or malformed
message, silence) loses its connection while the server goes on serving the others.
"""
import json
import select
import shutil
import signal
import socket
import struct
import subprocess
import threading
import time

import pytest

from chain_model import sha256d
from conftest import import_ibdkit, import_pbk, run_cli

pbk = import_pbk()

from test_replay_datadir import FIELDS, core_datadir, framed_records, snapshot  # noqa: E402
from test_swiftsync_coins import gen_blocks  # noqa: E402
from test_sync_btcd import Btcd, btcd_bin, free_port  # noqa: E402,F401  (btcd_bin: a fixture)

REGTEST_MAGIC = bytes.fromhex("fabfb5da")


class Server:
    """`ibdkit serve` in the background on a free loopback port; stop() returns its --json counters."""

    def __init__(self, cli, *args, preexec_fn=None):
        self.proc = subprocess.Popen([str(cli), "serve", "--listen", "127.0.0.1:0", "--json", *map(str, args)],
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, preexec_fn=preexec_fn)
        line = self.proc.stdout.readline()
        if not line.startswith("listening on 127.0.0.1:"):
            self.proc.kill()
            pytest.fail(f"ibdkit serve did not listen: {line!r} {self.proc.stderr.read()[-2000:]}")
        self.port = int(line.strip().rsplit(":", 1)[1])

    def stop(self):
        self.proc.send_signal(signal.SIGINT)
        out, err = self.proc.communicate(timeout=30)
        assert self.proc.returncode == 0, err
        return json.loads(out), err


def message(command, payload, magic=REGTEST_MAGIC):
    return (magic + command.encode().ljust(12, b"\0") + struct.pack("<I", len(payload)) + sha256d(payload)[:4] + payload)


def version_payload(version=70016, user_agent=b""):
    addr = struct.pack("<Q", 0) + bytes(10) + b"\xff\xff" + bytes(4) + struct.pack(">H", 0)
    return (struct.pack("<iQq", version, 0, int(time.time())) + addr + addr + struct.pack("<Q", 7) +
            bytes([len(user_agent)]) + user_agent + struct.pack("<i", 0) + b"\x00")


class Client:
    """A bare P2P endpoint over a socket: messages out, (command, payload) in. It connects to `port`,
    or talks over `sock`, a connection a fake peer accepted."""

    def __init__(self, port=None, sock=None):
        self.sock = sock if sock is not None else socket.create_connection(("127.0.0.1", port), timeout=30)
        self.buf = bytearray()
        self.pos = 0  # what is read of buf: dropped when more arrives, so no message is copied twice

    def send(self, command, payload=b""):
        self.sock.sendall(message(command, payload))

    def _read(self, n):
        while len(self.buf) - self.pos < n:
            chunk = self.sock.recv(1 << 20)
            assert chunk, "the server closed the connection"
            del self.buf[:self.pos]
            self.pos = 0
            self.buf += chunk
        with memoryview(self.buf) as view:
            out = bytes(view[self.pos:self.pos + n])
        self.pos += n
        return out

    def receive(self):
        header = self._read(24)
        assert header[:4] == REGTEST_MAGIC
        (length,) = struct.unpack_from("<I", header, 16)
        payload = self._read(length)
        assert sha256d(payload)[:4] == header[20:24]
        return header[4:16].rstrip(b"\0").decode(), payload

    def until(self, command):
        while True:
            got, payload = self.receive()
            if got == command:
                return payload


def compact_size(data, pos):
    first = data[pos]
    if first < 0xfd:
        return first, pos + 1
    size = {0xfd: 2, 0xfe: 4, 0xff: 8}[first]
    return int.from_bytes(data[pos + 1:pos + 1 + size], "little"), pos + 1 + size


def decompress_amount(x):
    """Core's DecompressAmount."""
    if x == 0:
        return 0
    x -= 1
    e, x = x % 10, x // 10
    if e < 9:
        d, x = x % 9 + 1, x // 9
        n = x * 10 + d
    else:
        n = x + 1
    return n * 10 ** e


def reconstruct_script(data, pos):
    """BIP 455's reconstructable script: (script, next position)."""
    prefix, pos = data[pos], pos + 1
    if prefix == 0:
        n, pos = compact_size(data, pos)
        return data[pos:pos + n], pos + n
    size = {1: 20, 2: 32, 3: 32, 4: 64, 5: 20, 6: 32, 7: 20, 8: 32}[prefix]
    body, pos = data[pos:pos + size], pos + size
    script = {1: b"\x76\xa9\x14" + body + b"\x88\xac", 2: b"\x21\x02" + body + b"\xac", 3: b"\x21\x03" + body + b"\xac",
              4: b"\x41\x04" + body + b"\xac", 5: b"\xa9\x14" + body + b"\x87", 6: b"\x00\x20" + body,
              7: b"\x00\x14" + body, 8: b"\x51\x20" + body}[prefix]
    return script, pos


def decode_bspent(payload):
    """(block hash in display order, [(input index, height, coinbase, value, script)])."""
    block_hash = payload[:32][::-1].hex()
    count, pos = compact_size(payload, 32)
    coins = []
    for _ in range(count):
        index, code = struct.unpack_from("<II", payload, pos)
        script, pos = reconstruct_script(payload, pos + 8)
        amount, pos = compact_size(payload, pos)
        coins.append((index, code >> 1, bool(code & 1), decompress_amount(amount), bytes(script)))
    assert pos == len(payload), "nothing after the coins"
    return block_hash, coins


def closed_by_server(sock, timeout=10):
    """True when the server closes the connection (EOF or reset) within `timeout`."""
    deadline = time.time() + timeout
    while time.time() < deadline:
        ready, _, _ = select.select([sock], [], [], 0.5)
        if ready:
            try:
                if not sock.recv(65536):
                    return True
            except ConnectionResetError:
                return True
    return False


@pytest.fixture(scope="module")
def served(cli, tmp_path_factory):
    """A datadir Core's engine wrote (blocks stored out of height order), with its classic replay."""
    tmp = tmp_path_factory.mktemp("served")
    blocks = gen_blocks(cli, tmp, 120, seed=61)
    datadir, height, tip, _ = core_datadir(tmp, blocks, seed=17)
    expected = json.loads(run_cli(cli, "replay", "-q", "--json", "--datadir", datadir).stdout)
    return datadir, height, tip, expected


def test_serve_beside_a_running_bitcoind_says_what_it_serves(cli, served):
    """Regression: beside a running bitcoind (its datadir lock held, as bitcoind holds it) serve
    read a snapshot of the block index without a word; it now says so, with the height served,
    as replay and undo do (docs/live-node.md)."""
    import fcntl
    datadir, height, tip, _ = served
    with open(datadir / "regtest" / ".lock", "a+") as lock:
        fcntl.lockf(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        server = Server(cli, "--datadir", datadir)
        stats, err = server.stop()
    assert stats["height"] == height, stats
    assert (f"ibdkit serve: bitcoind is running: reading a snapshot of its block index; data consistent up to height {height} "
            f"({tip})") in err, err


@pytest.mark.parametrize("getblocks", [False, True])
def test_sync_from_serve_ends_on_the_replays_utxo_set(cli, served, tmp_path, getblocks):
    datadir, height, tip, expected = served
    before = snapshot(datadir)
    server = Server(cli, "--datadir", datadir)
    try:
        extra = ["--getblocks"] if getblocks else []
        got = json.loads(run_cli(cli, "sync", "-q", "--json", "--connect", f"127.0.0.1:{server.port}", "--network", "regtest",
                                 "--timeout", "20", *extra).stdout)
    finally:
        counters, err = server.stop()
    assert (got["height"], got["bestblock"]) == (height, tip)
    for k in FIELDS:
        assert got[k] == expected[k], k
    assert got["peer"]["start_height"] == height and "ibdkit" in got["peer"]["user_agent"]
    assert counters["connections"] == 1 and counters["blocks_sent"] == height and counters["height"] == height
    assert counters["dropped"] == 0
    assert "connected: /ibdkit:0.1/, protocol 70016, height 0" in err and "left" in err, err
    assert snapshot(datadir) == before, "serve never writes into the datadir"


def test_btcd_syncs_every_block_from_serve(cli, served, btcd_bin, tmp_path):  # noqa: F811
    datadir, height, tip, _ = served
    server = Server(cli, "--datadir", datadir)
    node = Btcd(btcd_bin, tmp_path / "btcd")
    try:
        node.start()
        node.rpc("addnode", f"127.0.0.1:{server.port}", "add")
        deadline = time.time() + 120
        while node.rpc("getblockcount") < height:
            assert time.time() < deadline, f"btcd reached {node.rpc('getblockcount')} of {height}: {node.output()[-3000:]}"
            time.sleep(0.5)
        assert node.rpc("getbestblockhash") == tip
    finally:
        node.stop()
        counters, _ = server.stop()
    assert counters["blocks_sent"] >= height and counters["connections"] >= 1


def test_hostile_peers_lose_their_connection_and_the_server_goes_on(cli, served, tmp_path):
    datadir, height, tip, expected = served
    server = Server(cli, "--datadir", datadir, "--peer-timeout", "2")
    try:
        cases = {
            "wrong magic": message("version", version_payload(), magic=bytes.fromhex("f9beb4d9")),
            "oversized payload": REGTEST_MAGIC + b"version".ljust(12, b"\0") + struct.pack("<I", 4_000_001) + bytes(4),
            "malformed version": message("version", b"\x01\x02"),
            "malformed getheaders": message("version", version_payload()) + message("verack", b"") +
            message("getheaders", struct.pack("<I", 70016) + b"\xfe\xff\xff\xff\xff"),
            "silent": b"",
        }
        for name, data in cases.items():
            with socket.create_connection(("127.0.0.1", server.port), timeout=10) as s:
                s.sendall(data)
                assert closed_by_server(s), name
        got = json.loads(run_cli(cli, "sync", "-q", "--json", "--connect", f"127.0.0.1:{server.port}", "--network", "regtest",
                                 "--timeout", "20").stdout)
        assert got["bestblock"] == tip and got["hash_serialized_3"] == expected["hash_serialized_3"]
    finally:
        counters, err = server.stop()
    assert counters["dropped"] == len(cases), (counters, err)
    assert err.count("dropped:") == len(cases), err


def test_a_peers_user_agent_cannot_write_into_the_servers_lines(cli, served):
    """Regression: the connection line printed the peer's user agent as it came, so a peer could
    put terminal escapes and a forged line of ours into the server's output. It is shown as Core
    shows it (SanitizeString's safe characters)."""
    datadir = served[0]
    server = Server(cli, "--datadir", datadir)
    try:
        c = Client(server.port)
        c.send("version", version_payload(user_agent=b"/evil:1.0/\x1b[2J\rpeer 10.0.0.1:8333 left\n\x07"))
        c.until("verack")
        c.send("verack")
        c.send("ping", struct.pack("<Q", 5))
        c.until("pong")  # the handshake is done on the server's side
        c.sock.close()
    finally:
        _, err = server.stop()
    lines = [line for line in err.splitlines() if "connected:" in line]
    assert lines == [lines[0]] and "connected: /evil:1.0/2Jpeer 10.0.0.1:8333 left, protocol 70016" in lines[0], err
    assert not any(ch in err for ch in "\x1b\r\x07"), repr(err)


def test_a_peers_text_cannot_write_into_syncs_lines(cli):
    """Regression: `sync` printed the peer's user agent and the text of its reject messages as they
    came. Both are shown as Core shows them: a line of ours stays one line, without escapes."""
    evil = b"\x1b[31m\nforged\x07"
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen()

    def peer():
        conn, _ = listener.accept()
        with conn:
            conn.recv(65536)  # ibdkit's version
            conn.sendall(message("version", version_payload(user_agent=b"/evil:1.0/" + evil)) + message("verack", b""))
            conn.sendall(message("reject", b"\x07headers\x10" + bytes([len(evil)]) + evil))
            time.sleep(0.5)

    thread = threading.Thread(target=peer)
    thread.start()
    try:
        r = run_cli(cli, "sync", "--connect", f"127.0.0.1:{listener.getsockname()[1]}", "--network", "regtest",
                    "--timeout", "5", check=False)
    finally:
        thread.join(timeout=30)
        listener.close()
    assert r.returncode == 1, r.stderr
    assert "peer               /evil:1.0/31mforged (protocol 70016, height 0)" in r.stdout, r.stdout
    assert "reject of 'headers' (invalid 0x10): 31mforged" in r.stderr and len(r.stderr.splitlines()) == 1, r.stderr
    assert not any(ch in r.stdout + r.stderr for ch in "\x1b\x07"), repr(r.stdout + r.stderr)


def test_a_record_that_is_not_its_block_is_never_served(cli, served, tmp_path):
    """Regression: serve sent a blk record as it was, so a record whose header is damaged went out
    under the hash the block index gives for that height. As Core's ReadBlock, serve now checks
    that the record is the block before it sends its header or its bytes, and drops the peer
    (a failure of its datadir, said on its line) instead."""
    datadir, height, _, _ = served
    damaged = tmp_path / "damaged"
    shutil.copytree(datadir, damaged)
    blocks = damaged / "regtest" / "blocks"
    name, offset, _, _ = framed_records(blocks)[50]  # not the genesis: Core writes it first
    data = bytearray((blocks / name).read_bytes())
    data[offset + 76] ^= 0x01  # the nonce: another header hash (xor.dat's obfuscation is linear)
    (blocks / name).write_bytes(bytes(data))
    server = Server(cli, "--datadir", damaged)
    try:
        r = run_cli(cli, "sync", "-q", "--connect", f"127.0.0.1:{server.port}", "--network", "regtest", "--timeout", "10",
                    check=False)
    finally:
        counters, err = server.stop()
    assert r.returncode != 0, r.stdout
    assert "dropped: cannot read the header at height" in err and "is not block" in err, err
    assert counters["blocks_sent"] == 0, counters


def test_serve_refuses_what_it_cannot_serve(cli, tmp_path):
    r = run_cli(cli, "serve", "--datadir", tmp_path / "nothing", check=False)
    assert r.returncode != 0 and "nothing" in r.stderr
    r = run_cli(cli, "serve", check=False)
    assert r.returncode == 64 and "--datadir DIR (a Bitcoin Core data directory) or --blocks-dir DIR" in r.stderr
    busy = socket.socket()
    busy.bind(("127.0.0.1", 0))
    busy.listen()
    try:
        blocks = tmp_path / "chain"
        run_cli(cli, "gen-chain", "--out", blocks, "--blocks", "3", "--target-mb", "1", "--no-progress")
        r = run_cli(cli, "serve", "--blocks-dir", blocks / "blocks", "--listen", f"127.0.0.1:{busy.getsockname()[1]}", check=False)
        assert r.returncode == 1 and "cannot listen on 127.0.0.1" in r.stderr, r.stderr
    finally:
        busy.close()


def test_bspent_holds_exactly_the_coins_of_each_blocks_rev_record(cli, served):
    """BIP 455 from `serve`: announced with BIP 434's feature to a 70017 peer; for every block the
    `bspent` decodes (by this test's own reading of BIP 455) to the coins Core's rev files hold for
    it, as ibdkit's rev-file reader gives them, without a cutoff and with one."""
    ibdkit = import_ibdkit()
    datadir, height, tip, _ = served
    expected = {}
    for block in ibdkit.read_blocks(datadir, spent_outputs=True, from_height=1):
        coins = [i for tx in block if not tx.is_coinbase for i in tx.inputs]
        expected[block.hash] = (block.height, [(n, i.height, i.coinbase, i.value, bytes(i.script_pubkey))
                                                for n, i in enumerate(coins)])
    assert len(expected) == height and sum(len(c) for _, c in expected.values()) > height, "the chain spends coins"
    server = Server(cli, "--datadir", datadir)
    try:
        c = Client(server.port)
        c.send("version", version_payload(70017))
        got, payload = c.receive()
        assert got == "version" and struct.unpack_from("<i", payload)[0] == 70017
        got, payload = c.receive()
        assert (got, payload) == ("feature", b"\x11blockspentcoinsv1\x01\x00")
        assert c.receive()[0] == "verack"
        c.send("verack")
        for block_hash, (h, coins) in expected.items():
            for cutoff in (0, max(h - 3, 1)):
                c.send("getbspent", bytes.fromhex(block_hash)[::-1] + struct.pack("<I", cutoff))
                got_hash, got = decode_bspent(c.until("bspent"))
                assert got_hash == block_hash
                assert got == [x for x in coins if cutoff == 0 or x[1] < cutoff], (h, cutoff)
        # A peer of protocol 70016 gets no feature and no answer to getbspent.
        old = Client(server.port)
        old.send("version", version_payload(70016))
        assert [old.receive()[0] for _ in range(2)] == ["version", "verack"]
        old.send("verack")
        old.send("getbspent", bytes.fromhex(tip)[::-1] + struct.pack("<I", 0))
        old.send("ping", struct.pack("<Q", 99))
        assert old.receive() == ("pong", struct.pack("<Q", 99)), "the getbspent was not answered"
    finally:
        counters, _ = server.stop()
    assert counters["spent_coins"] and counters["bspent_sent"] == 2 * height


@pytest.fixture(scope="module")
def paced_chain(cli, tmp_path_factory):
    """A generated chain of about 3 MB (blocks past the coinbase maturity), with its classic replay's result."""
    root = tmp_path_factory.mktemp("paced")
    run_cli(cli, "gen-chain", "--out", root / "g", "--blocks", "140", "--target-mb", "3", "--seed", "5", "--no-progress")
    blocks = root / "g" / "blocks"
    expected = json.loads(run_cli(cli, "replay", "-q", "--json", "--blocks-dir", blocks).stdout)
    return blocks, expected


def test_max_upload_rate_paces_every_peer_together(cli, paced_chain):
    """`--max-upload-rate 2M`: two syncs at once from one server each end on the replay's UTXO set,
    and together they take at least (nearly) the time 2 MB/s needs for every byte the server sent:
    the cap holds over all connections, not per connection. A lower bound only: how much longer
    they take depends on the machine."""
    blocks, expected = paced_chain
    rate = 2_000_000
    server = Server(cli, "--blocks-dir", blocks, "--network", "regtest", "--max-upload-rate", "2M")
    try:
        start = time.monotonic()
        syncs = [subprocess.Popen([str(cli), "sync", "-q", "--json", "--connect", f"127.0.0.1:{server.port}", "--network",
                                   "regtest", "--timeout", "60"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
                 for _ in range(2)]
        results = [p.communicate(timeout=300) for p in syncs]
        elapsed = time.monotonic() - start
    finally:
        counters, err = server.stop()
    for p, (out, sync_err) in zip(syncs, results):
        assert p.returncode == 0, sync_err
        got = json.loads(out)
        assert (got["height"], got["bestblock"]) == (expected["height"], expected["bestblock"])
        assert got["hash_serialized_3"] == expected["hash_serialized_3"]
    assert counters["connections"] == 2 and counters["blocks_sent"] == 2 * expected["height"]
    assert counters["max_upload_rate"] == rate and counters["upload_wait_seconds"] > 0, counters
    assert counters["bytes_sent"] > 5_000_000, counters
    assert elapsed >= 0.8 * counters["bytes_sent"] / rate, (elapsed, counters)


def test_max_upload_rate_takes_decimal_units_and_refuses_nonsense(cli, paced_chain):
    blocks, _ = paced_chain
    for bad in ("-1", "500", "0.5k", "2T", "10X", "1e6", "1.k", ".5M", "1,000k", "M", ""):
        r = run_cli(cli, "serve", "--blocks-dir", blocks, "--max-upload-rate", bad, check=False)
        assert r.returncode == 64, (bad, r.stderr)
        assert r.stderr.startswith(f"ibdkit: error: --max-upload-rate: expected bytes per second such as 500k, 110M or "
                                   f"1G (decimal: k = 1000), from 1k to 1T, or 0 for no limit, got '{bad}'"), (bad, r.stderr)
    for good, rate in (("0", 0), ("1k", 1000), ("1.5G", 1_500_000_000), ("110M", 110_000_000), ("2000000", 2_000_000)):
        counters, _ = Server(cli, "--blocks-dir", blocks, "--max-upload-rate", good).stop()
        assert counters["max_upload_rate"] == rate and counters["upload_wait_seconds"] == 0, (good, counters)


def test_swiftsync_from_a_capped_server_ends_on_the_replays_utxo_set(cli, served, tmp_path):
    """The cap's use case (issue #55): `sync --swiftsync` downloads blocks and their spent coins
    (BIP 455) from a server with `--max-upload-rate`, and ends on the classic replay's UTXO set no
    sooner than the cap allows for every byte the server sent (a lower bound only)."""
    datadir, height, tip, expected = served
    below = height - 15
    run_cli(cli, "replay", "-q", "--datadir", datadir, "--chainstate", tmp_path / "cs-n", "--stop-height", below, "--no-stats")
    hints = tmp_path / "chain.hints"
    run_cli(cli, "hints", "-q", "--chainstate", tmp_path / "cs-n", "--datadir", datadir, "--out", hints)
    rate = 1_000_000
    server = Server(cli, "--datadir", datadir, "--max-upload-rate", "1M")
    try:
        start = time.monotonic()
        got = json.loads(run_cli(cli, "sync", "-q", "--json", "--network", "regtest", "--swiftsync", hints, "--timeout", "30",
                                 "--assumevalid", "0", "--connect", f"127.0.0.1:{server.port}",
                                 "--chainstate", tmp_path / "cs").stdout)
        elapsed = time.monotonic() - start
    finally:
        counters, err = server.stop()
    assert got["swiftsync"]["ok"], got
    assert (got["height"], got["bestblock"]) == (height, tip)
    for k in FIELDS:
        assert got[k] == expected[k], k
    assert counters["bspent_sent"] >= below and counters["max_upload_rate"] == rate, counters
    assert counters["bytes_sent"] > 2_000_000, counters
    assert elapsed >= 0.8 * counters["bytes_sent"] / rate, (elapsed, counters)

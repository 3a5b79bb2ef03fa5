"""`ibdkit serve`: a read-only P2P server over a Bitcoin Core data directory.

ibdkit's own `sync` (headers-first and getblocks) and btcd, a node no one here wrote, download every
block from it and end on the chain's tip with the UTXO set of the classic replay; the datadir that
Core's engine wrote stays byte-identical; a hostile peer (wrong magic, an oversized or malformed
message, silence) loses its connection while the server goes on serving the others.
"""
import json
import select
import signal
import socket
import struct
import subprocess
import time

import pytest

from chain_model import sha256d
from conftest import import_pbk, run_cli

pbk = import_pbk()

from test_replay_datadir import FIELDS, core_datadir, snapshot  # noqa: E402
from test_swiftsync_coins import gen_blocks  # noqa: E402
from test_sync_btcd import Btcd, btcd_bin, free_port  # noqa: E402,F401  (btcd_bin: a fixture)

REGTEST_MAGIC = bytes.fromhex("fabfb5da")


class Server:
    """`ibdkit serve` in the background on a free loopback port; stop() returns its --json counters."""

    def __init__(self, cli, *args):
        self.proc = subprocess.Popen([str(cli), "serve", "--listen", "127.0.0.1:0", "--json", *map(str, args)],
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
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


def version_payload():
    addr = struct.pack("<Q", 0) + bytes(10) + b"\xff\xff" + bytes(4) + struct.pack(">H", 0)
    return (struct.pack("<iQq", 70016, 0, int(time.time())) + addr + addr + struct.pack("<Q", 7) + b"\x00" +
            struct.pack("<i", 0) + b"\x00")


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
        counters, _ = server.stop()
    assert (got["height"], got["bestblock"]) == (height, tip)
    for k in FIELDS:
        assert got[k] == expected[k], k
    assert got["peer"]["start_height"] == height and "ibdkit" in got["peer"]["user_agent"]
    assert counters["connections"] == 1 and counters["blocks_sent"] == height and counters["height"] == height
    assert counters["dropped"] == 0
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


def test_serve_refuses_what_it_cannot_serve(cli, tmp_path):
    r = run_cli(cli, "serve", "--datadir", tmp_path / "nothing", check=False)
    assert r.returncode != 0 and "nothing" in r.stderr
    r = run_cli(cli, "serve", check=False)
    assert r.returncode == 64 and "--datadir or --blocks-dir" in r.stderr
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

"""`ibdkit sync` from btcd, a real P2P node no one here wrote, on regtest on loopback.

btcd is installed by scripts/btcd.sh (Go module proxy, pinned version, cached in ~/go/bin), started on
127.0.0.1 with random ports in a temporary datadir, fed a chain over RPC (submitblock: btcd wipes its
regtest database at every start, so cmd/addblock cannot preload it), and stopped in every case.

The synced UTXO statistics must equal `ibdkit replay` over the same blk files (replay is checked against
Bitcoin Core's engine in test_replay_differential.py) and, for the generated chain, Core's engine itself.

Also runnable as a script: `python3 test_sync_btcd.py serve --bin DIR BLK...` (see scripts/btcd.sh serve).
"""
import base64
import json
import os
import pathlib
import shutil
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import time
import urllib.request

import pytest

from conftest import GO_INSTALL, import_pbk, missing  # noqa: E402
from chain_model import sha256d  # noqa: E402

ROOT = pathlib.Path(__file__).resolve().parents[2]
REGTEST_MAGIC = bytes.fromhex("fabfb5da")
REGTEST_GENESIS = "0f9188f13cb7b2c71f2a335e3a4fc328bf5beb436012afca590b1a11466e2206"
STATS = ("height", "bestblock", "txouts", "transactions", "bogosize", "total_amount_sat", "hash_serialized_3")


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def read_blocks(path):
    """Blocks of a blk file (magic fabfb5da + LE32 size + block; xor.dat beside it honoured)."""
    path = pathlib.Path(path)
    data = path.read_bytes()
    key_file = path.parent / "xor.dat"
    if key_file.exists():
        key = key_file.read_bytes()
        if any(key):
            data = bytes(b ^ key[i % len(key)] for i, b in enumerate(data))
    out, pos = [], 0
    while pos + 8 <= len(data):
        if data[pos:pos + 4] != REGTEST_MAGIC:
            pos += 1
            continue
        (size,) = struct.unpack_from("<I", data, pos + 4)
        out.append(data[pos + 8:pos + 8 + size])
        pos += 8 + size
    return out


class Btcd:
    """One btcd process on regtest, loopback only, RPC without TLS on loopback with random credentials."""

    def __init__(self, bin_dir, workdir):
        self.bin = pathlib.Path(bin_dir) / "btcd"
        self.dir = pathlib.Path(workdir)
        self.proc = None
        self.p2p_port = self.rpc_port = None
        self.user, self.password = "ibdkit", base64.b16encode(os.urandom(12)).decode()

    def start(self, timeout=30):
        self.dir.mkdir(parents=True, exist_ok=True)
        conf = self.dir / "btcd.conf"
        conf.write_text("")  # keep btcd from writing ~/.btcd/btcd.conf
        self.p2p_port, self.rpc_port = free_port(), free_port()
        args = [str(self.bin), "--regtest", "-C", str(conf), "-b", str(self.dir / "data"), "--logdir", str(self.dir / "logs"),
                f"--listen=127.0.0.1:{self.p2p_port}", f"--rpclisten=127.0.0.1:{self.rpc_port}", "--notls",
                f"--rpcuser={self.user}", f"--rpcpass={self.password}", "--nodnsseed", "--nocfilters", "--nobanning"]
        self.log = open(self.dir / "btcd.out", "wb")
        self.proc = subprocess.Popen(args, stdout=self.log, stderr=subprocess.STDOUT, start_new_session=True)
        deadline = time.time() + timeout
        while True:
            if self.proc.poll() is not None:
                raise RuntimeError(f"btcd exited with {self.proc.returncode}: {self.output()[-2000:]}")
            try:
                self.rpc("getblockcount")
                return self
            except OSError:
                if time.time() > deadline:
                    raise RuntimeError("btcd did not answer RPC within %d s: %s" % (timeout, self.output()[-2000:]))
                time.sleep(0.2)

    def output(self):
        try:
            return (self.dir / "btcd.out").read_text(errors="replace")
        except OSError:
            return ""

    def rpc(self, method, *params, timeout=60):
        body = json.dumps({"jsonrpc": "1.0", "id": 1, "method": method, "params": list(params)}).encode()
        req = urllib.request.Request(f"http://127.0.0.1:{self.rpc_port}/", data=body, headers={
            "Content-Type": "application/json",
            "Authorization": "Basic " + base64.b64encode(f"{self.user}:{self.password}".encode()).decode()})
        try:
            with urllib.request.urlopen(req, timeout=timeout) as r:
                reply = json.loads(r.read())
        except urllib.error.HTTPError as e:  # btcd answers JSON-RPC errors with HTTP 500
            reply = json.loads(e.read())
        if reply.get("error"):
            raise RuntimeError(f"btcd {method}: {reply['error']}")
        return reply["result"]

    def submit(self, blk_files):
        n = 0
        for f in blk_files:
            for block in read_blocks(f):
                if n == 0 and sha256d(block[:80])[::-1].hex() == REGTEST_GENESIS:
                    continue
                result = self.rpc("submitblock", block.hex())
                if result is not None:
                    raise RuntimeError(f"btcd rejected block {n}: {result}")
                n += 1
        return self.rpc("getblockcount")

    def stop(self):
        if self.proc is None:
            return
        if self.proc.poll() is None:
            try:
                os.killpg(self.proc.pid, signal.SIGINT)
                self.proc.wait(timeout=10)
            except (subprocess.TimeoutExpired, ProcessLookupError):
                try:
                    os.killpg(self.proc.pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
                self.proc.wait(timeout=10)
        self.log.close()
        self.proc = None


# ---- fixtures ------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def btcd_bin():
    try:
        r = subprocess.run([str(ROOT / "scripts" / "btcd.sh"), "install"], capture_output=True, text=True, timeout=900)
    except subprocess.TimeoutExpired:
        missing("installing btcd took more than 15 minutes", f"{GO_INSTALL} and check the Go module proxy is reachable")
    if r.returncode == 3:  # btcd.sh: no Go toolchain
        missing("no Go toolchain to build btcd", GO_INSTALL)
    if r.returncode != 0:
        missing(f"btcd cannot be installed here (scripts/btcd.sh install exit {r.returncode}): {r.stderr.strip()[-500:]}",
                f"{GO_INSTALL} and check the Go module proxy is reachable")
    return pathlib.Path(r.stdout.strip().splitlines()[-1])


@pytest.fixture(scope="module")
def gen_chain(cli, tmp_path_factory):
    """A generated regtest chain whose tip is stamped now, so btcd answers getheaders."""
    out = tmp_path_factory.mktemp("genchain")
    r = subprocess.run([str(cli), "gen-chain", "--out", str(out), "--blocks", "600", "--target-mb", "6", "--seed", "7",
                        "--no-progress", "--json"], capture_output=True, text=True)
    if r.returncode != 0:
        pytest.fail(f"ibdkit gen-chain failed: {r.stderr.strip()[-300:]}")
    return out / "blocks" / "blk00000.dat"


@pytest.fixture(scope="module")
def btcd_gen(btcd_bin, gen_chain, tmp_path_factory):
    node = Btcd(btcd_bin, tmp_path_factory.mktemp("btcd_gen"))
    try:
        node.start()
        assert node.submit([gen_chain]) == 600
        yield node
    finally:
        node.stop()


def sync(cli, node, *args, check=True, timeout=120):
    r = subprocess.run([str(cli), "sync", "-q", "--json", "--connect", f"127.0.0.1:{node.p2p_port}", "--network", "regtest",
                        *map(str, args)], capture_output=True, text=True, timeout=timeout)
    if check:
        assert r.returncode == 0, r.stderr
    return r, (json.loads(r.stdout) if r.stdout.strip() else None)


def replay(cli, blk, *args):
    r = subprocess.run([str(cli), "replay", "-q", "--json", "--blocks-dir", str(blk), *map(str, args)],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)


# ---- tests ---------------------------------------------------------------------------------------

def test_headers_first_sync_matches_replay_and_core(cli, btcd_gen, gen_chain, tmp_path):
    _, got = sync(cli, btcd_gen)
    assert got["mode"] == "headers"
    assert got["peer"]["user_agent"].startswith("/btcwire:") and "btcd" in got["peer"]["user_agent"]
    assert got["header_height"] == 600 and got["blocks_connected"] == 600
    want = replay(cli, gen_chain)
    for k in STATS:
        assert got[k] == want[k], k
    pbk = import_pbk()
    sys.path.insert(0, str(pathlib.Path(__file__).parent))
    from test_coins_differential import build_chainstate, expected_stats
    height, tip, utxo = build_chainstate(tmp_path / "core", pbk.ChainType.REGTEST, [gen_chain])
    exp = expected_stats(utxo)
    assert (got["height"], got["bestblock"]) == (height, tip)
    for k in ("txouts", "transactions", "bogosize", "total_amount_sat", "hash_serialized_3"):
        assert got[k] == exp[k], k


def test_getblocks_sync_and_resume(cli, btcd_gen, gen_chain, tmp_path):
    """The getblocks/inv protocol over 600 blocks (two batches of 500 hashes and btcd's continue-inv),
    stopped at 250 flushing after every block (--dbcache 0), then resumed on the same chainstate."""
    cs = tmp_path / "cs"
    _, first = sync(cli, btcd_gen, "--getblocks", "--chainstate", cs, "--stop-height", 250, "--dbcache", 0, "--policy", "plain")
    assert first["mode"] == "getblocks" and first["height"] == 250 and first["flushes"] > 1
    _, second = sync(cli, btcd_gen, "--getblocks", "--chainstate", cs, "--policy", "zero-after-free")
    assert second["start_height"] == 251 and second["height"] == 600
    want = replay(cli, gen_chain)
    for k in STATS:
        assert second[k] == want[k], k
    # Resume again: nothing left to do, same statistics.
    _, third = sync(cli, btcd_gen, "--chainstate", cs)
    assert third["blocks_connected"] == 0 and third["hash_serialized_3"] == want["hash_serialized_3"]


def test_sync_height_export_equals_replay_height_export(cli, btcd_gen, gen_chain, tmp_path):
    """`sync --height H --dump csv` (the shared --height path, docs/utxo-export.md) writes the same
    file as `replay --height H --dump csv` over the same chain, and the chainstate is not kept."""
    got = tmp_path / "sync.csv"
    r, res = sync(cli, btcd_gen, "--height", 300, "--dump", "csv", "--out", got)
    assert res["height"] == 300 and "equal to the chainstate's" in r.stderr
    want = tmp_path / "replay.csv"
    rr = subprocess.run([str(cli), "replay", "-q", "--blocks-dir", str(gen_chain), "--height", "300", "--dump", "csv",
                         "--out", str(want)], capture_output=True, text=True)
    assert rr.returncode == 0, rr.stderr
    assert got.read_bytes() == want.read_bytes()


def test_old_chain_falls_back_to_getblocks(cli, btcd_bin, shared, tmp_path):
    """Core's regtest test chain has 2011-era timestamps: btcd ignores getheaders, sync uses getblocks."""
    blk = shared / "regtest" / "core_kernel_blocks_1-206.blk"
    node = Btcd(btcd_bin, tmp_path / "btcd")
    try:
        node.start()
        assert node.submit([blk]) == 206
        _, got = sync(cli, node, "--headers-wait", 1.5)
    finally:
        node.stop()
    assert got["mode"] == "getblocks" and got["height"] == 206
    want = replay(cli, blk)
    for k in STATS:
        assert got[k] == want[k], k


def test_unreachable_peer_fails_cleanly(cli, tmp_path):
    port = free_port()  # nothing listens there
    r = subprocess.run([str(cli), "sync", "-q", "--connect", f"127.0.0.1:{port}", "--timeout", "3"],
                       capture_output=True, text=True, timeout=30)
    assert r.returncode == 1
    assert "cannot connect" in r.stderr


# ---- `serve`: a btcd with a chain, for measurements by hand ------------------------------------------

def main(argv):
    import argparse
    ap = argparse.ArgumentParser(prog="btcd.sh serve")
    ap.add_argument("cmd", choices=["serve"])
    ap.add_argument("--bin", required=True)
    ap.add_argument("blk", nargs="+")
    a = ap.parse_args(argv)

    def leave(*_):
        raise KeyboardInterrupt

    signal.signal(signal.SIGINT, leave)  # also when started in the background (SIGINT ignored there)
    signal.signal(signal.SIGTERM, leave)
    work = pathlib.Path(tempfile.mkdtemp(prefix="ibdkit-btcd-"))
    node = Btcd(a.bin, work)
    try:
        node.start()
        t0 = time.time()
        height = node.submit(a.blk)
        print(f"btcd holds {height} blocks (fed in {time.time() - t0:.1f} s); P2P on 127.0.0.1:{node.p2p_port}; "
              f"Ctrl-C to stop", flush=True)
        print(f"  ibdkit sync --connect 127.0.0.1:{node.p2p_port} --network regtest", flush=True)
        while node.proc.poll() is None:
            time.sleep(1)
    except KeyboardInterrupt:
        pass
    finally:
        node.stop()
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main(sys.argv[1:])

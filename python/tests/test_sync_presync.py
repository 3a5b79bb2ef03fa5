"""Core's headers presync over P2P (issue #77): a hostile regtest peer floods `ibdkit sync` with
valid low-work headers forking from the genesis (each linked to the last, nBits 0x207fffff with a
nonce that meets the target, one second apart from the genesis time on: the median-time-past rule
holds and none is in the future).

- 2,000,000 headers (1,000 full answers of 2,000, then an empty one) under a `--minimum-chain-work`
  above what they reach: the classic sync and SwiftSync refuse the peer in the minimum's words,
  exit 1, write none of it (no headers file, no block index entry), and their peak RSS (from the
  kernel) grows by less than 64 MiB over the same run against a peer whose one short answer ends
  below the minimum (the presync holds one bit per 275 headers, not the headers);
- the same peer, its flood stopping short of the minimum, beside an honest `ibdkit serve` whose
  chain has exactly the minimum work: the sync (two peers, classic and SwiftSync) completes on
  Core's UTXO set and stores the honest chain's headers alone. On regtest every header has the same
  work, so a flood below the honest chain's work is shorter than the honest chain: the honest chain
  here is 2,300 blocks and the flood one full answer and a short one (2,100 headers);
- a peer whose chain reaches the minimum after presync is redownloaded and stored as the peer sent
  it; one that sends another second half on the redownload is caught by a commitment, dropped, and
  nothing of the other half is stored.

On regtest every block's proof is 2, so a chain to height h has 2 * (h + 1) of work.
"""
import hashlib
import json
import os
import socket
import struct
import subprocess
import sys
import threading

import pytest

from chain_model import compact_size, read_compact_size, sha256d
from conftest import import_pbk, run_cli
from test_serve import Client, message, version_payload
from test_swiftsync_coins import START, records

pbk = import_pbk()

from test_replay_datadir import core_datadir  # noqa: E402
from test_sync_swiftsync import Peer  # noqa: E402

GENESIS = bytes.fromhex("0f9188f13cb7b2c71f2a335e3a4fc328bf5beb436012afca590b1a11466e2206")[::-1]  # as in headers
GENESIS_TIME = 1296688602
PER_ANSWER = 2000  # Core's MAX_HEADERS_RESULTS
FLOOD_ANSWERS = 1000
RSS_MARGIN_KIB = 64 * 1024
LONG = 2300  # the honest chain beside a flood: longer than it
BELOW = "less work than the minimum chain work"


def work_of(height):
    return 2 * (height + 1)


def mine(count, prev, height, merkle=b"\x11" * 32):
    """`count` valid regtest headers on `prev` (at height - 1), timed genesis + height seconds:
    a list of 80-byte headers and the hash of the last. A hash whose top byte is below 0x7f meets
    0x207fffff's target (0x7fffff << 208): about two tries each."""
    sha, pack = hashlib.sha256, struct.Struct("<I32s32sIII").pack
    out = []
    for i in range(count):
        nonce = 0
        while True:
            header = pack(4, prev, merkle, GENESIS_TIME + height + i, 0x207fffff, nonce)
            digest = sha(sha(header).digest()).digest()
            if digest[31] < 0x7f:
                break
            nonce += 1
        out.append(header)
        prev = digest
    return out, prev


class Chain:
    """`count` headers from the genesis (or from `fork`: a Chain and the height to go on from), as a
    peer answers them: 80 bytes each in `raw`, and the height of a header's hash in `heights` (every
    header's for a chain of at most 100,000, else every PER_ANSWER'th: where a flood is asked on)."""

    def __init__(self, count, merkle=b"\x11" * 32, fork=None):
        base, at = fork if fork else (None, 0)
        self.heights = {h: k for h, k in base.heights.items() if k <= at} if base else {GENESIS: 0}
        parts, prev = ([base.raw[:80 * at]], base.hash_at(at)) if base else ([], GENESIS)
        every = count + at <= 100_000
        for height in range(at + 1, count + 1, PER_ANSWER):
            headers, prev = mine(min(PER_ANSWER, count + 1 - height), prev, height, merkle)
            self.heights.update({sha256d(h): height + k for k, h in enumerate(headers)} if every else {})
            self.heights[prev] = height + len(headers) - 1
            parts.append(b"".join(headers))
        self.raw = b"".join(parts)
        self.height = len(self.raw) // 80

    def hash_at(self, height):
        return sha256d(self.raw[80 * (height - 1):80 * height]) if height else GENESIS

    def answer(self, height):
        """The `headers` payload after `height`: up to PER_ANSWER headers."""
        end = min(self.height, height + PER_ANSWER)
        raw = self.raw
        return compact_size(end - height) + b"".join(raw[80 * j:80 * j + 80] + b"\0" for j in range(height, end))


class HeaderPeer:
    """A regtest peer that holds only headers: it answers the handshake, ping and getheaders (from
    the first locator hash it knows: the answer after it, the first answer otherwise, an empty one
    past its tip) and nothing else. `passes[n]` answers the n-th walk from the genesis (the last
    one every later walk), so a peer can answer a redownload with another chain."""

    def __init__(self, *passes):
        self.passes, self.walks, self.served = passes, 0, 0
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen()
        self.port = self.sock.getsockname()[1]
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self):
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            threading.Thread(target=self._serve, args=(Client(sock=conn),), daemon=True).start()

    def _serve(self, peer):
        try:
            while True:
                command, payload = peer.receive()
                if command == "version":
                    peer.sock.sendall(message("version", version_payload()) + message("verack", b""))
                elif command == "ping":
                    peer.send("pong", payload)
                elif command == "getheaders":
                    peer.sock.sendall(message("headers", self._answer(payload)))
        except (AssertionError, OSError):
            pass
        finally:
            peer.sock.close()

    def _answer(self, getheaders):
        """From the first locator hash the chain holds (Core's FindForkInGlobalIndex)."""
        count, pos = read_compact_size(getheaders, 4)
        locator = [getheaders[pos + 32 * i:pos + 32 * i + 32] for i in range(count)]
        chain = self.passes[max(min(self.walks, len(self.passes)) - 1, 0)]
        height = next((chain.heights[h] for h in locator if h in chain.heights), 0)
        if height == 0:  # a walk from the genesis
            self.walks += 1
            chain = self.passes[min(self.walks, len(self.passes)) - 1]
        self.served += 1
        return chain.answer(height)

    def close(self):
        self.sock.close()


@pytest.fixture(scope="session")
def flood():
    """2,000,000 low-work headers (mined once a session: about 10-20 s), a short answer of 50."""
    return Chain(PER_ANSWER * FLOOD_ANSWERS), Chain(50)


RSS_OF_CHILD = ("import resource, subprocess, sys\n"
                "rc = subprocess.call(sys.argv[2:])\n"
                "open(sys.argv[1], 'w').write(str(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss))\n"
                "sys.exit(rc)")


def measured_sync(cli, tmp_path, name, ports, *extra):
    """`ibdkit sync` against the ports, through a wrapper that reports its peak RSS (KiB, the
    kernel's ru_maxrss): (CompletedProcess, KiB)."""
    args = ["sync", "-q", "--json", "--network", "regtest", "--timeout", "5", "--window", "4", *extra]
    for p in ports:
        args += ["--connect", f"127.0.0.1:{p}"]
    rss = tmp_path / f"{name}.rss"
    env = {k: v for k, v in os.environ.items() if k != "LD_PRELOAD"}  # as run_cli: the CLI links its own runtime
    got = subprocess.run([sys.executable, "-c", RSS_OF_CHILD, str(rss), str(cli), *map(str, args)], capture_output=True,
                         text=True, env=env)
    return got, int(rss.read_text())


def nothing_written(where, chain):
    """Neither the headers file nor Core's block index under `where` holds a header of `chain`."""
    marks = [chain.raw[:80], chain.raw[-80:]]
    hashes = [sha256d(m) for m in marks]
    for path in where.rglob("*") if where.exists() else ():
        if path.name == "ibdkit-headers.dat":
            assert path.stat().st_size == 0, (path, path.stat().st_size)
        elif path.is_file():
            data = path.read_bytes()
            assert not any(h in data or h[::-1] in data for h in hashes), f"{path} holds a flood header's hash"
    index = where / "regtest" / "blocks" / "index"
    if index.is_dir() and (where / "regtest" / "chainstate").is_dir():
        ctx = pbk.make_context(pbk.ChainType.REGTEST)
        opts = pbk.ChainstateManagerOptions(ctx, str(where / "regtest"), str(where / "regtest" / "blocks"))
        opts.set_worker_threads_num(1)
        cm = pbk.ChainstateManager(opts)
        active = cm.get_active_chain()
        assert active.height == 0, active.height
        del active, cm


@pytest.fixture(scope="module")
def long_chain(cli, tmp_path_factory):
    """An honest chain longer than the flood beside it (LONG blocks, small ones: Core's statistics of
    them in Python take most of this test's time), Core's datadir of it, its
    statistics and hints for its tip."""
    tmp = tmp_path_factory.mktemp("presync-long")
    run_cli(cli, "gen-chain", "--out", tmp / "chain", "--blocks", str(LONG), "--target-mb", "0.3", "--seed", "31",
            "--start-time", str(START), "--no-progress", "--json")
    blocks = records(tmp / "chain" / "blocks")[1:]  # Core's engine writes its own genesis
    datadir, height, tip, stats = core_datadir(tmp, blocks, seed=3)
    hints = tmp / "tip.hints"
    run_cli(cli, "hints", "-q", "--datadir", datadir, "--out", hints)
    return datadir, height, tip, stats, hints, b"".join(b[:80] for b in blocks)


@pytest.mark.parametrize("swift", [False, True], ids=["classic", "swiftsync"])
def test_a_flood_below_the_minimum_is_refused_in_bounded_memory(cli, long_chain, flood, tmp_path, swift):
    long, short = flood
    hints = long_chain[4]
    minimum = hex(work_of(long.height) + 1)
    where = "--datadir" if swift else "--chainstate"
    extra = ["--minimum-chain-work", minimum, *(["--swiftsync", hints] if swift else [])]
    runs = {}
    for name, peer_chain in (("short", short), ("flood", long)):
        peer = HeaderPeer(peer_chain)
        try:
            runs[name] = measured_sync(cli, tmp_path, name, [peer.port], where, tmp_path / name, *extra), peer.served
        finally:
            peer.close()
    (flooded, rss), served = runs["flood"]
    (baseline, base_rss), _ = runs["short"]
    print(f"peak RSS: {base_rss} KiB against a short answer, {rss} KiB against {long.height} headers ({served} answers)")
    assert served == FLOOD_ANSWERS + 1, "every answer was asked for, the empty one last"
    for got in (baseline, flooded):
        assert got.returncode == 1, got.stderr
        assert BELOW in got.stdout + got.stderr, got.stderr
        assert f"{work_of(long.height) + 1:064x}" in got.stdout + got.stderr, got.stderr
    said = flooded.stdout + flooded.stderr
    assert f"height {long.height}" in said, said
    assert "headers presync" in said, said
    assert rss - base_rss < RSS_MARGIN_KIB, (rss, base_rss)
    nothing_written(tmp_path / "flood", long)


@pytest.mark.parametrize("swift", [False, True], ids=["classic", "swiftsync"])
def test_a_flood_short_of_the_minimum_beside_an_honest_peer_stores_nothing(cli, long_chain, tmp_path, swift):
    datadir, height, tip, stats, hints, honest_headers = long_chain
    flood = Chain(PER_ANSWER + 100)
    assert flood.height < height, "on regtest, less work is fewer headers"
    liar, honest = HeaderPeer(flood), Peer(cli, "--datadir", datadir)
    try:
        got, _ = measured_sync(cli, tmp_path, "two", [liar.port, honest.port], "--chainstate", tmp_path / "cs",
                               "--minimum-chain-work", hex(work_of(height)), "--assumevalid", "0",
                               *(["--swiftsync", hints] if swift else []))
    finally:
        liar.close()
        honest.stop()
    assert got.returncode == 0, got.stderr
    result = json.loads(got.stdout)
    assert (result["height"], result["bestblock"], result["hash_serialized_3"]) == (height, tip, stats["hash_serialized_3"])
    # SwiftSync lists among its peers only those that serve spent coins: the liar's drop is a note.
    said = [n for n in result["notes"] if n.startswith(f"127.0.0.1:{liar.port}: headers: sent a header chain (height {flood.height}")]
    assert len(said) == 1 and BELOW in said[0] and "none of it kept (headers presync)" in said[0], result["notes"]
    assert [p["address"] for p in result["peers"] if p["dropped"]] == ([] if swift else [f"127.0.0.1:{liar.port}"]), result["peers"]
    stored = (tmp_path / "cs" / "ibdkit-headers.dat").read_bytes()
    assert len(stored) == 80 * height and stored == honest_headers, "the honest chain's headers and nothing else"


REDOWNLOADED = 6 * PER_ANSWER  # 12,000 headers: more than a redownload buffer (7,017) on top of a commitment


@pytest.fixture(scope="module")
def presynced():
    """A chain of 12,000 headers, and one with another second half (from height 6,001)."""
    honest = Chain(REDOWNLOADED)
    return honest, Chain(REDOWNLOADED, merkle=b"\x22" * 32, fork=(honest, REDOWNLOADED // 2))


def test_a_chain_with_the_minimum_is_stored_as_redownloaded(cli, presynced, tmp_path):
    honest, _ = presynced
    peer = HeaderPeer(honest)
    try:
        got, _ = measured_sync(cli, tmp_path, "redownload", [peer.port], "--chainstate", tmp_path / "cs",
                               "--minimum-chain-work", hex(work_of(honest.height)))
    finally:
        peer.close()
    assert peer.walks == 2, "presynced, then redownloaded from the genesis"
    assert got.returncode == 1, got.stderr  # the peer has no blocks
    assert BELOW not in got.stdout + got.stderr, got.stderr
    stored = (tmp_path / "cs" / "ibdkit-headers.dat").read_bytes()
    assert stored == honest.raw, (len(stored), honest.height)


def test_another_chain_on_the_redownload_is_caught_by_a_commitment(cli, presynced, tmp_path):
    honest, other = presynced
    peer = HeaderPeer(honest, other)
    try:
        got, _ = measured_sync(cli, tmp_path, "lie", [peer.port], "--chainstate", tmp_path / "cs",
                               "--minimum-chain-work", hex(work_of(honest.height)))
    finally:
        peer.close()
    assert got.returncode == 1, got.stderr
    assert "commitment" in got.stdout + got.stderr, got.stderr
    file = tmp_path / "cs" / "ibdkit-headers.dat"
    stored = file.read_bytes() if file.exists() else b""
    half = honest.raw[:80 * (REDOWNLOADED // 2)]
    assert len(stored) < len(half) and half.startswith(stored), "only a checked part of the common first half"

"""Reading the datadir of a running node (docs/live-node.md).

There is no bitcoind binary to run here, so the live node is Bitcoin Core's own engine
(py-bitcoinkernel) in a separate process, the *writer*: it holds the network datadir's `.lock` as
bitcoind does (an fcntl lock, which is what bitcoind takes), and connects a generated chain in
rounds: each round opens a ChainstateManager on the datadir (LevelDB LOCKs of blocks/index and
chainstate held, its logs replayed and compacted on open), processes a few blocks (blk and rev files
appended) and closes it (the block index and the chainstate flushed, the latter under the H/B
protocol). Meanwhile ibdkit reads the datadir — `replay --datadir`, `undo`, `utxo stats` on the
chainstate, and the Python module — and each result must be consistent up to the height it reports:
the UTXO hash that of ibdkit's own replay of the generated chain up to that height (which other
tests hold equal to Core's), every block and undo record the generated chain's.

Why the byte-identity check is sound: while the writer runs, a file that changed between two
snapshots of the datadir may be the writer's doing, so a diff taken then proves nothing. In the
*frozen* rounds the writer is stopped (SIGSTOP) at whatever point it has reached — its locks held,
possibly mid-flush — the datadir is fingerprinted (every path with its size, SHA-256, mtime and
link count), ibdkit reads it, and the fingerprint is taken again before the writer continues
(SIGCONT): the writer cannot have changed anything in between, so any difference, new file or
lock-file change would be ibdkit's. The *running* rounds read while the writer works, for the
consistency of what is read; the writer must still finish the whole chain afterwards."""
import hashlib
import json
import os
import pickle
import signal
import subprocess
import sys
import textwrap
import time

from conftest import import_pbk, run_cli

pbk = import_pbk()

from test_replay_datadir import block_hash, records  # noqa: E402

START = 1_700_000_000
BLOCKS = 180
PER_ROUND = 12
FLUSHING = "bitcoind is writing its chainstate (flush in progress): try again in a moment"

WRITER = textwrap.dedent("""
    import fcntl, os, pickle, sys, time
    import pbk
    net, blocks_file, per_round, progress = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
    blocks = pickle.load(open(blocks_file, "rb"))
    os.makedirs(net, exist_ok=True)
    lock = open(os.path.join(net, ".lock"), "a+")
    fcntl.lockf(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)  # bitcoind's datadir lock (fcntl F_SETLK)
    done = 0
    while done < len(blocks):
        ctx = pbk.make_context(pbk.ChainType.REGTEST)
        opts = pbk.ChainstateManagerOptions(ctx, net, os.path.join(net, "blocks"))
        opts.set_worker_threads_num(1)
        cm = pbk.ChainstateManager(opts)
        for raw in blocks[done:done + per_round]:
            cm.process_block(pbk.Block(raw))
        done = min(done + per_round, len(blocks))
        chain = cm.get_active_chain()
        assert chain.height == done, (chain.height, done)
        del chain
        del cm  # flushes the block index and the chainstate, and releases their LevelDB locks
        with open(progress, "a") as f:
            f.write(f"{done}\\n")
        time.sleep(0.2)
    # Like bitcoind, it stays up (its lock held) after catching up, until told to stop.
    while not os.path.exists(progress + ".stop"):
        time.sleep(0.05)
""")


def fingerprint(root):
    out = {}
    for p in sorted(root.rglob("*")):
        st = p.lstat()
        digest = hashlib.sha256(p.read_bytes()).hexdigest() if p.is_file() else "dir"
        out[str(p.relative_to(root))] = (st.st_size, digest, st.st_mtime_ns, st.st_nlink)
    return out


class Reference:
    """ibdkit's replay of the generated chain (bare blk files) up to a height, memoized."""

    def __init__(self, cli, chain_blocks):
        self.cli, self.chain_blocks, self.hashes = cli, chain_blocks, {}

    def __call__(self, height):
        if height not in self.hashes:
            r = run_cli(self.cli, "replay", "-q", "--json", "--blocks-dir", self.chain_blocks, "--stop-height", height)
            got = json.loads(r.stdout)
            assert got["height"] == height
            self.hashes[height] = got["hash_serialized_3"]
        return self.hashes[height]


def read_all(cli, net, hashes, reference, tmp_path):
    """ibdkit's reads of the live datadir, each checked for consistency. Returns the heights seen."""
    import ibdkit

    seen = {}
    r = run_cli(cli, "replay", "-q", "--json", "--datadir", net.parent, check=False)
    assert r.returncode == 0, r.stderr
    got = json.loads(r.stdout)
    h = got["live_snapshot_height"]
    assert h is not None and 0 <= h <= BLOCKS, got
    assert got["height"] == h and got["bestblock"] == hashes[h]
    assert f"bitcoind is running: reading a snapshot of its block index; data consistent up to height {h} ({hashes[h]})" in r.stderr
    if h > 0:
        assert got["hash_serialized_3"] == reference(h), f"the datadir read at height {h} is not the chain's"
    seen["replay"] = h

    r = run_cli(cli, "undo", "--json", "--datadir", net.parent, check=False)
    assert r.returncode == 0, r.stderr
    undo = json.loads(r.stdout)["blocks"]
    assert [b["height"] for b in undo] == list(range(1, len(undo) + 1))
    assert all(b["hash"] == hashes[b["height"]] for b in undo), "every undo record is the chain block's"
    if undo:
        assert "data consistent up to height %d" % undo[-1]["height"] in r.stderr
    seen["undo"] = len(undo)

    r = run_cli(cli, "utxo", "stats", "--json", "--chainstate", net / "chainstate", check=False)
    if r.returncode == 0:
        stats = json.loads(r.stdout)
        tip = hashes.index(stats["bestblock"])
        if tip > 0:
            assert stats["hash_serialized_3"] == reference(tip), f"the chainstate read at height {tip} is not the chain's"
        assert "reading a snapshot of its chainstate" in r.stderr
        seen["chainstate"] = tip
    else:
        assert FLUSHING in r.stderr, r.stderr
        seen["chainstate"] = None

    out = tmp_path / "live_blocks.csv"
    r = run_cli(cli, "export", "blocks", "--datadir", net.parent, "--format", "csv", "--out", out, "--quiet", check=False)
    assert r.returncode == 0, r.stderr
    rows = out.read_text().splitlines()[1:]
    assert [row.split(",")[1] for row in rows] == hashes[:len(rows)], "blocks with spent outputs are the chain's"
    seen["export"] = len(rows) - 1

    reader = ibdkit.read_blocks(str(net.parent))
    got_hashes = [b.hash for b in reader]
    assert reader.scan["live_snapshot_height"] == len(got_hashes) - 1
    assert got_hashes == hashes[:len(got_hashes)]
    return seen


def test_reading_a_running_nodes_datadir(cli, tmp_path):
    gen = json.loads(run_cli(cli, "gen-chain", "--out", tmp_path / "chain", "--blocks", str(BLOCKS), "--target-mb", "1",
                             "--seed", "38", "--start-time", str(START), "--no-progress", "--json").stdout)
    blocks = records(tmp_path / "chain" / "blocks")
    hashes = [block_hash(b) for b in blocks]
    if hashes[0] != "0f9188f13cb7b2c71f2a335e3a4fc328bf5beb436012afca590b1a11466e2206":
        hashes.insert(0, "0f9188f13cb7b2c71f2a335e3a4fc328bf5beb436012afca590b1a11466e2206")
    else:
        blocks = blocks[1:]
    assert len(blocks) == BLOCKS and hashes[-1] == gen["tip_hash"]
    reference = Reference(cli, tmp_path / "chain" / "blocks")

    (tmp_path / "blocks.pickle").write_bytes(pickle.dumps(blocks))
    (tmp_path / "writer.py").write_text(WRITER)
    net = tmp_path / "core" / "regtest"
    progress = tmp_path / "progress"
    writer = subprocess.Popen([sys.executable, tmp_path / "writer.py", net, tmp_path / "blocks.pickle", str(PER_ROUND), progress],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)

    def written():
        return int(progress.read_text().split()[-1]) if progress.exists() and progress.read_text().split() else 0

    frozen_rounds = running_rounds = 0
    heights = []
    try:
        deadline = time.time() + 120
        while written() == 0:
            assert writer.poll() is None and time.time() < deadline, "the writer's first round"
            time.sleep(0.05)
        caught_up = False
        while not caught_up:
            caught_up = written() == BLOCKS  # one more read after the writer caught up (still running)
            assert writer.poll() is None, "the writer stopped"
            frozen = (frozen_rounds + running_rounds) % 2 == 1
            if frozen:
                writer.send_signal(signal.SIGSTOP)
                time.sleep(0.05)
                before = fingerprint(net)
            seen = read_all(cli, net, hashes, reference, tmp_path)
            if frozen:
                after = fingerprint(net)
                writer.send_signal(signal.SIGCONT)
                changed = sorted(k for k in set(before) | set(after) if before.get(k) != after.get(k))
                assert not changed, f"ibdkit changed the datadir: {changed}"
                frozen_rounds += 1
            else:
                running_rounds += 1
            heights.append(seen["replay"])
        assert writer.poll() is None, "the writer kept running while ibdkit read"
        progress.with_suffix(".stop").touch()
        out, err = writer.communicate(timeout=300)
    finally:
        if writer.poll() is None:
            writer.send_signal(signal.SIGCONT)
            writer.kill()
            writer.wait()
    assert writer.returncode == 0, err
    assert written() == BLOCKS, "the writer connected the whole chain while ibdkit read"
    assert heights[-1] == BLOCKS, "read once caught up: the whole chain"
    assert frozen_rounds >= 2 and running_rounds >= 2, (frozen_rounds, running_rounds)
    assert heights == sorted(heights) and heights[-1] > heights[0], f"reads followed the writer: {heights}"

    # The writer is gone and its lock released: the datadir is read directly, to its tip.
    r = run_cli(cli, "replay", "-q", "--json", "--datadir", net.parent)
    got = json.loads(r.stdout)
    assert got["live_snapshot_height"] is None and "bitcoind is running" not in r.stderr
    assert (got["height"], got["hash_serialized_3"]) == (BLOCKS, reference(BLOCKS))
    assert not any(p.name.startswith("ibdkit") for p in net.rglob("*"))
    assert os.path.exists(net / ".lock")
